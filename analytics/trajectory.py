"""Trajectory analytics: AD-Bench coverage, order-aware alignment, trajectory length, drilldown readers.

Definitions (docs/trajectories.md has the long form):

* **coverage** of an attempt (AD-Bench): 1 when the task's reference trajectory appears as an *ordered
  sub-sequence* of the attempt's tool calls (other calls may sit in between), else 0. Undefined (NaN) when
  the task has no reference trajectory. Rates per run / level are means over attempts (all samples).
* **recall / precision** of reference tool calls: order-free multiset overlap of reference tools and the
  attempt's calls, divided by the reference length (recall) or the number of calls (precision).
* **alignment**: a longest common subsequence (LCS) of reference and calls; every reference step is
  ``matched`` or ``missing``, every other call is ``extra``. The first non-matched entry is the
  **first divergence**.

``python -m analytics coverage [--benchmark B] --json`` prints the per-run slices.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analytics.compare import fisher_z_ci
from analytics.leaderboard import comparison_membership
from analytics.sqlfiles import load_sql
from store import RunFilter, query_df, query_rows, run_filter_params, with_run_filter

MATCHED, MISSING, EXTRA = "matched", "missing", "extra"
OP_COLOURS = {MATCHED: "#2e7d32", MISSING: "#c62828", EXTRA: "#ef6c00"}


# ---------------------------------------------------------------------------------------------
# Pure sequence functions
# ---------------------------------------------------------------------------------------------


def is_subsequence(reference: Sequence[str], calls: Sequence[str]) -> bool:
    """True when ``reference`` appears in order (not necessarily contiguously) within ``calls``."""
    it = iter(calls)
    return all(any(call == ref for call in it) for ref in reference)


def recall_precision(reference: Sequence[str], calls: Sequence[str]) -> tuple[float, float]:
    """Order-free multiset recall and precision of reference tool calls.

    Returns:
        ``(recall, precision)``; recall is NaN for an empty reference, precision NaN for no calls.
    """
    overlap = sum((Counter(reference) & Counter(calls)).values())
    recall = overlap / len(reference) if reference else math.nan
    precision = overlap / len(calls) if calls else math.nan
    return recall, precision


@dataclass(frozen=True)
class AlignedStep:
    """One entry of an alignment: a matched pair, a missing reference step, or an extra call."""

    op: str
    ref_index: int | None
    call_index: int | None
    tool: str


@dataclass(frozen=True)
class Alignment:
    """Order-aware alignment of an attempt's tool calls against a reference trajectory."""

    steps: tuple[AlignedStep, ...]
    n_reference: int
    n_calls: int
    n_matched: int

    @property
    def is_covered(self) -> bool:
        """AD-Bench coverage: every reference step matched in order."""
        return self.n_matched == self.n_reference

    @property
    def first_divergence(self) -> int | None:
        """Index into ``steps`` of the first entry that is not ``matched`` (None when none)."""
        return next((i for i, s in enumerate(self.steps) if s.op != MATCHED), None)

    @property
    def first_divergence_call(self) -> int | None:
        """Index of the agent's tool call at (or right after) the first divergence; None at the end."""
        start = self.first_divergence
        if start is None:
            return None
        return next((s.call_index for s in self.steps[start:] if s.call_index is not None), None)


def align(reference: Sequence[str], calls: Sequence[str]) -> Alignment:
    """LCS alignment of ``calls`` against ``reference``.

    Among equally long alignments, a reference step is marked ``missing`` before an agent call that a later
    reference step can still match, and otherwise the agent call is marked ``extra`` first; so
    ``[a, b, c]`` against calls ``[a, c, c]`` reads matched, missing, matched, extra.
    """
    ref, got = list(reference), list(calls)
    n, m = len(ref), len(got)
    # suffix table: lcs[i][j] = LCS length of ref[i:] and got[j:], so the walk below goes forward
    # plain lists: for the short references of real benchmarks they beat NumPy's per-element overhead
    lcs = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below, want = lcs[i], lcs[i + 1], ref[i]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if want == got[j] else max(below[j], row[j + 1])
    out: list[AlignedStep] = []
    i = j = 0
    while i < n or j < m:
        if i < n and j < m and ref[i] == got[j] and lcs[i][j] == lcs[i + 1][j + 1] + 1:
            out.append(AlignedStep(MATCHED, i, j, got[j]))
            i, j = i + 1, j + 1
        elif j < m and (
            i == n or lcs[i][j + 1] > lcs[i + 1][j] or (lcs[i][j + 1] == lcs[i + 1][j] and got[j] not in ref[i + 1 :])
        ):
            out.append(AlignedStep(EXTRA, None, j, got[j]))
            j += 1
        else:
            out.append(AlignedStep(MISSING, i, None, ref[i]))
            i += 1
    return Alignment(tuple(out), n, m, lcs[0][0])


