"""The AD-Bench demo: the 2026-01-15 snapshot reproduces the paper's Tables 2 and 3 and the L3 coverage of
section 3.2 when aggregated from the database; the history follows its committed IRT truth."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from data.demo import adbench, history
from store import query_df, query_rows, reader

SNAPSHOT = "2026-01-15"

# Table 2 of the paper (ad-bench.md): overall P@1, P@3, L1 P@1, P@3, L2 P@1, P@3, L3 P@1, P@3, Avg. Len.
TABLE2 = {
    "Gemini-3-Pro": (68.0, 83.0, 77.8, 91.7, 74.5, 91.5, 49.4, 62.1, 3.45),
    "GPT-5.1": (64.7, 82.0, 88.9, 95.8, 66.7, 83.0, 41.4, 69.0, 3.48),
    "HY-2.0": (65.7, 82.0, 84.7, 87.5, 70.2, 91.5, 42.5, 62.1, 3.71),
    "o3": (69.0, 82.0, 86.1, 91.7, 75.9, 91.5, 43.7, 58.6, 4.15),
    "GLM-4.7": (64.7, 81.0, 72.2, 87.5, 72.3, 91.5, 46.0, 58.6, 3.81),
    "DeepSeek-V3": (68.3, 80.0, 81.9, 87.5, 74.5, 87.2, 47.1, 62.1, 3.60),
    "Kimi-K2": (64.0, 79.0, 83.3, 91.7, 66.7, 85.1, 43.7, 58.6, 4.31),
    "Qwen3-235B": (54.3, 68.0, 79.2, 87.5, 53.2, 72.3, 35.6, 44.8, 3.55),
    "Qwen3-32B": (38.0, 59.0, 50.0, 70.8, 41.8, 63.8, 21.8, 41.4, 3.75),
    "Qwen3-8B": (38.0, 58.0, 51.4, 79.2, 41.8, 61.7, 20.7, 34.5, 4.10),
}
# Table 3: TE, PE, DE, CE, HAL, LC, #Error, #Total
TABLE3 = {
    "Gemini-3-Pro": (27, 37, 7, 4, 12, 2, 89, 128),
    "DeepSeek-V3": (25, 27, 13, 14, 10, 3, 92, 153),
    "HY-2.0": (28, 27, 12, 16, 14, 4, 101, 164),
    "Kimi-K2": (35, 22, 28, 7, 14, 3, 109, 195),
    "o3": (56, 14, 32, 3, 7, 1, 113, 185),
    "GLM-4.7": (43, 22, 16, 15, 14, 5, 115, 172),
    "GPT-5.1": (51, 25, 24, 9, 12, 2, 123, 234),
    "Qwen3-235B": (36, 30, 34, 11, 18, 8, 137, 250),
    "Qwen3-32B": (41, 81, 17, 26, 19, 2, 186, 318),
    "Qwen3-8B": (65, 60, 6, 33, 21, 8, 193, 310),
}
L3_COVERAGE = {"Gemini-3-Pro": 70.1, "GPT-5.1": 36.8, "o3": 48.3}
DATA_TOOLS = {
    "daily_data_by_group_and_field",
    "hourly_data_by_group_and_field",
    "get_account_info",
    "get_account_adgroup_info",
}


def _prints(value: float, printed: float, decimals: int = 1) -> bool:
    return abs(value - printed) <= 0.5 * 10**-decimals + 1e-9


def _pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased Pass@k of one task (Chen et al.), written out here independently of analytics."""
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@pytest.fixture
def con(demo_db: Path):
    with reader(demo_db) as connection:
        yield connection


def _per_task(con) -> dict[str, list[tuple[str, int, int]]]:
    rows = query_rows(
        con,
        """
        SELECT r.agent, t.level, count(*) AS n, count_if(a.passed) AS c
        FROM attempts a JOIN runs r USING (run_id)
        JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
        WHERE r.benchmark = 'ad-bench' AND r.eval_date = ?
        GROUP BY r.agent, a.run_id, a.task_id, t.level""",
        [SNAPSHOT],
    )
    out: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for agent, level, n, c in rows:
        out[agent].append((level, n, c))
    return out


def test_table2_every_cell_from_sql(con) -> None:
    per_task = _per_task(con)
    assert set(per_task) == set(TABLE2)
    steps = dict(
        query_rows(
            con,
            """
        SELECT r.agent, avg(a.n_tool_calls) FROM attempts a JOIN runs r USING (run_id)
        WHERE r.benchmark = 'ad-bench' AND r.eval_date = ? GROUP BY r.agent""",
            [SNAPSHOT],
        )
    )
    for agent, cells in TABLE2.items():
        tasks = per_task[agent]
        assert len(tasks) == 100 and all(n == 3 for _, n, _ in tasks)
        got = []
        for level in (None, "L1", "L2", "L3"):
            part = [(n, c) for lv, n, c in tasks if level is None or lv == level]
            got += [
                100 * np.mean([_pass_at_k(n, c, 1) for n, c in part]),
                100 * np.mean([_pass_at_k(n, c, 3) for n, c in part]),
            ]
        for value, printed in zip(got, cells[:8], strict=True):
            assert _prints(value, printed), (agent, got, cells)
        assert _prints(steps[agent], cells[8], 2), (agent, steps[agent])


