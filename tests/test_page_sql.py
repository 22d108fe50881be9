"""AppTest of the SQL explorer page: shared links, the editor, refusals, examples, charts, history, Ask in English."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analytics.plaintext import md_plain
from tests.conftest import ROOT
from tests.test_sql_console import file_hashes

QUERY = "SELECT agent, count(*) AS n FROM v_attempts GROUP BY agent ORDER BY agent"


def open_sql_page(db: Path, monkeypatch: pytest.MonkeyPatch, **params: str) -> AppTest:
    monkeypatch.setenv("RUNLENS_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page("views/sql.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


N_SCHEMA_FRAMES = 2  # the schema browser's tables come first (AppTest does not expose dataframe keys)


def result_frame(at: AppTest):
    assert len(at.dataframe) == N_SCHEMA_FRAMES + 1, "no result table"
    return at.dataframe[N_SCHEMA_FRAMES].value


def has_result(at: AppTest) -> bool:
    return len(at.dataframe) > N_SCHEMA_FRAMES


def run_editor(at: AppTest, sql: str) -> AppTest:
    at.text_area(key="sql_editor").set_value(sql)
    at.button(key="sql_run").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_shared_link_runs_its_query(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_sql_page(fixture_db, monkeypatch, q=QUERY)
    df = result_frame(at)
    assert df["agent"].tolist() == ["Agent A", "Human"] and df["n"].tolist() == ["4", "2"]
    assert any(c.value.startswith("2 rows · 2 columns") for c in at.caption)
    keys = {b.key for b in at.download_button}
    assert {"sql_dl_csv", "sql_dl_parquet"} <= keys
    assert any(c.value.startswith("sql?q=SELECT%20agent") for c in at.code)
    assert at.text_area(key="sql_editor").value == QUERY


def test_the_editor_runs_and_refuses_with_the_db_unchanged(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_sql_page(fixture_db, monkeypatch)
    assert not has_result(at)  # nothing runs before the user asks
    before = file_hashes(fixture_db)
    run_editor(at, "SELECT count(*) AS n_attempts FROM attempts")
    assert result_frame(at)["n_attempts"].tolist() == ["6"]
    assert at.query_params["q"] == "SELECT count(*) AS n_attempts FROM attempts"
    for attack in (
        "DROP TABLE attempts",
        "COPY runs TO '/tmp/runlens_page_leak.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT 1; DELETE FROM runs",
    ):
        run_editor(at, attack)
        assert at.error and at.error[0].value.startswith("Refused"), attack
        assert not has_result(at), attack
    assert file_hashes(fixture_db) == before
    assert not Path("/tmp/runlens_page_leak.csv").exists()


def test_errors_show_duckdbs_position_and_history_keeps_runs(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_sql_page(fixture_db, monkeypatch)
    run_editor(at, "SELECT agent,\n  nope\nFROM runs")
    assert at.error[0].value == "DuckDB error at line 2:"
    assert any("nope" in c.value and "^" in c.value for c in at.code)
    run_editor(at, "SELECT 1 AS one")
    labels = [e.label for e in at.expander]
    assert "Query history (2)" in labels
    history = [b.label for b in at.button if b.key and b.key.startswith("sql_hist_")]
    # the labels are the queries as plain text (escaped Markdown: a shared link must not draw a link or image)
    assert history == [md_plain("1 row: SELECT 1 AS one"), md_plain("error: SELECT agent,\n  nope\nFROM runs")]
    at.button(key="sql_hist_1").click().run()  # back to the failed one
    assert at.text_area(key="sql_editor").value.startswith("SELECT agent,")


def test_the_gallery_loads_and_runs_an_example(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_sql_page(fixture_db, monkeypatch)
    at.selectbox(key="sql_example").set_value("Runs at a glance").run()  # a browser reruns on change too
    at.button(key="sql_load_example").click().run()
    assert not at.exception
    df = result_frame(at)
    assert sorted(df["agent"]) == ["Agent A", "Human"] and "pass_rate_pct" in df.columns
    assert at.text_area(key="sql_editor").value.startswith("-- title: Runs at a glance")


def test_schema_browser_lists_objects_with_counts(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_sql_page(fixture_db, monkeypatch)
    objects = at.dataframe[1].value.set_index("Name")  # the column list beside the editor comes first
    assert objects.loc["attempts", "Rows"] == "6" and objects.loc["v_runs", "Kind"] == "view"
    assert objects.loc["v_runs", "Rows"] == "–"  # a view is counted only on request (the count runs it)
    at.toggle(key="sql_count_views").set_value(True).run()
    assert at.dataframe[1].value.set_index("Name").loc["v_runs", "Rows"] == "2"
    at.selectbox(key="sql_schema_obj").set_value("v_runs").run()
    cols = at.dataframe[0].value
    assert "pass_rate" in cols["Column"].tolist()
    assert {"sql_schema_dl_csv", "sql_schema_dl_parquet"} <= {b.key for b in at.download_button}


def test_chart_this_draws_the_result(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_sql_page(fixture_db, monkeypatch, q=QUERY)
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    at.selectbox(key="sql_chart_kind").set_value("scatter").run()
    assert not at.exception
    assert {"sql_chart_data_csv", "sql_chart_data_parquet"} <= {b.key for b in at.download_button}
    assert at.query_params["kind"] in ("scatter", ["scatter"])  # the chart settings are part of the shareable link
    assert any("kind=scatter" in c.value and c.value.startswith("sql?q=") for c in at.code)


def test_a_link_restores_the_chart_settings_and_drops_unknown_ones(
    fixture_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_sql_page(fixture_db, monkeypatch, q=QUERY, kind="scatter", y="nope")
    assert at.selectbox(key="sql_chart_kind").value == "scatter"
    assert at.selectbox(key="sql_chart_y").value == "n"
    assert any("y 'nope' is not one of" in i.value.replace("\\", "") for i in at.info)
    run_editor(at, "SELECT 1 AS a, 2 AS b")  # another query: settings that no longer fit leave the link
    assert at.selectbox(key="sql_chart_kind").value == "scatter" and at.selectbox(key="sql_chart_y").value == "b"
    assert "y" not in at.query_params and not any("is not one of" in i.value for i in at.info)


def test_ask_in_english_proposes_sql_and_runs_only_on_click(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fake_openai_server import FakeOpenAI

    proposed = "SELECT run_id FROM v_runs ORDER BY run_id"
    server = FakeOpenAI([("which runs", [("reply", f"```sql\n{proposed}\n```")])]).start()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("RUNLENS_JUDGE_MODEL", "test-model")
        at = open_sql_page(fixture_db, monkeypatch)
        at.text_input(key="sql_question").set_value("which runs are there?")
        at.button(key="sql_ask").click().run()
        assert not at.exception
        assert any(c.value == proposed for c in at.code)
        assert not has_result(at)  # shown for review, not run
        assert "v_runs" in server.requests[0]["messages"][0]["content"]  # the model saw the schema
        at.button(key="sql_run_proposed").click().run()
        assert result_frame(at)["run_id"].tolist() == ["mini-a-v1", "mini-human"]
    finally:
        server.stop()


@pytest.mark.browser
def test_sql_page_in_chromium_runs_with_ctrl_enter(demo_db: Path) -> None:
    from urllib.parse import quote

    from tests.browser_support import chromium_page, screenshot, settle, streamlit_server

    with streamlit_server(demo_db) as url, chromium_page() as page:
        page.goto(url + "/sql?q=" + quote("SELECT * FROM v_runs ORDER BY run_id"), wait_until="domcontentloaded")
        page.wait_for_selector("text=rows ·", timeout=120_000)
        editor = page.locator("textarea").first
        editor.fill(
            "SELECT agent, round(100 * avg(passed::DOUBLE), 1) AS pass_pct FROM v_attempts "
            "WHERE benchmark = 'ad-bench' GROUP BY agent ORDER BY pass_pct DESC"
        )
        editor.press("Control+Enter")
        page.wait_for_selector("text=rows · 2 columns", timeout=120_000)  # the new result, not the old one
        page.wait_for_function("() => location.search.includes('pass_pct')", timeout=30_000)
        settle(page)  # the run finished and the page drawn (was a fixed second)
        with page.expect_download(timeout=120_000) as download:
            page.get_by_text("CSV (full result)").click()
        lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
        assert lines[0] == '"agent","pass_pct"' and len(lines) > 2
        page.get_by_text("Chart this").click()
        page.wait_for_selector(".js-plotly-plot", timeout=60_000)
        settle(page)  # the chart drawn (its SVG) and the page still (was a fixed 1.5 s)
        shot = screenshot(page, "sql")
    assert shot.stat().st_size > 10_000


def test_query_and_history_survive_a_visit_to_another_page(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_sql_page(fixture_db, monkeypatch)
    run_editor(at, "SELECT 41 + 1 AS answer")
    at.switch_page("views/upload.py").run()
    at.switch_page("views/sql.py").run()
    assert not at.exception
    assert result_frame(at)["answer"].tolist() == ["42"]
    assert at.text_area(key="sql_editor").value == "SELECT 41 + 1 AS answer"
    assert "Query history (1)" in [e.label for e in at.expander]
    assert md_plain("1 row: SELECT 41 + 1 AS answer") in [b.label for b in at.button]