def attempt_metrics(reference: Sequence[str] | None, calls: Sequence[str]) -> dict[str, Any]:
    """Coverage, recall, precision, LCS ratio and first divergence of one attempt (NaN without a reference)."""
    if not reference:
        return {
            "coverage": math.nan,
            "recall": math.nan,
            "precision": math.nan,
            "lcs_ratio": math.nan,
            "first_divergence_call": None,
        }
    al = align(reference, calls)
    recall, precision = recall_precision(reference, calls)
    return {
        "coverage": float(al.is_covered),
        "recall": recall,
        "precision": precision,
        "lcs_ratio": al.n_matched / al.n_reference,
        "first_divergence_call": al.first_divergence_call,
    }


# ---------------------------------------------------------------------------------------------
# Per-attempt and aggregated tables
# ---------------------------------------------------------------------------------------------


def _as_list(value: Any) -> list[str] | None:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None  # a missing list: None, NaN or pd.NA depending on how the frame was built
    return [str(v) for v in value]


def attempt_trajectories(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    run_ids: Sequence[str] | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
) -> pd.DataFrame:
    """One row per attempt: ids, level, category, outcome, lengths and trajectory metrics.

    Only tool names are read (never results), one list per attempt, so this scales to large logs.
    """
    params = run_filter_params(benchmark, agents, date_from, date_to, run_ids=run_ids)
    df = query_df(con, load_sql("trajectory_attempts"), params)
    memo: dict[tuple[tuple[str, ...] | None, tuple[str, ...]], dict[str, Any]] = {}  # trajectories repeat a lot
    metrics = []
    for ref, calls in zip(df["reference_trajectory"], df["calls"], strict=True):
        ref_list, call_list = _as_list(ref), _as_list(calls) or []
        key = (None if ref_list is None else tuple(ref_list), tuple(call_list))
        if key not in memo:
            memo[key] = attempt_metrics(ref_list, call_list)
        metrics.append(memo[key])
    out = df.drop(columns=["reference_trajectory", "calls"]).reset_index(drop=True)
    if metrics:
        out = pd.concat([out, pd.DataFrame(metrics)], axis=1)
    else:
        for col in ("coverage", "recall", "precision", "lcs_ratio", "first_divergence_call"):
            out[col] = pd.Series(dtype=float)
    out["has_reference"] = out["coverage"].notna()
    return out


SLICE_COLUMNS = ("level", "category")


METRIC_COLUMNS = {
    "coverage": "coverage",
    "recall": "recall",
    "precision": "precision",
    "lcs_ratio": "lcs_ratio",
    "mean_tool_calls": "n_tool_calls",
    "mean_rounds": "n_rounds",
}


def _long_slices(att: pd.DataFrame) -> pd.DataFrame:
    """Each attempt once per slice it belongs to: "all", "level=<L>", "category=<C>"."""
    parts = [att.assign(slice="all")]
    for col in SLICE_COLUMNS:
        sub = att.dropna(subset=[col])
        parts.append(sub.assign(slice=col + "=" + sub[col].astype(str)))
    return pd.concat(parts, ignore_index=True)


def coverage_table(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    run_ids: Sequence[str] | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
) -> pd.DataFrame:
    """Coverage, recall, precision, Pass@1 and length per run and slice ("all", "level=L", "category=C")."""
    att = attempt_trajectories(
        con, benchmark=benchmark, run_ids=run_ids, agents=agents, date_from=date_from, date_to=date_to
    )
    return summarise_slices(att)


