"""Words and tables of a TMF result: the JSON report, the text report, headline and stage label, the page's tables and captions, the definitions, and the Markdown/HTML export."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analytics import formatting as fmt
from analytics.runs import run_label
from analytics.tmf.analysis import TmfResult
from analytics.tmf.model import MIN_TASKS, STAGE_NAMES


def report(result: TmfResult) -> dict[str, Any]:
    """The issue's JSON shape (agents only in ``points``; runs without cost have a null cost)."""
    agents = result.points[result.points["kind"] != "human"]
    unc = result.uncertainty
    points = [
        {
            "run_id": str(r.run_id),
            "agent": str(r.agent),
            "cost_per_task_usd": _num(r.cost_per_task_usd),
            "performance": _num(r.performance),
            "on_frontier": bool(r.on_frontier),
            "n_tasks": int(r.n_tasks),
            "is_few_tasks": bool(r.is_few_tasks),
            "p_frontier": None if unc is None else unc.p_frontier.get(str(r.run_id), 0.0),
            "p_best": None if unc is None else unc.p_best.get(str(r.run_id), 0.0),
        }
        for r in agents.itertuples()
    ]
    human: dict[str, float | None] | None = None
    if result.human is not None:
        is_cost = result.x_col == "cost_per_task_usd"
        human = {
            "cost_per_task_usd": _num(result.human.x) if is_cost else None,
            "performance": _num(result.human.performance),
        }
        if not is_cost:
            human["latency_per_task_s"] = _num(result.human.x)
    val = result.value
    return {
        "points": points,
        "frontier": list(result.frontier),
        "human": human,
        "value_area_usd": None if val is None else _num(val.area),
        "best_saving_usd": None if val is None else _num(val.best_saving),
        "best_run_id": None if val is None else val.best_run_id,
        "stage": None if val is None else val.stage,
        "stage_probability": None if unc is None else unc.stage_probability,
        "value_per_task_ci95": None if unc is None else [_num(v) for v in unc.value_ci95],
        "n_replicates": None if unc is None else unc.n_replicates,
        "assumptions": {**result.assumptions, "slice": result.slice_name},
    }


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def text_report(benchmark: str, slice_name: str, result: TmfResult, rep: dict[str, Any]) -> str:
    """The headline and one line per run (``*`` on the frontier): cost per task, performance, agent, run."""
    lines = [f"== {benchmark} [{slice_name}] {headline(result)}"]
    for p in rep["points"]:
        mark = "*" if p["on_frontier"] else " "
        cost = "   (no cost)" if p["cost_per_task_usd"] is None else f"{p['cost_per_task_usd']:12.4f}"
        perf = "n/a" if p["performance"] is None else f"{p['performance']:.3f}"
        lines.append(f"{mark} {cost}  {perf}  {p['agent']}  ({p['run_id']})")
    return "\n".join(lines)


def fmt_x(value: float | None, unit: str) -> str:
    """Money as $1.23 (more digits below a cent); seconds as 12.3 s."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if unit == "s":
        return f"{value:,.1f} s" if value < 600 else f"{value / 60:,.1f} min"
    return f"${value:,.4f}" if abs(value) < 0.01 else f"${value:,.2f}"


def fmt_perf(value: float | None, performance: str) -> str:
    """Rates as percentages, IRT abilities as logits."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.2f} logits" if performance == "irt" else f"{100 * value:.1f}%"


def headline(result: TmfResult) -> str:
    """The result in one or two sentences an executive can read."""
    val, hum, u = result.value, result.human, result.unit
    if hum is not None and hum.x is not None and not math.isfinite(hum.performance):
        return "No human run has an IRT ability here: enter the human performance (logits) to place the human."
    if hum is None or val is None or result.acceptance is None:
        return "No human cost for these tasks: enter human minutes per task to place the human curve."
    if not result.frontier:
        return "No run has both a cost and a performance here."
    pts = result.points.set_index("run_id")
    best = pts.loc[val.best_run_id]
    where = (
        f"{best['agent']} reaches {fmt_perf(best['performance'], result.performance)} for "
        f"{fmt_x(best[result.x_col], u)} per task"
    )
    accept = fmt_x(float(result.acceptance.cost(np.array([best["performance"]]))[0]), u)
    stage = stage_label(result)
    few = int(result.points.loc[result.points["kind"] != "human", "is_few_tasks"].sum())
    caution = f" {fmt.plural(few, 'run')} on fewer than {MIN_TASKS} tasks: their points are uncertain." if few else ""
    if val.stage == 1:
        return (
            f"{stage}: no agent is cheaper than a human of the same quality. Closest: {where}, "
            f"where a buyer pays at most {accept}.{caution}"
        )
    return (
        f"{stage}. AI adds {fmt_x(val.area, u)} of value per task (area between the curves). "
        f"Best operating point: {where}, against {accept} for human-equivalent work — a saving of "
        f"{fmt_x(val.best_saving, u)} per task.{_best_odds(result)}{caution}"
    )


