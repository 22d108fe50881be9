"""Error analytics on hand-made labels (log, rule and judge sources), and AD-Bench Table 3 on the demo data."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd
import pytest

import store as rdb
from analytics import errors as err
from cli import main as analytics_main
from ingest.pipeline import ingest_paths
from store import aggregates

TASKS = {
    "A": ("L1", "lookup"),
    "B": ("L3", "compute"),
    "C": ("L3", "compute"),
    "D": ("L3", "trend"),
    "E": ("L3", "trend"),
}
# (run, task, sample, passed, codes from the log)
ATTEMPTS = [
    ("v3", "A", 0, False, ["PE", "HAL"]),
    ("v3", "B", 0, False, ["PE", "TE"]),
    ("v3", "C", 0, False, ["PE"]),
    ("v3", "D", 0, False, ["PE", "TE", "XYZ"]),
    ("v3", "E", 0, False, ["PE", {"code": "PE", "step": 1}]),
    ("v3", "A", 1, True, ["TE"]),
    ("v3", "B", 1, False, []),
    ("v4", "A", 0, False, ["PE"]),
    ("v4", "B", 0, False, ["PE", "CE"]),
    ("v4", "C", 0, False, ["TE"]),
    ("v4", "D", 0, True, []),
    ("v4", "E", 0, False, ["PE"]),
]
# labels other sources add: (run, task, code, source)
EXTRA = [("v4", "C", "DE", "rule"), ("v4", "B", "PE", "rule"), ("v4", "A", "HAL", "judge")]


@pytest.fixture
def labels_db(tmp_path: Path) -> Path:
    lines: list[dict] = [{"record": "benchmark", "benchmark": "eb", "version": "1", "scoring": "binary"}]
    lines += [
        {"record": "task", "benchmark": "eb", "task_id": t, "level": lv, "category": cat}
        for t, (lv, cat) in TASKS.items()
    ]
    lines += [
        {
            "record": "run",
            "run_id": f"eb-{v}",
            "benchmark": "eb",
            "agent": "Agent X",
            "agent_version": v,
            "eval_date": "2026-01-1" + v[1],
        }
        for v in ("v3", "v4")
    ]
    lines += [
        {
            "record": "attempt",
            "run_id": f"eb-{run}",
            "task_id": task,
            "sample": sample,
            "score": 1 if passed else 0,
            "errors": codes,
        }
        for run, task, sample, passed, codes in ATTEMPTS
    ]
    path = tmp_path / "eb.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    db = tmp_path / "eb.duckdb"
    assert [r.outcome for r in ingest_paths([path], db=db)] == ["ingested"]
    with rdb.writer(db) as con:
        for run, task, code, source in EXTRA:
            con.execute(
                "INSERT INTO error_labels (attempt_id, code, source, model, prompt_version) "
                "SELECT attempt_id, ?, ?, ?, ? FROM attempts WHERE run_id = ? AND task_id = ? AND sample = 0",
                [
                    code,
                    source,
                    "m" if source == "judge" else None,
                    "p@v1" if source == "judge" else None,
                    f"eb-{run}",
                    task,
                ],
            )
        aggregates.refresh_benchmark(con, "eb")  # labels written by hand: the writer's aggregates follow them
    return db


def _table(db: Path, **kwargs) -> pd.DataFrame:
    with rdb.reader(db) as con:
        return err.error_table(con, rdb.RunFilter(benchmark="eb"), **kwargs)


def _row(df: pd.DataFrame, run: str, slice_name: str = "all") -> pd.Series:
    return df[(df["run_id"] == f"eb-{run}") & (df["slice"] == slice_name)].iloc[0]


def test_counts_only_failed_attempts_once_per_code(labels_db: Path) -> None:
    df = _table(labels_db, sources="label")
    v3 = _row(df, "v3")
    # E carries PE twice in its log, A1 passed with TE: neither inflates the counts
    assert (v3["PE"], v3["TE"], v3["HAL"], v3["CE"], v3["XYZ"]) == (5, 2, 1, 0, 1)
    assert (v3["n_errors"], v3["n_total"], v3["n_failed"]) == (8, 9, 6)
    assert v3["errors_per_failed"] == pytest.approx(9 / 6)
    assert "XYZ" in err.codes_of(df) and err.codes_of(df)[:6] == list(err.ADBENCH_CODES)


def test_slices_by_level_and_category(labels_db: Path) -> None:
    df = _table(labels_db, sources="label")
    assert (_row(df, "v3", "level=L3")["PE"], _row(df, "v3", "level=L1")["PE"]) == (4, 1)
    assert _row(df, "v3", "level=L3")["n_failed"] == 5
    trend = _row(df, "v3", "category=trend")
    assert (trend["PE"], trend["TE"], trend["XYZ"], trend["n_failed"]) == (2, 1, 1, 2)


def test_sources_are_selectable(labels_db: Path) -> None:
    every = _row(_table(labels_db), "v4")
    assert (every["PE"], every["DE"], every["HAL"], every["n_errors"]) == (3, 1, 1, 7)  # rule PE on B counts once
    label = _row(_table(labels_db, sources="label"), "v4")
    assert (label["PE"], label["DE"], label["HAL"], label["n_total"]) == (3, 0, 0, 5)
    rule = _row(_table(labels_db, sources=["rule"]), "v4")
    assert (rule["PE"], rule["DE"], rule["n_total"]) == (1, 1, 2)
    judge = _row(_table(labels_db, sources="judge"), "v4")
    assert (judge["HAL"], judge["n_total"], judge["n_failed"]) == (1, 1, 4)
    with pytest.raises(ValueError, match="source"):
        _table(labels_db, sources="oracle")


def test_report_json_shape(labels_db: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["errors", "--db", str(labels_db), "--benchmark", "eb", "--source", "label", "--json"]
    assert analytics_main([*argv, "--eval-date", "2026-01-14"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["run_id"] for r in rows} == {"eb-v4"}  # eval-date picks one run
    top = next(r for r in rows if r["slice"] == "all")
    assert set(top) >= {"run_id", "agent", "slice", "counts", "n_errors", "n_total", "n_failed"}
    assert top["counts"]["PE"] == 3 and (top["n_errors"], top["n_total"], top["n_failed"]) == (5, 5, 4)
    assert {r["slice"] for r in rows} == {
        "all",
        "level=L1",
        "level=L3",
        "category=lookup",
        "category=compute",
        "category=trend",
    }


def test_table3_and_marks() -> None:
    df = pd.DataFrame({"Model": list("abcd"), "TE.": [3, 1, 1, 2], "#Error": [9, 7, 8, 10]})
    marks = err.rank_marks(df, ["TE.", "#Error"])
    assert marks["TE."].tolist() == ["", "best", "best", "second"]  # ties share the mark
    assert marks["#Error"].tolist() == ["", "best", "second", ""]


def test_table3_layout_and_shares(labels_db: Path) -> None:
    df = _table(labels_db, sources="label")
    t3 = err.table3(df)
    assert list(t3.columns) == ["run_id", "Model", "TE.", "PE.", "DE.", "CE.", "Hal.", "LC.", "#Error", "#Total"]
    assert t3["Model"].tolist() == ["Agent X v4", "Agent X v3"]  # fewer errors first
    long = err.shares(df)
    v3 = long[long["run_id"] == "eb-v3"].set_index("code")
    assert v3.loc["PE", "share"] == pytest.approx(5 / 9) and v3["share"].sum() == pytest.approx(1.0)
    fig = err.fig_error_shares(long)
    pe = next(t for t in fig.data if t.name == "PE")
    assert {tuple(c[:2]) for c in pe.customdata} == {("eb-v3", "PE"), ("eb-v4", "PE")}


def test_cooccurrence(labels_db: Path) -> None:
    with rdb.reader(labels_db) as con:
        co = err.cooccurrence(con, rdb.RunFilter(benchmark="eb", run_ids=("eb-v3",)), sources="label")
    cell = co.set_index(["code_a", "code_b"])["n"]
    assert (cell["PE", "PE"], cell["PE", "TE"], cell["TE", "PE"], cell["TE", "XYZ"], cell["PE", "HAL"]) == (
        5,
        2,
        2,
        1,
        1,
    )
    assert ("HAL", "TE") not in cell.index
    fig = err.fig_cooccurrence(co)
    codes = list(fig.data[0].x)
    i, j = codes.index("PE"), codes.index("TE")
    assert fig.data[0].z[i][j] == 2 and list(fig.data[0].customdata[i][j]) == ["PE", "TE"]


def test_diff_between_runs(labels_db: Path) -> None:
    df = _table(labels_db, sources="label")
    diff = err.error_diff(df, "eb-v3", "eb-v4").set_index("code")
    assert (diff.loc["PE", "n_a"], diff.loc["PE", "n_b"]) == (5, 3)
    assert diff.loc["PE", "pct_change"] == pytest.approx(-40.0) and diff.loc["PE", "mostly_on"] == "L3"
    lines = err.diff_sentences(diff.reset_index(), "v3", "v4")
    assert "parameter errors (PE) -40% from v3 to v4 (5 -> 3), mostly on L3" in lines
    assert any(line.startswith("calculation errors (CE) new (1)") for line in lines)


def test_attempts_behind_a_cell(labels_db: Path) -> None:
    with rdb.reader(labels_db) as con:
        pe = err.error_attempts(con, run_id="eb-v3", code="PE", sources="label")
        pair = err.error_attempts(con, run_id="eb-v3", code="PE", code_b="TE", sources="label")
        l1 = err.error_attempts(con, run_id="eb-v3", code="PE", slice_name="level=L1", sources="label")
        judged = err.error_attempts(con, run_id="eb-v4", code="HAL")
    assert pe["task_id"].tolist() == ["A", "B", "C", "D", "E"] and set(pe["sample"]) == {0}
    assert pair["task_id"].tolist() == ["B", "D"] and pair.iloc[1]["codes"] == "PE, TE, XYZ"
    assert l1["task_id"].tolist() == ["A"]
    assert judged["task_id"].tolist() == ["A"] and judged.iloc[0]["sources"] == "judge, label"


# AD-Bench Table 3 (TE, PE, DE, CE, Hal, LC, #Error, #Total), as published.
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


@pytest.mark.slow  # builds the whole demo database once per session
def test_adbench_table3_on_demo(demo_db: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["errors", "--db", str(demo_db), "--benchmark", "ad-bench", "--source", "label", "--json"]
    assert analytics_main([*argv, "--eval-date", "2026-01-15"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out)["rows"] if r["slice"] == "all"]
    got = {r["agent"]: (*(r["counts"][c] for c in err.ADBENCH_CODES), r["n_errors"], r["n_total"]) for r in rows}
    assert got == TABLE3
    with rdb.reader(demo_db) as con:
        t3 = err.table3(
            err.error_table(
                con,
                rdb.RunFilter(benchmark="ad-bench", date_from=dt.date(2026, 1, 15), date_to=dt.date(2026, 1, 15)),
                sources="label",
            )
        )
    marks = err.rank_marks(t3, ["#Error", "#Total", "LC."]).assign(Model=t3["Model"]).set_index("Model")
    assert marks.loc["Gemini-3-Pro", "#Error"] == "best" and marks.loc["DeepSeek-V3", "#Total"] == "second"
    assert marks.loc["o3", "LC."] == "best" and marks.loc["GPT-5.1", "LC."] == "second"


def test_rates_per_attempt_with_wilson_intervals(labels_db: Path) -> None:
    """Rates divide by the run's attempts (not failures), each with a Wilson 95% interval, checked by hand."""
    from statsmodels.stats.proportion import proportion_confint

    df = _table(labels_db, sources="label")
    rates = err.rate_table(df).set_index("run_id")
    row = df[(df["run_id"] == "eb-v3") & (df["slice"] == "all")].iloc[0]
    n, k = int(row["n_attempts"]), int(row["PE"])
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert rates.loc["eb-v3", "Attempts"] == n
    assert rates.loc["eb-v3", "PE %"] == f"{100 * k / n:.1f} [{100 * lo:.1f} to {100 * hi:.1f}]"
    failed = [int(df[(df["run_id"] == r) & (df["slice"] == "all")]["n_failed"].iloc[0]) for r in rates.index]
    shares = [f / int(a) for f, a in zip(failed, rates["Attempts"], strict=True)]
    assert shares == sorted(shares)  # fewest failed first