def test_table2_through_leaderboard_report(con) -> None:
    import datetime as dt

    from analytics import leaderboard
    from store import RunFilter

    day = dt.date.fromisoformat(SNAPSHOT)
    rep = leaderboard.report(con, RunFilter(benchmark="ad-bench", date_from=day, date_to=day))
    rows = {(r["agent"], r["slice"]): r for r in rep["rows"]}
    for agent, cells in TABLE2.items():
        for i, sl in enumerate(("all", "level=L1", "level=L2", "level=L3")):
            row = rows[(agent, sl)]
            assert _prints(100 * row["pass_at"]["1"], cells[2 * i]), (agent, sl)
            assert _prints(100 * row["pass_at"]["3"], cells[2 * i + 1]), (agent, sl)
        assert _prints(rows[(agent, "all")]["mean_steps"], cells[8], 2), agent


def test_table3_exact_from_error_labels(con) -> None:
    df = query_df(
        con,
        """
        SELECT r.agent, e.code, count(*) AS n
        FROM error_labels e JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
        WHERE r.benchmark = 'ad-bench' AND r.eval_date = ? AND NOT a.passed AND e.source = 'label'
        GROUP BY r.agent, e.code""",
        [SNAPSHOT],
    )
    counts = {(r.agent, r.code): int(r.n) for r in df.itertuples()}
    on_passed = query_rows(
        con,
        """
        SELECT count(*) FROM error_labels e JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
        WHERE r.eval_date = ? AND a.passed""",
        [SNAPSHOT],
    )[0][0]
    assert on_passed == 0
    for agent, (te, pe, de, ce, hal, lc, n_err, n_total) in TABLE3.items():
        got = [counts.get((agent, code), 0) for code in ("TE", "PE", "DE", "CE", "HAL", "LC")]
        assert got == [te, pe, de, ce, hal, lc], agent
        assert sum(got) == n_err
        total = sum(v for (a, _), v in counts.items() if a == agent)
        assert total == n_total, agent
        assert {code for (a, code) in counts if a == agent} <= {
            "TE",
            "PE",
            "DE",
            "CE",
            "HAL",
            "LC",
            "REDUNDANT",
            "NO_TOOL",
            "TOOL",
        }


def _trajectories(con, date: str) -> dict[int, dict]:
    rows = query_rows(
        con,
        """
        SELECT a.attempt_id, r.agent, t.level, t.reference_trajectory, a.passed, s.step, s.kind, s.tool,
               CAST(s.args AS VARCHAR), s.error
        FROM attempts a JOIN runs r USING (run_id)
        JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
        LEFT JOIN steps s USING (attempt_id)
        WHERE r.benchmark = 'ad-bench' AND r.eval_date = ?
        ORDER BY a.attempt_id, s.step""",
        [date],
    )
    out: dict[int, dict] = {}
    for aid, agent, level, ref, passed, _step, kind, tool, args, error in rows:
        att = out.setdefault(
            aid,
            {"agent": agent, "level": level, "ref": list(ref), "passed": passed, "calls": [], "kinds": [], "errors": 0},
        )
        att["kinds"].append(kind)
        att["errors"] += error is not None
        if kind == "tool_call":
            att["calls"].append((tool, json.loads(args) if args else None))
    labels = query_rows(
        con,
        """
        SELECT e.attempt_id, list(e.code ORDER BY e.code) FROM error_labels e
        JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
        WHERE r.eval_date = ? AND r.benchmark = 'ad-bench' GROUP BY e.attempt_id""",
        [date],
    )
    for aid, codes in labels:
        out[aid]["codes"] = set(codes)
    return out


def _is_subsequence(ref: list[str], calls: list[str]) -> bool:
    pos = 0
    for tool in calls:
        if pos < len(ref) and tool == ref[pos]:
            pos += 1
    return pos == len(ref)


def test_l3_coverage_of_section_3_2(con) -> None:
    atts = _trajectories(con, SNAPSHOT)
    covered: dict[str, list[bool]] = defaultdict(list)
    for att in atts.values():
        if att["level"] == "L3":
            covered[att["agent"]].append(_is_subsequence(att["ref"], [t for t, _ in att["calls"]]))
    for agent, pct in L3_COVERAGE.items():
        assert len(covered[agent]) == 87
        assert _prints(100 * np.mean(covered[agent]), pct), (agent, np.mean(covered[agent]))


