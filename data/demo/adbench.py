"""AD-Bench demo snapshot: 100 tasks, ten models x 3 samples, calibrated to the paper's Tables 2 and 3.

The generator works backwards from the published numbers (``../shared/seeds/ad-bench.md``):

* Table 2 gives, per model and level, Pass@1 (successes / attempts) and Pass@3 (tasks solved at least
  once / tasks). :func:`solve_level` finds the integer successes and solved tasks that print as the
  table's cells, then :func:`split_counts` an exact split of tasks into 0/1/2/3 successes.
* The average trajectory length (tool calls per attempt, ``summarize_results`` included) fixes the total
  number of tool calls of a run; :func:`_fit_lengths` spreads them over attempts within per-attempt
  bounds implied by each attempt's coverage and error labels.
* Section 3.2 fixes L3 trajectory coverage of three models (reference trajectory as an ordered
  sub-sequence of the attempt's tool calls).
* Table 3 fixes the count of each error code on failed attempts; #Total (all labels on failed attempts)
  is reached with the extra codes REDUNDANT, NO_TOOL and TOOL.

Every trajectory is then written so that it agrees with its labels and its coverage flag; the
self-checks in :func:`generate` assert all of this before the file is written.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BENCHMARK = "ad-bench"
EVAL_DATE = "2026-01-15"
JUDGE = "gemini-3-pro"
SEED = 20260115
LEVELS = ("L1", "L2", "L3")
N_TASKS = {"L1": 24, "L2": 47, "L3": 29}
N_SAMPLES = 3
REF_LEN = {"L1": 2, "L2": 3, "L3": 4}
LC_MIN_CALLS = 8  # an LC (long-context) attempt has at least this many tool calls
MAX_CALLS = 7  # every other attempt has at most this many
LC_MAX_CALLS = 12

GUAL = "get_user_account_list"
DAILY = "daily_data_by_group_and_field"
HOURLY = "hourly_data_by_group_and_field"
INFO = "get_account_info"
ADGROUP = "get_account_adgroup_info"
SEARCH = "search"
CALC = "calculator"
TOP = "get_top_good_creative"
SUMMARIZE = "summarize_results"
TOOLS = (GUAL, INFO, ADGROUP, DAILY, HOURLY, SEARCH, CALC, TOP, SUMMARIZE)
DATA_TOOLS = (DAILY, HOURLY, INFO, ADGROUP)  # need account ids from get_user_account_list (Figure 9)
TOOL_GRAPH = {
    GUAL: [],
    INFO: [GUAL],
    ADGROUP: [GUAL],
    DAILY: [GUAL],
    HOURLY: [GUAL],
    SEARCH: [],
    CALC: [],
    TOP: [],
    SUMMARIZE: [],
}
TABLE3_CODES = ("TE", "PE", "DE", "CE", "HAL", "LC")
OTHER_CODES = ("REDUNDANT", "NO_TOOL", "TOOL")


@dataclass(frozen=True)
class Model:
    """One row of Tables 2 and 3 plus the run metadata the demo needs."""

    agent: str
    slug: str
    family: str
    version: str
    price_in: float  # USD per million input tokens (public list prices, rounded)
    price_out: float
    table2: tuple[float, ...]  # overall P@1, P@3, L1 P@1, P@3, L2 P@1, P@3, L3 P@1, P@3, avg len
    table3: tuple[int, ...]  # TE, PE, DE, CE, HAL, LC, #Error, #Total
    l3_coverage_pct: float | None = None
    out_tokens_per_round: int = 160
    s_per_round: float = 12.0


MODELS: tuple[Model, ...] = (
    Model(
        "Gemini-3-Pro",
        "gemini3pro",
        "Gemini",
        "3-pro",
        2.0,
        12.0,
        (68.0, 83.0, 77.8, 91.7, 74.5, 91.5, 49.4, 62.1, 3.45),
        (27, 37, 7, 4, 12, 2, 89, 128),
        70.1,
        260,
        16.0,
    ),
    Model(
        "GPT-5.1",
        "gpt51",
        "GPT",
        "5.1",
        1.25,
        10.0,
        (64.7, 82.0, 88.9, 95.8, 66.7, 83.0, 41.4, 69.0, 3.48),
        (51, 25, 24, 9, 12, 2, 123, 234),
        36.8,
        240,
        14.0,
    ),
    Model(
        "HY-2.0",
        "hy20",
        "Hunyuan",
        "2.0",
        0.55,
        2.2,
        (65.7, 82.0, 84.7, 87.5, 70.2, 91.5, 42.5, 62.1, 3.71),
        (28, 27, 12, 16, 14, 4, 101, 164),
        None,
        180,
        11.0,
    ),
    Model(
        "o3",
        "o3",
        "OpenAI o",
        "o3",
        2.0,
        8.0,
        (69.0, 82.0, 86.1, 91.7, 75.9, 91.5, 43.7, 58.6, 4.15),
        (56, 14, 32, 3, 7, 1, 113, 185),
        48.3,
        420,
        19.0,
    ),
    Model(
        "GLM-4.7",
        "glm47",
        "GLM",
        "4.7",
        0.6,
        2.2,
        (64.7, 81.0, 72.2, 87.5, 72.3, 91.5, 46.0, 58.6, 3.81),
        (43, 22, 16, 15, 14, 5, 115, 172),
        None,
        200,
        10.0,
    ),
    Model(
        "DeepSeek-V3",
        "deepseekv3",
        "DeepSeek",
        "V3",
        0.27,
        1.1,
        (68.3, 80.0, 81.9, 87.5, 74.5, 87.2, 47.1, 62.1, 3.60),
        (25, 27, 13, 14, 10, 3, 92, 153),
        None,
        170,
        9.0,
    ),
    Model(
        "Kimi-K2",
        "kimik2",
        "Kimi",
        "K2",
        0.6,
        2.5,
        (64.0, 79.0, 83.3, 91.7, 66.7, 85.1, 43.7, 58.6, 4.31),
        (35, 22, 28, 7, 14, 3, 109, 195),
        None,
        190,
        10.5,
    ),
    Model(
        "Qwen3-235B",
        "qwen3-235b",
        "Qwen",
        "3-235B",
        0.22,
        0.88,
        (54.3, 68.0, 79.2, 87.5, 53.2, 72.3, 35.6, 44.8, 3.55),
        (36, 30, 34, 11, 18, 8, 137, 250),
        None,
        180,
        9.5,
    ),
    Model(
        "Qwen3-32B",
        "qwen3-32b",
        "Qwen",
        "3-32B",
        0.1,
        0.3,
        (38.0, 59.0, 50.0, 70.8, 41.8, 63.8, 21.8, 41.4, 3.75),
        (41, 81, 17, 26, 19, 2, 186, 318),
        None,
        150,
        6.0,
    ),
    Model(
        "Qwen3-8B",
        "qwen3-8b",
        "Qwen",
        "3-8B",
        0.05,
        0.2,
        (38.0, 58.0, 51.4, 79.2, 41.8, 61.7, 20.7, 34.5, 4.10),
        (65, 60, 6, 33, 21, 8, 193, 310),
        None,
        120,
        4.0,
    ),
)


# ---------------------------------------------------------------------------------------------
# Exact solving of the published cells
# ---------------------------------------------------------------------------------------------


def _prints_as(value: float, printed: float, decimals: int) -> bool:
    return abs(value - printed) <= 0.5 * 10**-decimals + 1e-9


def solve_level(n_tasks: int, pass1_pct: float, pass3_pct: float, *, n_samples: int = N_SAMPLES) -> tuple[int, int]:
    """The (successes, solved tasks) of one level that print as the given Pass@1 / Pass@3 (one decimal).

    Raises:
        ValueError: when no integer pair, or more than one, reproduces both cells.
    """
    n_att = n_tasks * n_samples
    found = [
        (s, t)
        for s in range(n_att + 1)
        for t in range(n_tasks + 1)
        if _prints_as(100 * s / n_att, pass1_pct, 1)
        and _prints_as(100 * t / n_tasks, pass3_pct, 1)
        and t <= s <= n_samples * t
    ]
    if len(found) != 1:
        raise ValueError(f"{len(found)} solutions for P@1={pass1_pct} P@3={pass3_pct} over {n_tasks} tasks")
    return found[0]


def split_counts(n_solved: int, n_success: int, *, n_samples: int = N_SAMPLES) -> dict[int, int]:
    """How many tasks get 1, 2, 3 successes: exact, and as even as the sums allow (a small search)."""
    best: tuple[int, dict[int, int]] | None = None
    for n3 in range(n_solved + 1):
        n2 = n_success - n_solved - 2 * n3
        n1 = n_solved - n2 - n3
        if n2 < 0 or n1 < 0:
            continue
        # prefer many all-correct tasks but keep some mixed ones: penalise empty middle classes
        spread = (n1 - n2) ** 2 + (n2 - max(n3 // 2, 1)) ** 2
        if best is None or spread < best[0]:
            best = (spread, {1: n1, 2: n2, 3: n3})
    if best is None:
        raise ValueError(f"cannot split {n_success} successes over {n_solved} tasks")
    return best[1]


def run_targets(model: Model) -> dict[str, Any]:
    """Integer targets of one model: successes/solved per level, total tool calls, L3 covered attempts."""
    t2 = model.table2
    out: dict[str, Any] = {"levels": {}}
    for i, level in enumerate(LEVELS):
        out["levels"][level] = solve_level(N_TASKS[level], t2[2 + 2 * i], t2[3 + 2 * i])
    n_att = sum(N_TASKS.values()) * N_SAMPLES
    succ = sum(s for s, _ in out["levels"].values())
    solved = sum(t for _, t in out["levels"].values())
    if not (_prints_as(100 * succ / n_att, t2[0], 1) and _prints_as(100 * solved / 100, t2[1], 1)):
        raise ValueError(f"{model.agent}: per-level solution disagrees with the overall cells")
    calls = [c for c in range(n_att, n_att * LC_MAX_CALLS) if _prints_as(c / n_att, t2[8], 2)]
    out["total_calls"] = min(calls, key=lambda c: abs(c / n_att - t2[8]))
    n3 = N_TASKS["L3"] * N_SAMPLES
    if model.l3_coverage_pct is not None:
        cov = [c for c in range(n3 + 1) if _prints_as(100 * c / n3, model.l3_coverage_pct, 1)]
        if len(cov) != 1:
            raise ValueError(f"{model.agent}: L3 coverage {model.l3_coverage_pct} is ambiguous")
        out["l3_covered"] = cov[0]
    return out


# ---------------------------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------------------------

METRICS = (
    ("cost", "cost", "CNY"),
    ("clicks", "valid_click_count", ""),
    ("impressions", "view_count", ""),
    ("conversions", "conversions_count", ""),
    ("deep conversions", "deep_conversions_count", ""),
    ("CTR", "ctr", "%"),
    ("CPC", "cpc", "CNY"),
    ("conversion cost", "conversions_cost", "CNY"),
)
WINDOWS = (
    ("yesterday", 1),
    ("over the past 7 days", 7),
    ("last week", 7),
    ("over the past 30 days", 30),
    ("this month so far", 14),
    ("over the past 3 days", 3),
)
INDUSTRIES = ("e-commerce", "education", "gaming", "local services", "finance", "travel")

# (level, category, query template, reference trajectory, group_by_type, human minutes range)
TEMPLATES: dict[str, tuple[tuple[str, str, tuple[str, ...], str, tuple[int, int]], ...]] = {
    "L1": (
        ("retrieval", "Get the total {metric} across all accounts {window}.", (GUAL, DAILY), "SUM", (3, 6)),
        ("retrieval", "What was the total {metric} of account {acct} {window}?", (GUAL, DAILY), "SUM", (3, 6)),
        ("retrieval", "What was the {metric} of all accounts at {hour}:00 yesterday?", (GUAL, HOURLY), "HOUR", (3, 7)),
        ("account", "What is the daily budget and audit status of account {acct}?", (GUAL, INFO), "SUM", (2, 5)),
        ("account", "How many ad groups are currently active in account {acct}?", (GUAL, ADGROUP), "SUM", (3, 6)),
    ),
    "L2": (
        ("comparison", "Compute the week-over-week {metric} growth rate.", (GUAL, DAILY, CALC), "WEEK", (6, 12)),
        (
            "filtering",
            "Count how many days {window} had total daily cost exceeding {threshold}.",
            (GUAL, DAILY, CALC),
            "DATE",
            (7, 14),
        ),
        (
            "comparison",
            "Which hour yesterday had the highest {metric}, and what share of the day's total was it?",
            (GUAL, HOURLY, CALC),
            "HOUR",
            (8, 15),
        ),
        (
            "filtering",
            "What was the average {metric} of ad group {adgroup} in account {acct} {window}?",
            (GUAL, ADGROUP, DAILY),
            "ADGROUP_ID",
            (8, 16),
        ),
        (
            "comparison",
            "Which region contributed the most {metric} {window}, and what share of the total?",
            (GUAL, DAILY, CALC),
            "REGION",
            (7, 14),
        ),
        (
            "filtering",
            "Which accounts spent more than {threshold} {window}, and how many are there?",
            (GUAL, DAILY, CALC),
            "ACCOUNT_ID",
            (6, 13),
        ),
    ),
    "L3": (
        (
            "creative",
            "Analyze whether video and image creatives of account {acct} both meet the excellence threshold yesterday.",
            (GUAL, SEARCH, DAILY, CALC),
            "MATERIAL_VIDEO",
            (14, 28),
        ),
        (
            "benchmark",
            "Is the conversion cost of account {acct} {window} above the industry benchmark, and by how much?",
            (GUAL, SEARCH, DAILY, CALC),
            "SUM",
            (15, 30),
        ),
        (
            "creative",
            "Compare the CTR of our best creative yesterday with top peer creatives in {industry}.",
            (TOP, GUAL, DAILY, CALC),
            "CREATIVE_ID",
            (16, 32),
        ),
        (
            "diagnosis",
            "Find ad groups in account {acct} whose bid is below the suggested level and whose CTR "
            "dropped week over week.",
            (GUAL, ADGROUP, DAILY, CALC),
            "ADGROUP_ID",
            (20, 40),
        ),
        (
            "pacing",
            "Did any hour yesterday breach the cost pacing rule for account {acct}?",
            (SEARCH, GUAL, HOURLY, CALC),
            "HOUR",
            (15, 30),
        ),
    ),
}


@dataclass
class Task:
    """A generated task, with the context its tool arguments are built from."""

    task_id: str
    level: str
    category: str
    query: str
    reference: tuple[str, ...]
    answer: str
    human_minutes: float
    difficulty: float
    ctx: dict[str, Any] = field(default_factory=dict)

    def record(self, *, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The native v1 task record."""
        rec = {
            "record": "task",
            "benchmark": BENCHMARK,
            "task_id": self.task_id,
            "level": self.level,
            "category": self.category,
            "capabilities": sorted(set(self.reference)),
            "human_minutes": self.human_minutes,
            "query": self.query,
            "reference_answer": self.answer,
            "reference_trajectory": list(self.reference),
        }
        rec.update(extra or {})
        return rec


