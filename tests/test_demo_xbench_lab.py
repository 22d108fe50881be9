"""The xbench and LiveAgentBench demo data reproduce the papers' tables (xbench Tables 8-9, LAB Table 2).

Published cells are copied here from the papers (not from the generators), and every number checked
is computed from the database with SQL (and cross-checked with analytics.leaderboard.report).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from ingest.pipeline import ingest_paths
from store import RunFilter, query_rows, reader

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "demo_xbench_lab.md"
TOL = 0.5

# xbench Table 9 (recruitment): Average, Company Mapping, People-to-Info, Info-to-People.
TABLE9 = {
    "o3": (78.5, 92.3, 82.8, 66.2),
    "Perplexity-Search": (64.4, 88.5, 59.4, 51.9),
    "Claude-3.7-Sonnet": (61.4, 86.5, 47.2, 54.8),
    "o4-mini-high": (61.4, 71.3, 50.1, 62.9),
    "Gemini-2.5-Flash": (60.6, 84.5, 50.0, 52.4),
    "Perplexity-Research": (59.1, 88.5, 56.3, 41.4),
    "Gemini-2.5-Pro": (57.3, 75.0, 53.1, 48.6),
    "DeepSeek R1": (48.3, 75.0, 42.2, 34.8),
    "Grok3-Search": (47.1, 82.8, 45.0, 13.3),
    "GPT-4o": (38.9, 62.5, 30.1, 29.5),
}
# xbench Table 8 (marketing): Average, E-commerce, App, Game.
TABLE8 = {
    "o3": (50.8, 50.6, 46.0, 52.5),
    "Claude-3.7-Sonnet": (47.6, 46.2, 46.9, 43.5),
    "Grok3-Search": (46.5, 45.3, 52.2, 47.5),
    "Gemini-2.5-Pro": (45.9, 45.8, 40.1, 45.4),
    "Gemini-2.5-Flash": (45.3, 40.8, 45.3, 46.7),
    "o4-mini-high": (43.5, 44.1, 39.0, 40.5),
    "Perplexity-Research": (40.2, 41.3, 32.0, 44.0),
    "Perplexity-Search": (34.4, 36.6, 26.4, 31.1),
    "GPT-4o": (32.0, 30.4, 36.4, 26.8),
}
XBENCH = {
    "xbench-recruitment": (
        TABLE9,
        ("Company Mapping", "People-to-Info", "Info-to-People"),
        {"Company Mapping": 22, "Info-to-People": 15, "People-to-Info": 13},
    ),
    "xbench-marketing": (TABLE8, ("E-commerce", "App", "Game"), {"App": 34, "Game": 8, "E-commerce": 8}),
}
# LiveAgentBench Table 2: Overall, W&S, DL, IA&P, H&SS, SP, Text File, Image, Video, Audio.
LAB_COLUMNS = ("Overall", "W&S", "DL", "IA&P", "H&SS", "SP", "text file", "image", "video", "audio")
TABLE2 = {
    "Qwen3-235B-A22B": (7.75, 16.39, 8.25, 6.38, 3.61, 6.17, 8.02, 0, 0, 0),
    "Claude35-sonnet": (8.28, 13.11, 9.28, 8.51, 4.82, 7.41, 6.13, 15.13, 0, 0),
    "GPT-4o": (9.09, 13.11, 11.34, 4.26, 6.02, 9.88, 5.19, 19.33, 0, 0),
    "Gemini-2.5-pro": (16.85, 19.67, 18.56, 12.77, 19.28, 13.58, 12.26, 27.73, 16.0, 0),
    "Deepseek-R1": (9.89, 21.31, 6.19, 6.38, 8.43, 9.88, 13.2, 0, 0, 0),
    "Gemini Deep Research": (14.17, 11.48, 12.37, 19.15, 10.84, 17.28, 24.3, 0, 0, 0),
    "Manus": (35.29, 40.98, 31.18, 40.42, 39.76, 28.40, 37.85, 35.29, 16.0, 33.33),
    "OpenAI Deep Research": (27.54, 19.67, 28.87, 38.30, 20.48, 25.93, 33.49, 24.17, 4.0, 13.33),
    "Perplexity Research": (23.80, 26.23, 25.77, 29.79, 24.10, 13.58, 30.95, 20.17, 0, 0),
    "Coze Space": (18.45, 19.67, 19.59, 19.15, 15.66, 17.28, 25.23, 10.08, 0, 13.33),
    "AWorld": (15.51, 21.31, 13.40, 12.77, 16.87, 14.82, 13.81, 19.33, 16.0, 13.33),
    "Human": (69.25, 75.41, 74.23, 74.47, 62.65, 64.20, 73.33, 60.50, 80.0, 73.33),
}
LAB_SCENARIOS = {"W&S": 61, "DL": 97, "IA&P": 47, "H&SS": 83, "SP": 81}
LAB_KINDS = {
    "Qwen3-235B-A22B": "llm",
    "Claude35-sonnet": "llm",
    "GPT-4o": "llm",
    "Gemini-2.5-pro": "llm",
    "Deepseek-R1": "llm",
    "Gemini Deep Research": "agent",
    "Manus": "agent",
    "OpenAI Deep Research": "agent",
    "Perplexity Research": "agent",
    "Coze Space": "agent",
    "AWorld": "framework",
    "Human": "human",
}

# Per run and task: mean normalised score over samples; then per category and overall, x 100.
CELLS_SQL = """
WITH per_task AS (
    SELECT r.agent, t.task_id, t.category, avg(a.score) AS score
    FROM attempts a JOIN runs r USING (run_id)
    JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
    WHERE r.benchmark = ?
    GROUP BY r.agent, t.task_id, t.category
)
SELECT agent, category, 100 * avg(score) AS pct, count(*) AS n_tasks FROM per_task GROUP BY agent, category
UNION ALL
SELECT agent, 'Overall', 100 * avg(score), count(*) FROM per_task GROUP BY agent
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Only this feature's demo files, generated and ingested through the normal path."""
    from data.demo import liveagentbench, xbench

    out = tmp_path_factory.mktemp("xbench_lab")
    files = xbench.generate(out) + liveagentbench.generate(out)
    path = out / "demo.duckdb"
    results = ingest_paths(files, db=path, fmt="native", is_demo=True)
    assert [r.outcome for r in results] == ["ingested"] * 3, [str(r.error) for r in results]
    return path


