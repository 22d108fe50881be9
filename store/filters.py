"""The global run filter (benchmark, agents, evaluation dates, runs): one definition of its SQL and its parameters.

Every query that honours the sidebar's filters writes ``$run_filter`` where a condition on the runs table
(aliased ``r``) belongs; :func:`with_run_filter` puts in the one condition of ``store/sql/run_filter.sql`` (fixed
SQL text, never user input: the user's choices are only ever the named parameters of :meth:`RunFilter.params`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from store.query import load_sql

PLACEHOLDER = "$run_filter"


@dataclass(frozen=True)
class RunFilter:
    """Which runs a view covers; every field left empty means "no restriction".

    Attributes:
        benchmark: one benchmark (None: all).
        agents: agent names (empty: all).
        date_from: evaluation date on or after (None: no bound).
        date_to: evaluation date on or before (None: no bound).
        run_ids: these runs only (None: all).
        with_humans: human runs pass the agent filter whatever it names (TMF: the human cost curve stays).
    """

    benchmark: str | None = None
    agents: tuple[str, ...] = ()
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    run_ids: tuple[str, ...] | None = None
    with_humans: bool = False

    def params(self) -> dict[str, Any]:
        """The named parameters of ``$run_filter``: ``$benchmark``, ``$agents``, ``$date_from``, ``$date_to``,
        ``$run_ids`` and ``$with_humans``."""
        return {
            "benchmark": self.benchmark,
            "agents": list(self.agents) or None,
            "date_from": self.date_from,
            "date_to": self.date_to,
            "run_ids": None if self.run_ids is None else list(self.run_ids),
            "with_humans": self.with_humans,
        }


ALL_RUNS = RunFilter()  # no restriction: the default of every analytics function that takes a run filter


def run_filter_params(
    benchmark: str | None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    *,
    run_ids: Sequence[str] | None = None,
    with_humans: bool = False,
) -> dict[str, Any]:
    """``RunFilter(...).params()`` from the keyword arguments most analytics functions take (an empty or None agent
    list means all agents, None run ids all runs)."""
    return RunFilter(
        benchmark=benchmark,
        agents=tuple(agents or ()),
        date_from=date_from,
        date_to=date_to,
        run_ids=None if run_ids is None else tuple(run_ids),
        with_humans=with_humans,
    ).params()


def with_run_filter(sql: str) -> str:
    """``sql`` with its ``$run_filter`` placeholder replaced by the one run-filter condition (on alias ``r``)."""
    if PLACEHOLDER not in sql:
        raise ValueError("the query has no $run_filter placeholder")
    condition = "\n".join(line for line in load_sql("run_filter").splitlines() if not line.startswith("--"))
    return sql.replace(PLACEHOLDER, f"({condition.strip()})")
