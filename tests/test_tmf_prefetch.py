"""The TMF bootstrap's seeded resample counts drawn ahead (``bootstrap.prefetch_weights``, started by the page's
first view during its read): the same matrix as the draw made in place, taken once, forgotten when not taken, and
the first view's analysis the same with and without it."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import numpy as np
import pytest

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
    got = bootstrap.resample_counts(700, seed=5, slice_name="all", n_replicates=40)
    assert key not in bootstrap._PREFETCHED
    np.testing.assert_array_equal(got.dense(), direct(700, 5, "all", 40))
    # another key is drawn in place, and the one not taken goes with ``discard_weights``
    other = bootstrap.prefetch_weights(701, seed=5, slice_name="all", n_replicates=40)
    np.testing.assert_array_equal(
        bootstrap.resample_counts(700, seed=5, slice_name="level=L1", n_replicates=40).dense(),
        direct(700, 5, "level=L1", 40),
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
                    np.testing.assert_array_equal(got[0].dense(), want)
                else:
                    np.testing.assert_array_equal(draw.result().dense(), want, err_msg=f"{n_units} {how}")
                if worker is not None:
                    worker.join()
        finally:
            bootstrap._DRAW_BLOCK = real
    stopped = bootstrap._SharedDraw(5_003, stats.stable_rng(9, "tmf-boot", "all"), 41)
    stopped.stop()
    stopped.work()
    assert stopped._next == 0  # no block drawn


def test_the_replicate_means_from_the_counts_in_blocks_equal_the_product_over_the_whole_matrix() -> None:
    """``bootstrap._replicate_means`` (the counts held as bytes, multiplied a block of replicates at a time, never
    the float matrix) against the reference, ``_weighted_means`` over ``stats.resample_weights``' whole matrix: equal
    to 1e-12 relative (the BLAS may add in another order for fewer rows; the counts themselves are equal exactly),
    with and without cells left out, in one block and in several with a short last one. A block skipped, counted
    twice or taken from the wrong replicates is far outside that tolerance (checked below on the same data)."""
    rng = np.random.default_rng([33, 15])
    real = stats.SUMS_BLOCK
    try:
        for n_units, n_boot, block in ((1, 5, real), (700, 40, real), (5_003, 41, 5_003 * 8 * 6), (20_011, 23, 1)):
            stats.SUMS_BLOCK = block
            counts = stats.resample_counts(n_units, stats.stable_rng(4, "tmf-boot", "all"), n_boot=n_boot)
            weights = stats.resample_weights(n_units, stats.stable_rng(4, "tmf-boot", "all"), n_boot=n_boot)
            np.testing.assert_array_equal(counts.dense(), weights)
            full = rng.gamma(2.0, 0.3, (n_units, 2 * int(rng.integers(1, 14))))
            for m in (full, np.where(rng.random(full.shape) < 0.2, np.nan, full)):
                want = bootstrap._weighted_means(weights, m)
                got = bootstrap._replicate_means(counts, m)
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True, err_msg=f"{n_units}")
                if n_boot > 1 and n_units > 1:  # a wrong block: the second replicate's counts in the first's place
                    wrong = stats.ResampleCounts(n_boot, n_units)
                    wrong.small[...] = counts.small
                    wrong.small[0] = counts.small[1]
                    bad = bootstrap._replicate_means(wrong, m)
                    assert not np.allclose(bad, want, rtol=1e-12, atol=0, equal_nan=True)
    finally:
        stats.SUMS_BLOCK = real


def test_the_replicate_sums_shared_between_two_threads_are_those_of_one_thread_bit_for_bit() -> None:
    """``bootstrap._counts_sums`` (the blocks of replicates multiplied by this thread and a second one, whichever takes
    the next) gives ``ResampleCounts.sums``' sums exactly, with a count above 255 kept whole, in one block, in many
    and with a short last one; a block taken twice or skipped would not be equal."""
    rng = np.random.default_rng([33, 16])
    real = stats.SUMS_BLOCK
    try:
        for n_units, n_boot, rows in ((300, 7, 1), (5_003, 41, 6), (20_011, 23, 100), (700, 40, 3)):
            stats.SUMS_BLOCK = rows * 8 * n_units
            counts = stats.resample_counts(n_units, stats.stable_rng(5, "tmf-boot", "all"), n_boot=n_boot)
            if n_units == 300:
                counts.count(2, np.full((1, n_units), 4))  # unit 4 drawn 300 times in the third resample
                assert 2 in counts.wide
            m = rng.gamma(2.0, 0.3, (n_units, 2 * int(rng.integers(1, 14))))
            want = counts.sums(m)
            for _ in range(3):
                np.testing.assert_array_equal(bootstrap._counts_sums(counts, m), want, err_msg=f"{n_units} {rows}")
    finally:
        stats.SUMS_BLOCK = real


def test_a_unit_drawn_more_than_255_times_keeps_its_count() -> None:
    """``ResampleCounts`` holds counts as bytes and the rare count above 255 whole: the float matrix and the
    products are those of the counts as drawn."""
    n_units = 400
    idx = np.zeros((3, n_units), dtype=np.int64)
    idx[0, :300] = 7  # unit 7 drawn 300 times in the first resample
    idx[0, 300:] = np.arange(100)
    idx[1] = np.arange(n_units)
    idx[2, :] = 399  # every draw the last unit: 400
    counts = stats.ResampleCounts(3, n_units)
    counts.count(0, idx)
    expected = np.stack([np.bincount(r, minlength=n_units) for r in idx]).astype(float)
    np.testing.assert_array_equal(counts.dense(), expected)
    m = np.random.default_rng(2).random((n_units, 3))
    np.testing.assert_allclose(counts.sums(m), expected @ m, rtol=1e-12, atol=0)


def _assert_same_to_ci(a: object, b: object, where: str = "") -> None:
    """``assert_same``, but the bootstrap's value interval (``Uncertainty.value_ci95``) to 1e-12 relative: the one
    number whose products' order changed (``_replicate_means``); every other number bit for bit."""
    if isinstance(a, bootstrap.Uncertainty):
        assert isinstance(b, bootstrap.Uncertainty), where
        np.testing.assert_allclose(a.value_ci95, b.value_ci95, rtol=1e-12, atol=0, err_msg=where)
        assert_same(dataclasses.replace(a, value_ci95=b.value_ci95), b, where)
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            _assert_same_to_ci(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for key in a:
            _assert_same_to_ci(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same_to_ci(x, y, f"{where}[{i}]")
    else:
        assert_same(a, b, where)


def test_the_bootstrapped_analyses_equal_the_ones_over_the_whole_matrix_of_counts(
    store_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the demo and on a generated store, for the page's options (``test_tmf_codes.OPTIONS``): the analyses the
    page bootstraps (overall and level slices) with the replicates' means from the counts in blocks of two
    replicates equal, to 1e-12 relative in the value interval and exactly elsewhere, the analyses with the reference
    product over the whole float matrix (``_weighted_means(counts.dense(), m)``)."""
    from tests.test_tmf_codes import OPTIONS

    def analyses(inputs: tmf.TmfInputs, opt: tmf.TmfOptions) -> list[tmf.TmfResult]:
        supplies = (tmf.prepare(inputs, options=opt), *tmf.prepare_slices(inputs, kind="level", options=opt))
        return [tmf.finish(s, opt) for s in supplies]

    new = bootstrap._replicate_means
    n_boots = 0
    with rdb.reader(store_db) as con:
        benches = [r[0] for r in rdb.query_rows(con, "SELECT benchmark FROM benchmarks ORDER BY 1")]
        for bench in benches:
            inputs = tmf.load(con, RunFilter(benchmark=bench))
            if inputs.tasks.empty:
                continue
            for opt in OPTIONS:
                monkeypatch.setattr(bootstrap, "_replicate_means", lambda c, m: bootstrap._weighted_means(c.dense(), m))
                want = analyses(inputs, opt)
                monkeypatch.setattr(bootstrap, "_replicate_means", new)
                monkeypatch.setattr(stats, "SUMS_BLOCK", 2 * 8 * inputs.tasks["task_id"].nunique())
                _assert_same_to_ci(analyses(inputs, opt), want, f"{bench} {opt}")
                monkeypatch.undo()
                n_boots += sum(r.uncertainty is not None for r in want)
    assert n_boots > 0  # intervals were compared