def _cells(db: Path, benchmark: str) -> dict[tuple[str, str | None], float]:
    with reader(db) as con:
        rows = query_rows(con, CELLS_SQL, [benchmark])
    return {(agent, cat): pct for agent, cat, pct, _ in rows}


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _doc_exceptions() -> set[tuple[str, str, str]]:
    """(benchmark, agent, column) rows of the exceptions table in the doc: `| bench | agent | column | ...`."""
    found = set()
    for line in _doc().splitlines():
        m = re.match(
            r"^\|\s*(xbench-recruitment|xbench-marketing|liveagentbench)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|", line
        )
        if m:
            found.add((m.group(1), m.group(2), m.group(3)))
    return found


# ---------------------------------------------------------------------------------------------
# xbench
# ---------------------------------------------------------------------------------------------


def test_xbench_tasks_scoring_and_human_minutes(db: Path) -> None:
    with reader(db) as con:
        for bench, (_, _, counts) in XBENCH.items():
            assert query_rows(con, "SELECT scoring FROM benchmarks WHERE benchmark = ?", [bench]) == [("graded",)]
            rows = dict(query_rows(con, "SELECT category, count(*) FROM tasks WHERE benchmark = ? GROUP BY 1", [bench]))
            assert rows == counts
            bad = query_rows(
                con,
                """SELECT count(*) FROM attempts a JOIN runs r USING (run_id)
                                    WHERE r.benchmark = ? AND NOT (a.raw_score BETWEEN 1 AND 5
                                    AND abs(a.score - (a.raw_score - 1) / 4) < 1e-9)""",
                [bench],
            )
            assert bad == [(0,)]
        rec = query_rows(
            con,
            """SELECT count_if(human_minutes <= 5), count_if(human_minutes > 5 AND human_minutes <= 20),
                                 count_if(human_minutes > 20 AND human_minutes <= 40), count_if(human_minutes > 40)
                                 FROM tasks WHERE benchmark = 'xbench-recruitment'""",
            [],
        )
        assert rec == [(6, 8, 17, 19)]  # 12 / 16 / 34 / 38 % of 50
        mkt = query_rows(
            con,
            """SELECT count_if(human_minutes <= 30), count_if(human_minutes > 30 AND human_minutes <= 60),
                                 count_if(human_minutes > 60 AND human_minutes <= 120), count_if(human_minutes > 120)
                                 FROM tasks WHERE benchmark = 'xbench-marketing'""",
            [],
        )
        assert mkt == [(18, 10, 11, 11)]  # 36 / 20 / 22 / 22 % of 50
        runs = query_rows(
            con,
            """SELECT count(*), count_if(eval_date BETWEEN DATE '2025-05-01' AND DATE '2025-05-31'),
                                  count_if(judge = 'gemini-2.5-flash') FROM runs WHERE benchmark LIKE 'xbench-%'""",
            [],
        )
        assert runs == [(19, 19, 19)]
        costs = query_rows(
            con,
            """SELECT count_if(a.cost_usd IS NULL OR a.latency_s IS NULL OR a.input_tokens IS NULL)
                                   FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark LIKE 'xbench-%'""",
            [],
        )
        assert costs == [(0,)]


