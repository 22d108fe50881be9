"""Trajectory metrics (pure): AD-Bench coverage, order-aware alignment, per-run and per-slice summaries, the
Pass@1-on-coverage fits, and what an attempt's stored fields say (expected actions, limits, errors)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analytics.compare import fisher_z_ci

MATCHED, MISSING, EXTRA = "matched", "missing", "extra"


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


def _as_list(value: Any) -> list[str] | None:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None  # a missing list: None, NaN or pd.NA depending on how the frame was built
    return [str(v) for v in value]


def with_metrics(df: pd.DataFrame) -> pd.DataFrame:
    """Per-attempt rows with their ``reference_trajectory`` and ``calls`` (tool names) replaced by the trajectory
    metrics of :func:`attempt_metrics` and ``has_reference``."""
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


def levels_of(table: pd.DataFrame) -> pd.DataFrame:
    """The ``level=L`` slices of a coverage table (:func:`summarise_slices`) with their ``level``."""
    out = table[table["slice"].str.startswith("level=")].copy()
    out["level"] = out["slice"].str.removeprefix("level=")
    return out


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
    ``message`` limit of 6), the error message, the grader's tokens (kept apart from the agent's) and, for a trace
    stored without its root span, ``trace_partial`` (what is missing and how many spans were stored; None for a
    whole attempt)."""
    data = json.loads(extra) if isinstance(extra, str) else extra
    if not isinstance(data, dict):
        return {"limit_text": None, "error_text": None, "grading": None, "trace_partial": None}
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
        "trace_partial": _trace_partial(data.get("trace_partial")),
    }


def _trace_partial(mark: Any) -> dict[str, Any] | None:
    """The ``trace_partial`` mark of an attempt's extra (the OTLP reader's: ``missing``, ``spans``) as
    ``{"missing": str, "spans": int | None}``; None when the attempt is not marked. A mark of another shape still
    marks the attempt partial (never shown as whole), with what it does not say left None."""
    if mark is None or mark is False:
        return None
    fields = mark if isinstance(mark, dict) else {}
    spans = fields.get("spans")
    missing = fields.get("missing")
    return {
        "missing": str(missing) if missing is not None else None,
        "spans": int(spans) if isinstance(spans, int) and not isinstance(spans, bool) else None,
    }


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT


def alignment_rows(calls: pd.DataFrame, reference: Sequence[str] | None) -> pd.DataFrame:
    """The alignment of an attempt's tool calls (``step`` and ``tool`` columns, in order) against ``reference`` as
    rows: ``op``, ``ref_index``, ``ref_tool``, ``step``, ``tool``, ``is_first_divergence``."""
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


def marks_from_counts(task_ids: pd.Series, n_passed: pd.Series, n_verdicts: pd.Series) -> dict[str, str]:
    """Per task: ✓ every verdict a pass, ✗ none, ◐ some, · no verdict (the drilldown's task picker), in the order
    given."""
    k, n = n_passed.to_numpy(), n_verdicts.to_numpy()
    marks = np.select([n == 0, k == n, k == 0], ["·", "✓", "✗"], "◐")
    return dict(zip(task_ids.astype(str), marks.tolist(), strict=True))


def failed_neighbours_in(
    attempts: pd.DataFrame, task_id: str, sample: int
) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The failed attempts (task, sample) just before and just after one attempt among ``attempts`` (task_id,
    sample, passed in the run's order), the first failed one when the attempt is not among them."""
    tasks = attempts["task_id"].astype(str).to_numpy()
    samples = attempts["sample"].astype(int).to_numpy()
    # a verdict of fail (not a missing one); a few tasks' attempts, so a loop over them
    failed = np.flatnonzero([not (v is None or pd.isna(v) or bool(v)) for v in attempts["passed"]])
    found = np.flatnonzero((tasks == str(task_id)) & (samples == int(sample)))
    here = int(found[0]) if len(found) else -1
    before, after = failed[failed < here], failed[failed > here]
    pick = lambda i: (str(tasks[i]), int(samples[i]))  # noqa: E731
    return (pick(before[-1]) if len(before) else None), (pick(after[0]) if len(after) else None)


def failed_on_either_side(
    marks: dict[str, str], passed: dict[int, Any], task_id: str, sample: int
) -> tuple[bool, bool]:
    """Whether the run has a failed attempt before and after one attempt in its order (task, then sample), from the
    task marks (``task_marks_of``: ✗ and ◐ tasks have a failed attempt) and the verdicts of the attempt's task by
    sample (``passed``): what ``failed_around`` finds, without reading (tests/test_scale_equal.py)."""
    tasks = list(marks)
    failed_task = np.isin(np.array(list(marks.values()), dtype=object), ["✗", "◐"])
    at = tasks.index(str(task_id)) if str(task_id) in marks else len(tasks)
    failed_here = [s for s, v in passed.items() if not (v is None or pd.isna(v) or bool(v))]
    before = any(s < int(sample) for s in failed_here) or bool(failed_task[:at].any())
    after = any(s > int(sample) for s in failed_here) or bool(failed_task[at + 1 :].any())
    return before, after


def tool_calls_in(steps: pd.DataFrame) -> pd.DataFrame:
    """``load.tool_calls_of`` taken from a page of steps (``load.steps_page``) that holds every step of the attempt:
    the drilldown's first page then gives its alignment too, one statement fewer (tests/test_scale_equal.py)."""
    calls = steps.loc[(steps["kind"] == "tool_call") & steps["tool"].notna(), ["step", "round", "tool", "args"]]
    return calls.reset_index(drop=True)
