"""Simulations that check the verdicts' size, power and coverage against known truth (issue 28).

``python bench/bench_verdicts.py [--scale 1.0] [--seed 28] [--only NAME ...] [--figure PATH]``

Sections (each prints a Markdown table; docs/statistics.md holds the figures of a full run):

* ``leaderboard``: five runs with identical per-task success rates on 100 tasks x 3 samples; the share of 300
  leaderboards (``leaderboard_rows``, the real code path) that mark any ranked run "behind", against the
  previous verdict (Holm over paired tests against the data-chosen leader). Also 10 runs.
* ``gate-size``: the gate's false alarms on null designs of 50-300 tasks x 1-3 samples (task rates ~ Beta).
* ``gate-power``: power at 5- and 10-point regressions: the gate (one-sided mid-p), the one-sided exact paired
  test, and the previous rule (two-sided exact p < alpha in the bad direction).
* ``plan``: ``plan``'s predicted power at its recommended n against the gate's simulated power.
* ``sequential``: the sequential gate checked after every task: false alarms under the null, and at a 10-point
  regression its power and the tasks it reads before stopping (``--figure`` draws the stopping times).
* ``coverage``: 95% intervals of a mean score at 10-30 tasks: ``compare.score_interval`` against the percentile
  bootstrap, on continuous, graded and zero-inflated scores.

``--scale`` multiplies every repetition count (1.0: the documented figures, about 2.5 minutes of CPU on one core).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analytics import compare, gate, plan, stats  # noqa: E402
from analytics import leaderboard as lb  # noqa: E402

DESIGNS = [(n, k) for n in (50, 100, 200, 300) for k in (1, 2, 3)]
BETAS = {"Beta(2,1)": (2.0, 1.0), "Beta(0.5,0.5)": (0.5, 0.5)}


def _reps(base: int, scale: float) -> int:
    return max(5, int(round(base * scale)))


def _pair(rng: np.random.Generator, n: int, k: int, drop: float, ab: tuple[float, float]) -> np.ndarray:
    """Per-task differences candidate - baseline; the candidate's task rates lowered by ``drop`` on average."""
    p = rng.beta(*ab, n)
    q = p * (1.0 - drop / max(p.mean(), 1e-9))
    return (rng.binomial(k, q) - rng.binomial(k, p)) / k


