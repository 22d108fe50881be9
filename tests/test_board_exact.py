"""The Leaderboard's shortcuts at ten million attempts (issue 33) give the same bits as the general paths they skip:
the step-down's sigma of a complete matrix without its flags (in either memory layout), each gap's range tail alone
or among the others, a column's normal interval without the matrix of columns, the mean of finite values without
their copy, and a comparison set's tasks as the matrix's columns. Each check compares with ``==`` (floats bit for
bit), so a shortcut that changed a last bit fails."""

from __future__ import annotations

import numpy as np
import pytest

from analytics import compare, stats
from analytics.leaderboard import verdicts


def _matrices(rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for tasks, runs in ((1, 2), (7, 3), (300, 13), (2_600, 8), (9_000, 11), (40_000, 5)):
        for x in (rng.random((tasks, runs)), (rng.random((tasks, runs)) < 0.4).astype(float)):
            out += [x, x[:, list(range(runs))], np.asfortranarray(x), x[:, ::-1], x[::2]]
    return [x for x in out if x.shape[0]]


def test_the_sigma_of_a_complete_matrix_is_the_general_paths_in_every_layout() -> None:
    rng = np.random.default_rng(11)
    for x in _matrices(rng):
        assert compare._permutation_sd(x, complete=True) == compare._permutation_sd(x), (x.shape, x.strides)


def test_the_max_gap_test_of_a_complete_matrix_is_that_of_the_general_sigma(monkeypatch: pytest.MonkeyPatch) -> None:
    """Complete data takes the flag-free sigma; the step-down's p-values and critical gap are those of the general
    sigma (``_permutation_sd`` with its flags: the shortcut patched away)."""
    rng = np.random.default_rng(12)
    general = compare._permutation_sd
    for tasks, runs in ((3_000, 4), (20_000, 13), (66_667, 6)):
        x = rng.random((tasks, runs)) + np.linspace(0, 0.02, runs)[None, :]
        leader = int(np.argmax(x.mean(axis=0)))
        fast = compare.max_gap_test(x, leader=leader, rng=np.random.default_rng(1))
        with monkeypatch.context() as patch:
            patch.setattr(compare, "_permutation_sd", lambda y, complete=False: general(y))
            patch.setattr(compare, "_permutation_sd_of_runs", lambda runs, active: general(runs.T[:, active]))
            slow = compare.max_gap_test(x, leader=leader, rng=np.random.default_rng(1))
        assert np.array_equal(fast.p_adjusted, slow.p_adjusted, equal_nan=True)
        assert fast.critical_gap == slow.critical_gap


def test_the_sigma_from_the_runs_rows_is_that_of_the_matrixs_columns() -> None:
    """A step's sigma from the runs' rows (``_permutation_sd_of_runs``, no copy of ``x[:, active]``) is the sigma of
    that copy, for 2 to 30 runs (numpy adds the copy's columns one after another; a pairwise sum, as numpy does over
    a contiguous row of 8 or more, would differ in the last bit), binary, graded and continuous values, and values
    whose squares overflow (numpy's infinite variance, as ``nan_to_num`` leaves it)."""
    rng = np.random.default_rng(15)
    n = 0
    for tasks in (2, 9, 2_600):
        for runs in range(2, 31):
            for x in (
                rng.random((tasks, runs)),
                rng.integers(0, 4, (tasks, runs)) / 3.0,
                rng.random((tasks, runs)) * 1e300,
            ):
                by_run = np.ascontiguousarray(x.T)
                for size in {2, runs, int(rng.integers(2, runs + 1))}:
                    active = sorted(rng.choice(runs, size=size, replace=False).tolist())
                    with np.errstate(over="ignore", invalid="ignore"):
                        fast = compare._permutation_sd_of_runs(by_run, active)
                        slow = compare._permutation_sd(x[:, active], complete=True)
                    assert fast == slow, (tasks, runs, active)
                    n += 1
    assert n > 400


def test_a_range_tail_alone_is_the_same_as_among_others() -> None:
    rng = np.random.default_rng(13)
    for _ in range(400):
        k = int(rng.integers(2, 20))
        w = rng.exponential(2.0, int(rng.integers(1, 14))) * rng.choice([0.01, 1.0, 10.0])
        full = stats.normal_range_sf(w, k)
        assert all(stats.normal_range_sf(w[i : i + 1], k)[0] == full[i] for i in range(len(w)))


def test_normal_intervals_of_columns_apart_are_the_matrixs() -> None:
    rng = np.random.default_rng(14)
    for tasks in (1, 2, 50, 2_000, 2_001, 30_000):
        columns = [rng.random(tasks), np.full(tasks, np.nan), rng.random(tasks)]
        columns[2][: tasks // 3] = np.nan  # some cells missing
        if tasks > 1:
            one = np.full(tasks, np.nan)
            one[tasks // 2] = 0.25  # one finite value: (x, x)
            columns.append(one)
        want = stats.bootstrap_mean_cis(np.column_stack(columns), stats.stable_rng(0, "t", str(tasks)))
        got = stats.bootstrap_mean_cis_of(columns, stats.stable_rng(0, "t", str(tasks)))
        np.testing.assert_array_equal(got, want)


def test_nanmean_without_a_copy_is_the_mean_of_the_finite_values() -> None:
    rng = np.random.default_rng(15)
    for n in (0, 1, 7, 1_000, 66_667):
        x = rng.random(n) * 1e3
        for y in (x, x[::3], x[::-1], x[rng.permutation(n)]):
            ok = np.isfinite(y)
            want = float(y[ok].mean()) if ok.any() else float("nan")
            got = verdicts.nanmean(y)
            assert got == want or (np.isnan(got) and np.isnan(want))
        if n:
            for y in (x, x[::3], (x * 7).round() / 7, np.full(n, 1 / 3)):  # the sum over the count is ``mean``
                assert verdicts.nanmean(y) == float(y.mean())
            x[0] = np.nan
            assert verdicts.nanmean(x) == float(x[1:].mean()) if n > 1 else np.isnan(verdicts.nanmean(x))
            x[-1] = np.inf  # an infinity is left out as a NaN is
            assert verdicts.nanmean(x) == float(x[1:-1].mean()) if n > 2 else np.isnan(verdicts.nanmean(x))
    big = np.full(10, 1e308)  # finite values whose sum overflows: their mean as numpy gives it
    with np.errstate(over="ignore"):
        assert verdicts.nanmean(big) == float(big.mean())


def test_a_comparison_sets_columns_are_its_tasks() -> None:
    rng = np.random.default_rng(16)
    for _ in range(50):
        runs, tasks = int(rng.integers(1, 9)), int(rng.integers(1, 60))
        names = np.array(sorted(rng.choice(1000, tasks, replace=False).tolist()), dtype=object)
        held = rng.random((runs, tasks)) < rng.choice([0.5, 0.9, 1.0])
        found = compare.comparison_sets_of(compare.TaskMatrix(tuple(range(runs)), names, held))
        for cset in found.sets:
            assert cset.columns is not None
            assert set(names[cset.columns].tolist()) == set(cset.tasks)


def _general_grid(indices: list[np.ndarray], place: np.ndarray, names: np.ndarray, values: np.ndarray):  # noqa: ANN202
    """``verdicts._task_grid`` with its shortcut for rows on the same tasks patched away."""
    shortcut = verdicts._full_grid
    verdicts._full_grid = lambda *args: None  # type: ignore[assignment]
    try:
        return verdicts._task_grid(indices, place, names, values)
    finally:
        verdicts._full_grid = shortcut  # type: ignore[assignment]


def test_the_grid_of_rows_on_the_same_tasks_is_the_general_one() -> None:
    """Every row on the same tasks in order (the shortcut taken), and rows it must not take (a task missing, rows
    out of task order, a task twice): the same names, flags, values, columns and own values as the general path."""
    rng = np.random.default_rng(17)
    for runs, tasks in ((1, 1), (3, 5), (13, 2_000)):
        values = rng.random(runs * tasks)
        values[rng.random(values.size) < 0.05] = np.nan
        place = np.tile(np.sort(rng.choice(5 * tasks, tasks, replace=False)), runs)
        names = np.arange(5 * tasks).astype(object)
        cases = {
            "same": [np.arange(r * tasks, (r + 1) * tasks) for r in range(runs)],
            "missing": [np.arange(r * tasks, (r + 1) * tasks - (r == runs - 1)) for r in range(runs)],
            "reversed": [np.arange((r + 1) * tasks - 1, r * tasks - 1, -1) for r in range(runs)],
            "twice": [np.r_[np.arange(r * tasks, (r + 1) * tasks), r * tasks] for r in range(runs)],
        }
        for name, indices in cases.items():
            sizes = np.array([len(i) for i in indices])
            shortcut = verdicts._full_grid(
                place[np.concatenate(indices)], sizes, names, values[np.concatenate(indices)]
            )
            assert (shortcut is not None) == (name == "same" or name == "reversed" and tasks == 1), name
            together = verdicts._one_span(indices)  # the positions read as one slice: consecutive rows only
            assert (together is not None) == (name in ("same", "missing") and tasks > 1), name
            got = verdicts._task_grid(indices, place, names, values)
            want = _general_grid(indices, place, names, values)
            assert np.array_equal(got.names, want.names) and np.array_equal(got.held, want.held), name
            assert np.array_equal(got.value, want.value, equal_nan=True), name
            assert all(np.array_equal(a, b) for a, b in zip(got.columns, want.columns, strict=True)), name
            assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got.own, want.own, strict=True)), name


def test_a_span_reads_the_rows_positions_and_their_statistics_bit_for_bit() -> None:
    """``verdicts.span``: a slice only for consecutive increasing positions; the values read through it are those
    gathered, and their mean, sum, deviation and normal interval are the same bits (a view or a copy)."""
    rng = np.random.default_rng(18)
    assert verdicts.span(np.array([4, 5, 6])) == slice(4, 7)
    for rows in (np.array([4, 6, 7]), np.array([6, 5, 4]), np.array([4, 5, 5, 6]), np.array([3])):
        assert isinstance(verdicts.span(rows), np.ndarray)
    for _ in range(300):
        x = rng.random(int(rng.integers(2, 90_000))) * rng.choice([1e-3, 1.0, 1e3])
        start = int(rng.integers(0, x.size - 1))
        rows = np.arange(start, int(rng.integers(start + 2, x.size + 1)))
        view, copy = x[verdicts.span(rows)], x[rows]
        assert np.array_equal(view, copy)
        assert view.mean() == copy.mean() and view.sum() == copy.sum() and view.std(ddof=1) == copy.std(ddof=1)
        assert stats.normal_mean_ci(view) == stats.normal_mean_ci(copy.copy())
        assert verdicts.nanmean(view) == verdicts.nanmean(copy)


def test_a_normal_interval_without_the_copy_of_finite_values_is_the_same() -> None:
    """``stats.normal_mean_ci`` of values all finite (no copy) equals the interval of their copy, in any layout; with
    a NaN it leaves it out."""
    rng = np.random.default_rng(19)
    z = stats.Z95
    for n in (2, 3, 50, 66_667):
        x = rng.random(n)
        for y in (x, x[::2] if n > 3 else x, x[::-1]):
            c = np.array(y, copy=True)
            half = z * c.std(ddof=1) / np.sqrt(c.size)
            assert stats.normal_mean_ci(y) == (float(c.mean() - half), float(c.mean() + half))
        x[0] = np.nan
        assert stats.normal_mean_ci(x) == stats.normal_mean_ci(x[1:].copy())


def test_a_runs_slices_counted_are_those_np_unique_found() -> None:
    """The board's slices per run (``compute._slice_groups``: slice codes counted instead of ``np.unique``) are, in
    order, the values and rows ``np.unique`` gives, with rows of no slice left out; the tasks' codes read from Arrow's
    dictionary (``load._kind_codes``) are those ``compute._slice_codes`` makes of the values."""
    import pyarrow as pa

    from analytics.leaderboard import compute, load

    rng = np.random.default_rng(20)
    for _ in range(30):
        runs, tasks = int(rng.integers(1, 5)), int(rng.integers(1, 40))
        levels = np.array([None if v < 0 else f"L{v}" for v in rng.integers(-1, 4, tasks)], dtype=object)
        run_pos = np.repeat(np.arange(runs), tasks)
        codes = np.tile(np.arange(tasks), runs)
        kinds = load._kind_codes(pa.chunked_array([levels.tolist()], type=pa.string()))  # as the keys' read gives
        assert kinds.names == compute._slice_codes(levels, None)[0]
        assert np.array_equal(kinds.codes, compute._slice_codes(levels, None)[1])
        assert list(kinds.values()) == list(levels)
        got = compute._slice_groups(run_pos, {"level": kinds}, ("all", "level"), codes, kinds_per_task=True)
        names = sorted({str(v) for v in levels if v is not None})
        for pos, rows, slices in got:
            want = [("all", rows)]
            place = np.array([-1 if v is None else names.index(str(v)) for v in levels[codes[rows]]])
            want += [(f"level={names[c]}", rows[place == c]) for c in np.unique(place[place >= 0])]
            assert [n for n, _ in slices] == [n for n, _ in want], pos
            assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(slices, want, strict=True))


