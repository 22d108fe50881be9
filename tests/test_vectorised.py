"""Issue 33: the per-task statistics without a Python loop per task or pair give the same results, to the last
bit, as the loops they replaced (kept here as reference implementations) on random inputs."""

from __future__ import annotations

import copy
import importlib
import math
import sys
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analytics import compare, comparison_sets, stats, tmf
from analytics.leaderboard import compute as lb_compute
from analytics.leaderboard import verdicts
from analytics.runs import comparable_runs, comparable_runs_of, is_eligible
from analytics.tmf import analysis as tmf_analysis
from analytics.tmf import bootstrap as tmf_bootstrap

# ---- reference: comparison sets from per-run sets of task ids (one Python step per task) ----


def _ref_membership(voters: Sequence[Hashable], sets: Mapping[Any, frozenset[str]]) -> tuple[np.ndarray, list[str]]:
    codes: dict[str, int] = {}
    for r in voters:
        for t in sets[r]:
            codes.setdefault(t, len(codes))
    held = np.zeros((len(voters), len(codes)), dtype=bool)
    for i, r in enumerate(voters):
        held[i, [codes[t] for t in sets[r]]] = True
    return held, list(codes)


def _ref_comparison_sets(
    task_sets: Mapping[Any, Iterable[str]], *, eligible: Iterable[Hashable] | None = None
) -> compare.ComparisonSets:
    sets = {run: frozenset(tasks) for run, tasks in task_sets.items()}
    chosen = list(eligible if eligible is not None else sets)
    voters = [r for r in chosen if sets.get(r)]
    if not voters:
        voters = [r for r in sets if sets[r]]
    excluded: dict[Hashable, str] = {r: "no scored task in this slice" for r in chosen if not sets.get(r)}
    held, names = _ref_membership(voters, sets)
    found: list[compare.ComparisonSet] = []
    left = np.ones(len(voters), dtype=bool)
    while left.any():
        members, common = comparison_sets._best_candidate(held, left, voters)
        n = held[:, common].sum(axis=1)
        tasks = frozenset(t for t, ok in zip(names, common, strict=True) if ok)
        found.append(
            compare.ComparisonSet(tasks, tuple(voters[i] for i in members), {voters[i]: int(n[i]) for i in members})
        )
        left[members] = False
    if not found:
        return compare.ComparisonSets((), excluded)
    ranked = found[0]
    for k, other in enumerate(found[1:], start=2):
        for run in other.runs:
            inside = len(sets[run] & ranked.tasks)
            excluded[run] = (
                f"has {inside} of the {len(ranked.tasks)} tasks of the comparison set (fewer than 80%)"
                if 2 * inside >= len(sets[run])
                else f"evaluated on other tasks (set {k}: {len(other.tasks)} tasks, {len(other.runs)} run(s))"
            )
    return compare.ComparisonSets(tuple(found), excluded)


def _ref_comparable_runs(
    task_sets: Mapping[Any, Iterable[str]],
    kinds: Mapping[Any, object],
    is_baseline: Mapping[Any, object] | None = None,
    *,
    include_baselines: bool = False,
    also_excluded: Iterable[Hashable] = (),
) -> compare.ComparisonSets:
    flags = is_baseline or {}
    out = set(also_excluded)
    eligible = [
        r
        for r in task_sets
        if r not in out and r in kinds and is_eligible(kinds[r], flags.get(r), include_baselines=include_baselines)
    ]
    return _ref_comparison_sets(task_sets, eligible=eligible)


# ---- reference: the leaderboard's verdicts with one dict per row and generator expressions per pair ----


def _ref_compare_rows(
    rows: list[dict[str, Any]],
    indices: list[np.ndarray],
    tasks: np.ndarray,
    values: np.ndarray,
    n: np.ndarray,
    *,
    metric: str,
    seed: int = 0,
) -> None:
    by_slice: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_slice.setdefault(row["slice"], []).append(i)
    for members in by_slice.values():
        per_row = [dict(zip(tasks[indices[i]], values[indices[i]], strict=True)) for i in members]
        single = [bool((n[indices[i]] == 1).all()) and metric == "pass@1" for i in members]
        _ref_compare_slice([rows[i] for i in members], per_row, single, metric=metric, seed=seed)


