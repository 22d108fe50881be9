"""The tree's cut chosen per set: the finer cut only when it is clearly more stable across seeded subsamples."""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

from analytics.clusters import compute


def _pairs(similarity: float, *, seed: int, n: int = 30, dims: int = 64, noise: float = 0.25) -> np.ndarray:
    """Four groups of ``n`` noisy points; groups 0-1 and 2-3 have centres at cosine ``similarity``, the pairs are
    orthogonal."""
    rng = np.random.default_rng(seed)
    e = np.eye(dims)
    centres = []
    for i in (0, 2):
        centres += [e[i], similarity * e[i] + np.sqrt(1 - similarity**2) * e[i + 1]]
    return np.vstack([c + noise * rng.standard_normal((n, dims)) / np.sqrt(dims) for c in centres]).astype(np.float32)


def _clusters(features: np.ndarray, cut: float) -> int:
    tree = linkage(features.astype(np.float64), method="average", metric="cosine")
    return len(set(fcluster(tree, cut, criterion="distance")))


def test_the_finer_cut_is_taken_when_the_default_joins_groups_at_its_edge() -> None:
    feats = _pairs(0.18, seed=0)  # groups of a pair at mean distance near 0.85: the default cut joins them unstably
    tree = linkage(feats.astype(np.float64), method="average", metric="cosine")
    assert (_clusters(feats, 0.85), _clusters(feats, 0.825)) == (2, 4)
    assert compute.stable_cut(feats, tree, 0.85) == compute.FINER_CUT == 0.825


def test_the_default_cut_stays_when_both_cuts_are_stable() -> None:
    for similarity in (0.0, 0.3):  # pairs far apart (4 clusters) or clearly together (2) at both cuts
        feats = _pairs(similarity, seed=0)
        tree = linkage(feats.astype(np.float64), method="average", metric="cosine")
        assert compute.stable_cut(feats, tree, 0.85) == 0.85
    few = _pairs(0.18, seed=0, n=4)  # under 20 rows: no subsamples, the given cut
    assert compute.stable_cut(few, linkage(few.astype(np.float64), "average", "cosine"), 0.85) == 0.85


def test_cluster_vectors_cuts_where_stable_cut_says_unless_told_not_to(monkeypatch) -> None:
    feats = _pairs(0.18, seed=0)
    calls: list[float] = []

    def finest(features: np.ndarray, tree: np.ndarray, cut: float, *, seed: int = 0, condensed: object = None) -> float:
        calls.append(cut)
        return 1e-6  # every distinct row its own cluster

    monkeypatch.setattr(compute, "stable_cut", finest)
    monkeypatch.setattr(compute, "SMALL_TREE", None)  # the small tree's gap would move the cut
    assert len(set(compute.cluster_vectors(feats, min_size=1))) == len(feats)
    assert calls == [compute.CUT_DISTANCE]
    assert len(set(compute.cluster_vectors(feats, min_size=1, choose_cut=False))) < len(feats)
    assert calls == [compute.CUT_DISTANCE]


def test_a_small_tree_is_cut_in_its_widest_gap_above_the_cut() -> None:
    """Two causes, each in two wordings whose groups join at 0.86-0.87 (just above the cut 0.85), the causes at
    about 1.0: a small tree is cut in the gap between (2 clusters), a tree over ``SMALL_TREE`` rows keeps 0.85."""
    feats = _pairs(0.15, seed=0)  # 120 rows
    tree = linkage(feats.astype(np.float64), method="average", metric="cosine")
    assert _clusters(feats, 0.85) == 4
    cut = compute.small_tree_cut(tree, 0.85)
    assert sorted(tree[:, 2])[-2] < cut < compute.GAP_CUT_MAX
    assert len(set(fcluster(tree, cut, criterion="distance"))) == 2
    big = _pairs(0.15, seed=0, n=40)  # 160 rows
    assert compute.small_tree_cut(linkage(big.astype(np.float64), "average", "cosine"), 0.85) == 0.85
    near = _pairs(0.1, seed=0)  # wordings join at 0.91-0.92: the widest gap is the one above the cut, which stays
    assert compute.small_tree_cut(linkage(near.astype(np.float64), "average", "cosine"), 0.85) == 0.85


def test_cluster_vectors_moves_a_small_trees_cut_after_the_stable_cut(monkeypatch) -> None:
    feats = _pairs(0.15, seed=0)
    seen: list[float] = []

    def spy(tree: np.ndarray, cut: float) -> float:
        seen.append(cut)
        return 1e-6

    monkeypatch.setattr(compute, "stable_cut", lambda *a, **k: 0.8)
    monkeypatch.setattr(compute, "small_tree_cut", spy)
    assert len(set(compute.cluster_vectors(feats, min_size=1))) == len(feats)
    assert seen == [0.8]