def _nearest_feasible_gap(
    published: tuple[float, ...],
    cats: tuple[str, ...],
    counts: dict[str, int],
    n_items: dict[str, int],
    raw_step: float,
) -> float:
    """The smallest achievable worst deviation of a row (Average included), every category within TOL.

    A category of ``n`` attempts has means 100 * u * step / (4 n) for integer u (raw scores on a
    ``step`` grid); the overall is the task-weighted mean of the categories.
    """
    average, *cells = published
    grids = []
    for cat, cell in zip(cats, cells, strict=True):
        n = n_items[cat]
        per = 100 * raw_step / (4 * n)
        us = np.arange(math.ceil((cell - TOL) / per), math.floor((cell + TOL) / per) + 1)
        values = us * per
        grids.append(values[np.abs(values - cell) <= TOL + 1e-9])
    weights = [counts[c] / sum(counts.values()) for c in cats]
    mesh = np.meshgrid(*grids, indexing="ij")
    overall = sum(w * m for w, m in zip(weights, mesh, strict=True))
    worst = np.abs(overall - average)
    for m, cell in zip(mesh, cells, strict=True):
        worst = np.maximum(worst, np.abs(m - cell))
    return float(worst.min())


@pytest.mark.parametrize("bench", sorted(XBENCH))
def test_xbench_every_cell(db: Path, bench: str) -> None:
    table, cats, counts = XBENCH[bench]
    cells = _cells(db, bench)
    assert {a for a, _ in cells} == set(table)
    exceptions = _doc_exceptions()
    with reader(db) as con:
        samples = dict(
            query_rows(
                con,
                """SELECT t.category, count(*) / count(DISTINCT r.run_id) FROM attempts a
                                         JOIN runs r USING (run_id) JOIN tasks t ON t.benchmark = r.benchmark
                                         AND t.task_id = a.task_id WHERE r.benchmark = ? GROUP BY 1""",
                [bench],
            )
        )
        raws = query_rows(
            con,
            """SELECT bool_and(a.raw_score = round(a.raw_score)) FROM attempts a JOIN runs r
                                  USING (run_id) WHERE r.benchmark = ?""",
            [bench],
        )
    raw_step = 1.0 if raws == [(True,)] else 0.01
    for agent, published in table.items():
        average, *published_cats = published
        for cat, value in zip(cats, published_cats, strict=True):
            assert abs(cells[(agent, cat)] - value) <= TOL + 1e-9, (bench, agent, cat, cells[(agent, cat)], value)
        got = cells[(agent, "Overall")]
        weighted = sum(counts[c] * cells[(agent, c)] for c in cats) / sum(counts.values())
        assert got == pytest.approx(weighted, abs=1e-9)  # the overall is the task-weighted mean
        if abs(got - average) <= TOL:
            continue
        # Published Average not reachable with the categories in tolerance: must be documented, and the
        # row's worst deviation must be the best any data could achieve (nearest feasible).
        assert (bench, agent, "Average") in exceptions, f"undocumented exception {bench} {agent} Average"
        worst = max(
            [abs(got - average)] + [abs(cells[(agent, c)] - v) for c, v in zip(cats, published_cats, strict=True)]
        )
        best = _nearest_feasible_gap(published, cats, counts, samples, raw_step)
        assert worst <= best + 0.06, (agent, worst, best)  # 0.06: marketing keeps 0.05 inside the tolerance