def summarise_slices(att: pd.DataFrame) -> pd.DataFrame:
    """Aggregate per-attempt rows (``attempt_trajectories``) to one row per run and slice.

    Means skip undefined values (no reference, no calls); ``pass_at_1`` is the mean over tasks of the share of
    passed samples; ``n`` counts the attempts in the slice.
    """
    cols = [
        "benchmark",
        "run_id",
        "agent",
        "eval_date",
        "slice",
        "coverage",
        "recall",
        "precision",
        "lcs_ratio",
        "mean_tool_calls",
        "mean_rounds",
        "pass_at_1",
        "n",
    ]
    if att.empty:
        return pd.DataFrame(columns=cols)
    keys = ["benchmark", "run_id", "agent", "slice"]
    long = _long_slices(att)
    for col in set(METRIC_COLUMNS.values()):
        long[col] = pd.to_numeric(long[col], errors="coerce").astype(float)
    long["passed_f"] = long["passed"].astype("boolean").astype("Float64").astype(float)
    out = long.groupby(keys, sort=True).agg(
        eval_date=("eval_date", "first"),
        n=("attempt_id", "size"),
        **{name: (col, "mean") for name, col in METRIC_COLUMNS.items()},
    )
    per_task = long.groupby([*keys, "task_id"], sort=False)["passed_f"].mean()
    out["pass_at_1"] = per_task.groupby(level=keys).mean()
    out = out.reset_index()
    order = {"all": 0}
    out["_o"] = out["slice"].map(lambda s: order.get(s, 1 if s.startswith("level=") else 2))
    return out.sort_values(["benchmark", "run_id", "_o", "slice"])[cols].reset_index(drop=True)


def coverage_by_level(con: duckdb.DuckDBPyConnection, **filters: Any) -> pd.DataFrame:
    """AD-Bench Figure 4 / Figure 3 data: per run and level, coverage, Pass@1 and trajectory length.

    ``is_comparable``: the run is on the level's comparison set (the leaderboard's definition); the correlation
    fits use those rows only, so runs on another task pool do not enter one level's correlation.
    """
    table = coverage_table(con, **filters)
    out = table[table["slice"].str.startswith("level=")].copy()
    out["level"] = out["slice"].str.removeprefix("level=")
    if filters.get("benchmark") and not out.empty:
        run_filter = RunFilter(
            benchmark=filters["benchmark"],
            agents=tuple(filters.get("agents") or ()),
            date_from=filters.get("date_from"),
            date_to=filters.get("date_to"),
        )
        member = comparison_membership(con, run_filter, kinds=("level",))
        out = out.merge(member[["run_id", "slice", "is_comparable"]], on=["run_id", "slice"], how="left")
        out["is_comparable"] = out["is_comparable"].astype("boolean").fillna(False).astype(bool)
    else:
        out["is_comparable"] = True
    return out.drop(columns=["slice"]).reset_index(drop=True)


@dataclass(frozen=True)
class Fit:
    """Pearson correlation (with its 95% Fisher-z interval) and least-squares line of Pass@1 on coverage.

    ``n`` counts runs (one point per run); the interval needs n > 3 and is NaN otherwise.
    """

    level: str
    n: int
    r: float
    slope: float
    intercept: float
    r_lo: float = math.nan
    r_hi: float = math.nan


def pass_vs_coverage_fits(by_level: pd.DataFrame) -> list[Fit]:
    """One fit per level of Pass@1 against coverage across runs (AD-Bench Figure 3), plus "all".

    Only rows on the level's comparison set enter (``is_comparable`` when present). "all" takes one point per
    run, the unweighted mean over its levels, since the levels of one run are not independent points.
    """
    if "is_comparable" in by_level:
        by_level = by_level[by_level["is_comparable"].astype(bool)]
    per_run = by_level.groupby("run_id", sort=True)[["coverage", "pass_at_1"]].mean().reset_index()
    groups = [(str(lv), g) for lv, g in by_level.groupby("level", sort=True)] + [("all", per_run)]
    return [_fit(level, g) for level, g in groups]


def _fit(level: str, g: pd.DataFrame) -> Fit:
    g = g.dropna(subset=["coverage", "pass_at_1"])
    x, y = g["coverage"].to_numpy(float), g["pass_at_1"].to_numpy(float)
    if len(g) < 2 or np.ptp(x) == 0:
        return Fit(level, len(g), math.nan, math.nan, math.nan)
    slope, intercept = np.polyfit(x, y, 1)
    r = float(np.corrcoef(x, y)[0, 1]) if np.ptp(y) > 0 else math.nan
    lo, hi = fisher_z_ci(r, len(g))
    return Fit(level, len(g), r, float(slope), float(intercept), lo, hi)


LEVEL_STYLE = (
    ("#0072B2", "circle"),
    ("#E69F00", "diamond"),
    ("#009E73", "square"),
    ("#CC79A7", "triangle-up"),
    ("#D55E00", "x"),
    ("#56B4E9", "star"),
)