def _board(rng: np.random.Generator, m: int, n: int, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    p = rng.beta(0.8, 0.8, n)
    tasks = [f"t{i:03d}" for i in range(n)]
    parts = []
    for j in range(m):
        c = rng.binomial(k, p)
        parts.append(
            pd.DataFrame(
                {
                    "run_id": f"r{j}",
                    "task_id": tasks,
                    "n": k,
                    "c": c,
                    "score": c / k,
                    "steps": 1.0,
                    "cost_usd": np.nan,
                    "level": None,
                    "category": None,
                }
            )
        )
    runs = pd.DataFrame(
        {"run_id": [f"r{j}" for j in range(m)], "agent": "x", "agent_version": None, "family": None, "kind": "llm"}
    ).assign(eval_date=pd.NaT)
    return runs, pd.concat(parts)


def section_leaderboard(rng: np.random.Generator, scale: float) -> str:
    lines = ["| runs | tasks x samples | boards | false 'behind' (selection-aware) | previous rule (Holm vs leader) |"]
    lines.append("|---|---|---|---|---|")
    for m in (5, 10):
        reps = _reps(300, scale)
        new = old = 0
        for rep in range(reps):
            runs, out = _board(rng, m, 100, 3)
            board = lb.leaderboard_rows(runs, out, slices=("all",), seed=rep, n_boot=50)
            new += bool(((board["rank"].notna()) & (board["is_tied"] == False)).any())  # noqa: E712
            x = out.pivot(index="task_id", columns="run_id", values="score").to_numpy()
            leader = int(np.argmax(x.mean(axis=0)))
            d = np.delete(x, leader, axis=1) - x[:, [leader]]
            p = [t.p_value for t in compare.paired_tests(d, is_binary_single=[False] * d.shape[1], seed=rep)]
            old += bool((compare.holm(p) < 0.05).any())
        lines.append(f"| {m} | 100 x 3 | {reps} | {100 * new / reps:.1f}% | {100 * old / reps:.1f}% |")
    return "\n".join(lines)


def _rate(
    rng: np.random.Generator, reps: int, n: int, k: int, drop: float, ab: tuple[float, float]
) -> dict[str, float]:
    hits = {"gate": 0, "exact": 0, "previous": 0}
    for _ in range(reps):
        d = _pair(rng, n, k, drop, ab)
        one = compare.sign_flip_one_sided(d)
        hits["gate"] += one.p_value < 0.05
        hits["exact"] += one.p_exact < 0.05
        two = min(1.0, 2.0 * one.p_exact) if k > 1 else compare.mcnemar_exact(int((d < 0).sum()), int((d > 0).sum()))
        hits["previous"] += two < 0.05 and d.mean() < 0
    return {key: v / reps for key, v in hits.items()}


def section_gate(rng: np.random.Generator, scale: float, *, drops: tuple[float, ...]) -> str:
    head = "| task rates | tasks | samples | " + " | ".join(
        f"{int(100 * d)} pt: gate | one-sided exact | previous" for d in drops
    )
    lines = [head + " |", "|---|---|---|" + "---|---|---|" * len(drops)]
    for name, ab in BETAS.items():
        for n, k in DESIGNS:
            cells = []
            for drop in drops:
                r = _rate(rng, _reps(2000 if drop == 0 else 1000, scale), n, k, drop, ab)
                cells += [f"{100 * r['gate']:.1f}%", f"{100 * r['exact']:.1f}%", f"{100 * r['previous']:.1f}%"]
            lines.append(f"| {name} | {n} | {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def section_plan(rng: np.random.Generator, scale: float) -> str:
    lines = [
        "| task rates | samples | delta | planned tasks | predicted power | simulated power |",
        "|---|---|---|---|---|---|",
    ]
    for name, ab in BETAS.items():
        p = rng.beta(*ab, 5000)
        within = float((p * (1 - p)).mean())
        for k in (1, 3):
            for delta in (0.05, 0.10):
                row = plan.plan_from_variances(
                    within_var=within,
                    between_var=0.0,
                    delta=delta,
                    n_available=100,
                    samples=(k,),
                    binary_mean=float(p.mean()),
                )[0]
                n = row["tasks_needed"]
                reps = _reps(1000, scale)
                hits = 0
                for _ in range(reps):
                    t = rng.choice(p, n)
                    q = t * (1.0 - delta / t.mean())
                    hits += gate.decide((rng.binomial(k, q) - rng.binomial(k, t)) / k, alpha=0.05).p_value < 0.05
                predicted = plan.power(delta, row["sd_per_task"], n)
                lines.append(
                    f"| {name} | {k} | {int(100 * delta)} pt | {n} | {100 * predicted:.1f}% | {100 * hits / reps:.1f}% |"
                )
    return "\n".join(lines)


def section_sequential(rng: np.random.Generator, scale: float, figure: Path | None) -> str:
    lines = [
        "| tasks | samples | regression | runs | 'worse' | 'not worse' (5 pt ruled out) | undecided | tasks read "
        "(mean, all runs) | tasks saved | tasks read when 'worse' | fixed-n gate power |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    stops: dict[str, list[int]] = {}
    for n, k in ((300, 1), (300, 3), (100, 1)):
        for drop in (0.0, 0.10):
            reps = _reps(1000 if drop == 0 else 400, scale)
            verdicts: dict[str, int] = {"worse": 0, "not worse": 0, "undecided": 0}
            used, used_worse, fixed = [], [], 0
            for _ in range(reps):
                d = _pair(rng, n, k, drop, BETAS["Beta(2,1)"])
                s = gate.sequential_test(d, alpha=0.05)
                verdicts[s.verdict] += 1
                used.append(s.n_used)
                if s.verdict == "worse":
                    used_worse.append(s.n_used)
                fixed += drop > 0 and gate.decide(d, alpha=0.05).p_value < 0.05
            mean_used = float(np.mean(used))
            worse_used = f"{np.mean(used_worse):.0f}" if used_worse else "–"
            lines.append(
                f"| {n} | {k} | {int(100 * drop)} pt | {reps} | {100 * verdicts['worse'] / reps:.1f}% | "
                f"{100 * verdicts['not worse'] / reps:.1f}% | {100 * verdicts['undecided'] / reps:.1f}% | "
                f"{mean_used:.0f} | {100 * (1 - mean_used / n):.0f}% | {worse_used} | "
                f"{'–' if drop == 0 else f'{100 * fixed / reps:.1f}%'} |"
            )
            if drop > 0:
                stops[f"{n} tasks x {k}"] = used_worse
    if figure is not None:
        _figure(stops, figure)
    return "\n".join(lines)


def _figure(stops: dict[str, list[int]], path: Path) -> None:
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, used in stops.items():
        xs = np.sort(np.asarray(used))
        fig.add_trace(go.Scatter(x=xs, y=np.arange(1, xs.size + 1) / max(xs.size, 1), mode="lines", name=name))
    fig.update_layout(
        title="Sequential gate at a 10-point regression: tasks read before it fails (runs it flagged)",
        xaxis_title="tasks read",
        yaxis_title="share of flagged runs stopped by then",
        width=820,
        height=420,
    )
    fig.write_image(str(path))


def section_coverage(rng: np.random.Generator, scale: float) -> str:
    kinds: dict[str, tuple[Callable[[int], np.ndarray], float]] = {
        "continuous Beta(2,2)": (lambda n: rng.beta(2, 2, n), 0.5),
        "graded 0/.25/.5/.75/1": (
            lambda n: rng.choice([0, 0.25, 0.5, 0.75, 1], p=[0.3, 0.1, 0.2, 0.1, 0.3], size=n),
            0.475,
        ),
        "zero-inflated 60%": (lambda n: np.where(rng.random(n) < 0.4, rng.beta(2, 5, n), 0.0), 0.4 * 2 / 7),
        "zero-inflated 90%": (lambda n: np.where(rng.random(n) < 0.1, rng.beta(2, 2, n), 0.0), 0.05),
    }
    lines = ["| scores | tasks | score_interval | percentile bootstrap |", "|---|---|---|---|"]
    for name, (draw, truth) in kinds.items():
        for n in (10, 20, 30):
            reps = _reps(2000, scale)
            new = old = 0
            for r in range(reps):
                x = draw(n)
                lo, hi = compare.score_interval(x)
                new += lo <= truth <= hi
                lo, hi = stats.bootstrap_mean_ci(x, np.random.default_rng(r), n_boot=500)
                old += lo <= truth <= hi
            lines.append(f"| {name} | {n} | {100 * new / reps:.1f}% | {100 * old / reps:.1f}% |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every repetition count")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--only", nargs="*", default=None, help="sections to run (default: all)")
    parser.add_argument("--figure", type=Path, default=None, help="PNG of the sequential gate's stopping times")
    args = parser.parse_args(argv)
    sections: dict[str, Callable[[np.random.Generator], str]] = {
        "leaderboard": lambda g: section_leaderboard(g, args.scale),
        "gate-size": lambda g: section_gate(g, args.scale, drops=(0.0,)),
        "gate-power": lambda g: section_gate(g, args.scale, drops=(0.05, 0.10)),
        "plan": lambda g: section_plan(g, args.scale),
        "sequential": lambda g: section_sequential(g, args.scale, args.figure),
        "coverage": lambda g: section_coverage(g, args.scale),
    }
    for name, run in sections.items():
        if args.only and name not in args.only:
            continue
        start = time.process_time()
        table = run(np.random.default_rng([args.seed, len(name)]))
        print(f"## {name} ({time.process_time() - start:.0f} s CPU)\n\n{table}\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