def _ref_compare_slice(
    rows: list[dict[str, Any]], per_task: list[dict[str, float]], single: list[bool], *, metric: str, seed: int
) -> None:
    nanmean = verdicts.nanmean
    sets = [frozenset(t) for t in per_task]
    kinds = {i: r["kind"] for i, r in enumerate(rows)}
    baseline = {i: bool(r["is_baseline"]) for i, r in enumerate(rows)}
    incomplete = {i for i, r in enumerate(rows) if not r.get("may_lead", True)}
    rankable = [i for i in range(len(rows)) if is_eligible(kinds[i], baseline[i]) and i not in incomplete]
    found = _ref_comparable_runs(dict(enumerate(sets)), kinds, baseline, also_excluded=incomplete)
    primary = found.primary
    core = primary.tasks if primary is not None else frozenset()
    members = {i for i in range(len(rows)) if primary is not None and i in primary.n_compared}
    point = np.array([r["pass_at_1"] if metric == "pass@1" else r["mean_score"] for r in rows], dtype=float)
    compared = [
        {t: v for t, v in per_task[i].items() if t in core} if i in members else per_task[i] for i in range(len(rows))
    ]
    for i in members:
        point[i] = nanmean(np.fromiter(compared[i].values(), dtype=float, count=len(compared[i])))
    ranked = [i for i in sorted(members) if i in rankable and np.isfinite(point[i])]
    ranks = dict(zip(ranked, verdicts._competition_ranks(point[ranked]).tolist(), strict=True)) if ranked else {}
    leaders = sorted((i for i in ranked if ranks[i] == 1), key=lambda i: str(rows[i]["run_id"]))
    ref = leaders[0] if leaders else None
    for i, row in enumerate(rows):
        k = found.index_of(i)
        row.update(
            metric=metric,
            metric_value=float(point[i]),
            rank=ranks.get(i),
            is_leader=i in leaders,
            is_comparable=i in members,
            comparison_set_size=len(core),
            n_shared_with_leader=None if ref is None else len(sets[i] & sets[ref]),
            n_compared=primary.n_compared.get(i) if primary is not None else None,
            comparison_set_index=k,
            own_set_size=None if k is None else len(found.sets[k - 1].tasks),
            excluded_reason=found.excluded.get(i),
            **dict.fromkeys(verdicts.TEST_COLUMNS),
        )
        row["top_group"] = False
    if ref is not None:
        tag = str(rows[ref]["slice"])
        _ref_test_ranked(rows, compared, single, ranked, ref, seed=seed, tag=tag)
        apart = [i for i in range(len(rows)) if i not in ranked]
        _ref_test_apart(rows, per_task, single, apart, ref, seed=seed)


def _ref_shared_diffs(mine: dict[str, float], theirs: dict[str, float]) -> tuple[tuple[str, ...], np.ndarray]:
    shared = tuple(
        sorted(t for t in mine.keys() & theirs.keys() if math.isfinite(mine[t]) and math.isfinite(theirs[t]))
    )
    return shared, np.fromiter((mine[t] - theirs[t] for t in shared), dtype=float, count=len(shared))


def _ref_paired(
    per_task: list[dict[str, float]], single: list[bool], which: list[int], ref: int, *, seed: int
) -> list[tuple[int, compare.PairedTest, np.ndarray]]:
    groups: dict[tuple[str, ...], list[int]] = {}
    diffs: dict[int, np.ndarray] = {}
    for i in which:
        shared, d = _ref_shared_diffs(per_task[i], per_task[ref])
        if shared:
            groups.setdefault(shared, []).append(i)
            diffs[i] = d
    tested: list[tuple[int, compare.PairedTest, np.ndarray]] = []
    for members in groups.values():
        d = np.column_stack([diffs[i] for i in members])
        flags = [single[i] and single[ref] for i in members]
        tests = compare.paired_tests(d, is_binary_single=flags, seed=seed)
        tested += [(i, t, diffs[i]) for i, t in zip(members, tests, strict=True)]
    return tested


