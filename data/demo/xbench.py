"""xbench demo: Recruitment and Marketing (50 tasks each), calibrated to Tables 8 and 9 of the paper.

Source: ``../shared/seeds/xbench.md``. The generator works backwards from the published cells:

* Scoring is ``graded``: the Gemini-2.5-Flash judge gives 1-5, mapped linearly to 0-100
  (score = (raw - 1) / 4). A table cell is the mean normalised score x 100 of its tasks.
* Recruitment (Table 9): 22 Company Mapping, 15 Info-to-People, 13 People-to-Info tasks. One integer
  judgement per task cannot print as the published cells (on 13 tasks the mean moves in steps of
  1.92 points, and e.g. People-to-Info 47.2 is not such a step), so every task has TWO samples
  (``sample`` 0 and 1), each with an integer 1-5 judge score; a cell is the mean over both.
* Marketing (Table 8): 34 App, 8 Game, 8 E-commerce tasks, one sample each. The paper scores every
  recommended influencer 1-5 and aggregates them into the task score, so a task's ``raw_score`` is
  that aggregate (a mean, two decimals) and the judge object keeps the influencer counts.
* The published Average column is NOT the task-weighted mean of the category columns (nor any
  weighting of them) in either table; in our database the overall IS that mean. For every agent the
  category targets are chosen, among achievable values within 0.5 of the published cells, to bring
  the overall as close as possible to the published Average (minimax over the row's cells). Only one
  Average is then within 0.5; the others are the nearest feasible values (``docs/demo_xbench_lab.md``).
* Human minutes per task follow the paper's buckets (recruitment 12/16/34/38 % in 0-5/5-20/20-40/>40
  min; marketing 36/20/22/22 % in 0-30/30-60/60-120/>120 min).

Everything is seeded (``numpy.random.default_rng``), so the output is byte-for-byte reproducible.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SEED = 20250531
JUDGE = "gemini-2.5-flash"
TOLERANCE = 0.5  # the reproduction target: every cell within this many points
MARGIN = 0.05  # keep continuous targets this far inside the tolerance (quantisation)
RAW_STEP_MARKETING = 0.01

# Table 9 (recruitment): Average, Company, People-to-Info, Info-to-People.
RECRUITMENT_TABLE: dict[str, tuple[float, float, float, float]] = {
    "o3": (78.5, 92.3, 82.8, 66.2),
    "Perplexity-Search": (64.4, 88.5, 59.4, 51.9),
    "Claude-3.7-Sonnet": (61.4, 86.5, 47.2, 54.8),
    "o4-mini-high": (61.4, 71.3, 50.1, 62.9),
    "Gemini-2.5-Flash": (60.6, 84.5, 50.0, 52.4),
    "Perplexity-Research": (59.1, 88.5, 56.3, 41.4),
    "Gemini-2.5-Pro": (57.3, 75.0, 53.1, 48.6),
    "DeepSeek R1": (48.3, 75.0, 42.2, 34.8),
    "Grok3-Search": (47.1, 82.8, 45.0, 13.3),
    "GPT-4o": (38.9, 62.5, 30.1, 29.5),
}
RECRUITMENT_CATEGORIES = ("Company Mapping", "People-to-Info", "Info-to-People")
RECRUITMENT_COUNTS = {"Company Mapping": 22, "Info-to-People": 15, "People-to-Info": 13}

# Table 8 (marketing): Average, E-commerce, APP, Game.
MARKETING_TABLE: dict[str, tuple[float, float, float, float]] = {
    "o3": (50.8, 50.6, 46.0, 52.5),
    "Claude-3.7-Sonnet": (47.6, 46.2, 46.9, 43.5),
    "Grok3-Search": (46.5, 45.3, 52.2, 47.5),
    "Gemini-2.5-Pro": (45.9, 45.8, 40.1, 45.4),
    "Gemini-2.5-Flash": (45.3, 40.8, 45.3, 46.7),
    "o4-mini-high": (43.5, 44.1, 39.0, 40.5),
    "Perplexity-Research": (40.2, 41.3, 32.0, 44.0),
    "Perplexity-Search": (34.4, 36.6, 26.4, 31.1),
    "GPT-4o": (32.0, 30.4, 36.4, 26.8),
}
MARKETING_CATEGORIES = ("E-commerce", "App", "Game")
MARKETING_COUNTS = {"App": 34, "Game": 8, "E-commerce": 8}

# (low, high) minutes and number of tasks per bucket; the open-ended top buckets get a plausible cap.
RECRUITMENT_MINUTES = (((0, 5), 6), ((5, 20), 8), ((20, 40), 17), ((40, 120), 19))
MARKETING_MINUTES = (((0, 30), 18), ((30, 60), 10), ((60, 120), 11), ((120, 240), 11))


@dataclass(frozen=True)
class Agent:
    """An evaluated product: how it is described in the run record and how it behaves."""

    name: str
    family: str
    version: str
    kind: str
    price_in: float  # USD per million input tokens (API list price, May 2025)
    price_out: float  # USD per million output tokens
    tokens_in: int  # typical input tokens per task (search results read)
    tokens_out: int  # typical output tokens per task (reasoning + answer)
    latency_s: float  # typical wall-clock seconds per task
    request_fee_usd: float = 0.0  # per-task search/request fees on top of tokens
    day: int = 12  # day of May 2025 the product was run


AGENTS = {
    a.name: a
    for a in (
        Agent("o3", "OpenAI", "o3-2025-04-16", "llm", 10.0, 40.0, 38_000, 7_500, 190.0, day=8),
        Agent("o4-mini-high", "OpenAI", "o4-mini-high", "llm", 1.1, 4.4, 30_000, 9_000, 120.0, day=8),
        Agent("GPT-4o", "OpenAI", "gpt-4o-2024-11-20", "llm", 2.5, 10.0, 12_000, 900, 25.0, day=9),
        Agent(
            "Claude-3.7-Sonnet",
            "Anthropic",
            "claude-3-7-sonnet-20250219",
            "llm",
            3.0,
            15.0,
            28_000,
            3_200,
            95.0,
            day=13,
        ),
        Agent(
            "Gemini-2.5-Pro", "Gemini", "gemini-2.5-pro-preview-05-06", "llm", 1.25, 10.0, 32_000, 6_500, 110.0, day=14
        ),
        Agent(
            "Gemini-2.5-Flash",
            "Gemini",
            "gemini-2.5-flash-preview-04-17",
            "llm",
            0.15,
            3.5,
            30_000,
            5_000,
            55.0,
            day=14,
        ),
        Agent("Grok3-Search", "xAI", "grok-3-deepsearch", "llm", 3.0, 15.0, 26_000, 2_400, 80.0, day=16),
        Agent("DeepSeek R1", "DeepSeek", "deepseek-r1-0120", "llm", 0.55, 2.19, 14_000, 4_800, 140.0, day=16),
        Agent(
            "Perplexity-Search",
            "Perplexity",
            "sonar-pro",
            "agent",
            3.0,
            15.0,
            18_000,
            1_400,
            20.0,
            request_fee_usd=0.010,
            day=20,
        ),
        Agent(
            "Perplexity-Research",
            "Perplexity",
            "sonar-deep-research",
            "agent",
            2.0,
            8.0,
            95_000,
            9_500,
            260.0,
            request_fee_usd=0.150,
            day=20,
        ),
    )
}


# ---------------------------------------------------------------------------------------------
# Working backwards from the tables
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """One benchmark: its categories, task counts, samples per task and raw-score step."""

    benchmark: str
    table: dict[str, tuple[float, float, float, float]]
    categories: tuple[str, ...]  # in table column order
    counts: dict[str, int]
    samples: int
    raw_step: float  # 1.0: integer judge scores; 0.01: aggregated influencer scores
    minutes: tuple[tuple[tuple[int, int], int], ...]
    prefix: str


RECRUITMENT = Spec(
    "xbench-recruitment",
    RECRUITMENT_TABLE,
    RECRUITMENT_CATEGORIES,
    RECRUITMENT_COUNTS,
    2,
    1.0,
    RECRUITMENT_MINUTES,
    "rec",
)
MARKETING = Spec(
    "xbench-marketing",
    MARKETING_TABLE,
    MARKETING_CATEGORIES,
    MARKETING_COUNTS,
    1,
    RAW_STEP_MARKETING,
    MARKETING_MINUTES,
    "mkt",
)


def _pct(units: int, n_items: int, raw_step: float) -> float:
    """Mean normalised score x 100 of ``n_items`` attempts whose raw scores sum to n_items + units*step."""
    return 100.0 * units * raw_step / (4.0 * n_items)


def _candidates(published: float, n_items: int, raw_step: float) -> list[int]:
    """Totals (in raw steps above the all-1 floor) whose mean prints within the tolerance of ``published``."""
    per_point = 4.0 * n_items / (100.0 * raw_step)
    lo = math.ceil((published - TOLERANCE) * per_point)
    hi = math.floor((published + TOLERANCE) * per_point)
    margin = MARGIN if raw_step < 1 else 1e-9
    return [
        u
        for u in range(max(lo, 0), min(hi, round(4 * n_items / raw_step)) + 1)
        if abs(_pct(u, n_items, raw_step) - published) <= TOLERANCE - margin
    ]


def category_targets(spec: Spec, agent: str) -> dict[str, int]:
    """Per category, the total of raw-score steps above the floor (1) that the generated attempts must reach.

    Every category stays within the tolerance of its published cell; among those combinations the one
    minimising the row's worst deviation (Average included) wins, ties by the smallest total deviation.
    """
    average, *cells = spec.table[agent]
    n_total = sum(spec.counts.values()) * spec.samples
    options = []
    for cat, cell in zip(spec.categories, cells, strict=True):
        n_items = spec.counts[cat] * spec.samples
        cands = _candidates(cell, n_items, spec.raw_step)
        if not cands:
            raise ValueError(f"{spec.benchmark} {agent} {cat}: no achievable value within {TOLERANCE} of {cell}")
        if len(cands) > 8:  # continuous-like grid: keep the two ends and the centre
            centre = min(cands, key=lambda u: abs(_pct(u, n_items, spec.raw_step) - cell))
            cands = sorted({cands[0], cands[-1], centre})
        options.append([(u, abs(_pct(u, n_items, spec.raw_step) - cell)) for u in cands])
    best = None
    for combo in itertools.product(*options):
        overall = _pct(sum(u for u, _ in combo), n_total, spec.raw_step)
        devs = [abs(overall - average)] + [d for _, d in combo]
        key = (round(max(devs), 9), round(sum(devs), 9))
        if best is None or key < best[0]:
            best = (key, combo)
    assert best is not None
    return {cat: u for cat, (u, _) in zip(spec.categories, best[1], strict=True)}


def _refine_continuous(spec: Spec, agent: str, targets: dict[str, int]) -> dict[str, int]:
    """For near-continuous grids, move each category toward the Average by at most half the row gap."""
    if spec.raw_step >= 1:
        return targets
    average, *cells = spec.table[agent]
    n_total = sum(spec.counts.values()) * spec.samples
    weights = {c: spec.counts[c] * spec.samples / n_total for c in spec.categories}
    plain = sum(weights[c] * cell for c, cell in zip(spec.categories, cells, strict=True))
    gap = average - plain
    shift = math.copysign(min(abs(gap) / 2.0, TOLERANCE - MARGIN), gap)
    out = {}
    for cat, cell in zip(spec.categories, cells, strict=True):
        n_items = spec.counts[cat] * spec.samples
        out[cat] = round((cell + shift) * 4.0 * n_items / (100.0 * spec.raw_step))
    return out


def targets_for(spec: Spec, agent: str) -> dict[str, int]:
    """The per-category totals used for ``agent`` (see :func:`category_targets`)."""
    return _refine_continuous(spec, agent, category_targets(spec, agent))


def expected_cells(spec: Spec, agent: str) -> dict[str, float]:
    """The values the database will show: per category and ``Average`` (0-100)."""
    targets = targets_for(spec, agent)
    out = {cat: _pct(u, spec.counts[cat] * spec.samples, spec.raw_step) for cat, u in targets.items()}
    out["Average"] = _pct(sum(targets.values()), sum(spec.counts.values()) * spec.samples, spec.raw_step)
    return out


# ---------------------------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------------------------

QUERY = {
    "Company Mapping": "JD {i}: senior {role} in {domain}. List target companies and teams to source from.",
    "Info-to-People": "Find candidates who led {role} work in {domain} (mainland China, R&D on site). Names only.",
    "People-to-Info": "Candidate {i}: verify the work history and key projects of this {role} in {domain}.",
    "App": "Campaign {i}: {domain} app install push, US/CA, budget ${budget:,}. Recommend {m} influencers.",
    "Game": "Campaign {i}: {domain} game launch, YouTube/TikTok, budget ${budget:,}. Recommend {m} influencers.",
    "E-commerce": "Campaign {i}: {domain} product, drive off-site sales, budget ${budget:,}. Recommend {m} influencers.",
}
ROLES = (
    "recommendation algorithm lead",
    "battery engineer",
    "GM",
    "chip verification lead",
    "growth PM",
    "autonomous driving planner",
    "CFO",
    "LLM infra engineer",
)
DOMAINS = (
    "Industry A",
    "Industry B",
    "Industry C",
    "consumer electronics",
    "biotech",
    "fintech",
    "short video",
    "mobile games",
    "kitchen appliances",
    "fitness",
)


@dataclass(frozen=True)
class Task:
    """A generated task: id, category, latent difficulty and (marketing) the number of influencers asked for."""

    task_id: str
    category: str
    difficulty: float
    human_minutes: float
    query: str
    n_influencers: int


def _minutes(spec: Spec, rng: np.random.Generator) -> list[float]:
    values: list[float] = []
    for (lo, hi), count in spec.minutes:
        values.extend(float(m) for m in rng.integers(lo + 1, hi, size=count, endpoint=True))  # (lo, hi]
    return [values[i] for i in rng.permutation(len(values))]


def make_tasks(spec: Spec, rng: np.random.Generator) -> list[Task]:
    """Tasks grouped by category (table order), each with a difficulty that grows with its human minutes."""
    minutes = _minutes(spec, rng)
    tasks: list[Task] = []
    index = 0
    for cat in spec.categories:
        for _ in range(spec.counts[cat]):
            mins = minutes[index]
            index += 1
            difficulty = float(0.6 * np.log(mins / 30.0) + rng.normal(0.0, 0.8))
            m = int(rng.integers(5, 16)) if spec.raw_step < 1 else 0
            query = QUERY[cat].format(
                i=index,
                role=ROLES[int(rng.integers(len(ROLES)))],
                domain=DOMAINS[int(rng.integers(len(DOMAINS)))],
                budget=int(rng.integers(10, 80)) * 1000,
                m=m,
            )
            tasks.append(Task(f"{spec.prefix}-{index:03d}", cat, difficulty, mins, query, m))
    return tasks


# ---------------------------------------------------------------------------------------------
# Scores that hit the targets exactly
# ---------------------------------------------------------------------------------------------


def hit_total(base: np.ndarray, total_units: int, step: float) -> np.ndarray:
    """Raw scores on the ``step`` grid in [1, 5], close to ``base``, whose (raw - 1) sum is total_units*step.

    A common shift (found by bisection, with clipping) fixes the level; largest remainders fix the
    last units so the total is exact.
    """
    top = round(4 / step)
    want = total_units
    lo, hi = -6.0, 6.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if np.clip((base - 1 + mid) / step, 0, top).sum() < want:
            lo = mid
        else:
            hi = mid
    units = np.clip((base - 1 + hi) / step, 0, top)
    floor = np.floor(units)
    rest = int(want - floor.sum())
    order = np.argsort(-(units - floor), kind="stable")
    room = [i for i in order if floor[i] < top]
    for i in room[:rest]:
        floor[i] += 1
    assert int(floor.sum()) == want, (floor.sum(), want)
    return 1.0 + floor * step


def run_scores(spec: Spec, agent: str, tasks: list[Task], rng: np.random.Generator) -> dict[tuple[str, int], float]:
    """Raw score per (task_id, sample) for ``agent``: ability vs difficulty, then exact category totals."""
    targets = targets_for(spec, agent)
    scores: dict[tuple[str, int], float] = {}
    for cat in spec.categories:
        cat_tasks = [t for t in tasks if t.category == cat]
        mean = _pct(targets[cat], len(cat_tasks) * spec.samples, spec.raw_step) / 100.0
        logit_mean = math.log(max(mean, 0.02) / max(1 - mean, 0.02))
        base = []
        for t in cat_tasks:
            p_task = 1 / (1 + math.exp(-(logit_mean - 0.9 * (t.difficulty - 0.0))))
            for _ in range(spec.samples):
                base.append(1 + 4 * float(np.clip(p_task + rng.normal(0, 0.12), 0, 1)))
        raws = hit_total(np.array(base), targets[cat], spec.raw_step)
        keys = [(t.task_id, s) for t in cat_tasks for s in range(spec.samples)]
        for key, raw in zip(keys, raws, strict=True):
            scores[key] = round(float(raw), 2)
    return scores


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------

REASONS = {
    1: "Wrong targets; fabricated entries.",
    2: "Under half of the reference covered; hallucinations.",
    3: "Partly covered; some unsupported claims.",
    4: "Mostly covered; almost no hallucination.",
    5: "Fully covered, no hallucination.",
}


def _steps(spec: Spec, task: Task, agent: Agent, rng: np.random.Generator, answer: str) -> list[dict[str, Any]]:
    n_search = int(rng.integers(1, 3))
    steps: list[dict[str, Any]] = []
    for r in range(n_search):
        steps.append(
            {
                "round": r + 1,
                "kind": "tool_call",
                "tool": "web_search",
                "args": {"query": f"{task.category} {task.task_id} q{r + 1}"},
                "result": f"{int(rng.integers(5, 40))} results",
                "latency_s": round(float(rng.uniform(1, 6)), 1),
            }
        )
    if rng.random() < 0.4:
        site = "youtube.com" if spec.raw_step < 1 else "linkedin.com"
        steps.append(
            {
                "round": n_search + 1,
                "kind": "tool_call",
                "tool": "browse",
                "args": {"url": f"https://{site}/search?q={task.task_id}"},
                "result": "page text (truncated)",
                "latency_s": round(float(rng.uniform(2, 12)), 1),
            }
        )
    steps.append({"round": len(steps) + 1, "kind": "final", "content": answer})
    return steps


def attempt_record(
    spec: Spec, run_id: str, agent: Agent, task: Task, sample: int, raw: float, rng: np.random.Generator
) -> dict[str, Any]:
    """One attempt: raw judge score, tokens, latency, cost extras and a short trajectory."""
    scale = float(rng.lognormal(0, 0.35))
    tokens_in = int(agent.tokens_in * scale)
    tokens_out = int(agent.tokens_out * float(rng.lognormal(0, 0.3)))
    latency = round(agent.latency_s * scale * float(rng.lognormal(0, 0.2)), 1)
    if spec.raw_step < 1:
        n_selected = int(round((raw - 1) / 4 * task.n_influencers))
        answer = f"{task.n_influencers} influencers recommended (YouTube/TikTok/Instagram handles)"
        judge = {
            "score": raw,
            "n_recommended": task.n_influencers,
            "n_selected": n_selected,
            "brief_reason": f"{n_selected}/{task.n_influencers} match the ideal persona.",
        }
    else:
        answer = {
            "Company Mapping": "Target list: 8 companies, 5 teams",
            "Info-to-People": "Candidates: Person A, Person B",
            "People-to-Info": "Work history verified: 3 roles, 2 projects",
        }[task.category]
        judge = {"score": int(raw), "brief_reason": REASONS[int(raw)]}
    cost = (tokens_in * agent.price_in + tokens_out * agent.price_out) / 1e6 + agent.request_fee_usd
    return {
        "record": "attempt",
        "run_id": run_id,
        "task_id": task.task_id,
        "sample": sample,
        "raw_score": raw,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": round(cost, 5),
        "latency_s": latency,
        "status": "completed",
        "judge": judge,
        "steps": _steps(spec, task, agent, rng, answer),
        "answer": answer,
    }


def run_id_for(spec: Spec, agent: str) -> str:
    """Stable run id, e.g. ``xbench-recruitment-o4-mini-high-2025-05``."""
    slug = agent.lower().replace(" ", "-").replace(".", "")
    return f"{spec.benchmark}-{slug}-2025-05"


def build_records(spec: Spec, seed: int = SEED) -> list[dict[str, Any]]:
    """Every record of one benchmark, in ingest order."""
    rng = np.random.default_rng([seed, 1 if spec is RECRUITMENT else 2])
    description = (
        "xbench profession-aligned "
        + spec.benchmark.split("-")[1]
        + " tasks; 1-5 LLM-judge scores mapped linearly to 0-100 (demo reconstruction of the paper)"
    )
    records: list[dict[str, Any]] = [
        {
            "record": "benchmark",
            "benchmark": spec.benchmark,
            "version": "2025-05",
            "scoring": "graded",
            "pass_threshold": 0.5,
            "description": description,
        }
    ]
    tasks = make_tasks(spec, rng)
    for t in tasks:
        rec = {
            "record": "task",
            "benchmark": spec.benchmark,
            "task_id": t.task_id,
            "category": t.category,
            "capabilities": ["web_search", "browse"],
            "human_minutes": t.human_minutes,
            "query": t.query,
        }
        if t.n_influencers:
            rec["n_influencers"] = t.n_influencers
        records.append(rec)
    for name, row in spec.table.items():
        agent = AGENTS[name]
        run_id = run_id_for(spec, name)
        records.append(
            {
                "record": "run",
                "run_id": run_id,
                "benchmark": spec.benchmark,
                "agent": name,
                "family": agent.family,
                "agent_version": agent.version,
                "kind": agent.kind,
                "eval_date": f"2025-05-{agent.day:02d}",
                "judge": JUDGE,
                "price_input_per_mtok": agent.price_in,
                "price_output_per_mtok": agent.price_out,
                "interface": "web UI with search enabled",
                "published": dict(zip(("Average",) + spec.categories, row, strict=True)),
            }
        )
        scores = run_scores(spec, name, tasks, rng)
        for t in tasks:
            for s in range(spec.samples):
                records.append(attempt_record(spec, run_id, agent, t, s, scores[(t.task_id, s)], rng))
    return records


def _dump(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")


def generate(out: Path) -> list[Path]:
    """Write ``xbench-recruitment.jsonl`` and ``xbench-marketing.jsonl`` into ``out`` (a GENERATORS entry)."""
    paths = []
    for spec in (RECRUITMENT, MARKETING):
        path = out / f"{spec.benchmark}.jsonl"
        _dump(path, build_records(spec))
        paths.append(path)
    return paths
