"""errors: error-type distributions per run (AD-Bench Table 3), shares, co-occurrence and run-to-run diffs.

Definitions (docs/errors_and_judge.md):
    * only failed attempts (``passed = false``) count; a code counts once per attempt, whichever sources
      (log ``label``, ``rule``, ``judge``) report it and at however many steps;
    * ``counts[code]``: failed attempts carrying the code;
    * ``n_errors``: TE + PE + DE + CE + HAL + LC (Table 3's #Error); ``n_total``: every code on failed attempts
      (#Total); ``n_failed``: failed attempts; ``errors_per_failed = n_total / n_failed``;
    * slices: ``all``, ``level=<L>``, ``category=<C>``.

Modules by role: ``compute`` (codes, the error table from loaded cells, shares, diffs; pure), ``load`` (the
only queries), ``report`` (JSON, text, Table 3, rates, sentences) and ``figures`` (Plotly). This package re-exports
their public names: ``from analytics import errors``.
"""

from __future__ import annotations

from analytics.errors.compute import (
    ADBENCH_CODES,
    CODE_NAMES,
    KNOWN_CODES,
    SOURCES,
    TABLE3_COLUMNS,
    chosen_sources,
    code_order,
    codes_of,
    error_diff,
    rank_marks,
    run_labels,
    shares,
    table_of_cells,
)
from analytics.errors.figures import (
    CODE_COLORS,
    OTHER_COLORS,
    fig_cooccurrence,
    fig_error_shares,
)
from analytics.errors.load import (
    cooccurrence,
    error_attempts,
    error_cells,
    error_table,
    failed_cells,
    rule_counts,
)
from analytics.errors.report import (
    diff_sentences,
    rate_table,
    report,
    table3,
    text_report,
)

__all__ = [
    "ADBENCH_CODES",
    "CODE_COLORS",
    "CODE_NAMES",
    "KNOWN_CODES",
    "OTHER_COLORS",
    "SOURCES",
    "TABLE3_COLUMNS",
    "chosen_sources",
    "code_order",
    "codes_of",
    "cooccurrence",
    "diff_sentences",
    "error_attempts",
    "error_cells",
    "error_diff",
    "error_table",
    "failed_cells",
    "fig_cooccurrence",
    "fig_error_shares",
    "rank_marks",
    "rate_table",
    "report",
    "rule_counts",
    "run_labels",
    "shares",
    "table3",
    "table_of_cells",
    "text_report",
]
