"""Cost of the TMF paired task bootstrap (500 replicates) on its own and in the page's overview.

``python bench/bench_tmf_bootstrap.py [--shapes 100x10 1000x50 6700x50] [--db PATH --benchmark NAME [--profile N]]``

*shapes*: synthetic benchmarks of TASKS x RUNS (one sample per task, costs and success rates varied per run, three
levels), analysed with ``tmf.analyse`` for the overall slice with and without the bootstrap; the difference is the
bootstrap's cost. 6,700 tasks x 50 runs is the shape of one benchmark of the 1M-attempt bench database.
*--db*: ``tmf.overview`` (what the TMF page computes on its first render: overall with the bootstrap, the period
movie without, the level small multiples with) on a real database, timed twice (the second from a warm process,
not from Streamlit's cache, which the page adds on top).
*--profile N*: instead, where the page's first render spends its seconds: each step of its first view
(``tmf.prepare_current`` and ``finish_overview``) timed on its own (the stored IRT fit's check, the read, the overall
analysis with its bootstrap, the period labels, the human and market; ``first`` is their sum), the same first view
as the page runs it (``prepare_current``, the draw in its own thread: wall, process CPU and the calling thread's CPU),
then ``cProfile``'s N
most expensive functions of the first view, then the steps the page defers until asked (every period, the level
slices).
*--draws TASKSxRUNS [...]*: instead, the bootstrap's seeded counts and its two products (``tmf.bootstrap``'s
``stats.resample_weights`` and ``_weighted_means``, today's path) against cheaper variants of the same draw: the
integers drawn as int32, the two matrices in one product, the products ``--rows`` replicates at a time; for each
whether its means are bit for bit today's and its CPU seconds, alternated ``--repeat`` times.
Wall and CPU (process) time are both printed; on a shared machine wall time is inflated by other processes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analytics import catalog, tmf  # noqa: E402
from store import RunFilter  # noqa: E402


def synthetic_inputs(n_tasks: int, n_runs: int, *, seed: int = 0) -> tmf.TmfInputs:
    """A benchmark of ``n_tasks`` x ``n_runs`` (one sample per task) with varied rates and costs."""
    rng = np.random.default_rng(seed)
    rate = rng.uniform(0.2, 0.9, n_runs)
    cost = np.exp(rng.normal(-4, 1.5, n_runs))
    tasks = np.array([f"t{i:05d}" for i in range(n_tasks)])
    run = np.repeat(np.arange(n_runs), n_tasks)
    c = (rng.random(n_runs * n_tasks) < rate[run]).astype(float)
    frame = pd.DataFrame(
        {
            "run_id": [f"r{r:03d}" for r in run],
            "agent": [f"A{r:03d}" for r in run],
            "agent_version": None,
            "family": None,
            "kind": "llm",
            "eval_date": pd.Timestamp("2026-01-15"),
            "price_input_per_mtok": np.nan,
            "price_output_per_mtok": np.nan,
            "task_id": np.tile(tasks, n_runs),
            "level": np.tile(np.array(["L1", "L2", "L3"])[np.arange(n_tasks) % 3], n_runs),
            "category": "c",
            "human_minutes": 10.0,
            "n": 1,
            "c": c,
            "score": c,
            "cost_usd": cost[run] * rng.lognormal(0, 0.3, run.size),
            "input_tokens": np.nan,
            "output_tokens": np.nan,
            "latency_s": 10.0,
        }
    )
    return tmf.TmfInputs("synthetic", frame, pd.DataFrame(columns=["subject", "ability", "ability_lo", "ability_hi"]))


def _timed(fn, *args, **kwargs):  # noqa: ANN001, ANN202 - a tiny timing helper
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, round(time.perf_counter() - wall, 3), round(time.process_time() - cpu, 3)


def bench_shape(n_tasks: int, n_runs: int) -> dict[str, object]:
    """``analyse`` of the overall slice with and without the bootstrap."""
    inputs = synthetic_inputs(n_tasks, n_runs)
    _, wall0, cpu0 = _timed(tmf.analyse, inputs, with_uncertainty=False)
    res, wall1, cpu1 = _timed(tmf.analyse, inputs)
    unc = res.uncertainty
    return {
        "shape": f"{n_tasks}x{n_runs}",
        "estimate_wall_s": wall0,
        "estimate_cpu_s": cpu0,
        "with_bootstrap_wall_s": wall1,
        "with_bootstrap_cpu_s": cpu1,
        "bootstrap_cpu_s": round(cpu1 - cpu0, 3),
        "replicates": None if unc is None else unc.n_replicates,
        "stage_probability": None if unc is None else unc.stage_probability,
    }


def bench_db(db: Path, benchmark: str | None) -> dict[str, object]:
    """``tmf.overview`` on a real database, twice."""
    from store import reader

    with reader(db) as con:
        bench = benchmark or catalog.default_benchmark(con)
        _, wall0, cpu0 = _timed(tmf.overview, con, RunFilter(benchmark=bench))
        view, wall1, cpu1 = _timed(tmf.overview, con, RunFilter(benchmark=bench))
        n_rows = len(tmf.load(con, RunFilter(benchmark=bench)).tasks)
    assert view.overall is not None
    return {
        "db": str(db),
        "benchmark": bench,
        "run_task_rows": n_rows,
        "first_wall_s": wall0,
        "first_cpu_s": cpu0,
        "again_wall_s": wall1,
        "again_cpu_s": cpu1,
        "stage": tmf.stage_label(view.overall),
    }


def profile_db(db: Path, benchmark: str | None, top: int) -> dict[str, object]:
    """The page's analytics calls at ``db`` step by step (CPU and wall s each), then a ``cProfile`` of them all."""
    import cProfile
    import io
    import pstats

    from analytics.tmf.overview import PreparedOverview
    from store import reader

    def first_view(con, rf: RunFilter, opt: tmf.TmfOptions) -> tmf.Overview:  # noqa: ANN001
        return tmf.finish_overview(tmf.prepare_current(con, rf, options=opt.supply_side(), freq="quarter"), opt)

    def page(con, bench: str, steps: dict[str, object], *, deferred: bool = True) -> None:  # noqa: ANN001
        rf, opt = RunFilter(benchmark=bench), tmf.TmfOptions()

        def step(name: str, fn, *args, **kwargs):  # noqa: ANN001, ANN202
            out, wall, cpu = _timed(fn, *args, **kwargs)
            steps[name] = {"wall_s": wall, "cpu_s": cpu}
            return out

        # the first view (``tmf.prepare_current`` + ``finish_overview``), step by step
        step("has_irt_fit", tmf.has_irt_fit, con, benchmark=bench)
        inputs = step("load", tmf.load, con, rf, with_abilities=False)
        overall = step("prepare overall (bootstrap)", tmf.prepare, inputs, options=opt)
        labels = step("period_labels", tmf.period_labels, inputs, "quarter")
        step("finish_overview", tmf.finish_overview, PreparedOverview(overall, (), {}, tuple(labels)), opt)
        if deferred:  # what the page prepares only when asked (an expander opened, an earlier period picked)
            step("deferred: prepare_periods", tmf.prepare_periods, inputs, options=opt)
            step("deferred: prepare_slices level (bootstrap)", tmf.prepare_slices, inputs, kind="level", options=opt)

    with reader(db) as con:
        bench = benchmark or catalog.default_benchmark(con)
        if bench is None:
            raise SystemExit(f"{db}: no benchmark to profile")
        steps: dict[str, object] = {}
        wall, cpu = time.perf_counter(), time.process_time()
        page(con, bench, steps, deferred=False)
        total = {"wall_s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3)}
        # the same first view as the page runs it: ``prepare_current`` draws the bootstrap's counts in a thread of
        # its own during the read (process CPU counts both threads and DuckDB's; ``main_cpu_s`` the caller's alone)
        thread = time.thread_time()
        _, wall_s, cpu_s = _timed(first_view, con, RunFilter(benchmark=bench), tmf.TmfOptions())
        as_page = {"wall_s": wall_s, "cpu_s": cpu_s, "main_cpu_s": round(time.thread_time() - thread, 3)}
        prof = cProfile.Profile()
        prof.enable()
        page(con, bench, {}, deferred=False)
        prof.disable()
        later: dict[str, object] = {}
        page(con, bench, later)  # the deferred steps, timed after the first view's
        steps.update({k: v for k, v in later.items() if k.startswith("deferred")})
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(top)
    print(text.getvalue(), file=sys.stderr)
    return {"db": str(db), "benchmark": bench, "first": total, "as_page": as_page, "steps": steps}


def draw_variants(shape: str, *, repeat: int, rows: int, nan_share: float = 0.0) -> dict[str, object]:
    """CPU seconds and bit-identity of the bootstrap's counts and means (500 replicates over TASKS x RUNS random
    matrices, ``nan_share`` of the cells missing) by today's path and by cheaper variants of the same draw."""
    from analytics import stats
    from analytics.tmf import bootstrap

    n_tasks, n_runs = (int(v) for v in shape.split("x"))
    gen = np.random.default_rng(7)
    mx, my = gen.random((n_tasks, n_runs)) * 3, gen.random((n_tasks, n_runs))
    if nan_share:
        mx[gen.random(mx.shape) < nan_share] = np.nan
        my[gen.random(my.shape) < nan_share] = np.nan
    n_boot = 500

    def rng() -> np.random.Generator:
        return stats.stable_rng(0, "tmf-boot", "all")

    def counts(dtype: type) -> np.ndarray:
        out, r = np.empty((n_boot, n_tasks)), rng()
        block = max(1, (1 << 21) // n_tasks)
        for start in range(0, n_boot, block):
            for b, row in enumerate(r.integers(0, n_tasks, size=(min(block, n_boot - start), n_tasks), dtype=dtype)):
                out[start + b] = np.bincount(row, minlength=n_tasks)
        return out

    def means(weights: np.ndarray) -> np.ndarray:
        return np.hstack([bootstrap._weighted_means(weights, m) for m in (mx, my)])

    def today() -> np.ndarray:
        return means(stats.resample_weights(n_tasks, rng(), n_boot=n_boot))

    def int32() -> np.ndarray:
        return means(counts(np.int32))

    def one_product() -> np.ndarray:
        return bootstrap._weighted_means(stats.resample_weights(n_tasks, rng(), n_boot=n_boot), np.hstack([mx, my]))

    def in_blocks() -> np.ndarray:
        weights = stats.resample_weights(n_tasks, rng(), n_boot=n_boot)
        return np.vstack([means(weights[s : s + rows]) for s in range(0, n_boot, rows)])

    variants = {"today": today, "int32 draws": int32, "one product": one_product, f"blocks of {rows}": in_blocks}
    want = today()
    out: dict[str, object] = {"shape": shape, "nan_share": nan_share, "replicates": n_boot}
    for name, fn in variants.items():
        cpu_s = []
        for _ in range(repeat):
            cpu = time.process_time()
            got = fn()
            cpu_s.append(round(time.process_time() - cpu, 3))
        out[name] = {"identical": bool(np.array_equal(got, want, equal_nan=True)), "cpu_s": cpu_s}
    return out


def main() -> None:
    """Print one JSON line per measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="*", default=["100x10", "1000x50", "6700x50"])
    parser.add_argument("--db", type=Path)
    parser.add_argument("--benchmark")
    parser.add_argument("--profile", type=int, metavar="N", help="profile the page's calls at --db (top N functions)")
    parser.add_argument("--draws", nargs="*", metavar="TASKSxRUNS", help="the bootstrap's draw variants")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=128, help="replicates per product block (--draws)")
    parser.add_argument("--nan-share", type=float, default=0.0, help="share of missing cells (--draws)")
    args = parser.parse_args()
    if args.draws:
        for shape in args.draws:
            print(json.dumps(draw_variants(shape, repeat=args.repeat, rows=args.rows, nan_share=args.nan_share)))
        return
    if args.db and args.profile:
        print(json.dumps(profile_db(args.db, args.benchmark, args.profile)), flush=True)
        return
    for shape in args.shapes:
        n_tasks, n_runs = (int(v) for v in shape.split("x"))
        print(json.dumps(bench_shape(n_tasks, n_runs)), flush=True)
    if args.db:
        print(json.dumps(bench_db(args.db, args.benchmark)), flush=True)


if __name__ == "__main__":
    main()