def test_trajectories_agree_with_labels(con) -> None:
    for date in (SNAPSHOT, history.PERIODS[-1]):
        atts = _trajectories(con, date)
        assert atts
        for aid, att in atts.items():
            codes = att.get("codes", set())
            tools = [t for t, _ in att["calls"]]
            assert tools[-1] == "summarize_results", aid
            first_gual = tools.index("get_user_account_list") if "get_user_account_list" in tools else len(tools)
            assert any(t in DATA_TOOLS for t in tools[:first_gual]) == ("DE" in codes), aid
            keys = [json.dumps(c, sort_keys=True) for c in att["calls"]]
            assert (len(set(keys)) < len(keys)) == ("REDUNDANT" in codes), aid
            assert ("message" in att["kinds"]) == ("NO_TOOL" in codes), aid
            assert (att["errors"] > 0) == ("TOOL" in codes), aid
            assert (len(tools) >= adbench.LC_MIN_CALLS) == ("LC" in codes), aid
            if "CE" in codes:
                assert "calculator" in tools
            assert bool(codes) == (not att["passed"]), aid


def test_benchmark_runs_tasks_costs(con) -> None:
    bench = query_rows(
        con, "SELECT scoring, pass_threshold, CAST(tool_graph AS VARCHAR) FROM benchmarks WHERE benchmark = 'ad-bench'"
    )
    assert bench and bench[0][0] == "binary" and bench[0][1] == 1.0
    graph = json.loads(bench[0][2])
    assert len(graph) == 9 and graph["daily_data_by_group_and_field"] == ["get_user_account_list"]
    levels = dict(
        query_rows(
            con, "SELECT level, count(*) FROM tasks WHERE benchmark = 'ad-bench' AND task_id LIKE 'L%' GROUP BY level"
        )
    )
    assert levels == {"L1": 24, "L2": 47, "L3": 29}
    ref_len = query_rows(
        con, "SELECT DISTINCT level, len(reference_trajectory) FROM tasks WHERE benchmark = 'ad-bench' ORDER BY 1"
    )
    assert ref_len == [("L1", 2), ("L2", 3), ("L3", 4)]
    missing = query_rows(
        con,
        """
        SELECT count_if(r.price_input_per_mtok IS NULL OR r.price_output_per_mtok IS NULL),
               count_if(a.cost_usd IS NULL OR a.latency_s IS NULL OR a.input_tokens IS NULL),
               count_if(t.human_minutes IS NULL), count(DISTINCT r.run_id), count_if(r.judge IS NULL)
        FROM attempts a JOIN runs r USING (run_id) JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
        WHERE r.benchmark = 'ad-bench'""",
    )[0]
    assert missing[:3] == (0, 0, 0) and missing[3] > 10 and missing[4] == 0
    # the hand-written starter is no longer part of the demo
    assert query_rows(con, "SELECT count(*) FROM benchmarks WHERE benchmark = 'mini-bench'")[0][0] == 0


def test_history_truth_csv_is_current_and_abilities_rise() -> None:
    sim = history.simulate()
    assert history.TRUTH_CSV.read_text(encoding="utf-8") == history.truth_csv_text(sim)
    runs = [v for v in history.VERSIONS]
    by_period = [np.mean([v.theta for v in runs if p in v.periods]) for p in range(len(history.PERIODS))]
    assert all(b > a + 0.3 for a, b in zip(by_period, by_period[1:], strict=False)), by_period
    pool_b = [np.mean([it.difficulty for it in pool]) for pool in sim["pools"]]
    assert all(b > a for a, b in zip(pool_b, pool_b[1:], strict=False)), pool_b
    for family in {v.family for v in runs}:  # every family's releases get better
        thetas = [v.theta for v in sorted((v for v in runs if v.family == family), key=lambda v: v.periods[0])]
        assert thetas == sorted(thetas), family


