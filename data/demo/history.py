"""AD-Bench two-year history (2024-06 .. 2025-12) generated from a known 2PL item-response model.

Four evaluation periods share the benchmark ``ad-bench``. Between periods the task pool is refreshed
as xbench does (Table 10 there): the items most agents already solve are retired and harder new ones
(new task ids and task records) are added, so later periods hold harder items. Model families release
new versions over time (``family`` + ``agent_version``); a version evaluated in two periods keeps one
ability, which is what links the periods. The last period also reuses some of the 2026-01 paper tasks
(anchors), so the paper snapshot connects to the history.

Outcomes: ``P(pass) = sigmoid(a_j * (theta_i - b_j))``, one sample per task and run (enough for an
ability index; Pass@3 is a snapshot-only figure). Because item difficulty rises with ability, raw pass
rates stay flat while abilities climb: raw rates alone mislead. The generating abilities, difficulties
and discriminations are committed in ``history_truth.csv`` (``python -m data.demo.history --truth``
rewrites it; a test checks that it matches this code) so estimates can be compared with them.
"""

from __future__ import annotations

import argparse
import csv
import io
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from data.demo import adbench as adb

SEED = 20240615
PERIODS = ("2024-06-15", "2024-12-15", "2025-06-15", "2025-12-15")
POOL_SIZE = 48
N_REFRESH = 16  # items retired and added at each refresh
N_ANCHORS = 12  # paper tasks reused in the last period
NEW_ITEM_OFFSET = 1.9  # new items sit this far above the mean ability of the period they join
TRUTH_CSV = Path(__file__).resolve().parent / "history_truth.csv"
TRUTH_COLUMNS = (
    "kind",
    "id",
    "family",
    "agent_version",
    "eval_date",
    "level",
    "ability",
    "difficulty",
    "discrimination",
)


@dataclass(frozen=True)
class Version:
    """One released model version: its true ability and the periods (indices) it was evaluated in."""

    agent: str
    family: str
    version: str
    theta: float
    periods: tuple[int, ...]
    price_in: float
    price_out: float
    out_tokens_per_round: int = 180
    s_per_round: float = 10.0


VERSIONS: tuple[Version, ...] = (
    Version("Gemini-1.5-Pro", "Gemini", "1.5-pro", -0.6, (0, 1), 1.25, 5.0, 200, 12.0),
    Version("Gemini-2.0-Flash", "Gemini", "2.0-flash", 0.0, (1, 2), 0.10, 0.40, 150, 6.0),
    Version("Gemini-2.5-Pro", "Gemini", "2.5-pro", 1.0, (2, 3), 1.25, 10.0, 320, 15.0),
    Version("Gemini-3-Pro", "Gemini", "3-pro", 1.9, (3,), 2.0, 12.0, 260, 16.0),
    Version("GPT-4o", "GPT", "4o", -0.3, (0, 1), 2.5, 10.0, 170, 9.0),
    Version("GPT-4.1", "GPT", "4.1", 0.5, (2,), 2.0, 8.0, 180, 9.0),
    Version("GPT-5.1", "GPT", "5.1", 1.6, (3,), 1.25, 10.0, 240, 14.0),
    Version("o3", "OpenAI o", "o3", 1.1, (2, 3), 2.0, 8.0, 420, 19.0),
    Version("Claude-3.5-Sonnet", "Claude", "3.5-sonnet", -0.1, (0, 1), 3.0, 15.0, 190, 11.0),
    Version("Claude-Sonnet-4", "Claude", "sonnet-4", 0.8, (2,), 3.0, 15.0, 210, 12.0),
    Version("Claude-Sonnet-4.5", "Claude", "sonnet-4.5", 1.5, (3,), 3.0, 15.0, 220, 12.0),
    Version("DeepSeek-V2.5", "DeepSeek", "V2.5", -0.9, (0,), 0.14, 0.28, 160, 8.0),
    Version("DeepSeek-V3", "DeepSeek", "V3", 0.2, (1, 2), 0.27, 1.10, 170, 9.0),
    Version("DeepSeek-V3.2", "DeepSeek", "V3.2", 1.2, (3,), 0.28, 0.42, 170, 9.0),
    Version("Qwen2-72B", "Qwen", "2-72B", -1.1, (0,), 0.40, 1.20, 150, 7.0),
    Version("Qwen2.5-72B", "Qwen", "2.5-72B", -0.4, (1, 2), 0.40, 1.20, 150, 7.0),
    Version("Qwen3-235B", "Qwen", "3-235B", 0.7, (3,), 0.22, 0.88, 180, 9.5),
)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def level_of(difficulty: float) -> str:
    """Harder items are higher levels (later pools therefore hold more L3)."""
    return "L1" if difficulty < -0.4 else ("L2" if difficulty < 1.1 else "L3")