def _answer(rng: np.random.Generator, level: str, template: str, metric: tuple[str, str, str]) -> str:
    value = float(rng.uniform(1_000, 2_000_000))
    if level == "L1":
        return f"{value:,.0f}" if metric[2] != "%" else f"{rng.uniform(0.5, 8):.2f}%"
    if level == "L2":
        if "Count how many" in template or "how many are there" in template:
            return f"{int(rng.integers(3, 29))}"
        return f"{rng.uniform(-35, 60):.2f}%"
    verdict, ours, ref = str(rng.choice(["Yes", "No"])), rng.uniform(2, 9), rng.uniform(2, 9)
    if "ad groups" in template:
        return f"{int(ours)} ad groups (bid below suggestion and CTR down week over week)"
    if "top peer" in template:
        return f"Our best creative CTR {ours:.2f}% vs peer median {ref:.2f}%"
    return f"{verdict} -- {ours:.2f}% vs threshold {ref:.2f}%"


def make_task(rng: np.random.Generator, task_id: str, level: str, index: int, *, today: str, difficulty: float) -> Task:
    """One task of ``level`` built from the level's templates (``index`` picks the template)."""
    templates = TEMPLATES[level]
    category, template, ref, group_by, minutes = templates[index % len(templates)]
    metric = METRICS[int(rng.integers(len(METRICS)))]
    window = WINDOWS[int(rng.integers(len(WINDOWS)))]
    ctx = {
        "acct": f"acct_{int(rng.integers(1, 156)):03d}",
        "adgroup": f"ag_{int(rng.integers(10000, 99999))}",
        "hour": int(rng.integers(0, 24)),
        "threshold": f"{int(rng.integers(5, 40)) * 100_000:,}",
        "industry": INDUSTRIES[int(rng.integers(len(INDUSTRIES)))],
        "metric": metric[0],
        "field": metric[1],
        "window": window[0],
        "days": window[1],
        "group_by": group_by,
        "today": today,
        "user_id": f"u{int(rng.integers(1000, 9999))}",
        "n_accounts": int(rng.integers(3, 160)),
    }
    ctx["search"] = {
        "creative": "CTR excellence threshold",
        "benchmark": "conversion cost benchmark",
        "pacing": "cost pacing rule",
    }.get(category, f"{metric[0]} definition")[:20]
    query = template.format(**ctx)
    return Task(
        task_id=task_id,
        level=level,
        category=category,
        query=query,
        reference=ref,
        answer=_answer(rng, level, template, metric),
        human_minutes=float(rng.integers(minutes[0], minutes[1] + 1)),
        difficulty=difficulty,
        ctx=ctx,
    )