def test_xbench_leaderboard_agrees(db: Path) -> None:
    from analytics.leaderboard import leaderboard

    with reader(db) as con:  # few bootstrap draws: only the point estimates are checked here
        board = leaderboard(con, RunFilter(benchmark="xbench-recruitment"), n_boot=20)
    table, cats, _ = XBENCH["xbench-recruitment"]
    by = {(r["agent"], r["slice"]): r for _, r in board.iterrows()}
    for agent, (_, *values) in table.items():
        for cat, value in zip(cats, values, strict=True):
            row = by[(agent, f"category={cat}")]
            assert abs(100 * row["mean_score"] - value) <= TOL
            assert row["n_attempts"] == 2 * row["n_tasks"]  # two samples per recruitment task


# ---------------------------------------------------------------------------------------------
# LiveAgentBench
# ---------------------------------------------------------------------------------------------


def _lab_cells(db: Path) -> dict[tuple[str, str], float]:
    cells = {(a, c or "none"): v for (a, c), v in _cells(db, "liveagentbench").items()}
    with reader(db) as con:
        rows = query_rows(
            con,
            """SELECT r.agent, cap, 100 * avg(a.score) FROM attempts a JOIN runs r USING (run_id)
                                  JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id,
                                  unnest(t.capabilities) AS u(cap)
                                  WHERE r.benchmark = 'liveagentbench' GROUP BY 1, 2""",
            [],
        )
    cells.update({(a, cap): v for a, cap, v in rows})
    return cells


def test_lab_tasks(db: Path) -> None:
    with reader(db) as con:
        assert query_rows(con, "SELECT count(*) FROM tasks WHERE benchmark = 'liveagentbench'", []) == [(374,)]
        scen = dict(
            query_rows(
                con,
                """SELECT category, count(*) FROM tasks WHERE benchmark = 'liveagentbench'
                                       AND category IS NOT NULL GROUP BY 1""",
                [],
            )
        )
        assert scen == LAB_SCENARIOS
        caps = dict(
            query_rows(
                con,
                """SELECT cap, count(*) FROM tasks, unnest(capabilities) AS u(cap)
                                       WHERE benchmark = 'liveagentbench' GROUP BY 1""",
                [],
            )
        )
        assert set(caps) == {"text file", "image", "video", "audio"}
        kinds = dict(query_rows(con, "SELECT agent, kind FROM runs WHERE benchmark = 'liveagentbench'", []))
        assert kinds == LAB_KINDS
        one = query_rows(
            con,
            """SELECT count(*), count(DISTINCT (run_id, task_id)), bool_and(score IN (0, 1))
                                 FROM attempts JOIN runs USING (run_id) WHERE benchmark = 'liveagentbench'""",
            [],
        )
        assert one == [(12 * 374, 12 * 374, True)]


def test_lab_every_cell(db: Path) -> None:
    cells = _lab_cells(db)
    with reader(db) as con:
        sizes = dict(
            query_rows(
                con,
                """SELECT cap, count(*) FROM tasks, unnest(capabilities) AS u(cap)
                                        WHERE benchmark = 'liveagentbench' GROUP BY 1""",
                [],
            )
        )
        n_none = query_rows(
            con,
            """SELECT count(*) FROM tasks WHERE benchmark = 'liveagentbench'
                                    AND category IS NULL""",
            [],
        )[0][0]
    sizes.update(LAB_SCENARIOS)
    sizes["Overall"] = 374
    exceptions = _doc_exceptions()
    for agent, values in TABLE2.items():
        for col, value in zip(LAB_COLUMNS, values, strict=True):
            got = cells.get((agent, col), 0.0)
            n = sizes[col]
            nearest = min((100 * k / n for k in range(n + 1)), key=lambda v: abs(v - value))
            if abs(got - value) <= TOL + 1e-9:
                if col in LAB_SCENARIOS:  # scenario cells: the nearest fraction of whole tasks
                    assert got == pytest.approx(nearest), (agent, col)
                continue
            assert ("liveagentbench", agent, col) in exceptions, f"undocumented exception {agent} {col}"
            assert col == "Overall"
            # nearest feasible: every scenario solved count fixed by its cell, all unscenario'd tasks solved
            solved = sum(round(cells[(agent, s)] * LAB_SCENARIOS[s] / 100) for s in LAB_SCENARIOS)
            best = 100 * (solved + n_none) / 374
            assert best < value - TOL
            assert got == pytest.approx(best), (agent, got, best)
    # Cells that are not a fraction of whole tasks (printed to 2 decimals) must be listed in the doc.
    for agent, values in TABLE2.items():
        for col, value in zip(LAB_COLUMNS[:6], values[:6], strict=True):
            n = sizes[col]
            if (
                not any(round(100 * k / n, 2) == value for k in range(n + 1))
                and abs(round(cells[(agent, col)], 2) - value) > 0.011
            ):
                assert ("liveagentbench", agent, col) in exceptions, f"{agent} {col} not documented"


