"""The IRT fit's task bootstrap of the abilities' sd and its per-task correlations, against the estimators they
replaced (the ridge JML stepped over every observation, 50 steps a replicate; a function per task): the same numbers
on small seeded cases, and a check that a wrong estimator fails."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analytics import irt
from analytics.irt import fit as irt_fit

N_BOOT = 200
MC_REL = 1 / np.sqrt(2 * (N_BOOT - 1))  # Monte Carlo relative sd of a bootstrap sd from N_BOOT replicates: 5%


def _reference_jml(arrays: irt.Arrays, *, iters: int, weights: np.ndarray | None = None, start=None):
    """The ridge JML as it was: diagonal Newton over every observation."""
    n_s, n_i = len(arrays.subject_ids), len(arrays.item_ids)
    theta, b = (np.zeros(n_s), np.zeros(n_i)) if start is None else (start[0].copy(), start[1].copy())
    s, i, y = arrays.subject_ix, arrays.item_ix, arrays.y
    w = np.ones_like(y) if weights is None else weights
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(theta[s] - b[i])))
        theta += (np.bincount(s, w * (y - p), n_s) - 0.01 * theta) / (np.bincount(s, w * p * (1 - p), n_s) + 0.01)
        p = 1.0 / (1.0 + np.exp(-(theta[s] - b[i])))
        b -= (np.bincount(i, w * (y - p), n_i) + 0.01 * b) / (np.bincount(i, w * p * (1 - p), n_i) + 0.01)
    return theta, b


def _reference_sd(arrays: irt.Arrays, *, n_boot: int, seed: int, by_task: bool = True, iters: int = 50) -> np.ndarray:
    """The task bootstrap as it was (``by_task=False``: a wrong one that resamples observations instead)."""
    rng = np.random.default_rng(seed)
    full = _reference_jml(arrays, iters=200)
    n_i, n = len(arrays.item_ids), arrays.y.size
    reps = np.empty((n_boot, len(arrays.subject_ids)))
    for k in range(n_boot):
        if by_task:
            weights = np.bincount(rng.integers(0, n_i, n_i), minlength=n_i).astype(float)[arrays.item_ix]
        else:
            weights = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)
        theta, _ = _reference_jml(arrays, iters=iters, weights=weights, start=full)
        reps[k] = theta - theta.mean()
    return reps.std(axis=0, ddof=1)


def _complete(seed: int = 0, n_s: int = 8, n_i: int = 120, samples: int = 3) -> pd.DataFrame:
    """Every agent tries every task ``samples`` times (the generated stores' shape): replicates settle early."""
    rng = np.random.default_rng(seed)
    theta, b = np.linspace(-1.5, 1.5, n_s), rng.normal(0, 1, n_i)
    s, i, _ = np.meshgrid(np.arange(n_s), np.arange(n_i), np.arange(samples), indexing="ij")
    y = (rng.random(s.shape) < 1 / (1 + np.exp(-(theta[s] - b[i])))).astype(int)
    return pd.DataFrame(
        {"subject": [f"s{k}" for k in s.ravel()], "task_id": [f"t{k:03d}" for k in i.ravel()], "passed": y.ravel()}
    )


def _rotating() -> pd.DataFrame:
    """Periods linked by a few anchor tasks: replicates run all their steps."""
    return irt.simulate_rotating(n_periods=3, agents_per_period=6, items_per_period=40, overlap=0.3, seed=3)[0]


def _agrees(sd: np.ndarray, reference: np.ndarray) -> bool:
    """The same replicates (one seed) give each agent's sd within a fifth of the Monte Carlo error (1%)."""
    return bool(np.all(np.abs(sd / reference - 1) <= MC_REL / 5))


@pytest.mark.parametrize("design", [_complete, _rotating])
def test_the_bootstrap_sd_is_the_former_estimators_and_a_wrong_one_is_not(design) -> None:
    arrays = irt.prepare_arrays(design())
    reference = _reference_sd(arrays, n_boot=N_BOOT, seed=1)
    sd = irt.bootstrap_sd(arrays, n_boot=N_BOOT, seed=1)
    assert _agrees(sd, reference), np.abs(sd / reference - 1).max()
    assert np.abs(sd / reference - 1).max() < 1e-3  # in fact far closer than the Monte Carlo error
    # another seed: the mean sd over agents within three Monte Carlo errors of that mean
    other = irt.bootstrap_sd(arrays, n_boot=N_BOOT, seed=2)
    assert abs(other.mean() / reference.mean() - 1) <= 3 * MC_REL / np.sqrt(len(sd))
    # the check fails wrong estimators: observations resampled instead of tasks; replicates stopped after one step
    assert not _agrees(_reference_sd(arrays, n_boot=N_BOOT, seed=1, by_task=False), reference)
    assert not _agrees(irt.bootstrap_sd(arrays, n_boot=N_BOOT, seed=1, iters=1, tol=0.0), reference)


def test_cells_sum_each_pair_in_any_row_order_and_the_start_is_the_same() -> None:
    arrays = irt.prepare_arrays(_complete(n_s=4, n_i=30))
    order = np.random.default_rng(5).permutation(arrays.y.size)
    shuffled = irt.Arrays(
        arrays.subject_ix[order], arrays.item_ix[order], arrays.y[order], arrays.subject_ids, arrays.item_ids
    )
    cells = irt_fit.cells_of(shuffled)
    assert len(cells.trials) == 4 * 30 and (cells.trials == 3).all()
    assert cells.passes.sum() == arrays.y.sum()
    np.testing.assert_allclose(irt.jml_start(shuffled)[0], _reference_jml(arrays, iters=200)[0], rtol=1e-10)
    np.testing.assert_allclose(
        irt.bootstrap_sd(shuffled, n_boot=20, seed=4), irt.bootstrap_sd(arrays, n_boot=20, seed=4), rtol=1e-10
    )


def _reference_items(obs: pd.DataFrame, ability: pd.Series) -> pd.DataFrame:
    per = obs.groupby("task_id", sort=True).agg(pass_rate=("passed", "mean"), n_subjects=("subject", "nunique"))
    tmp = pd.DataFrame({"task_id": obs["task_id"], "y": obs["passed"].astype(float), "t": obs["subject"].map(ability)})
    per["r_ability"] = tmp.groupby("task_id").apply(
        lambda g: float(np.corrcoef(g["y"], g["t"])[0, 1]) if g["y"].std() > 0 and g["t"].std() > 0 else 0.0,
        include_groups=False,
    )
    return per


def test_item_correlations_are_the_former_per_task_function() -> None:
    few = pd.DataFrame(  # a task one agent tried four times, one all passed, one of three agents, one tried once
        {
            "subject": ["a"] * 4 + ["b"] * 3 + ["a", "b", "c", "c"],
            "task_id": ["t1"] * 4 + ["t2"] * 3 + ["t3"] * 3 + ["t4"],
            "passed": [1, 0, 1, 0, 1, 1, 1, 0, 1, 1, 0],
        }
    )
    for obs in (_rotating(), irt.simulate_rotating(seed=5, missing=0.9)[0], few):
        subjects = sorted(obs["subject"].unique())
        ability = pd.Series(np.random.default_rng(1).normal(0, 1, len(subjects)), index=subjects)
        got = irt_fit._item_frame(obs, ability)
        pd.testing.assert_frame_equal(got, _reference_items(obs, ability), rtol=1e-9, atol=1e-12)
    assert got.loc["t3", "r_ability"] != 0 and (got.loc[["t1", "t2", "t4"], "r_ability"] == 0).all()