def test_paired_tests_of_contiguous_columns_are_those_of_the_row_major_matrix() -> None:
    """``verdicts.paired_columns`` (each column contiguous) gives ``compare.paired_tests`` the same tests as the
    row-major ``np.column_stack`` it replaced: the bootstrap's intervals (2,000 tasks or fewer), the normal ones above,
    McNemar and the sign flips, binary and graded differences."""
    rng = np.random.default_rng(16)
    n = 0
    for tasks in (1, 2, 40, 300, 2_001, 30_000):
        for width in (1, 5, 12):
            for scale in (1.0, 3.0):
                diffs = [rng.integers(-int(scale), int(scale) + 1, tasks) / scale for _ in range(width)]
                flags = [bool(f) for f in rng.random(width) < 0.3]
                columns = verdicts.paired_columns(diffs)
                assert np.array_equal(columns, np.column_stack(diffs))
                got = compare.paired_tests(columns, is_binary_single=flags, seed=3, n_perm=500, n_boot=200)
                want = compare.paired_tests(
                    np.column_stack(diffs), is_binary_single=flags, seed=3, n_perm=500, n_boot=200
                )
                assert repr(got) == repr(want), (tasks, width, scale)
                n += 1
    assert n == 36


def test_clustered_intervals_of_the_values_as_they_are_are_those_of_their_finite_copy() -> None:
    """``compare.wilson_clustered``, ``clustered_n_eff`` and ``score_interval`` read finite values where they sit
    (no copy): the same bits as of the finite values copied first, strided or not, with NaN left out."""
    rng = np.random.default_rng(17)
    for tasks in (1, 2, 30, 66_667):
        x = (rng.integers(0, 4, tasks) / 3.0, rng.random(tasks))
        n = rng.integers(1, 5, tasks)
        for y in (*x, x[1][::2], np.where(rng.random(tasks) < 0.2, np.nan, x[1])):
            copy = np.ascontiguousarray(y[np.isfinite(y)])
            assert compare.wilson_clustered(y, n[: len(y)]) == compare.wilson_clustered(copy, n[: len(y)])
            assert compare.clustered_n_eff(y) == compare.clustered_n_eff(copy)
            assert compare.score_interval(y) == compare.score_interval(copy) or not len(copy)


def test_sign_flips_without_the_copy_of_finite_differences_are_the_same() -> None:
    """Above 2,000 tasks the sign-flip p-values of finite differences are computed on them as they are (no
    ``nan_to_num`` copy): the same bits as of the copy, whatever the layout; a NaN still counts as a zero."""
    rng = np.random.default_rng(18)
    for tasks in (4_002, 30_000):  # every other row of them still above 2,000
        d = rng.integers(-3, 4, (tasks, 6)) / 3.0
        for x in (d, np.asfortranarray(d), d[:, [0, 2, 4]], d[::2], d[:, 1]):
            want = compare._sign_flip_normal(np.nan_to_num(x if x.ndim == 2 else x[:, None], nan=0.0))
            got = compare.sign_flip_pvalues(x, np.random.default_rng(0))
            assert got.tobytes() == want.tobytes()
        holed = d.copy()
        holed[::7, 1] = np.nan
        assert compare.sign_flip_pvalues(holed, np.random.default_rng(0)).tobytes() == (
            compare._sign_flip_normal(np.where(np.isnan(holed), 0.0, holed)).tobytes()
        )