def fig_coverage_by_level(by_level: pd.DataFrame) -> go.Figure:
    """Coverage per level for each run (AD-Bench Figure 4): one row per run (agent · run id), one marker per level,
    so 50 runs stay readable; rows sorted by mean coverage; run ids in custom_data."""
    fig = go.Figure()
    data = by_level.assign(label=by_level["agent"].astype(str) + " · " + by_level["run_id"].astype(str))
    order = data.groupby("label", sort=False)["coverage"].mean().sort_values(kind="stable").index.tolist()
    for i, (level, g) in enumerate(data.groupby("level", sort=True)):
        color, symbol = LEVEL_STYLE[i % len(LEVEL_STYLE)]
        fig.add_scatter(
            x=g["coverage"] * 100,
            y=g["label"],
            mode="markers",
            name=str(level),
            marker={"size": 10, "color": color, "symbol": symbol, "line": {"width": 1, "color": "white"}},
            customdata=np.column_stack([g["run_id"], g["level"]]),
            hovertemplate="%{y}<br>" + str(level) + ": %{x:.1f}%<extra></extra>",
        )
    fig.update_layout(
        xaxis_title="Trajectory coverage (%)",
        xaxis_range=[-2, 102],
        yaxis={"categoryorder": "array", "categoryarray": order, "title": None},
        legend_title="Level",
        height=160 + 24 * len(order),
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
    )
    return fig


def fig_pass_vs_coverage(by_level: pd.DataFrame, fits: Sequence[Fit]) -> go.Figure:
    """Scatter of Pass@1 against coverage per level with fitted lines and r (AD-Bench Figure 3)."""
    fig = go.Figure()
    by_fit = {f.level: f for f in fits}
    if "is_comparable" in by_level:  # the points the fits used
        by_level = by_level[by_level["is_comparable"].astype(bool)]
    for level, g in by_level.groupby("level", sort=True):
        fit = by_fit.get(str(level))
        label = f"{level} (r = {fit.r:.3f})" if fit and np.isfinite(fit.r) else str(level)
        if fit and np.isfinite(fit.r_lo):
            label += f", 95% CI {fit.r_lo:.2f} to {fit.r_hi:.2f}, {fit.n} runs"
        fig.add_scatter(
            x=g["coverage"] * 100,
            y=g["pass_at_1"] * 100,
            mode="markers",
            name=label,
            text=g["agent"],
            customdata=np.column_stack([g["run_id"], g["level"]]),
            hovertemplate="%{text}<br>coverage %{x:.1f}%<br>Pass@1 %{y:.1f}%<extra></extra>",
        )
        if fit and np.isfinite(fit.slope):
            xs = np.array([g["coverage"].min(), g["coverage"].max()])
            fig.add_scatter(
                x=xs * 100,
                y=(fit.intercept + fit.slope * xs) * 100,
                mode="lines",
                name=f"{level} fit",
                showlegend=False,
                hoverinfo="skip",
            )
    fig.update_layout(xaxis_title="Trajectory coverage (%)", yaxis_title="Pass@1 (%)")
    return fig


# ---------------------------------------------------------------------------------------------
# Drilldown readers (one attempt at a time; steps by page)
# ---------------------------------------------------------------------------------------------

PREVIEW_CHARS = 2000


def runs_of(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    include: str | None = None,
) -> pd.DataFrame:
    """Runs the filters select (newest first) with their benchmark, agent, version and date; run ``include`` (a
    linked run) is listed whatever the filters say, with ``is_filtered_out`` true."""
    params = run_filter_params(benchmark, agents, date_from, date_to)
    return query_df(
        con,
        with_run_filter(
            "SELECT * FROM (SELECT r.run_id, r.benchmark, r.agent, r.family, r.agent_version, r.eval_date, "
            "NOT ($run_filter) AS is_filtered_out FROM runs r) WHERE NOT is_filtered_out OR run_id = $include "
            "ORDER BY eval_date DESC NULLS LAST, run_id"
        ),
        {**params, "include": include},
    )


def attempts_of(con: duckdb.DuckDBPyConnection, *, run_id: str, task_id: str | None = None) -> pd.DataFrame:
    """Attempts of a run (optionally of one task): ids, sample, outcome, status and lengths."""
    return query_df(
        con,
        "SELECT attempt_id, task_id, sample, score, passed, status, n_steps, n_tool_calls "
        "FROM attempts WHERE run_id = ? AND (? IS NULL OR task_id = ?) ORDER BY task_id, sample",
        [run_id, task_id, task_id],
    )