def _ref_test_ranked(
    rows: list[dict[str, Any]],
    compared: list[dict[str, float]],
    single: list[bool],
    ranked: list[int],
    ref: int,
    *,
    seed: int,
    tag: str,
) -> None:
    rows[ref]["top_group"] = True
    others = [i for i in ranked if i != ref]
    if not others:
        return
    tasks = sorted(set().union(*(compared[i].keys() for i in ranked)))
    x = np.array([[compared[i].get(t, np.nan) for i in ranked] for t in tasks], dtype=float)
    rng = stats.stable_rng(seed, "max-gap", tag, str(len(tasks)), str(len(ranked)))
    sel = compare.max_gap_test(x, leader=ranked.index(ref), rng=rng)
    ses = []
    for i, test, d in _ref_paired(compared, single, others, ref, seed=seed):
        se = float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
        se = se if se > 0 else float("nan")
        ses.append(se)
        p_adj = float(sel.p_adjusted[ranked.index(i)])
        verdicts._set_test(rows[i], test, p_adj, verdicts.RANKED_P_METHOD, sel.critical_gap + compare.Z80 * se)
        rows[i]["top_group"] = bool(p_adj >= compare.ALPHA)
    finite = [se for se in ses if np.isfinite(se)]
    lead = sel.critical_gap + compare.Z80 * float(np.median(finite)) if finite else float("nan")
    rows[ref]["mde80"] = float(lead) if np.isfinite(lead) and lead <= 1.0 else None


def _ref_test_apart(
    rows: list[dict[str, Any]],
    per_task: list[dict[str, float]],
    single: list[bool],
    apart: list[int],
    ref: int,
    *,
    seed: int,
) -> None:
    tested = _ref_paired(per_task, single, apart, ref, seed=seed)
    adjusted = compare.holm([t.p_value for _, t, _ in tested])
    for (i, test, d), p_adj in zip(tested, adjusted, strict=True):
        sd = float(np.sqrt(np.mean(d * d))) if d.size else float("nan")
        mde = compare.mde80_normal(sd, d.size, alpha=compare.ALPHA / max(1, len(tested))) if sd > 0 else np.nan
        verdicts._set_test(rows[i], test, float(p_adj), verdicts.APART_P_METHOD, mde)


