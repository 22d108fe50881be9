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
                inputs = tmf.load(con, rf, with_abilities=False)
                expected = None if inputs.tasks.empty else tmf.prepare(inputs, options=opt)
                assert_same(first.overall, expected, bench)
    assert taken  # the draw ahead was started
    assert not bootstrap._PREFETCHED  # and none is kept
