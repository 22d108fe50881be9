"""Issue 28: comparison sets by a structural rule, the leaderboard's selection-aware verdicts, top group, mde80."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analytics import compare
from analytics import leaderboard as lb
from store import RunFilter, reader


def _pools(rng: np.random.Generator) -> dict[str, set[str]]:
    """Three runs on 100 common tasks plus 20 of their own each, one that missed a task, a disjoint pool of two,
    and a run with only 30 of the common tasks."""
    common = [f"c{i}" for i in range(100)]
    sets = {r: set(common) | {f"{r}-own{i}" for i in range(20)} for r in ("a", "b", "c")}
    sets["d"] = set(common) - {common[int(rng.integers(100))]}
    sets["p"] = {f"p{i}" for i in range(60)}
    sets["q"] = {f"p{i}" for i in range(60)}
    sets["thin"] = set(common[:30])
    return sets


def _names(sets: dict[str, set[str]], rng: np.random.Generator) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """Other task names, other run names (both in a shuffled order) and a shuffled order of the runs."""
    tasks = sorted(set().union(*sets.values()))
    new_task = dict(zip(tasks, (f"z{v:06d}" for v in rng.permutation(len(tasks))), strict=True))
    new_run = {r: f"run-{v}" for r, v in zip(sets, rng.permutation(len(sets)), strict=True)}
    return new_task, new_run, [str(r) for r in rng.permutation(list(sets))]


def _respell(sets: dict[str, set[str]], rng: np.random.Generator) -> tuple[dict[str, set[str]], dict[str, str]]:
    """The same sharing structure under other task and run names, runs listed in another order."""
    new_task, new_run, order = _names(sets, rng)
    return {new_run[r]: {new_task[t] for t in sets[r]} for r in order}, new_run


def test_comparison_sets_keep_every_comparable_run() -> None:
    rng = np.random.default_rng(28)
    sets = _pools(rng)
    found = compare.comparison_sets(sets)
    primary = found.primary
    assert primary is not None and set(primary.runs) == {"a", "b", "c", "d"}
    assert len(primary.tasks) == 100 and primary.n_compared == {"a": 100, "b": 100, "c": 100, "d": 99}
    assert found.excluded["p"].startswith("evaluated on other tasks (set 2: 60 tasks")
    assert found.excluded["thin"] == "has 30 of the 100 tasks of the comparison set (fewer than 80%)"
    assert found.index_of("q") == 2 and found.index_of("thin") == 3


def test_comparison_sets_do_not_depend_on_spelling_or_order() -> None:
    rng = np.random.default_rng(5)
    sets = _pools(rng)
    want = compare.comparison_sets(sets)
    for _ in range(5):
        other, names = _respell(sets, rng)
        got = compare.comparison_sets(other)
        assert got.primary is not None and want.primary is not None
        assert set(got.primary.runs) == {names[r] for r in want.primary.runs}
        assert {k: v for k, v in got.primary.n_compared.items()} == {
            names[r]: n for r, n in want.primary.n_compared.items()
        }
        assert set(got.excluded) == {names[r] for r in want.excluded}


def _outcomes(run: str, tasks: list[str], c: np.ndarray, n: int = 1) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": run,
            "task_id": tasks,
            "n": n,
            "c": c,
            "score": c / n,
            "steps": 1.0,
            "cost_usd": np.nan,
            "level": None,
            "category": None,
        }
    )


def _runs(ids: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        {"run_id": ids, "agent": ids, "agent_version": None, "family": None, "kind": "llm", "eval_date": pd.NaT}
    )


def test_leaderboard_ranks_supersets_and_near_complete_runs_on_common_tasks() -> None:
    rng = np.random.default_rng(11)
    sets = _pools(rng)
    rates = {"a": 0.8, "b": 0.5, "c": 0.5, "d": 0.5, "p": 0.9, "q": 0.9, "thin": 0.95}
    truth = {r: {t: int(rng.random() < rates[r]) for t in sorted(ts)} for r, ts in sets.items()}
    for r in ("b", "c"):  # their own tasks all pass: the overall Pass@1 would lift them, the common tasks do not
        truth[r].update({t: 1 for t in truth[r] if "own" in t})
    boards = []
    for spelling in range(2):
        new_task, names, order = _names(sets, np.random.default_rng(1))
        if not spelling:
            new_task, names, order = {t: t for t in new_task}, {r: r for r in sets}, list(sets)
        parts = [_outcomes(names[r], [new_task[t] for t in truth[r]], np.array(list(truth[r].values()))) for r in order]
        out = lb.leaderboard_rows(_runs([names[r] for r in order]), pd.concat(parts)).set_index("run_id")
        back = {v: k for k, v in names.items()}
        boards.append(out.rename(index=back).sort_index())
    for out in boards:
        assert set(out.index[out["rank"].notna()]) == {"a", "b", "c", "d"}
        assert out.loc["d", "n_compared"] == 99 and out.loc["a", "n_compared"] == 100
        assert out.loc["a", "is_leader"] and out.loc["p", "rank"] is pd.NA
        common = sorted(t for t in truth["b"] if "own" not in t)
        assert out.loc["b", "metric_value"] == pytest.approx(np.mean([truth["b"][t] for t in common]))
        assert out.loc["b", "pass_at_1"] > out.loc["b", "metric_value"]  # its own tasks are not compared
        assert lb.apart_reason(out.loc["thin"].to_dict()).startswith("has 30 of the 100 tasks")
    assert boards[0]["rank"].tolist() == boards[1]["rank"].tolist()
    assert boards[0]["top_group"].tolist() == boards[1]["top_group"].tolist()
    # the permutations meet the tasks in another order: the same p up to Monte Carlo error
    p0, p1 = (b["p_vs_leader"].astype(float).to_numpy() for b in boards)
    assert np.allclose(p0, p1, atol=0.01, equal_nan=True)


def test_max_gap_size_under_the_global_null() -> None:
    """Five runs with identical per-task success rates: P(any run marked behind) stays at alpha (seeded, small)."""
    rng = np.random.default_rng(2026)
    reps, false = 120, 0
    for rep in range(reps):
        p = rng.beta(0.8, 0.8, 100)
        x = rng.binomial(3, np.repeat(p[:, None], 5, axis=1)) / 3
        sel = compare.max_gap_test(x, leader=int(np.argmax(x.mean(axis=0))), rng=np.random.default_rng(rep), n_perm=400)
        false += bool((np.nan_to_num(sel.p_adjusted, nan=1.0) < 0.05).any())
    assert false / reps <= 0.075, false / reps


def test_max_gap_finds_a_run_far_behind_and_keeps_the_tied_ones() -> None:
    rng = np.random.default_rng(3)
    p = rng.beta(1, 1, 200)
    x = np.column_stack([rng.binomial(1, p), rng.binomial(1, p), rng.binomial(1, np.clip(p - 0.3, 0, 1))]).astype(float)
    leader = int(np.argmax(x.mean(axis=0)))
    sel = compare.max_gap_test(x, leader=leader, rng=np.random.default_rng(0), n_perm=1000)
    assert sel.p_adjusted[2] < 0.01 and np.isnan(sel.p_adjusted[leader])
    tied = 1 - leader
    assert sel.p_adjusted[tied] >= 0.05 and sel.critical_gap > 0


def test_max_gap_with_two_runs_is_the_two_sided_sign_flip() -> None:
    rng = np.random.default_rng(9)
    x = rng.binomial(1, 0.6, (80, 2)).astype(float)
    x[:, 1] = np.where(rng.random(80) < 0.15, 1 - x[:, 0], x[:, 0])
    leader = int(np.argmax(x.mean(axis=0)))
    sel = compare.max_gap_test(x, leader=leader, rng=np.random.default_rng(1), n_perm=20_000)
    d = x[:, 1 - leader] - x[:, leader]
    want = compare.mcnemar_exact(int((d < 0).sum()), int((d > 0).sum()))
    assert sel.p_adjusted[1 - leader] == pytest.approx(want, abs=0.015)


def test_report_names_top_group_mde80_and_the_comparison_sets(fixture_db: Path) -> None:
    with reader(fixture_db) as con:
        rep = lb.report(con, RunFilter(benchmark="mini-bench"))
    assert all("top_group" in r and "mde80" in r for r in rep["rows"])
    entry = rep["comparison_sets"]["all"]
    assert {"n_tasks", "metric", "runs", "excluded"} <= set(entry)
    ranked = {r["run_id"] for r in rep["rows"] if r["slice"] == "all" and r["rank"] is not None}
    assert set(entry["runs"]) >= ranked
    listed = {e["run_id"] for e in entry["excluded"]}
    everyone = {r["run_id"] for r in rep["rows"] if r["slice"] == "all"}
    assert listed | set(entry["runs"]) == everyone and all(e["reason"] for e in entry["excluded"])
    for r in rep["rows"]:
        assert r["top_group"] is (r["rank"] is not None and (r["is_leader"] or r["is_tied"] is True))


def test_tmf_exact_ties_share_the_best_point_and_supersets_are_compared_on_common_tasks() -> None:
    from analytics import tmf
    from tests.test_tmf import _inputs, _pool_rows

    rng = np.random.default_rng(3)
    pool = [f"p{i:02d}" for i in range(40)]
    twin = _pool_rows("zz", pool, 0.7, 0.01, rng)
    rows = twin + [{**r, "run_id": "aa", "agent": "AA"} for r in twin]  # the same run twice: exact ties
    rows += _pool_rows("c", pool, 0.3, 0.005, rng)
    rows += _pool_rows("wide", pool + [f"x{i}" for i in range(8)], 0.5, 0.008, rng)  # a superset run
    res = tmf.analyse(_inputs(rows), options=tmf.TmfOptions(n_replicates=200))
    unc = res.uncertainty
    assert unc is not None and unc.p_best["aa"] == pytest.approx(unc.p_best["zz"]) and unc.p_best["aa"] > 0
    wide = res.points.set_index("run_id").loc["wide"]
    assert res.assumptions["comparison_set_size"] == 40 and int(wide["n_tasks"]) == 40


def test_pass_at_k_keys_follow_the_1_2_5_grid() -> None:
    assert lb.k_values(1) == [1] and lb.k_values(4) == [1, 2, 3]
    assert lb.k_values(120) == [1, 2, 3, 5, 10, 20, 50, 100]
    big = _outcomes("a", [f"t{i}" for i in range(3)], np.array([1, 500, 999]), n=1000)
    out = lb.leaderboard_rows(_runs(["a"]), big).set_index("slice")
    assert list(out.loc["all", "pass_at"]) == ["1", "2", "3", "5", "10", "20", "50", "100", "200", "500", "1000"]


def test_small_sample_intervals_cover_and_one_task_is_honest() -> None:
    """Mean score at 10-30 tasks, zero-inflated included: the interval covers the truth >= 93% (seeded, small)."""
    rng = np.random.default_rng(93)
    covered = reps = 0
    for n in (10, 20, 30):
        for _ in range(300):
            nonzero = rng.random(n) < 0.1  # 90% of tasks score 0, the rest ~ Beta(2, 2): mean 0.05
            lo, hi = compare.score_interval(np.where(nonzero, rng.beta(2, 2, n), 0.0))
            covered += lo <= 0.05 <= hi
            reps += 1
    assert covered / reps >= 0.93, covered / reps
    # one task with 10 samples, 5 passed: one unit, not ten independent draws
    lo, hi = compare.wilson_clustered(np.array([0.5]), np.array([10]))
    assert (lo, hi) == pytest.approx(compare.score_interval(np.array([0.5]))) and hi - lo > 0.8


def test_bench_verdicts_runs_at_a_tiny_scale(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import bench_verdicts

    assert bench_verdicts.main(["--scale", "0.005", "--only", "gate-size", "sequential", "coverage"]) == 0
    out = capsys.readouterr().out
    assert "## gate-size" in out and "## sequential" in out and "| zero-inflated 90% | 10 |" in out


def test_max_gap_normal_limit_matches_the_permutations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above MAX_GAP_CELLS the step uses Tukey's range of normals: the same p as the permutations, up to noise."""
    rng = np.random.default_rng(12)
    p = rng.beta(1, 1, 300)
    x = rng.binomial(3, np.repeat(p[:, None], 8, axis=1)) / 3
    x[:, 0] = np.clip(x[:, 0] - 0.04, 0, 1)
    leader = int(np.argmax(x.mean(axis=0)))
    monkeypatch.setattr(compare, "MAX_GAP_CELLS", 10**9)
    perm = compare.max_gap_test(x, leader=leader, rng=np.random.default_rng(1), n_perm=4000)
    monkeypatch.setattr(compare, "MAX_GAP_CELLS", 0)
    normal = compare.max_gap_test(x, leader=leader, rng=np.random.default_rng(1))
    assert np.allclose(perm.p_adjusted, normal.p_adjusted, atol=0.03, equal_nan=True)
    assert normal.critical_gap == pytest.approx(perm.critical_gap, rel=0.05)
    false = 0
    for rep in range(200):  # and its size under the global null
        q = rng.beta(0.8, 0.8, 200)
        y = rng.binomial(1, np.repeat(q[:, None], 6, axis=1)).astype(float)
        sel = compare.max_gap_test(y, leader=int(np.argmax(y.mean(axis=0))), rng=np.random.default_rng(rep))
        false += bool((np.nan_to_num(sel.p_adjusted, nan=1.0) < 0.05).any())
    assert false / 200 <= 0.075, false / 200