def runs_with_task(con: duckdb.DuckDBPyConnection, *, benchmark: str, task_id: str) -> pd.DataFrame:
    """Runs of a benchmark that attempted a task, with their Pass@1 on it."""
    return query_df(
        con,
        "SELECT r.run_id, r.agent, r.agent_version, r.eval_date, count(*) AS n_samples, "
        "avg(a.passed::INT) AS pass_rate FROM attempts a JOIN runs r USING (run_id) "
        "WHERE r.benchmark = ? AND a.task_id = ? GROUP BY ALL "
        "ORDER BY r.eval_date DESC NULLS LAST, r.run_id",
        [benchmark, task_id],
    )


def attempt_detail(
    con: duckdb.DuckDBPyConnection, *, run_id: str, task_id: str, sample: int | None = None
) -> dict[str, Any] | None:
    """Everything the drilldown header shows for one attempt (the lowest sample when none is given)."""
    rows = query_df(
        con,
        "SELECT a.*, r.benchmark, r.agent, r.agent_version, r.judge AS run_judge, t.query, "
        "t.level, t.category, t.human_minutes, t.reference_answer, t.reference_trajectory, "
        "t.extra::VARCHAR AS task_extra "
        "FROM attempts a JOIN runs r USING (run_id) "
        "LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id "
        "WHERE a.run_id = ? AND a.task_id = ? AND (? IS NULL OR a.sample = ?) "
        "ORDER BY a.sample LIMIT 1",
        [run_id, task_id, sample, sample],
    )
    if rows.empty:
        return None
    rec = {k: (None if _is_missing(v) else v) for k, v in rows.iloc[0].to_dict().items()}
    judge = rec.get("judge")
    rec["judge"] = json.loads(judge) if isinstance(judge, str) else judge
    rec["reference_trajectory"] = _as_list(rec.get("reference_trajectory"))
    rec.update(_outcome_details(rec.get("extra")))
    rec["expected_actions"] = expected_actions(rec.pop("task_extra", None))
    return rec


def expected_actions(task_extra: Any) -> list[dict[str, Any]]:
    """The task's expected actions as the log gives them (tau-bench's ``actions``: ``{name, kwargs}``, kept by the
    OpenAI-messages reader as ``reference_actions``); empty when the format has none."""
    data = json.loads(task_extra) if isinstance(task_extra, str) else task_extra
    actions = data.get("reference_actions") if isinstance(data, dict) else None
    return [a for a in actions if isinstance(a, dict) and a.get("name")] if isinstance(actions, list) else []


def canonical_json(value: Any) -> str | None:
    """Arguments as canonical JSON (sorted keys, no spaces), so the same call compares equal however it was
    written; text that is not JSON is kept as it is."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _outcome_details(extra: Any) -> dict[str, Any]:
    """What the attempt's ``extra`` says about how it ended: the limit hit (kind and value, e.g. an Inspect
    ``message`` limit of 6), the error message, and the grader's tokens (kept apart from the agent's)."""
    data = json.loads(extra) if isinstance(extra, str) else extra
    if not isinstance(data, dict):
        return {"limit_text": None, "error_text": None, "grading": None}
    limit = data.get("limit")
    limit_text = None
    if isinstance(limit, dict) and limit.get("type"):
        limit_text = f"{limit['type']} limit" + (
            f" ({limit['limit']:g})" if isinstance(limit.get("limit"), (int, float)) else ""
        )
    error = data.get("error")
    grading = data.get("grading")
    return {
        "limit_text": limit_text,
        "error_text": error if isinstance(error, str) else None,
        "grading": grading if isinstance(grading, dict) else None,
    }


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT


def judge_verdicts_of(con: duckdb.DuckDBPyConnection, *, attempt_id: int) -> pd.DataFrame:
    """Cached LLM-judge verdicts of one attempt (newest first): model, prompt version, verdict JSON, failure."""
    return query_df(
        con,
        "SELECT model, prompt_version, created_at, verdict::VARCHAR AS verdict, is_failure, failure "
        "FROM judge_verdicts WHERE attempt_id = ? ORDER BY created_at DESC",
        [int(attempt_id)],
    )


def steps_page(con: duckdb.DuckDBPyConnection, *, attempt_id: int, offset: int = 0, limit: int = 25) -> pd.DataFrame:
    """One page of an attempt's steps; results cut to ``PREVIEW_CHARS`` (``step_result`` has the whole)."""
    # The page of steps first, then only the long texts it points at, in a second query. Joining texts in the
    # same statement (v_steps, or a correlated subquery) lets DuckDB read the whole texts table: 1.2-2.9 CPU s
    # at 1M attempts. An IN list is not pushed into the scan either (the text column is read for every row,
    # 1.1 s); a semi join with a list is, through its join filter (0.1 s for a few texts).
    page = query_df(
        con,
        "SELECT step, round, kind, tool, args, content, left(result, ?) AS result_preview, "
        "coalesce(result_chars, length(result)) AS result_chars, input_tokens, output_tokens, "
        "latency_s, error, result_hash FROM steps WHERE attempt_id = ? ORDER BY step LIMIT ? OFFSET ?",
        [PREVIEW_CHARS, int(attempt_id), int(limit), int(offset)],
    )
    hashes = sorted({h for h in page["result_hash"] if isinstance(h, str)})
    if hashes:
        texts = dict(
            query_rows(
                con,
                "SELECT t.text_hash, left(t.text, ?) FROM texts t SEMI JOIN "
                "(SELECT unnest(?::VARCHAR[]) AS h) q ON t.text_hash = q.h",
                [PREVIEW_CHARS, hashes],
            )
        )
        long = page["result_hash"].map(texts)
        page["result_preview"] = page["result_preview"].where(page["result_preview"].notna(), long)
    return page.drop(columns="result_hash")