def test_lab_aworld_tool_failures_and_refusals(db: Path) -> None:
    with reader(db) as con:
        rows = query_rows(
            con,
            """SELECT r.agent, count_if(a.status = 'tool_failure'), count(*),
                                         count_if(a.status = 'tool_failure' AND a.passed)
                                  FROM attempts a JOIN runs r USING (run_id)
                                  WHERE r.benchmark = 'liveagentbench' GROUP BY 1""",
            [],
        )
        labels = query_rows(
            con,
            """SELECT count(*) FROM error_labels l JOIN attempts a USING (attempt_id)
                                    JOIN runs r USING (run_id) WHERE r.agent = 'AWorld' AND l.code = 'TOOL'
                                    AND r.benchmark = 'liveagentbench'""",
            [],
        )
        refused_passed = query_rows(
            con,
            """SELECT count(*) FROM attempts a JOIN runs r USING (run_id)
                                            WHERE r.benchmark = 'liveagentbench' AND a.status = 'refused'
                                            AND a.passed""",
            [],
        )
    by = {agent: (fail, n, fail_passed) for agent, fail, n, fail_passed in rows}
    fail, n, fail_passed = by["AWorld"]
    assert round(100 * fail / n, 2) == 11.76 and n == 374 and fail_passed == 0
    assert all(f == 0 for agent, (f, _, _) in by.items() if agent != "AWorld")
    assert labels == [(fail,)]
    assert refused_passed == [(0,)]


def test_lab_leaderboard_report_pass_at_1(db: Path) -> None:
    from analytics.leaderboard import report

    cells = _lab_cells(db)
    with reader(db) as con:
        rep = report(con, RunFilter(benchmark="liveagentbench"))
    by = {(r["agent"], r["slice"]): r for r in rep["rows"]}
    for agent, values in TABLE2.items():
        assert 100 * by[(agent, "all")]["pass_at"]["1"] == pytest.approx(cells[(agent, "Overall")])
        for col, value in zip(LAB_COLUMNS[1:6], values[1:6], strict=True):
            assert abs(100 * by[(agent, f"category={col}")]["pass_at"]["1"] - value) <= TOL


def test_generators_are_deterministic(db: Path, tmp_path: Path) -> None:
    from data.demo import liveagentbench, xbench

    again = xbench.generate(tmp_path) + liveagentbench.generate(tmp_path)
    assert [p.read_bytes() for p in again] == [(db.parent / p.name).read_bytes() for p in again]


def test_doc_lists_every_exception_with_reason() -> None:
    text = _doc()
    rows = _doc_exceptions()
    assert ("liveagentbench", "OpenAI Deep Research", "Overall") in rows
    assert ("liveagentbench", "Manus", "DL") in rows
    assert len([r for r in rows if r[0].startswith("xbench")]) >= 1
    for line in text.splitlines():
        if any(line.startswith(f"| {b} ") for b in ("xbench-recruitment", "xbench-marketing", "liveagentbench")):
            assert len([c for c in line.split("|") if c.strip()]) >= 5, line  # published, reproduced, why


def test_nearest_feasible_checker() -> None:
    """The checker itself: a consistent row costs nothing, an inconsistent one costs gap - tolerance."""
    counts = {"a": 1, "b": 1}
    items = {"a": 100, "b": 100}
    assert _nearest_feasible_gap((50.0, 50.0, 50.0), ("a", "b"), counts, items, 1.0) == pytest.approx(0.0)
    assert _nearest_feasible_gap((60.0, 50.0, 50.0), ("a", "b"), counts, items, 1.0) == pytest.approx(9.5)
