"""The TMF bootstrap's seeded resample counts drawn ahead (``bootstrap.prefetch_weights``, started by the page's
first view during its read): the same matrix as the draw made in place, taken once, forgotten when not taken, and
the first view's analysis the same with and without it."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

import store as rdb
from analytics import stats, tmf
from analytics.tmf import bootstrap
from store import RunFilter
from tests.test_aggregates import assert_same

tmf_overview = importlib.import_module("analytics.tmf.overview")  # the module (``tmf.overview`` is a function)
tmf_load = importlib.import_module("analytics.tmf.load")


def direct(n: int, seed: int, name: str, reps: int) -> np.ndarray:
    return stats.resample_weights(n, stats.stable_rng(seed, "tmf-boot", name), n_boot=reps)


def test_a_prefetched_draw_equals_the_draw_in_place_and_is_taken_once() -> None:
    key = bootstrap.prefetch_weights(700, seed=5, slice_name="all", n_replicates=40)
    assert key == (700, 5, "all", 40)
    assert bootstrap.prefetch_weights(700, seed=5, slice_name="all", n_replicates=40) is None  # already drawing
    assert key in bootstrap._PREFETCHED
    got = bootstrap.resample_weights(700, seed=5, slice_name="all", n_replicates=40)
    assert key not in bootstrap._PREFETCHED
    np.testing.assert_array_equal(got, direct(700, 5, "all", 40))
    # another key is drawn in place, and the one not taken goes with ``discard_weights``
    other = bootstrap.prefetch_weights(701, seed=5, slice_name="all", n_replicates=40)
    np.testing.assert_array_equal(
        bootstrap.resample_weights(700, seed=5, slice_name="level=L1", n_replicates=40), direct(700, 5, "level=L1", 40)
    )
    assert other in bootstrap._PREFETCHED
    bootstrap.discard_weights(other)
    assert other not in bootstrap._PREFETCHED
    assert bootstrap.prefetch_weights(0, seed=5, slice_name="all", n_replicates=40) is None


def test_the_first_view_equals_the_analysis_without_the_draw_ahead(demo_db: Path, monkeypatch) -> None:  # noqa: ANN001
    taken: list[tuple[int, int, str, int]] = []
    real = bootstrap.prefetch_weights

    def spy(n_tasks: int, **kwargs: object) -> tuple[int, int, str, int] | None:
        key = real(n_tasks, **kwargs)  # type: ignore[arg-type]
        if key is not None:
            taken.append(key)
        return key

    monkeypatch.setattr(tmf_overview, "prefetch_weights", spy)
    with rdb.reader(demo_db) as con:
        benches = [r[0] for r in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1")]
        for bench in benches:
            rf = RunFilter(benchmark=bench)
            for opt in (tmf.TmfOptions(n_replicates=60, n_boot=60), tmf.TmfOptions(human_minutes=9.0, n_replicates=60)):
                first = tmf.prepare_current(con, rf, options=opt)
                lean = tmf_load.row_columns_for(opt.performance, opt.cost_source, opt.is_repriced)
                inputs = tmf.load(con, rf, with_abilities=False, row_columns=lean)  # the columns the page reads
                expected = None if inputs.tasks.empty else tmf.prepare(inputs, options=opt)
                assert_same(first.overall, expected, bench)
    assert taken  # the draw ahead was started
    assert not bootstrap._PREFETCHED  # and none is kept


def test_a_draw_shared_by_two_threads_gives_the_counts_of_the_draw_in_place() -> None:
    """``_SharedDraw``: blocks of replicates drawn in the generator's order by whichever thread asks next and counted
    apart give ``stats.resample_weights``' counts row for row: taken at once (the taker draws beside the drawing
    thread), after that thread finished, with no drawing thread at all, and by several takers racing; a stopped draw
    draws no more blocks. Shapes of one block and of several, the last one short (``_DRAW_BLOCK`` as it is: 2
    replicates a block at 50,021 tasks, and lowered)."""
    import threading

    real = bootstrap._DRAW_BLOCK
    for n_units, n_boot, block_draws in ((700, 40, 1 << 21), (5_003, 41, 5_003 * 4), (50_021, 11, real)):
        want = direct(n_units, 9, "all", n_boot)
        bootstrap._DRAW_BLOCK = block_draws
        try:
            for how in ("at once", "after", "no thread", "racing"):
                draw = bootstrap._SharedDraw(n_units, stats.stable_rng(9, "tmf-boot", "all"), n_boot)
                worker = None if how == "no thread" else threading.Thread(target=draw.work)
                if worker is not None:
                    worker.start()
                if how == "after" and worker is not None:
                    worker.join()
                if how == "racing":
                    got: list[np.ndarray] = []
                    takers = [threading.Thread(target=lambda d=draw, g=got: g.append(d.result())) for _ in range(3)]
                    for t in takers:
                        t.start()
                    for t in takers:
                        t.join()
                    assert len(got) == 3 and all(g is got[0] for g in got)
                    np.testing.assert_array_equal(got[0], want)
                else:
                    np.testing.assert_array_equal(draw.result(), want, err_msg=f"{n_units} {how}")
                if worker is not None:
                    worker.join()
        finally:
            bootstrap._DRAW_BLOCK = real
    stopped = bootstrap._SharedDraw(5_003, stats.stable_rng(9, "tmf-boot", "all"), 41)
    stopped.stop()
    stopped.work()
    assert stopped._next == 0  # no block drawn