def test_history_raw_pass_rates_mislead(con) -> None:
    truth = {row["id"]: row for row in history.truth_rows(history.simulate()) if row["kind"] == "run"}
    rows = query_rows(
        con,
        """
        SELECT r.run_id, r.eval_date, avg(CAST(a.passed AS DOUBLE)), count(*), max(a.sample)
        FROM attempts a JOIN runs r USING (run_id)
        WHERE r.benchmark = 'ad-bench' AND r.eval_date < DATE '2026-01-01' GROUP BY r.run_id, r.eval_date""",
    )
    assert {r[0] for r in rows} == set(truth)
    assert all(r[4] == 0 for r in rows)  # one sample per task in history runs
    raw = np.array([r[2] for r in rows])
    theta = np.array([truth[r[0]]["ability"] for r in rows])
    assert np.corrcoef(raw, theta)[0, 1] < 0.8
    # the same version re-evaluated on a refreshed, harder pool looks worse while its ability is unchanged
    by_version: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    for run_id, date, rate, _, _ in rows:
        by_version[(truth[run_id]["family"], truth[run_id]["agent_version"])].append((str(date), rate))
    drops = [sorted(v)[0][1] - sorted(v)[-1][1] for v in by_version.values() if len(v) > 1]
    assert max(drops) > 0.1
    # pools are refreshed: tasks retired and added between periods, linked through shared ones
    pools = query_rows(
        con,
        """
        SELECT r.eval_date, list(DISTINCT a.task_id) FROM attempts a JOIN runs r USING (run_id)
        WHERE r.benchmark = 'ad-bench' AND r.eval_date < DATE '2026-01-01' GROUP BY r.eval_date ORDER BY 1""",
    )
    sets = [set(p[1]) for p in pools]
    assert len(sets) == 4
    for a, b in zip(sets, sets[1:], strict=False):
        assert a - b and b - a and a & b


def _digest(paths: list[Path]) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def test_generation_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    files_a = adbench.generate(first) + history.generate(first)
    files_b = adbench.generate(second) + history.generate(second)
    assert [p.name for p in files_a] == [p.name for p in files_b]
    assert _digest(files_a) == _digest(files_b)


def test_history_abilities_recoverable_by_a_simple_rasch_fit(con) -> None:
    """A ridge-penalised 1PL joint fit (written out here) tracks the truth far better than raw rates do."""
    truth = {row["id"]: row["ability"] for row in history.truth_rows(history.simulate()) if row["kind"] == "run"}
    df = query_df(
        con,
        """
        SELECT a.run_id, a.task_id, CAST(a.passed AS DOUBLE) AS y FROM attempts a JOIN runs r USING (run_id)
        WHERE r.benchmark = 'ad-bench' AND r.eval_date < DATE '2026-01-01' ORDER BY a.run_id, a.task_id""",
    )
    runs, r_ix = np.unique(df["run_id"], return_inverse=True)
    _, i_ix = np.unique(df["task_id"], return_inverse=True)
    y = df["y"].to_numpy()
    theta, b = np.zeros(len(runs)), np.zeros(i_ix.max() + 1)
    n_r, n_i = np.bincount(r_ix), np.bincount(i_ix)
    for _ in range(2000):
        resid = y - 1.0 / (1.0 + np.exp(-np.clip(theta[r_ix] - b[i_ix], -30, 30)))
        theta += 0.5 * (np.bincount(r_ix, resid, len(runs)) / n_r - 0.01 * theta)
        b -= 0.5 * (np.bincount(i_ix, resid, len(b)) / n_i - 0.01 * b)
    true = np.array([truth[r] for r in runs])
    raw = np.bincount(r_ix, y) / n_r
    assert np.corrcoef(theta, true)[0, 1] > 0.9
    assert np.corrcoef(theta, true)[0, 1] > np.corrcoef(raw, true)[0, 1] + 0.15


@pytest.mark.slow
def test_rule_labels_agree_with_log_labels(demo_db: Path) -> None:
    """The trajectory rules (ingest.rules over the tool graph) find exactly the labelled DE, REDUNDANT,
    NO_TOOL and TOOL attempts of ad-bench: the trajectories really show what the labels claim."""
    from jobs.rules import refresh_rules

    refresh_rules(demo_db, benchmark="ad-bench")
    with reader(demo_db) as con:
        rows = query_rows(
            con,
            """
            WITH ab AS (SELECT a.attempt_id FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = 'ad-bench'),
            l AS (SELECT DISTINCT attempt_id, code FROM error_labels JOIN ab USING (attempt_id)
                  WHERE source = 'label' AND code IN ('DE', 'REDUNDANT', 'NO_TOOL', 'TOOL')),
            ru AS (SELECT DISTINCT attempt_id, code FROM error_labels JOIN ab USING (attempt_id) WHERE source = 'rule')
            SELECT coalesce(l.code, ru.code), count_if(l.attempt_id IS NULL), count_if(ru.attempt_id IS NULL),
                   count_if(l.attempt_id IS NOT NULL AND ru.attempt_id IS NOT NULL)
            FROM l FULL JOIN ru USING (attempt_id, code) GROUP BY 1""",
        )
    got = {code: (rule_only, label_only, both) for code, rule_only, label_only, both in rows}
    assert set(got) == {"DE", "REDUNDANT", "NO_TOOL", "TOOL"}
    for code, (rule_only, label_only, both) in got.items():
        assert rule_only == 0 and label_only == 0 and both > 0, (code, got[code])
