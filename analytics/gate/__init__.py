"""gate: fail a CI step when a candidate run is worse than a baseline run on their shared tasks (the decision rule
is in ``analysis``'s docstring; docs/statistics.md has the measured size and power).

Modules by role: ``load`` (the only database read), ``compute`` (the decision, the sequential test, the result
types), ``analysis`` (one gate check: load, then compute), ``report`` (JSON, text) and ``figures`` (Plotly). This
package re-exports their public names: ``from analytics import gate; gate.gate(con, baseline=..., candidate=...)``.
"""

from __future__ import annotations

from analytics.gate.analysis import DiffAndGate, changes_of, diff_and_gate, gate, gate_of
from analytics.gate.compute import (
    BET_FRACTIONS,
    EXIT_OK,
    EXIT_UNTESTABLE,
    EXIT_WORSE,
    GATE_METRICS,
    SIDES,
    STOP_DELTA,
    Decision,
    GateResult,
    Sequential,
    decide,
    sequential_test,
)
from analytics.gate.figures import fig_sequential
from analytics.gate.load import task_order
from analytics.gate.report import detectable, report, sequential_frame, sequential_text, text_report

__all__ = [
    "DiffAndGate",
    "changes_of",
    "diff_and_gate",
    "BET_FRACTIONS",
    "EXIT_OK",
    "EXIT_UNTESTABLE",
    "EXIT_WORSE",
    "GATE_METRICS",
    "SIDES",
    "STOP_DELTA",
    "Decision",
    "GateResult",
    "Sequential",
    "decide",
    "detectable",
    "fig_sequential",
    "gate",
    "gate_of",
    "report",
    "sequential_frame",
    "sequential_text",
    "sequential_test",
    "task_order",
    "text_report",
]