def test_diff_page_shows_the_sequential_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from ingest.pipeline import ingest_paths
    from tests.apptest import open_page
    from tests.test_diff import _write_bench

    db = tmp_path / "flip.duckdb"
    ingest_paths([_write_bench(tmp_path / "flip.jsonl")], db=db)
    at = open_page("views/diff.py", db, monkeypatch, benchmark="flip-bench")
    assert not at.exception
    # the gate is run and drawn when its expander is opened: nothing of it in the first view
    assert not any(t.value.startswith("sequential: ") for t in at.text)
    assert not [c for c in at.get("plotly_chart") if "Sequential gate" in c.proto.spec]
    at.session_state["df_gate"] = True  # the expander opened (it reruns the page)
    at.run()
    assert not at.exception
    line = next(t.value for t in at.text if t.value.startswith("sequential: "))
    assert "of 5 tasks" in line and "threshold 20" in line
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "Sequential gate" in c.proto.spec)
    assert {t["name"] for t in spec["data"]} >= {"evidence B is worse than A"}


def test_leaderboard_page_names_the_top_group(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.apptest import open_page

    at = open_page("views/leaderboard.py", fixture_db, monkeypatch, benchmark="mini-bench")
    assert not at.exception
    caption = next(c.value for c in at.caption if "Top group (" in c.value)
    with reader(fixture_db) as con:
        board = lb.leaderboard(con, RunFilter(benchmark="mini-bench"))
    ranked = board[(board["slice"] == "all") & board["rank"].notna()]
    assert f"Top group ({int(ranked['top_group'].sum())} of {len(ranked)}" in caption
    summary = next(d.value for d in at.dataframe if "Top group" in d.value.columns)
    assert set(summary["Top group"]) <= {"✓", ""} and "MDE80" in summary.columns


def test_leaderboards_of_identical_runs_rarely_mark_one_behind() -> None:
    """End to end through leaderboard_rows: five runs with the same task rates, 80 seeded boards."""
    rng = np.random.default_rng(280)
    tasks = [f"t{i:03d}" for i in range(100)]
    behind = 0
    for rep in range(80):
        p = rng.beta(0.8, 0.8, 100)
        ids = [f"r{j}" for j in range(5)]
        parts = [_outcomes(r, tasks, rng.binomial(3, p), n=3) for r in ids]
        board = lb.leaderboard_rows(_runs(ids), pd.concat(parts), slices=("all",), seed=rep, n_boot=20)
        behind += bool((board["rank"].notna() & board["is_tied"].eq(False)).any())
        assert board["top_group"].sum() >= 1 and board["is_leader"].any()
    assert behind / 80 <= 0.075, behind / 80  # 0.05 expected