def make_tasks(rng: np.random.Generator) -> list[Task]:
    """The 100 snapshot tasks: 24 L1, 47 L2, 29 L3, with a latent difficulty used to order outcomes."""
    tasks = []
    shift = {"L1": -1.2, "L2": 0.0, "L3": 1.2}
    for level in LEVELS:
        for i in range(N_TASKS[level]):
            diff = float(shift[level] + rng.normal(0, 0.8))
            tasks.append(make_task(rng, f"{level}-{i + 1:03d}", level, i, today=EVAL_DATE, difficulty=diff))
    return tasks


# ---------------------------------------------------------------------------------------------
# Attempt plans
# ---------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """What one attempt must look like: outcome, coverage, error labels and number of tool calls."""

    task: Task
    sample: int
    passed: bool
    covered: bool
    labels: list[str] = field(default_factory=list)
    n_calls: int = 0

    def bounds(self) -> tuple[int, int]:
        """Smallest and largest number of tool calls (summarize included) consistent with the plan."""
        r = len(self.task.reference)
        has = set(self.labels)
        if self.covered:
            lo = r + 1 + ("CE" in has and CALC not in self.task.reference) + ("REDUNDANT" in has)
        elif self.passed:
            lo = r + (self.task.level == "L1")  # an alternative route: one reference tool swapped or skipped
        else:
            needs_tool = bool(has & {"DE", "PE", "TOOL", "REDUNDANT", "CE"}) or not has & {"HAL", "NO_TOOL", "TE"}
            # a calculator needs data fetched before it (one more when a tool error may hit that fetch)
            lo = 1 + needs_tool + ("CE" in has) * (1 + ("TOOL" in has)) + ("REDUNDANT" in has) * (1 + ("TOOL" in has))
        if "LC" in has:
            return max(lo, LC_MIN_CALLS), LC_MAX_CALLS
        return lo, MAX_CALLS