def run_id_of(version: Version, period: int) -> str:
    """History run ids: ``adbh-<family-version>-<yyyy-mm>``."""
    slug = f"{version.family}-{version.version}".lower().replace(" ", "").replace(".", "")
    return f"adbh-{slug}-{PERIODS[period][:7]}"


@dataclass
class Item:
    """A history item: the task plus its generating parameters and pool membership."""

    task: adb.Task
    difficulty: float
    discrimination: float
    added: str
    retired: str | None = None
    is_anchor: bool = False


def _new_item(rng: np.random.Generator, number: int, period: int, mean_b: float) -> Item:
    b = float(rng.normal(mean_b, 0.7))
    level = level_of(b)
    task = adb.make_task(rng, f"H-{number:03d}", level, int(rng.integers(0, 12)), today=PERIODS[period], difficulty=b)
    return Item(
        task=task, difficulty=round(b, 4), discrimination=round(float(rng.uniform(0.8, 2.0)), 4), added=PERIODS[period]
    )


def _anchors(rng: np.random.Generator, paper_tasks: list[adb.Task]) -> list[Item]:
    """Paper tasks reused in the last period; their difficulty on the history scale follows their level."""
    picks = [paper_tasks[int(i)] for i in sorted(rng.choice(len(paper_tasks), size=N_ANCHORS, replace=False))]
    return [
        Item(
            task=replace(t, ctx={**t.ctx, "today": PERIODS[3]}),
            difficulty=round(1.3 + 0.6 * t.difficulty, 4),
            discrimination=round(float(rng.uniform(0.8, 2.0)), 4),
            added=PERIODS[3],
            is_anchor=True,
        )
        for t in picks
    ]


def simulate(seed: int = SEED) -> dict[str, Any]:
    """Pools, runs and outcomes of every period (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    paper_tasks = adb.make_tasks(np.random.default_rng(adb.SEED))  # the snapshot's tasks, same seed
    items: list[Item] = []
    mean_theta = [float(np.mean([v.theta for v in VERSIONS if p in v.periods])) for p in range(len(PERIODS))]
    pool = [_new_item(rng, i + 1, 0, mean_theta[0] + 0.2) for i in range(POOL_SIZE)]
    items.extend(pool)
    pools: list[list[Item]] = []
    outcomes: list[tuple[Version, int, Item, bool]] = []
    for period in range(len(PERIODS)):
        if period:
            # retire the items most agents solved last period (saturated), add harder new ones
            rates = {id(it): np.mean([o[3] for o in outcomes if o[1] == period - 1 and o[2] is it]) for it in pool}
            ranked = sorted(pool, key=lambda it: (-rates[id(it)], it.task.task_id))
            for it in ranked[:N_REFRESH]:
                it.retired = PERIODS[period]
            new = [
                _new_item(rng, len(items) + i + 1, period, mean_theta[period] + NEW_ITEM_OFFSET - 1.0)
                for i in range(N_REFRESH)
            ]
            items.extend(new)
            pool = [it for it in pool if it.retired is None] + new
        current = pool + (_anchors(rng, paper_tasks) if period == len(PERIODS) - 1 else [])
        pools.append(current)
        b = np.array([it.difficulty for it in current])
        a = np.array([it.discrimination for it in current])
        for version in VERSIONS:
            if period in version.periods:
                wins = rng.random(len(current)) < _sigmoid(a * (version.theta - b))
                outcomes.extend((version, period, it, bool(w)) for it, w in zip(current, wins, strict=True))
    return {"items": items + [it for it in pools[-1] if it.is_anchor], "pools": pools, "outcomes": outcomes}


def truth_rows(sim: dict[str, Any]) -> list[dict[str, Any]]:
    """Generating parameters: one row per history run (ability) and per item (difficulty, discrimination)."""
    rows: list[dict[str, Any]] = []
    for version in VERSIONS:
        for period in version.periods:
            rows.append(
                {
                    "kind": "run",
                    "id": run_id_of(version, period),
                    "family": version.family,
                    "agent_version": version.version,
                    "eval_date": PERIODS[period],
                    "level": "",
                    "ability": version.theta,
                    "difficulty": "",
                    "discrimination": "",
                }
            )
    for it in sim["items"]:
        rows.append(
            {
                "kind": "item",
                "id": it.task.task_id,
                "family": "",
                "agent_version": "",
                "eval_date": it.added,
                "level": it.task.level,
                "ability": "",
                "difficulty": it.difficulty,
                "discrimination": it.discrimination,
            }
        )
    return rows


def truth_csv_text(sim: dict[str, Any] | None = None) -> str:
    """The exact text of ``history_truth.csv``."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=TRUTH_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(truth_rows(sim or simulate()))
    return buf.getvalue()


