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
            slow = compare.max_gap_test(x, leader=leader, rng=np.random.default_rng(1))
        assert np.array_equal(fast.p_adjusted, slow.p_adjusted, equal_nan=True)
        assert fast.critical_gap == slow.critical_gap


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
            x[0] = np.nan
            assert verdicts.nanmean(x) == float(x[1:].mean()) if n > 1 else np.isnan(verdicts.nanmean(x))


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