def _success_matrix(
    rng: np.random.Generator, tasks: list[Task], targets: dict[str, Any]
) -> dict[tuple[str, int], bool]:
    """Which (task, sample) attempts succeed: exact per-level counts, easier tasks more often solved."""
    out: dict[tuple[str, int], bool] = {}
    for level in LEVELS:
        level_tasks = [t for t in tasks if t.level == level]
        succ, solved = targets["levels"][level]
        counts = split_counts(solved, succ)
        noisy = sorted(level_tasks, key=lambda t: t.difficulty + rng.normal(0, 0.6))
        per_task = [3] * counts[3] + [2] * counts[2] + [1] * counts[1]
        per_task += [0] * (len(level_tasks) - len(per_task))
        for task, c in zip(noisy, per_task, strict=True):
            wins = set(rng.choice(N_SAMPLES, size=c, replace=False).tolist())
            for s in range(N_SAMPLES):
                out[(task.task_id, s)] = s in wins
    return out


def _coverage(plans: list[Plan], model: Model, targets: dict[str, Any], rng: np.random.Generator) -> None:
    """Mark covered attempts: the L3 target where the paper gives one, else most successes + some failures."""
    for level in LEVELS:
        level_plans = [p for p in plans if p.task.level == level]
        wins = [p for p in level_plans if p.passed]
        losses = [p for p in level_plans if not p.passed]
        if level == "L3" and "l3_covered" in targets:
            n_cov = targets["l3_covered"]
        else:
            # the paper: L1 coverage near saturation (>93%) for most models, lower on L2 / L3
            win_rate, loss_rate = {"L1": (1.0, 0.75), "L2": (0.97, 0.3), "L3": (0.95, 0.2)}[level]
            n_cov = int(round(win_rate * len(wins) + loss_rate * len(losses)))
        n_cov_wins = min(len(wins), n_cov)
        if n_cov - n_cov_wins > len(losses):
            raise ValueError(f"{model.agent}: {n_cov} covered {level} attempts exceed the {len(level_plans)} there")
        for i in rng.permutation(len(wins))[:n_cov_wins]:
            wins[i].covered = True
        for i in rng.permutation(len(losses))[: n_cov - n_cov_wins]:
            losses[i].covered = True