def _bench() -> ModuleType:
    """bench/bench_vectorised.py (its synthetic benchmarks), imported as the bench smoke tests do."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    return importlib.import_module("bench_vectorised")


# ---- random inputs ----


def _random_task_sets(rng: np.random.Generator) -> dict[str, list[str]]:
    """Runs on pools of tasks that overlap, supersets, runs that missed a few, disjoint pools, empty runs."""
    pools = [[f"t{p}-{i}" for i in range(int(rng.integers(1, 40)))] for p in range(int(rng.integers(1, 4)))]
    out: dict[str, list[str]] = {}
    for r in range(int(rng.integers(1, 12))):
        pool = pools[int(rng.integers(len(pools)))]
        keep = rng.random(len(pool)) < rng.choice([1.0, 0.95, 0.7, 0.3])
        extra = [f"own{r}-{i}" for i in range(int(rng.integers(0, 3)) * int(rng.integers(0, 6)))]
        tasks = [t for t, k in zip(pool, keep, strict=True) if k] + extra
        out[f"run{int(rng.integers(1000)):03d}-{r}"] = list(rng.permutation(tasks)) if tasks else []
    return out


def _same_sets(a: compare.ComparisonSets, b: compare.ComparisonSets) -> None:
    assert a.excluded == b.excluded and list(a.excluded) == list(b.excluded)
    assert len(a.sets) == len(b.sets)
    for x, y in zip(a.sets, b.sets, strict=True):
        assert x.tasks == y.tasks and x.runs == y.runs and dict(x.n_compared) == dict(y.n_compared)


@pytest.mark.parametrize("seed", range(60))
def test_comparison_sets_equal_the_loop_over_tasks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sets = _random_task_sets(rng)
    kinds = {r: rng.choice(["agent", "agent", "agent", "human"]) for r in sets}
    flags = {r: bool(rng.random() < 0.15) for r in sets}
    left_out = [r for r in sets if rng.random() < 0.1]
    for include in (False, True):
        want = _ref_comparable_runs(sets, kinds, flags, include_baselines=include, also_excluded=left_out)
        got = comparable_runs(sets, kinds, flags, include_baselines=include, also_excluded=left_out)
        _same_sets(got, want)
    _same_sets(compare.comparison_sets(sets), _ref_comparison_sets(sets))
    pairs = [(r, t) for r, ts in sets.items() for t in ts]
    if pairs:  # the frame form (rows of (run, task), repeats allowed): runs in order of first appearance
        pairs += pairs[: len(pairs) // 3]
        runs_col, tasks_col = (np.array(c, dtype=object) for c in zip(*pairs, strict=True))
        with_tasks = {r: ts for r, ts in sets.items() if ts}
        matrix = compare.task_matrix_of_pairs(runs_col, tasks_col)
        assert matrix.runs == tuple(with_tasks)
        _same_sets(comparable_runs_of(matrix, kinds, flags), _ref_comparable_runs(with_tasks, kinds, flags))


def _random_board(
    rng: np.random.Generator, metric: str
) -> tuple[list[dict[str, Any]], list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """Leaderboard rows of a few slices over random task sets, with the per-(run, task) arrays."""
    rows: list[dict[str, Any]] = []
    indices: list[np.ndarray] = []
    tasks: list[str] = []
    values: list[float] = []
    n: list[float] = []
    binary_single = rng.random() < 0.5
    for slice_name in ("all", "level=1", "level=2")[: int(rng.integers(1, 4))]:
        for run, ts in _random_task_sets(rng).items():
            k = len(ts)
            reps = np.ones(k) if binary_single else rng.integers(1, 4, size=k).astype(float)
            if metric == "pass@1":
                c = rng.binomial(reps.astype(int), rng.uniform(0.2, 0.9))
                vals = c / reps
            else:
                vals = np.round(rng.uniform(0, 1, size=k), 2)
                vals[rng.random(k) < 0.1] = np.nan
            start = len(tasks)
            tasks += ts
            values += vals.tolist()
            n += reps.tolist()
            indices.append(np.arange(start, start + k))
            kind = "human" if rng.random() < 0.1 else "agent"
            point = verdicts.nanmean(vals) if k else float("nan")
            rows.append(
                {
                    "run_id": run,
                    "slice": slice_name,
                    "kind": kind,
                    "is_baseline": bool(rng.random() < 0.1),
                    "may_lead": bool(rng.random() < 0.9),
                    "pass_at_1": point,
                    "mean_score": point,
                }
            )
    return rows, indices, np.array(tasks, dtype=object), np.array(values, dtype=float), np.array(n, dtype=float)


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN, floats to the last bit."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("metric", ["pass@1", "mean_score"])
def test_compare_rows_equal_the_loop_over_pairs(seed: int, metric: str) -> None:
    rng = np.random.default_rng([33, seed])
    rows, indices, tasks, values, n = _random_board(rng, metric)
    want, got = copy.deepcopy(rows), copy.deepcopy(rows)
    _ref_compare_rows(want, indices, tasks, values, n, metric=metric, seed=seed)
    verdicts.compare_rows(got, indices, tasks, values, n, metric=metric, seed=seed)
    for w, g in zip(want, got, strict=True):
        assert list(w) == list(g)
        bad = {k: (w[k], g[k]) for k in w if not _same(w[k], g[k])}
        assert not bad, bad


def test_random_boards_exercise_the_tests() -> None:
    """The random boards above reach the paired tests, the rows apart and the sets shown apart (so the
    comparison is not between two empty outputs)."""
    seen = {"ranked": 0, "apart": 0, "other_set": 0}
    for seed in range(40):
        rows, indices, tasks, values, n = _random_board(np.random.default_rng([33, seed]), "pass@1")
        verdicts.compare_rows(rows, indices, tasks, values, n, metric="pass@1", seed=seed)
        seen["ranked"] += sum(r["p_method"] == verdicts.RANKED_P_METHOD for r in rows)
        seen["apart"] += sum(r["p_method"] == verdicts.APART_P_METHOD for r in rows)
        seen["other_set"] += sum((r["comparison_set_index"] or 0) > 1 for r in rows)
    assert min(seen.values()) > 0, seen


@pytest.mark.parametrize("seed", range(20))
def test_tmf_best_shares_equal_the_loop_over_replicates(seed: int) -> None:
    """TMF's p_best: the share of replicates where a run is best (tied runs share one), summed as before."""
    rng = np.random.default_rng([33, 7, seed])
    runs = [f"r{i}" for i in range(int(rng.integers(1, 9)))]
    n = int(rng.integers(0, 300))
    best: list[tuple[str, ...]] = []
    for _ in range(n):
        k = int(rng.choice([0, 1, 1, 1, 2, 3]))
        best.append(tuple(str(r) for r in rng.choice(runs, size=min(k, len(runs)), replace=False)))
    want = {r: float(sum(1.0 / len(b) for b in best if r in b) / max(n, 1)) for r in runs}
    tied = np.array([[r in b for r in runs] for b in best], dtype=bool).reshape(n, len(runs))
    got = dict(zip(runs, tmf_bootstrap._best_shares(tied, max(n, 1)), strict=True))
    assert want == got