def reconciliation(result: TmfResult) -> tuple[str, list[str]]:
    """How the page's dollar figures follow from each other: (a one-line reading for executives, the arithmetic
    lines), both empty when there is no human cost or no value. Every figure is one the page shows elsewhere:
    the human cost per task, the best run's performance and cost, what a buyer pays for that performance
    (the acceptance curve), the best saving, and the value per task (the area)."""
    val, hum, acc, u = result.value, result.human, result.acceptance, result.unit
    if val is None or hum is None or acc is None or hum.x is None or val.best_run_id is None:
        return "", []
    best = result.points.set_index("run_id").loc[val.best_run_id]
    perf, cost = float(best["performance"]), float(best[result.x_col])
    pays = float(acc.cost(np.array([perf]))[0])
    who = str(best["agent"])
    p = lambda v: fmt_perf(v, result.performance)  # noqa: E731
    share = (
        f"{p(perf)} ÷ {p(acc.human_performance)}"
        if acc.p0 == 0
        else f"({p(perf)} − {p(acc.p0)}) ÷ ({p(acc.human_performance)} − {p(acc.p0)})"
    )
    if acc.human_performance == 1.0 and acc.p0 == 0:
        share = p(perf)  # a share of a 100% human is the performance itself
    factors = [fmt_x(acc.human_x, u), share if acc.exponent == 1 else f"({share})^{acc.exponent:g}"]
    if acc.willingness != 1:
        factors.insert(1, f"{acc.willingness:g} (willingness to pay)")
    lines = [
        f"What a buyer pays for {who}'s quality: the human cost per task × its share of the human's performance "
        f"= {' × '.join(factors)} = {fmt_x(pays, u)}.",
        f"Best saving per task: {fmt_x(pays, u)} − {who}'s own {fmt_x(cost, u)} = {fmt_x(val.best_saving, u)}.",
        f"AI value per task {fmt_x(val.area, u)}: the area between what agents cost and what a buyer pays, over "
        "every performance at which agents are cheaper (the dark-green region), a whole-market figure; it is not "
        "the best saving, which is one run's.",
    ]
    if val.stage == 1 or val.best_saving <= 0:
        reading = (
            f"No agent beats a {fmt_x(acc.human_x, u)} human on price for the same quality yet; the closest is {who}."
        )
    else:
        reading = (
            f"{who} does {p(perf)} of what a {fmt_x(acc.human_x, u)} human does, for {fmt_x(cost, u)}: "
            f"{fmt_x(val.best_saving, u)} saved per task at its quality."
        )
    return reading, lines


def assumptions_sentence(result: TmfResult) -> str:
    """The assumptions behind every figure, in one sentence (on the page, and printed on each export)."""
    a = result.assumptions
    exponent = float(a.get("exponent", 1.0))
    shape = (
        "in proportion to performance"
        if exponent == 1
        else "whatever the performance"
        if exponent == 0
        else f"scaled by performance to the power {exponent:g}"
    )
    human = result.human
    perf = "unknown" if human is None else fmt_perf(human.performance, result.performance)
    source = "" if human is None else f" [{human.performance_source}]"
    time = "" if human is None else f"; human time: {human.x_source}"
    return (
        f"Assumptions: human performance {perf}{source}{time}; a buyer pays up to "
        f"{float(a.get('willingness', 1.0)):g}x the human cost, {shape}; agent cost: "
        f"{'tokens x current prices' if a.get('is_repriced') else a.get('cost_source', 'logged')} "
        f"({a.get('axis', 'cost')} axis); supply curve: {a.get('supply', 'step')}."
    )


DOLLAR_DEFINITIONS = {
    "area": "The value AI adds per task: the area between the optimal supply curve (what agents deliver) and the "
    "acceptance curve (what a buyer pays for that quality), over the performances where agents are cheaper.",
    "saving": "At the best operating point (the agent run furthest below the acceptance curve): what a buyer "
    "would pay a human for the same quality, minus what the agent costs. Per task.",
    "human": "A human doing one task: the tasks' mean human minutes x the hourly rate, at the human performance.",
}


def stage_label(result: TmfResult) -> str:
    """``Stage 2 (99%) · Agents and humans collaborating``: the stage with the share of bootstrap replicates that
    agree (the estimate alone when there is no bootstrap)."""
    if result.value is None:
        return ""
    name = STAGE_NAMES[result.value.stage]
    unc = result.uncertainty
    if unc is None:
        return name
    share = unc.stage_probability.get(str(result.value.stage), 0.0)
    head, _, tail = name.partition(" · ")
    return f"{head} ({100 * share:.0f}%) · {tail}"