def _assign_labels(failed: list[Plan], model: Model, rng: np.random.Generator) -> None:
    """Give failed attempts exactly Table 3's code counts, #Total filled with REDUNDANT / NO_TOOL / TOOL."""
    te, pe, de, ce, hal, lc, n_err, n_total = model.table3
    assert te + pe + de + ce + hal + lc == n_err, model.agent
    other = n_total - n_err
    counts = {
        "TE": te,
        "DE": de,
        "LC": lc,
        "CE": ce,
        "PE": pe,
        "HAL": hal,
        "REDUNDANT": other - 2 * (other // 3),
        "NO_TOOL": other // 3,
        "TOOL": other // 3,
    }
    order = {"L1": 2, "L2": 1, "L3": 0}
    for code, k in counts.items():
        pool = [p for p in failed if code not in p.labels]
        if code in ("TE", "DE"):
            pool = [p for p in pool if not p.covered]
        tie = rng.random(len(pool))
        level_pref = [order[p.task.level] if code in ("LC", "CE") else 0 for p in pool]
        ranked = sorted(range(len(pool)), key=lambda i: (len(pool[i].labels) > 0, level_pref[i], tie[i]))
        if len(ranked) < k:
            raise ValueError(f"{model.agent}: not enough failed attempts for {k} x {code}")
        for i in ranked[:k]:
            pool[i].labels.append(code)
    if any(not p.labels for p in failed):
        raise ValueError(f"{model.agent}: a failed attempt has no label")


def _fit_lengths(plans: list[Plan], total: int, rng: np.random.Generator) -> None:
    """Tool calls per attempt within each plan's bounds, summing exactly to ``total``."""
    bounds = [p.bounds() for p in plans]
    lengths = [lo for lo, _ in bounds]
    lo_sum, hi_sum = sum(lengths), sum(hi for _, hi in bounds)
    if not lo_sum <= total <= hi_sum:
        raise ValueError(f"cannot fit {total} tool calls in [{lo_sum}, {hi_sum}]")
    extra = total - lo_sum
    order = list(rng.permutation(len(plans)))
    while extra:
        moved = False
        for i in order:
            if extra and lengths[i] < bounds[i][1] and (lengths[i] < bounds[i][0] + 2 or "LC" in plans[i].labels):
                lengths[i] += 1
                extra -= 1
                moved = True
        if not moved:  # every attempt got +2: allow more
            for i in order:
                if extra and lengths[i] < bounds[i][1]:
                    lengths[i] += 1
                    extra -= 1
    for p, n in zip(plans, lengths, strict=True):
        p.n_calls = n


def _shorten(plans: list[Plan], total: int) -> None:
    """When the minimal lengths exceed the budget, uncover L2 attempts until they fit.

    First covered L2 failures become short uncovered ones (a premature stop), then covered L2 wins take
    an alternative route that skips one reference tool (e.g. the calculator). Only L2 changes, because the
    paper fixes no L2 coverage; :func:`_fit_lengths` re-checks the fit.
    """
    need = sum(p.bounds()[0] for p in plans) - total
    l2 = [p for p in plans if p.task.level == "L2" and p.covered]
    for p in [q for q in l2 if not q.passed] + [q for q in l2 if q.passed]:
        if need <= 0:
            return
        before = p.bounds()[0]
        p.covered = False
        need -= before - p.bounds()[0]


def make_plans(model: Model, tasks: list[Task], rng: np.random.Generator) -> list[Plan]:
    """Every attempt of one model, reproducing the model's Table 2 / Table 3 / coverage targets."""
    targets = run_targets(model)
    wins = _success_matrix(rng, tasks, targets)
    plans = [
        Plan(task=t, sample=s, passed=wins[(t.task_id, s)], covered=False) for t in tasks for s in range(N_SAMPLES)
    ]
    _coverage(plans, model, targets, rng)
    failed = [p for p in plans if not p.passed]
    _assign_labels(failed, model, rng)
    if sum(p.bounds()[0] for p in plans) > targets["total_calls"]:
        _shorten(plans, targets["total_calls"])
    _fit_lengths(plans, targets["total_calls"], rng)
    return plans


# ---------------------------------------------------------------------------------------------
# Trajectories
# ---------------------------------------------------------------------------------------------


def _dates(ctx: dict[str, Any]) -> tuple[str, str]:
    today = dt.date.fromisoformat(ctx["today"])
    end = today - dt.timedelta(days=1)
    begin = end - dt.timedelta(days=int(ctx["days"]) - 1)
    return begin.isoformat(), end.isoformat()


def tool_call(tool: str, ctx: dict[str, Any], *, variant: int = 0) -> tuple[dict[str, Any], str]:
    """Plausible (args, result) of ``tool`` for a task context; ``variant`` makes distinct extra calls."""
    begin, end = _dates(ctx)
    acct = ctx["acct"]
    if tool == GUAL:
        return (
            {"user_id": ctx["user_id"], "page_size": 200},
            f"{ctx['n_accounts']} authorized accounts (acct_001 ... acct_{ctx['n_accounts']:03d}), incl. {acct}",
        )
    if tool == DAILY:
        args = {
            "user_id": ctx["user_id"],
            "begin": begin,
            "end": end,
            "group_by_type": ctx["group_by"],
            "fields": [ctx["field"]],
            "account_id_list": [acct],
            "page_size": 100,
        }
        if variant:
            args["page"] = variant + 1
        return args, f"{min(int(ctx['days']), 30)} rows: [{{'date': '{end}', '{ctx['field']}': 18342.17}}, ...]"
    if tool == HOURLY:
        args = {
            "user_id": ctx["user_id"],
            "date": end,
            "group_by_type": "HOUR",
            "fields": [ctx["field"]],
            "page_size": 24,
        }
        if variant:
            args["page"] = variant + 1
        return args, f"24 rows: [{{'hour': {ctx['hour']}, '{ctx['field']}': 912.4}}, ...]"
    if tool == INFO:
        return (
            {"user_id": ctx["user_id"], "account_id_list": [acct] if not variant else [f"acct_{variant:03d}"]},
            f"{acct}: daily budget 50000 CNY, audit status APPROVED, industry {ctx['industry']}",
        )
    if tool == ADGROUP:
        args = {"user_id": ctx["user_id"], "account_id": acct}
        if variant:
            args["page"] = variant + 1
        return args, f"37 ad groups ({ctx['adgroup']} ACTIVE, bid 2.40 CNY, placement WECHAT_MOMENTS, ...)"
    if tool == SEARCH:
        words = (
            "CTR excellence threshold",
            "pacing rule",
            "conversion cost benchmark",
            "CPC definition",
            "deep conversion",
            "budget pacing",
            "creative grading",
            "attribution window",
        )
        others = [w for w in words if w[:20] != ctx["search"]]
        query = (
            ctx["search"]
            if not variant
            else (others[(variant - 1) % len(others)] + (f" {variant}" if variant > len(others) else ""))
        )
        return {"query": query[:20]}, f"Knowledge: {query}: industry benchmark 5%, see platform guide 4.2"
    if tool == CALC:
        return (
            {
                "code": f"rows = data['{ctx['field']}']\nprint(round(sum(rows) / len(rows), 4))"
                + (f"  # pass {variant}" if variant else "")
            },
            "0.0629",
        )
    if tool == TOP:
        return (
            {"query": f"{ctx['industry']} video top creatives" + (f" p{variant}" if variant else "")},
            "Top 10 peer creatives, median CTR 5.8%",
        )
    raise ValueError(tool)


_WRONG_ARG = {
    DAILY: ("group_by_type", "SUM"),
    HOURLY: ("date", "2025-12-31"),
    INFO: ("account_id_list", ["ag_10001"]),
    ADGROUP: ("account_id", "ag_10001"),
    SEARCH: ("query", "cost"),
    CALC: ("code", "print(sum(data['cost']))"),
    TOP: ("query", "all industries"),
    GUAL: ("page_size", 1),
}


def _non_calc_before_calc(body: list[str]) -> int:
    """Number of non-calculator calls before the last calculator call (all calls when there is none)."""
    last = max((i for i, t in enumerate(body) if t == CALC), default=len(body))
    return sum(t != CALC for t in body[:last])


def _body(plan: Plan, rng: np.random.Generator) -> list[str]:
    """The ordered tool names (before summarize) of an attempt, exactly ``n_calls - 1`` long."""
    ref = list(plan.task.reference)
    has = set(plan.labels)
    want = plan.n_calls - 1
    if plan.covered:
        body = ref[:]
        if "CE" in has and CALC not in body:
            body.append(CALC)
        missing = None
    else:
        if "DE" in has:
            missing = GUAL
        elif plan.passed:
            missing = next((t for t in (CALC, SEARCH, ADGROUP) if t in ref), ref[-1])
        else:
            options = [t for t in ref if t != GUAL and not ("CE" in has and t == CALC)]
            missing = options[int(rng.integers(len(options)))]
        body = [t for t in ref if t != missing]
        if "CE" in has and CALC not in body:
            body.append(CALC)
        if plan.passed and plan.task.level == "L1":
            body.append(HOURLY if missing == DAILY else DAILY)  # same data, other granularity
        needed = {CALC} if "CE" in has else set()
        if has & {"DE"}:
            needed.add(next(t for t in body if t in DATA_TOOLS))
        n_before_calc = (1 + ("TOOL" in has)) if "CE" in has else 0
        while len(body) > max(want - ("REDUNDANT" in has), 0):
            # premature termination: drop the last tool that no label needs
            drop = next(
                (
                    i
                    for i in range(len(body) - 1, -1, -1)
                    if body[i] not in needed and _non_calc_before_calc(body[:i] + body[i + 1 :]) >= n_before_calc
                ),
                None,
            )
            if drop is None:
                break
            body.pop(drop)
        if not body and has & {"PE", "TOOL", "REDUNDANT"}:
            body = [GUAL]
    if "REDUNDANT" in has:
        assert body, (plan.task.task_id, plan.labels)
        body.insert(1, "__repeat__")  # the forgotten first call, made again with identical arguments
    pool = [
        t
        for t in (SEARCH, INFO, TOP, ADGROUP, DAILY)
        if t != missing and t in TOOL_GRAPH and (t not in DATA_TOOLS or GUAL in body or "DE" in has)
    ]
    k = 0
    while len(body) < want:
        # extra calls go before the calculator, which stays the last step before summarize
        at = max((i for i, t in enumerate(body) if t == CALC), default=len(body))
        body.insert(at, pool[k % len(pool)])
        k += 1
    assert len(body) == want, (plan.task.task_id, plan.labels, body, want)
    return body


def _call_steps(
    names: list[str], ctx: dict[str, Any], rng: np.random.Generator
) -> tuple[list[dict[str, Any]], list[Any]]:
    """Tool-call steps for the planned tool names; ``__repeat__`` re-issues the previous call verbatim."""
    steps: list[dict[str, Any]] = []
    labels: list[Any] = []
    seen: Counter[str] = Counter()
    for name in names:
        if name == "__repeat__":
            prev = steps[-1]
            steps.append({**prev, "round": len(steps) + 1})
            labels.append(
                {
                    "code": "REDUNDANT",
                    "step": len(steps) - 1,
                    "detail": f"{prev['tool']} called again with identical arguments",
                }
            )
            continue
        args, result = tool_call(name, ctx, variant=seen[name])
        seen[name] += 1
        steps.append(
            {
                "round": len(steps) + 1,
                "kind": "tool_call",
                "tool": name,
                "args": args,
                "result": result,
                "latency_s": round(float(rng.uniform(0.3, 2.5)), 2),
            }
        )
    return steps, labels


def _tool_error_step(steps: list[dict[str, Any]], has: set[str]) -> int:
    """The step a TOOL fault hits, chosen so that no other rule is triggered by the failure.

    Never one of an identical pair (a retry after a failure is not redundant), never the account list
    when data tools follow it (they would lack their prerequisite), never the only call before the
    calculator (it would compute without data), never a calculator whose code is the CE fault.
    """
    keys = [json.dumps([st["tool"], st["args"]], sort_keys=True) for st in steps]
    calc = max((j for j, st in enumerate(steps) if st["tool"] == CALC), default=len(steps))

    def ok(j: int) -> bool:
        tool = steps[j]["tool"]
        if keys.count(keys[j]) > 1 or (tool == CALC and "CE" in has):
            return False
        if tool == GUAL and any(st["tool"] in DATA_TOOLS for st in steps[j + 1 :]):
            return False
        return not (j < calc < len(steps) and sum(st["tool"] != CALC for st in steps[:calc]) < 2)

    order = sorted(
        range(len(steps)), key=lambda j: (steps[j]["tool"] not in (*DATA_TOOLS, SEARCH), steps[j]["tool"] == CALC, j)
    )
    return next(j for j in order if ok(j))


def _inject_faults(steps: list[dict[str, Any]], has: set[str]) -> list[Any]:
    """Make the steps carry the TOOL / CE / PE faults the labels claim; return those labels."""
    labels: list[Any] = []
    if "TOOL" in has:
        i = _tool_error_step(steps, has)
        steps[i] = {**steps[i], "result": None, "error": "upstream timeout (HTTP 504)"}
        labels.append({"code": "TOOL", "step": i, "detail": f"{steps[i]['tool']} failed: upstream timeout"})
    calc_ix: set[int] = set()
    if "CE" in has:
        i = max(j for j, st in enumerate(steps) if st["tool"] == CALC)
        steps[i] = {
            **steps[i],
            "args": {**steps[i]["args"], "code": "rows = data['cost']\nprint(sum(rows) / 7)"},
            "result": "1.0391",
        }
        calc_ix.add(i)
        labels.append({"code": "CE", "step": i, "detail": "calculator divided by a fixed 7 instead of the row count"})
    if "PE" in has:
        i = next(
            (j for j, st in enumerate(steps) if st["tool"] in DATA_TOOLS),
            next(j for j in range(len(steps)) if j not in calc_ix),
        )
        tool, same = steps[i]["tool"], steps[i]["args"]
        key, bad = _WRONG_ARG[tool]
        for j, st in enumerate(steps):  # an identical repeat stays identical
            if st["tool"] == tool and st["args"] == same:
                steps[j] = {**st, "args": {**same, key: bad}, "result": "rows returned for the wrong scope"}
        labels.append({"code": "PE", "step": i, "detail": f"{tool}: wrong {key} {bad!r}"})
    return labels


def _trajectory_labels(steps: list[dict[str, Any]], plan: Plan, has: set[str]) -> list[Any]:
    """Labels read off the trajectory shape (DE, TE, NO_TOOL, HAL, LC); NO_TOOL adds its message round."""
    labels: list[Any] = []
    if "DE" in has:
        i = next(j for j, st in enumerate(steps) if st["tool"] in DATA_TOOLS)
        labels.append({"code": "DE", "step": i, "detail": f"{steps[i]['tool']} called before get_user_account_list"})
    if "TE" in has:
        called = {st["tool"] for st in steps}
        missing = [t for t in plan.task.reference if t not in called]
        labels.append(
            {
                "code": "TE",
                "detail": "trajectory deviates from the reference"
                + (f"; never called {', '.join(missing)}" if missing else "; tools out of order"),
            }
        )
    if "NO_TOOL" in has:
        steps.append(
            {
                "round": len(steps) + 1,
                "kind": "message",
                "content": "Based on typical platform values the answer is probably about 4%.",
            }
        )
        labels.append({"code": "NO_TOOL", "step": len(steps) - 1, "detail": "a round answered without a tool call"})
    if "HAL" in has:
        labels.append({"code": "HAL", "detail": "final answer states figures no tool returned"})
    if "LC" in has:
        labels.append(
            {
                "code": "LC",
                "step": len(steps) - 1,
                "detail": f"lost track of intermediate results after {len(steps)} steps",
            }
        )
    return labels


def build_steps(
    plan: Plan, rng: np.random.Generator, *, wrong_answer: str
) -> tuple[list[dict[str, Any]], list[Any], str]:
    """Steps, error labels (with step index and detail) and final answer of one attempt."""
    has = set(plan.labels)
    steps, labels = _call_steps(_body(plan, rng), plan.task.ctx, rng)
    labels += _inject_faults(steps, has)
    labels += _trajectory_labels(steps, plan, has)
    answer = plan.task.answer if plan.passed else wrong_answer
    final_round = len(steps) + 1
    steps.append(
        {
            "round": final_round,
            "kind": "tool_call",
            "tool": SUMMARIZE,
            "args": {"query": "Resolved" if plan.passed or "TE" not in has else "Unresolved"},
            "result": "session closed",
            "latency_s": 0.2,
        }
    )
    steps.append({"round": final_round, "kind": "final", "content": answer})
    return steps, labels, answer


def _wrong_answer(task: Task, rng: np.random.Generator) -> str:
    """A plausible but wrong answer: the opposite verdict, or the first number off by up to 40 %."""
    if task.answer.startswith(("Yes", "No")):
        return ("No" if task.answer.startswith("Yes") else "Yes") + f" -- {rng.uniform(2, 9):.2f}%"
    match = re.search(r"-?[\d,]*\.?\d+", task.answer)
    if match is None:
        return "Unable to determine"
    value = float(match.group().replace(",", "")) * rng.uniform(0.6, 1.4)
    return task.answer[: match.start()] + f"{value:.2f}" + task.answer[match.end() :]


def attempt_record(
    run_id: str,
    plan: Plan,
    rng: np.random.Generator,
    *,
    out_tokens_per_round: int,
    s_per_round: float,
    judge: bool = True,
) -> dict[str, Any]:
    """The native v1 attempt record of a plan (tokens, latency and the Stage-1 judge JSON included)."""
    steps, labels, answer = build_steps(plan, rng, wrong_answer=_wrong_answer(plan.task, rng))
    n_rounds = len({s["round"] for s in steps})
    input_tokens = sum(int(2400 + 520 * r + rng.integers(0, 300)) for r in range(1, n_rounds + 1))
    output_tokens = int(n_rounds * out_tokens_per_round * rng.uniform(0.8, 1.2) + 40)
    latency = sum(s.get("latency_s", 0.0) for s in steps) + n_rounds * s_per_round * float(rng.uniform(0.8, 1.25))
    rec: dict[str, Any] = {
        "record": "attempt",
        "run_id": run_id,
        "task_id": plan.task.task_id,
        "sample": plan.sample,
        "score": 1.0 if plan.passed else 0.0,
        "passed": plan.passed,
        "answer": answer,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "latency_s": round(latency, 1),
        "status": "completed",
        "errors": labels if not plan.passed else [],
        "steps": steps,
    }
    if judge:
        codes = {lab["code"] for lab in labels}
        rec["judge"] = {
            "result_correct": plan.passed,
            "trajectory_covered": plan.covered,
            "has_instructionViolation": "NO_TOOL" in codes,
            "has_error_parameters": "PE" in codes,
            "has_redundant_calls": "REDUNDANT" in codes,
            "has_dependency_error": "DE" in codes,
            "brief_reason": "answer matches the reference"
            if plan.passed
            else "; ".join(lab.get("detail", lab["code"]) for lab in labels)[:300],
        }
    return rec


# ---------------------------------------------------------------------------------------------
# Self-checks and output
# ---------------------------------------------------------------------------------------------


def is_subsequence(reference: list[str] | tuple[str, ...], calls: list[str]) -> bool:
    """True when ``reference`` appears in order (not necessarily contiguously) in ``calls``."""
    it = iter(calls)
    return all(any(c == r for c in it) for r in reference)


def check_attempt(rec: dict[str, Any], task: Task, *, covered: bool | None = None) -> None:
    """Assert that an attempt's trajectory agrees with its labels (and coverage flag, when given)."""
    calls = [s for s in rec["steps"] if s["kind"] == "tool_call"]
    names = [s["tool"] for s in calls]
    codes = {lab["code"] for lab in rec["errors"]}
    where = f"{rec['run_id']}/{rec['task_id']}/{rec['sample']}"
    assert names[-1] == SUMMARIZE and names.count(SUMMARIZE) == 1, where
    if covered is not None:
        assert is_subsequence(task.reference, names) == covered, where
    first_gual = names.index(GUAL) if GUAL in names else len(names)
    has_de = any(n in DATA_TOOLS for n in names[:first_gual])
    assert has_de == ("DE" in codes), where
    keys = [json.dumps([s["tool"], s["args"]], sort_keys=True) for s in calls]
    assert (len(set(keys)) < len(keys)) == ("REDUNDANT" in codes), where
    assert (len(calls) >= LC_MIN_CALLS) == ("LC" in codes), where
    assert any(s["kind"] == "message" for s in rec["steps"]) == ("NO_TOOL" in codes), where
    assert any("error" in s for s in rec["steps"]) == ("TOOL" in codes), where
    if "CE" in codes:
        assert CALC in names, where
    if rec["passed"]:
        assert not codes, where


def _dump(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")


def benchmark_record() -> dict[str, Any]:
    """The AD-Bench benchmark record (binary scoring, tool dependency graph of Figure 9)."""
    return {
        "record": "benchmark",
        "benchmark": BENCHMARK,
        "version": "1",
        "scoring": "binary",
        "pass_threshold": 1.0,
        "tool_graph": TOOL_GRAPH,
        "description": "AD-Bench (demo): advertising analytics agent tasks, L1-L3, nine marketing tools",
    }


def run_record(model: Model, *, run_id: str, eval_date: str, judge: str | None = JUDGE) -> dict[str, Any]:
    """The native v1 run record of a model."""
    rec = {
        "record": "run",
        "run_id": run_id,
        "benchmark": BENCHMARK,
        "agent": model.agent,
        "family": model.family,
        "agent_version": model.version,
        "kind": "llm",
        "eval_date": eval_date,
        "price_input_per_mtok": model.price_in,
        "price_output_per_mtok": model.price_out,
    }
    if judge:
        rec["judge"] = judge
    return rec


def snapshot_run_id(model: Model) -> str:
    """Run id of a model's 2026-01-15 paper snapshot run."""
    return f"adb-{model.slug}-2026-01"


def build_records(seed: int = SEED) -> tuple[list[Task], list[dict[str, Any]]]:
    """The tasks and every record of the snapshot (benchmark, tasks, runs, attempts), self-checked."""
    rng = np.random.default_rng(seed)
    tasks = make_tasks(rng)
    by_id = {t.task_id: t for t in tasks}
    records: list[dict[str, Any]] = [benchmark_record()] + [t.record() for t in tasks]
    for model in MODELS:
        run_id = snapshot_run_id(model)
        records.append(run_record(model, run_id=run_id, eval_date=EVAL_DATE))
        plans = make_plans(model, tasks, rng)
        for plan in plans:
            rec = attempt_record(
                run_id, plan, rng, out_tokens_per_round=model.out_tokens_per_round, s_per_round=model.s_per_round
            )
            check_attempt(rec, by_id[plan.task.task_id], covered=plan.covered)
            records.append(rec)
    return tasks, records


def generate(out: Path) -> list[Path]:
    """Write ``adbench.jsonl`` into ``out`` and return it (the demo GENERATORS entry)."""
    _, records = build_records()
    path = out / "adbench.jsonl"
    _dump(path, records)
    return [path]