@pytest.mark.parametrize("seed", range(12))
def test_tmf_replicate_means_equal_the_two_products(seed: int) -> None:
    """TMF's replicate means equal, to the last bit, the finite values' product over the counts' product they
    were computed as; a matrix without NaN (every run has every task) takes the resamples' sizes as counts."""
    rng = np.random.default_rng([33, 13, seed])
    n_tasks, n_runs = int(rng.integers(1, 3000)), int(rng.integers(1, 20))
    weights = stats.resample_weights(n_tasks, rng, n_boot=int(rng.integers(1, 200)))
    full = rng.gamma(2.0, 0.3, (n_tasks, n_runs))
    for m in (full, np.where(rng.random(full.shape) < 0.2, np.nan, full)):
        ok = np.isfinite(m)
        with np.errstate(invalid="ignore", divide="ignore"):
            want = (weights @ np.where(ok, m, 0.0)) / (weights @ ok.astype(float))
        assert np.array_equal(tmf_bootstrap._weighted_means(weights, m), want, equal_nan=True)


def _ref_tmf_comparison_set(rows: pd.DataFrame) -> tuple[set[str], frozenset[str]]:
    """TMF's comparison set as it was: one set of task ids per run from a groupby."""
    agents = rows[rows["kind"] != "human"]
    sets = {str(r): frozenset(t.astype(str)) for r, t in agents.groupby("run_id", sort=False)["task_id"]}
    kinds = {str(r): k for r, k in zip(agents["run_id"], agents["kind"], strict=True)}
    primary = _ref_comparable_runs(sets, kinds, include_baselines=True).primary
    if primary is None:
        return set(), frozenset()
    return {str(r) for r in primary.runs}, primary.tasks


@pytest.mark.parametrize("seed", range(40))
def test_tmf_comparison_set_equals_the_sets_of_task_ids(seed: int) -> None:
    rng = np.random.default_rng([33, 11, seed])
    sets = _random_task_sets(rng)
    kinds = {r: str(rng.choice(["llm", "llm", "human"])) for r in sets}
    pairs = [(r, t, kinds[r]) for r, ts in sets.items() for t in ts]
    rows = pd.DataFrame(pairs, columns=["run_id", "task_id", "kind"]).sample(frac=1.0, random_state=seed)
    assert tmf_analysis.comparison_set(rows) == _ref_tmf_comparison_set(rows)
    subset = {r for r in sets if rng.random() < 0.7}
    matrix, agent_kinds, row_run, row_task = tmf_analysis._agent_matrix(rows)
    want = _ref_tmf_comparison_set(rows[rows["run_id"].isin(subset)])
    assert tmf_analysis._primary_set(matrix, agent_kinds, runs=subset) == want
    keep, cset = want  # rows of the compared runs outside the common tasks, as the frame expression found them
    sliced = tmf_analysis.SliceRows(rows, [], matrix, agent_kinds, row_run, row_task)
    was = rows["run_id"].isin(keep).to_numpy() & ~rows["task_id"].astype(str).isin(cset).to_numpy()
    assert np.array_equal(sliced.outside(keep, cset), was)