def _plan(rng: np.random.Generator, item: Item, passed: bool) -> adb.Plan:
    """A short trajectory plan: wins follow the reference, failures carry one plausible error label."""
    plan = adb.Plan(task=item.task, sample=0, passed=passed, covered=passed)
    if not passed:
        code = str(rng.choice(["TE", "TE", "PE", "PE", "DE", "CE", "HAL", "TOOL", "NO_TOOL"]))
        if code == "CE" and adb.CALC not in item.task.reference:
            code = "HAL"
        plan.labels = [code]
        plan.covered = code not in ("TE", "DE") and bool(rng.random() < 0.5)
    lo, hi = plan.bounds()
    plan.n_calls = int(min(hi, lo + (rng.random() < 0.3)))
    return plan


def build_records(seed: int = SEED) -> list[dict[str, Any]]:
    """Every history record: benchmark (repeated, identical), new tasks, runs and attempts."""
    sim = simulate(seed)
    rng = np.random.default_rng(seed + 1)
    records: list[dict[str, Any]] = [adb.benchmark_record()]
    for it in sim["items"]:
        if not it.is_anchor:
            extra = {"pool_added": it.added}
            if it.retired:
                extra["pool_retired"] = it.retired
            records.append(it.task.record(extra=extra))
    runs_done: set[str] = set()
    for version, period, item, passed in sim["outcomes"]:
        run_id = run_id_of(version, period)
        if run_id not in runs_done:
            runs_done.add(run_id)
            records.append(
                {
                    "record": "run",
                    "run_id": run_id,
                    "benchmark": adb.BENCHMARK,
                    "agent": version.agent,
                    "family": version.family,
                    "agent_version": version.version,
                    "kind": "llm",
                    "eval_date": PERIODS[period],
                    "judge": adb.JUDGE,
                    "price_input_per_mtok": version.price_in,
                    "price_output_per_mtok": version.price_out,
                    "samples_per_task": 1,
                }
            )
        plan = _plan(rng, item, passed)
        rec = adb.attempt_record(
            run_id, plan, rng, out_tokens_per_round=version.out_tokens_per_round, s_per_round=version.s_per_round
        )
        adb.check_attempt(rec, item.task, covered=plan.covered)
        records.append(rec)
    return records


def generate(out: Path) -> list[Path]:
    """Write ``adbench_history.jsonl`` into ``out`` (after the snapshot file) and return it."""
    path = out / "adbench_history.jsonl"
    adb._dump(path, build_records())
    return [path]


def main(argv: list[str] | None = None) -> int:
    """``python -m data.demo.history --truth`` rewrites the committed truth CSV."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--truth", action="store_true", help=f"rewrite {TRUTH_CSV.name}")
    args = parser.parse_args(argv)
    if args.truth:
        TRUTH_CSV.write_text(truth_csv_text(), encoding="utf-8")
        print(f"wrote {TRUTH_CSV}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
