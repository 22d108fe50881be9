"""Error findings of one attempt as the drilldown shows them: the log's and the judge's labels as stored, and the
rule findings of ``ingest/rules.py`` computed live from the benchmark's current tool graph.

Modules by role: ``load`` (the only queries) and ``compute`` (the findings' frame). This package re-exports their
public names: ``from analytics import rules``.
"""

from __future__ import annotations

from analytics.rules.load import attempt_findings

__all__ = ["attempt_findings"]
