"""Seeded generator of native v1 logs at scale: ``python bench/gen_logs.py --attempts 100000 --out DIR``.

Shape: several benchmarks, 50+ runs, tasks with levels and categories, attempts with about five steps each
(tool calls with JSON arguments and results of realistic, varied sizes, a final answer), error labels on
failed attempts. One file per run, as teams' harnesses write them.

``--shape short-tools`` writes another shape (the issue's second one, ``--attempts 1000000 --runs 10``): every
attempt four tool calls with short texts (a few words of arguments and result, no long result), so per-record
work weighs more than bytes; the default shape's output is unchanged.

Speed (about 15 µs per attempt instead of 3 ms): every random number of a run is drawn at once as a numpy
array, and texts are slices of one long pre-generated stream of words (cut at word boundaries), so no
per-step RNG call or string join remains in the loop; records are serialised with orjson.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson

TOOLS = [
    "search",
    "get_user_account_list",
    "daily_data_by_group_and_field",
    "calculator",
    "get_campaign_list",
    "hourly_data",
    "knowledge_base",
    "python_exec",
    "summarize_results",
]
WORDS = [
    "account",
    "campaign",
    "spend",
    "click",
    "impression",
    "conversion",
    "ratio",
    "video",
    "image",
    "budget",
    "week",
    "growth",
    "threshold",
    "creative",
    "audience",
    "segment",
    "daily",
    "hourly",
    "report",
    "summary",
    "total",
    "average",
]
ERROR_CODES = ["TE", "PE", "DE", "CE", "HAL", "LC"]
STREAM_WORDS = 1 << 20  # words in the shared text stream texts are sliced from


class _TextPool:
    """Random texts as slices of one long seeded stream of words."""

    def __init__(self, rng: np.random.Generator, n_words: int = STREAM_WORDS) -> None:
        picks = rng.integers(0, len(WORDS), n_words)
        lengths = np.array([len(w) + 1 for w in WORDS])[picks]
        self.starts = np.concatenate([[0], np.cumsum(lengths)])  # char offset of word i
        self.stream = " ".join(WORDS[i] for i in picks) + " "
        self.n_words = n_words

    def take(self, start_word: int, n_words: int) -> str:
        """``n_words`` words beginning at word ``start_word`` (wrapped into range)."""
        n_words = max(1, min(int(n_words), self.n_words - 1))
        s = int(start_word) % (self.n_words - n_words)
        return self.stream[self.starts[s] : self.starts[s + n_words] - 1]


def _line(obj: dict) -> bytes:
    return orjson.dumps(obj) + b"\n"


SHAPES = ("default", "short-tools")


def generate(out: Path, **options: Any) -> list[Path]:
    """Write ``n_runs`` files holding ``n_attempts`` attempts in total; return the file paths (the options are
    ``iter_generate``'s)."""
    return list(iter_generate(out, **options))


def iter_generate(
    out: Path,
    *,
    n_attempts: int,
    n_runs: int = 50,
    n_benchmarks: int = 4,
    samples: int = 3,
    seed: int = 0,
    shape: str = "default",
) -> Iterator[Path]:
    """``generate`` one file at a time: each file is written when the caller asks for it, so a caller that ingests
    and deletes each file before asking for the next needs the disk of one file (the files are the same)."""
    rng = np.random.default_rng(seed)
    pool = _TextPool(rng)
    out.mkdir(parents=True, exist_ok=True)
    per_run = max(1, n_attempts // n_runs)
    n_tasks = max(1, per_run // samples)
    for r in range(n_runs):
        bench = f"bench-{r % n_benchmarks}"
        path = out / f"run-{r:03d}.jsonl"
        ability = rng.normal(0, 1)
        with path.open("wb") as fh:
            fh.write(_line({"record": "benchmark", "benchmark": bench, "scoring": "binary"}))
            for t in range(n_tasks):
                fh.write(
                    _line(
                        {
                            "record": "task",
                            "benchmark": bench,
                            "task_id": f"t{t:06d}",
                            "level": f"L{1 + t % 3}",
                            "category": ["lookup", "compute", "judge"][t % 3],
                            "human_minutes": float(2 + t % 15),
                            "reference_trajectory": TOOLS[: 2 + t % 3] + ["summarize_results"],
                        }
                    )
                )
            fh.write(
                _line(
                    {
                        "record": "run",
                        "run_id": f"run-{r:03d}",
                        "benchmark": bench,
                        "agent": f"agent-{r % 17}",
                        "family": f"family-{r % 5}",
                        "agent_version": str(r),
                        "eval_date": f"202{4 + r % 3}-0{1 + r % 9}-15",
                        "price_input_per_mtok": 1.0,
                        "price_output_per_mtok": 4.0,
                    }
                )
            )
            if shape == "short-tools":
                _short_attempts(fh, rng, pool, f"run-{r:03d}", n_tasks, per_run, ability)
            else:
                _attempts(fh, rng, pool, f"run-{r:03d}", n_tasks, per_run, samples, ability)
        yield path


def _attempts(
    fh: IO[bytes],
    rng: np.random.Generator,
    pool: _TextPool,
    run_id: str,
    n_tasks: int,
    per_run: int,
    samples: int,
    ability: float,
) -> None:
    """Write ``per_run`` attempt lines; every random draw of the run is made up front, vectorised."""
    difficulty = rng.normal(0, 1, n_tasks)
    task = np.arange(per_run) % n_tasks
    passed = rng.random(per_run) < 1 / (1 + np.exp(difficulty[task] - ability))
    n_steps = rng.integers(3, 8, per_run)
    n_calls = int((n_steps - 1).sum())
    tools = rng.integers(0, len(TOOLS), n_calls)
    accounts = rng.integers(0, 999, n_calls)
    result_words = np.maximum(1, rng.lognormal(3.5, 1.0, n_calls).astype(np.int64))
    step_latency = rng.gamma(2, 0.5, n_calls)
    offsets = rng.integers(0, STREAM_WORDS, (n_calls, 2))
    final_off = rng.integers(0, STREAM_WORDS, (per_run, 2))
    in_tok = rng.integers(500, 20000, per_run)
    out_tok = rng.integers(50, 2000, per_run)
    latency = rng.gamma(3, 10, per_run)
    codes = rng.integers(0, len(ERROR_CODES), per_run)
    k = 0
    for i in range(per_run):
        steps = []
        for s in range(int(n_steps[i]) - 1):
            steps.append(
                {
                    "round": s + 1,
                    "kind": "tool_call",
                    "tool": TOOLS[tools[k]],
                    "args": {"query": pool.take(offsets[k, 0], 4), "account_id": f"a{accounts[k]}"},
                    "result": pool.take(offsets[k, 1], result_words[k]),
                    "latency_s": float(step_latency[k]),
                }
            )
            k += 1
        steps.append({"round": int(n_steps[i]), "kind": "final", "content": pool.take(final_off[i, 0], 20)})
        sample = i // n_tasks
        rec = {
            "record": "attempt",
            "run_id": run_id,
            "task_id": f"t{int(task[i]):06d}",
            "sample": sample,
            "score": int(passed[i]),
            "answer": pool.take(final_off[i, 1], 8),
            "input_tokens": int(in_tok[i]),
            "output_tokens": int(out_tok[i]),
            "latency_s": float(latency[i]),
            "steps": steps,
        }
        if not passed[i]:
            rec["errors"] = [ERROR_CODES[codes[i]]]
        fh.write(_line(rec))


def _short_attempts(
    fh: IO[bytes], rng: np.random.Generator, pool: _TextPool, run_id: str, n_tasks: int, per_run: int, ability: float
) -> None:
    """Write ``per_run`` attempt lines of four tool calls each with short texts (2-6 words of result)."""
    difficulty = rng.normal(0, 1, n_tasks)
    task = np.arange(per_run) % n_tasks
    passed = rng.random(per_run) < 1 / (1 + np.exp(difficulty[task] - ability))
    n_calls = 4 * per_run
    tools = rng.integers(0, len(TOOLS), n_calls)
    result_words = rng.integers(2, 7, n_calls)
    step_latency = rng.gamma(2, 0.5, n_calls)
    offsets = rng.integers(0, STREAM_WORDS, (n_calls, 2))
    answer_off = rng.integers(0, STREAM_WORDS, per_run)
    in_tok = rng.integers(200, 4000, per_run)
    out_tok = rng.integers(20, 400, per_run)
    latency = rng.gamma(2, 3, per_run)
    codes = rng.integers(0, len(ERROR_CODES), per_run)
    for i in range(per_run):
        k = 4 * i
        steps = [
            {
                "round": s + 1,
                "kind": "tool_call",
                "tool": TOOLS[tools[k + s]],
                "args": {"q": pool.take(offsets[k + s, 0], 2)},
                "result": pool.take(offsets[k + s, 1], result_words[k + s]),
                "latency_s": float(step_latency[k + s]),
            }
            for s in range(4)
        ]
        rec = {
            "record": "attempt",
            "run_id": run_id,
            "task_id": f"t{int(task[i]):06d}",
            "sample": i // n_tasks,
            "score": int(passed[i]),
            "answer": pool.take(answer_off[i], 3),
            "input_tokens": int(in_tok[i]),
            "output_tokens": int(out_tok[i]),
            "latency_s": float(latency[i]),
            "steps": steps,
        }
        if not passed[i]:
            rec["errors"] = [ERROR_CODES[codes[i]]]
        fh.write(_line(rec))


def main(argv: list[str] | None = None) -> int:
    """Command line: write the logs and print a one-line summary to stderr."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--attempts", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--benchmarks", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shape", choices=SHAPES, default="default", help="short-tools: four short tool calls each")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    files = generate(
        args.out,
        n_attempts=args.attempts,
        n_runs=args.runs,
        n_benchmarks=args.benchmarks,
        seed=args.seed,
        shape=args.shape,
    )
    size = sum(f.stat().st_size for f in files)
    print(f"wrote {len(files)} files, {size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