def _best_odds(result: TmfResult) -> str:
    unc, val = result.uncertainty, result.value
    if unc is None or val is None or val.best_run_id is None:
        return ""
    return (
        f" It is the best point in {100 * unc.p_best.get(val.best_run_id, 0.0):.0f}% and on the frontier in "
        f"{100 * unc.p_frontier.get(val.best_run_id, 0.0):.0f}% of {unc.n_replicates} task-bootstrap replicates; "
        f"value per task 95% interval {fmt_x(unc.value_ci95[0], result.unit)} to "
        f"{fmt_x(unc.value_ci95[1], result.unit)}."
    )


DEFINITIONS_MD = """
**Performance**: Pass@1 (mean over tasks of passed/samples, 95% Wilson interval over tasks), mean score
(seeded bootstrap over tasks) or IRT ability (newest stored fit, subject = agent + version).

**Cost per task**: mean over tasks of the logged `cost_usd` (ingest fills it from tokens × the run's prices when
a log has none), or tokens × the run's prices. 95% interval: seeded bootstrap over tasks. Runs with no cost are
listed in the table, never silently dropped. *Reprice* recomputes cost from tokens at the prices of the newest
run (by evaluation date) of the same family (agent when no family); runs without tokens keep their cost.

**Optimal supply curve**: the Pareto frontier, the runs no other run beats by being both cheaper (or equal) and
better (or equal), one strictly; drawn as a step: S(p) = cost of the cheapest frontier run with performance ≥ p.
The *hull* option is the upper convex hull in linear cost: what routing a share of tasks to each of two agents buys.

**Human**: cost per task = mean human_minutes of the tasks × hourly rate / 60 (USD); performance from the
benchmark's human runs (kind = human), else the override, else 100%.

**Market acceptance curve** (human cost curve): A(p) = willingness × human cost × (p / human performance)^exponent.
The default (1, 1) is xbench's worst case: a buyer pays at most what a human costs, scaled by quality relative
to the human. The **market-acceptable region** is left of it (cheaper than the buyer accepts); the
**tech-accessible region** is right of the supply curve (what agents can deliver).

**Value per task**: the area where the two regions overlap, ∫ max(0, A(p) − S(p)) dp over performance on a 0–1
scale, in USD per task: the saving averaged over all quality levels. **Best operating point**: the performance
where A(p) − S(p) is largest (negative = how far the cheapest agent is from TMF).

**Stages** (xbench): 1 = the regions do not meet; 2 = they meet but no frontier agent reaches human performance
below human cost (agents and humans collaborate); 3 = a frontier agent matches human performance below human cost.
Point estimates decide the stage; the intervals in the table show how firm it is.

**Over time**: each period shows the frontier of every run evaluated up to its end.
"""


def points_table(result: TmfResult) -> pd.DataFrame:
    """The runs behind the chart, frontier first, with intervals and flags (the page adds a link to open each run)."""
    pts = result.points.copy()
    pts = pts.sort_values(["on_frontier", result.x_col], ascending=[False, True], na_position="last")
    s = 1.0 if result.performance == "irt" else 100.0
    out = pd.DataFrame(
        {
            "agent": pts["agent"],
            "version": pts["agent_version"],
            "kind": pts["kind"],
            "eval_date": pd.to_datetime(pts["eval_date"]).dt.date,
            "run_id": pts["run_id"],
            "performance": (pts["performance"] * s).round(2),
            "perf_lo": (pts["perf_lo"] * s).round(2),
            "perf_hi": (pts["perf_hi"] * s).round(2),
            result.x_col: pts[result.x_col],
            "x_lo": pts["cost_lo" if result.unit == "USD" else "latency_lo"],
            "x_hi": pts["cost_hi" if result.unit == "USD" else "latency_hi"],
            "n_tasks": pts["n_tasks"],
            "n_cost_tasks": pts["n_cost_tasks"],
            "has_cost": pts["has_cost"],
            "on_frontier": pts["on_frontier"],
            "on_hull": pts["on_hull"],
            "is_repriced": pts["is_repriced"],
            "is_few_tasks": pts.get("is_few_tasks", False),
            "p_frontier": _odds(result, "p_frontier", pts["run_id"]),
            "p_best": _odds(result, "p_best", pts["run_id"]),
        }
    )
    return out.reset_index(drop=True)