def step_result(con: duckdb.DuckDBPyConnection, *, attempt_id: int, step: int) -> str | None:
    """The full result text of one step."""
    rows = query_rows(
        con, "SELECT result, result_hash FROM steps WHERE attempt_id = ? AND step = ?", [int(attempt_id), int(step)]
    )
    if not rows:
        return None
    result, digest = rows[0]
    if result is None and digest is not None:
        texts = query_rows(con, "SELECT text FROM texts WHERE text_hash = ? LIMIT 1", [digest])
        result = texts[0][0] if texts else None
    return result


def tool_calls_of(con: duckdb.DuckDBPyConnection, *, attempt_id: int) -> pd.DataFrame:
    """The attempt's tool calls in order: step, round, tool and arguments (JSON text)."""
    return query_df(
        con,
        "SELECT step, round, tool, args::VARCHAR AS args FROM steps WHERE attempt_id = ? AND kind = 'tool_call' "
        "AND tool IS NOT NULL ORDER BY step",
        [int(attempt_id)],
    )


def alignment_frame(
    con: duckdb.DuckDBPyConnection, *, attempt_id: int, reference: Sequence[str] | None = None
) -> pd.DataFrame:
    """Reference and agent steps side by side: ``op``, ``ref_index``, ``ref_tool``, ``step``, ``tool``.

    ``step`` is the agent's step number (the ``step`` column); ``is_first_divergence`` marks one row.
    """
    calls = tool_calls_of(con, attempt_id=attempt_id)
    ref = list(reference or [])
    al = align(ref, calls["tool"].tolist())
    steps = calls["step"].tolist()
    rows = [
        {
            "op": s.op,
            "ref_index": s.ref_index,
            "ref_tool": None if s.ref_index is None else ref[s.ref_index],
            "step": None if s.call_index is None else int(steps[s.call_index]),
            "tool": None if s.call_index is None else s.tool,
        }
        for s in al.steps
    ]
    out = pd.DataFrame(rows, columns=["op", "ref_index", "ref_tool", "step", "tool"])
    out["is_first_divergence"] = out.index == (al.first_divergence if al.first_divergence is not None else -1)
    out["ref_index"] = out["ref_index"].astype("Int64")
    out["step"] = out["step"].astype("Int64")
    return out


# ---------------------------------------------------------------------------------------------
# CLI: python -m analytics coverage
# ---------------------------------------------------------------------------------------------


COVERAGE_KEYS = ("run_id", "agent", "slice", "coverage", "recall", "precision", "mean_tool_calls", "n")


def coverage_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``python -m analytics coverage --json``: the coverage table with JSON-safe numbers."""

    def clean(value: Any) -> Any:
        if isinstance(value, (float, np.floating)):
            return None if not np.isfinite(value) else round(float(value), 6)
        if isinstance(value, np.integer):
            return int(value)
        return value

    return [{k: clean(r[k]) for k in COVERAGE_KEYS} for r in table.to_dict("records")]