def test_tmf_movie_with_the_slice_made_once_equals_one_analysis_per_period() -> None:
    """``by_period`` reuses one ``SliceRows`` for every period: the same results as ``analyse`` per period."""
    bench_vectorised = _bench()
    frame = bench_vectorised.synthetic(60, 12, seed=3)
    frame.loc[frame["run_id"] == "r0005", "task_id"] += "-other"  # a run on other tasks, shown apart
    more = frame[frame["run_id"] == "r0002"].assign(task_id=lambda f: f["task_id"] + "-more")
    frame = pd.concat([frame, more.iloc[:6]], ignore_index=True)  # a run on a superset: its point is trimmed
    inputs = tmf.TmfInputs("synthetic", frame, pd.DataFrame(columns=["subject", "ability", "ability_lo", "ability_hi"]))
    movie = tmf.by_period(inputs, slice_name="level=L2")
    assert len(movie) == 8
    points = tmf.run_points(tmf.slice_tasks(inputs.tasks, "level=L2"), abilities=inputs.abilities)
    for label, got in movie:
        as_of = tmf.period_end(label, "quarter")
        want = tmf.analyse(inputs, slice_name="level=L2", points=points, as_of=as_of, with_uncertainty=False)
        assert got.frontier == want.frontier and got.hull == want.hull and got.value == want.value
        assert got.assumptions == want.assumptions
        pd.testing.assert_frame_equal(got.points, want.points, check_exact=True)
    assert all(got.value is not None for _, got in movie)
    assert movie[-1][1].assumptions["runs_on_other_tasks"] == ["r0005"]


def test_bench_vectorised_runs_at_a_tiny_size(capsys: pytest.CaptureFixture[str]) -> None:
    bench_vectorised = _bench()
    assert bench_vectorised.main(["--shapes", "30x4", "--repeat", "1"]) == 0
    assert '"shape": "30x4"' in capsys.readouterr().out


def _ref_slice_codes(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The leaderboard's slice names and per-row codes as they were: ``str`` of every row's value."""
    has = pd.notna(values)
    names = sorted({str(v) for v in values[has]})
    codes = np.full(len(values), -1)
    codes[has] = pd.Index(names).get_indexer(values[has].astype(str))
    return names, codes


@pytest.mark.parametrize("seed", range(10))
def test_leaderboard_slices_equal_the_text_of_every_row(seed: int) -> None:
    rng = np.random.default_rng([33, 13, seed])
    n_rows = int(rng.integers(0, 400))
    pool = np.array(["L1", "L2", "L10", None, np.nan, "creative", 3, "3"], dtype=object)
    outcomes = pd.DataFrame(
        {
            "run_id": np.sort(rng.integers(0, 6, n_rows)).astype(str),
            "level": pool[rng.integers(0, len(pool), n_rows)],
            "category": pool[rng.integers(3, len(pool), n_rows)],
        }
    )
    run_pos = pd.factorize(outcomes["run_id"])[0]
    got = lb_compute._slice_groups(run_pos, outcomes, ("all", "level", "category"))
    for kind in ("level", "category"):
        names, codes = _ref_slice_codes(outcomes[kind].to_numpy(dtype=object))
        for _, rows, slices in got:
            want = [(f"{kind}={names[c]}", rows[codes[rows] == c]) for c in np.unique(codes[rows][codes[rows] >= 0])]
            mine = [(name, idx) for name, idx in slices if name.startswith(f"{kind}=")]
            assert [n for n, _ in mine] == [n for n, _ in want]
            assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(mine, want, strict=True))