def runs_display(table: pd.DataFrame, result: TmfResult) -> pd.DataFrame:
    """``points_table`` as people read it: one run per row (agent · version · date), performance and cost with
    their 95% intervals as text, flags as marks, the bootstrap odds in %; ``run_id`` (and ``open``) kept last."""
    perf_name = "IRT ability [90% CI]" if result.performance == "irt" else f"{_perf_name(result)} % [95% CI]"
    if result.unit == "USD":
        x_name = "Cost per task [95% CI]"
        digits = fmt.usd_digits([*table[result.x_col], *table["x_lo"], *table["x_hi"]])  # one format per column

        def x_text(v: Any, lo: Any, hi: Any) -> str:
            head = fmt.usd(v, digits)
            return head if fmt.text(lo) == fmt.MISSING else f"{head} [{fmt.usd(lo, digits)} to {fmt.usd(hi, digits)}]"
    else:
        x_name = "Latency per task, s [95% CI]"

        def x_text(v: Any, lo: Any, hi: Any) -> str:
            return fmt.interval(v, (lo, hi), scale=1.0, digits=1)

    def odds(v: Any) -> str:
        return fmt.pct(v, 0)

    out = pd.DataFrame(
        {
            "Run": [
                run_label(a, v, d) for a, v, d in zip(table["agent"], table["version"], table["eval_date"], strict=True)
            ],
            perf_name: [  # the table holds percentages (or logits) already
                fmt.interval(v, (lo, hi), scale=1.0)
                for v, lo, hi in zip(table["performance"], table["perf_lo"], table["perf_hi"], strict=True)
            ],
            x_name: [
                x_text(v, lo, hi) for v, lo, hi in zip(table[result.x_col], table["x_lo"], table["x_hi"], strict=True)
            ],
            "Tasks": table["n_tasks"].map(fmt.count),
            "On the frontier": table["on_frontier"].map(lambda b: "✓" if bool(b) else ""),
            "Bootstrap share on frontier": table["p_frontier"].map(odds),
            "Bootstrap share best": table["p_best"].map(odds),
            "Notes": [
                ", ".join(
                    n for n, on in (("no cost", not bool(c)), ("repriced", bool(r)), ("few tasks", bool(f))) if on
                )
                for c, r, f in zip(table["has_cost"], table["is_repriced"], table["is_few_tasks"], strict=True)
            ],
            "run_id": table["run_id"],
        }
    )
    if "open" in table:
        out["open"] = table["open"]
    return out


def _perf_name(result: TmfResult) -> str:
    return {"pass@1": "Pass@1", "mean_score": "Mean score"}.get(result.performance, result.performance)


def _odds(result: TmfResult, name: str, run_ids: pd.Series) -> list[float | None]:
    """Per run, its share of bootstrap replicates (None for humans or without a bootstrap)."""
    unc = result.uncertainty
    table = {} if unc is None else getattr(unc, name)
    return [table.get(str(r), 0.0 if unc is not None else None) if unc is not None else None for r in run_ids]


def comparison_caption(result: TmfResult) -> str:
    """Which task set the chart compares, which runs are left out, and the bootstrap behind the odds."""
    a = result.assumptions
    other = a.get("runs_on_other_tasks") or []
    text = f"Compared on the {a.get('comparison_set_size', 0):,} tasks most runs share"
    text += (
        f"; {fmt.plural(len(other), 'run')} on other tasks {'is' if len(other) == 1 else 'are'} left out (the IRT "
        "Progress page compares across pools)"
        if other
        else ""
    )
    retried = a.get("superseded_runs") or []
    if retried:
        text += (
            f"; {fmt.plural(len(retried), 'run')} superseded by a retry ({', '.join(retried)}: a later Inspect log "
            "of the same task) left out, as on the Leaderboard"
        )
    cut = a.get("incomplete_runs") or []
    if cut:  # the leaderboard's rule: a run cut short is on other tasks than the others
        text += (
            f"; {fmt.plural(len(cut), 'incomplete run')} shown as points, as asked: {', '.join(cut)}"
            if a.get("incomplete_included")
            else f"; {fmt.plural(len(cut), 'incomplete run')} not shown, as on the Leaderboard: {', '.join(cut)}"
        )
    unc = result.uncertainty
    if unc is not None:
        text += (
            f". Odds from {unc.n_replicates:,} seeded paired task-bootstrap replicates over {unc.n_tasks:,} tasks "
            "(the human curve held at its estimate)"
        )
    return text + "."


def stage_table(results: Sequence[TmfResult]) -> pd.DataFrame:
    """One row per slice: stage, value per task, best saving, human cost and performance, frontier."""
    return pd.DataFrame(
        [
            {
                "slice": r.slice_name,
                "stage": None if r.value is None else r.value.stage,
                "p_stage": None
                if r.value is None or r.uncertainty is None
                else r.uncertainty.stage_probability[str(r.value.stage)],
                "value_per_task": None if r.value is None else r.value.area,
                "best_saving": None if r.value is None else r.value.best_saving,
                "human_x": None if r.human is None else r.human.x,
                "human_performance": None if r.human is None else r.human.performance,
                "frontier": ", ".join(r.frontier),
            }
            for r in results
        ]
    )


DEMO_CAVEAT = (
    "These runs are generated from the published tables of the four benchmark papers; they are not real evaluations."
)
