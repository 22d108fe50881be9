"""The SQL sandbox: an attack corpus refused or bounded with the database unchanged, limits, CLI, examples."""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

import store as rdb
from analytics import sql_console as sb
from tests.conftest import ROOT

FAST = sb.SandboxLimits(timeout_s=2.0, memory_limit="256MB", startup_grace_s=10.0)


def run(sql: str, **kwargs):
    """In-process run: the semantics tests need no worker process (the attack tests use one)."""
    return sb.run_query(sql, is_isolated=False, **kwargs)


def export(sql: str, fmt: str, **kwargs) -> bytes:
    return sb.export_result(sql, fmt, is_isolated=False, **kwargs)


# (statement, why it must not work). Every one is refused by the parser layer or bounded by the engine.
ATTACKS = [
    ("INSERT INTO runs (run_id, benchmark, agent) VALUES ('x', 'b', 'a')", "write"),
    ("UPDATE attempts SET score = 1", "write"),
    ("DELETE FROM attempts", "write"),
    ("DROP TABLE runs", "write"),
    ("DROP VIEW v_attempts", "write"),
    ("CREATE TABLE evil AS SELECT 1", "write"),
    ("CREATE OR REPLACE VIEW v_runs AS SELECT 1", "write"),
    ("CREATE MACRO m(x) AS x", "write"),
    ("ALTER TABLE runs ADD COLUMN evil INTEGER", "write"),
    ("TRUNCATE attempts", "write"),
    ("COPY runs TO '/tmp/runlens_leak.csv'", "file write"),
    ("COPY (SELECT * FROM runs) TO '/tmp/runlens_leak.parquet' (FORMAT parquet)", "file write"),
    ("COPY runs FROM '/etc/passwd'", "file read"),
    ("EXPORT DATABASE '/tmp/runlens_export'", "file write"),
    ("ATTACH '/tmp/runlens_other.duckdb' AS other", "other database"),
    ("ATTACH ':memory:' AS scratch", "other database"),
    ("DETACH runlens", "detach"),
    ("INSTALL httpfs", "extension"),
    ("LOAD httpfs", "extension"),
    ("FORCE INSTALL spatial", "extension"),
    ("SET enable_external_access = true", "setting"),
    ("SET memory_limit = '64GB'", "setting"),
    ("RESET lock_configuration", "setting"),
    ("SET threads = 64", "setting"),
    ("PRAGMA memory_limit = '64GB'", "setting"),
    ("PRAGMA enable_profiling", "setting"),
    ("SET VARIABLE x = 1", "session"),
    ("USE memory", "session"),
    ("CHECKPOINT", "procedure"),
    ("VACUUM", "write"),
    ("BEGIN TRANSACTION", "transaction"),
    ("SELECT * FROM read_csv('/etc/passwd', sep = ':')", "file read"),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", "file read"),
    ("SELECT * FROM read_text('/etc/passwd')", "file read"),
    ("SELECT * FROM read_blob('/etc/passwd')", "file read"),
    ("SELECT * FROM glob('/*')", "file listing"),
    ("SELECT * FROM read_json('/etc/passwd')", "file read"),
    ("SELECT * FROM read_parquet('https://example.com/x.parquet')", "httpfs URL"),
    ("SELECT * FROM 'https://example.com/data.csv'", "httpfs URL (replacement scan)"),
    ("SELECT * FROM '/etc/passwd'", "file read (replacement scan)"),
    ("FROM 'data/runlens.duckdb.read'", "file read (replacement scan)"),
    ("SELECT * FROM (SELECT * FROM read_text('/etc/hostname')) t", "file read in a subquery"),
    ("WITH x AS (SELECT * FROM glob('/root/*')) SELECT * FROM x", "file listing in a CTE"),
    ("SELECT * FROM runs WHERE run_id IN (SELECT content FROM read_text('/etc/passwd'))", "file read in IN"),
    ("SELECT * FROM query('SELECT 1')", "SQL in a string"),
    ("SELECT * FROM query_table('runs')", "SQL in a string"),
    ("SELECT * FROM sniff_csv('/etc/passwd')", "file read"),
    ("SELECT * FROM parquet_metadata('/tmp/x.parquet')", "file read"),
    ("SELECT 1; DROP TABLE runs", "several statements"),
    ("SELECT 1; SELECT 2", "several statements"),
    ("EXPLAIN ANALYZE DELETE FROM attempts", "write behind EXPLAIN"),
    ("CALL pragma_version()", "procedure"),
    ("PREPARE p AS SELECT 1", "prepare"),
    ("PIVOT runs ON agent USING count(*)", "expands into CREATE TYPE"),
    # bounded by the engine: time and memory
    ("SELECT count(*) FROM range(100000000) a, range(100000000) b WHERE a.range + b.range = -1", "runaway join"),
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r", "infinite recursion"),
    ("SELECT list(range) FROM range(400000000)", "allocates gigabytes"),
    ("SELECT string_agg(repeat('x', 1000), ',') FROM range(5000000)", "allocates gigabytes of text"),
    ("SELECT * FROM range(100000000) ORDER BY random()", "sort spilling past the memory limit"),
]


def file_hashes(db: Path) -> dict[str, str]:
    """sha256 of the primary database file and its published snapshot."""
    out = {}
    for path in (db, rdb.snapshot_path(db)):
        out[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_the_attack_corpus_is_big_enough() -> None:
    assert len(ATTACKS) >= 30
    assert len({sql for sql, _ in ATTACKS}) == len(ATTACKS)


# Attacks also sent through a whole worker process although the parser layer refuses them: the worker's channel
# for a refusal (its pickled answer) and for a file read or write, checked end to end.
THROUGH_A_WORKER = {
    "DROP TABLE runs",
    "COPY runs TO '/tmp/runlens_leak.csv'",
    "SELECT * FROM read_csv('/etc/passwd', sep = ':')",
}
N_BOUNDED = 5  # the last attacks: the engine bounds them (time, memory), so they always run in a worker


def test_every_attack_is_refused_or_bounded_and_the_db_is_unchanged(fixture_db: Path) -> None:
    """Each statement goes through what the sandbox worker runs (``_run_in_process(check_apart=True)``: the check in
    a forked child, then the sandbox connection); the resource attacks and a sample of the refused ones go through
    the worker process itself, as the page and the CLI run them. Starting one worker per refused statement (about
    half a CPU second each, for the same code) was most of this test's time."""
    from analytics.sql_console.run import _run_in_process

    before = file_hashes(fixture_db)
    outcomes = {}
    in_worker = THROUGH_A_WORKER | {sql for sql, _ in ATTACKS[-N_BOUNDED:]}
    assert in_worker <= {sql for sql, _ in ATTACKS}
    for sql, why in ATTACKS:
        started = time.monotonic()
        with pytest.raises((sb.SqlRefused, sb.SqlFailed)) as info:
            if sql in in_worker:
                sb.run_query(sql, db=fixture_db, limits=FAST)  # as the page and the CLI run it: in a worker
            else:
                sb.check_size(sql, limits=FAST)
                _run_in_process(sql, db=fixture_db, limits=FAST, check_apart=True)  # the worker's own call
        elapsed = time.monotonic() - started
        assert elapsed < FAST.timeout_s + FAST.startup_grace_s + 5, (
            f"{sql!r} ({why}) was not stopped in time: {elapsed:.1f} s"
        )
        err = info.value
        outcomes[sql] = "refused" if isinstance(err, sb.SqlRefused) else err.kind
        assert str(err).strip(), f"{sql!r} gave no reason"
    assert file_hashes(fixture_db) == before
    assert not Path("/tmp/runlens_leak.csv").exists() and not Path("/tmp/runlens_export").exists()
    # the parser layer decides everything but the resource attacks; those the engine bounds
    assert outcomes["DROP TABLE runs"] == "refused"
    assert outcomes["SELECT * FROM read_csv('/etc/passwd', sep = ':')"] == "refused"
    assert outcomes["COPY runs TO '/tmp/runlens_leak.csv'"] == "refused"
    # the runaway join needs memory it cannot spill (no temp directory at all): it stops on whichever comes first
    assert outcomes[ATTACKS[-5][0]] in ("timeout", "memory")
    assert outcomes[ATTACKS[-4][0]] == "timeout"
    assert outcomes[ATTACKS[-3][0]] in ("memory", "timeout")


def test_refusals_name_the_reason(fixture_db: Path) -> None:
    cases = {
        "DROP TABLE runs": "DROP changes the database",
        "SELECT 1; SELECT 2": "one statement per run (2 found)",
        "SELECT * FROM read_text('/etc/passwd')": "read_text() is not allowed",
        "SELECT * FROM '/etc/passwd'": "file path or URL",
        "COPY runs TO 'x.csv'": "COPY reads or writes files",
        "SET memory_limit = '64GB'": "SET/RESET/USE and assigning PRAGMAs change settings",
        "PRAGMA memory_limit = '64GB'": "assigning PRAGMAs change settings",
        "PRAGMA enable_profiling": "this PRAGMA changes settings",
        "   ": "no statement",
    }
    for sql, reason in cases.items():
        with pytest.raises(sb.SqlRefused, match=re.escape(reason)):
            run(sql, db=fixture_db, limits=FAST)


def test_the_engine_refuses_even_without_the_parser_layer(fixture_db: Path) -> None:
    """Defence in depth: statements sent straight to the sandbox connection still fail."""
    before = file_hashes(fixture_db)
    con = sb.open_sandbox(fixture_db, limits=FAST)
    try:
        settings = dict(
            con.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN "
                "('enable_external_access', 'lock_configuration', 'autoinstall_known_extensions', "
                "'autoload_known_extensions', 'threads')"
            ).fetchall()
        )
        assert settings == {
            "enable_external_access": "false",
            "lock_configuration": "true",
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
            "threads": "1",
        }
        for sql in (
            "SELECT * FROM read_csv('/etc/passwd')",
            "SELECT * FROM read_text('/etc/passwd')",
            "SELECT * FROM glob('/*')",
            "COPY runs TO '/tmp/runlens_leak2.csv'",
            "EXPORT DATABASE '/tmp/runlens_export2'",
            "ATTACH '/tmp/runlens_other2.duckdb'",
            "INSTALL httpfs",
            "LOAD httpfs",
            "SET enable_external_access = true",
            "SET lock_configuration = false",
            "SET memory_limit = '64GB'",
            "DROP TABLE runs",
            "INSERT INTO runs (run_id, benchmark, agent) VALUES ('x', 'b', 'a')",
            "CREATE TABLE runlens.main.evil (a INTEGER)",
            "DELETE FROM attempts",
        ):
            with pytest.raises(duckdb.Error):
                con.execute(sql).fetchall()
    finally:
        con.close()
    assert file_hashes(fixture_db) == before
    assert not Path("/tmp/runlens_leak2.csv").exists()


def test_read_only_statements_run(fixture_db: Path) -> None:
    for sql in (
        "SELECT * FROM v_runs",
        "FROM v_attempts",
        "DESCRIBE runs",
        "SHOW TABLES",
        "SUMMARIZE runs",
        "PRAGMA table_info('runs')",
        "EXPLAIN SELECT * FROM runs",
        "WITH a AS (SELECT agent FROM runs) SELECT * FROM a;  -- a comment",
        "SELECT table_name FROM information_schema.tables",
        "SELECT * FROM duckdb_tables()",
        "SELECT * FROM range(3)",
        "SELECT unnest([1, 2, 3]) AS x",
    ):
        result = run(sql, db=fixture_db, limits=FAST)
        assert not result.df.empty, sql


def test_result_values_and_types(fixture_db: Path) -> None:
    result = run(
        "SELECT agent, count(*) AS n, avg(score) AS mean_score FROM v_attempts GROUP BY agent ORDER BY agent",
        db=fixture_db,
    )
    assert result.df["agent"].tolist() == ["Agent A", "Human"]
    assert result.df["n"].tolist() == [4, 2]
    # Agent A: scores 1, 0, 1 and a failed attempt without a score, which ingest stores as 0
    assert result.df["mean_score"].iloc[0] == pytest.approx(0.5)
    assert dict(result.column_types) == {"agent": "VARCHAR", "n": "BIGINT", "mean_score": "DOUBLE"}
    assert result.n_rows == 2 and not result.is_truncated and result.elapsed_s > 0


def test_row_cap_keeps_the_first_rows_and_counts_all(fixture_db: Path) -> None:
    limits = sb.SandboxLimits(max_rows=1000, batch_rows=300)
    result = run("SELECT range AS i FROM range(25000)", db=fixture_db, limits=limits)
    assert len(result.df) == 1000
    assert result.df["i"].tolist() == list(range(1000))
    assert result.n_rows == 25000 and result.is_truncated and result.is_count_exact


def test_timeout_after_the_shown_rows_keeps_them(fixture_db: Path) -> None:
    limits = sb.SandboxLimits(timeout_s=1.0, max_rows=500)
    started = time.monotonic()
    result = run("SELECT range AS i FROM range(1000000000000)", db=fixture_db, limits=limits)
    assert time.monotonic() - started < 6
    assert len(result.df) == 500 and result.is_truncated and not result.is_count_exact
    assert result.n_rows >= 500


def test_the_watchdog_really_interrupts(fixture_db: Path) -> None:
    limits = sb.SandboxLimits(timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(sb.SqlFailed) as info:
        run(
            "SELECT count(*) FROM range(1000000000000) t WHERE hash(t.range) % 7 = 3",  # CPU only, no memory
            db=fixture_db,
            limits=limits,
        )
    assert info.value.kind == "timeout"
    assert "0.5 s" in str(info.value)
    assert time.monotonic() - started < 5


def test_errors_carry_duckdbs_position(fixture_db: Path) -> None:
    with pytest.raises(sb.SqlFailed) as info:
        run("SELECT agent,\n  nope\nFROM runs", db=fixture_db)
    assert info.value.line == 2 and "nope" in info.value.message and "^" in info.value.message
    with pytest.raises(sb.SqlFailed) as info:
        run("SELECT agent\nFROM runs\nWHER x", db=fixture_db)
    assert info.value.line == 3 and "syntax error" in info.value.message


@pytest.mark.slow
def test_the_worker_process_stops_what_interrupt_cannot(fixture_db: Path) -> None:
    """One huge scalar call never checks for an interrupt; the worker is killed or fails, the app lives on."""
    limits = sb.SandboxLimits(timeout_s=1.0, startup_grace_s=8.0)
    before = file_hashes(fixture_db)
    for sql in ("SELECT length(lpad('x', 2000000000, 'y')) AS n", "SELECT length(repeat('x', 3000000000)) AS n"):
        started = time.monotonic()
        with pytest.raises(sb.SqlFailed) as info:
            sb.run_query(sql, db=fixture_db, limits=limits)
        assert info.value.kind in ("timeout", "memory"), sql
        assert time.monotonic() - started < limits.timeout_s + limits.startup_grace_s + 5, sql
    assert file_hashes(fixture_db) == before
    # the worker returns ordinary results and errors like the in-process path
    assert sb.run_query("SELECT 40 + 2 AS x", db=fixture_db).df["x"].tolist() == [42]
    with pytest.raises(sb.SqlFailed) as info:
        sb.run_query("SELECT agent,\n  nope FROM runs", db=fixture_db)
    assert info.value.line == 2
    assert len(pd.read_csv(io.BytesIO(sb.export_result("SELECT * FROM range(1000)", "csv", db=fixture_db)))) == 1000


def test_try_query_reports_instead_of_raising(fixture_db: Path) -> None:
    assert sb.try_query("DROP TABLE runs", db=fixture_db).error_kind == "refused"
    bad = sb.try_query("SELECT nope FROM runs", db=fixture_db)
    assert bad.result is None and bad.error_kind == "error" and bad.line == 1
    assert sb.try_query("SELECT 1 AS x", db=fixture_db).result.df["x"].tolist() == [1]


def test_export_holds_the_full_result(fixture_db: Path) -> None:
    limits = sb.SandboxLimits(max_rows=10)
    sql = "SELECT range AS i, [range, 1] AS pair, NULL AS nothing, {'a': range} AS s FROM range(5000)"
    csv = export(sql, "csv", db=fixture_db, limits=limits)
    df = pd.read_csv(io.BytesIO(csv))
    assert len(df) == 5000 and df["i"].iloc[-1] == 4999
    assert json.loads(df["pair"].iloc[3]) == [3, 1]
    table = pq.read_table(io.BytesIO(export(sql, "parquet", db=fixture_db, limits=limits)))
    assert table.num_rows == 5000 and table.column("pair").to_pylist()[3] == [3, 1]
    empty = export("SELECT * FROM runs WHERE false", "parquet", db=fixture_db)
    assert "run_id" in pq.read_table(io.BytesIO(empty)).column_names
    with pytest.raises(sb.SqlRefused):
        export("COPY runs TO 'x.csv'", "csv", db=fixture_db)
    exotic = "SELECT '\\xAA'::BLOB AS b, union_value(n := 2) AS u, INTERVAL 3 HOUR AS i, gen_random_uuid() AS id"
    assert pd.read_csv(io.BytesIO(export(exotic, "csv", db=fixture_db)))["b"].tolist() == ["aa"]
    assert pq.read_table(io.BytesIO(export(exotic, "parquet", db=fixture_db))).num_rows == 1


def test_export_is_byte_capped(fixture_db: Path) -> None:
    limits = sb.SandboxLimits(max_export_bytes=100_000)
    with pytest.raises(sb.SqlFailed) as info:
        export("SELECT range, repeat('x', 100) FROM range(100000)", "csv", db=fixture_db, limits=limits)
    assert info.value.kind == "too_large"


def test_cli_prints_csv_and_refuses_with_a_reason(fixture_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli import main

    assert main(["sql", "--db", str(fixture_db), "SELECT run_id, kind FROM runs ORDER BY run_id"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ['"run_id","kind"', '"mini-a-v1","llm"', '"mini-human","human"']
    before = file_hashes(fixture_db)
    assert main(["sql", "--db", str(fixture_db), "DELETE FROM runs"]) == sb.EXIT_REFUSED
    assert "refused: DELETE changes the database" in capsys.readouterr().err
    assert (
        main(
            [
                "sql",
                "--db",
                str(fixture_db),
                "--timeout-s",
                "0.5",
                "SELECT count(*) FROM range(1000000000) a, range(1000000) b",
            ]
        )
        == sb.EXIT_BOUNDED
    )
    assert "stopped" in capsys.readouterr().err
    assert main(["sql", "--db", str(fixture_db), "--json", "SELECT 2 AS two"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["rows"] == [[2]] and payload["columns"] == ["two"] and payload["n_rows"] == 1
    assert file_hashes(fixture_db) == before


@pytest.mark.slow
def test_cli_as_a_subprocess(fixture_db: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "analytics", "sql", "--db", str(fixture_db), "SELECT count(*) AS n FROM attempts"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ['"n"', "6"]
    refused = subprocess.run(
        [sys.executable, "-m", "analytics", "sql", "--db", str(fixture_db), "SELECT * FROM read_csv('/etc/passwd')"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert refused.returncode != 0 and "read_csv() is not allowed" in refused.stderr and not refused.stdout


def test_every_example_is_allowed_and_runs(fixture_db: Path) -> None:
    gallery = sb.examples()
    names = {e.name for e in gallery}
    assert {"ad_bench_table2", "ad_bench_table3", "liveagentbench_table2", "xbench_table9"} <= names
    for example in gallery:
        assert example.title != example.name and example.description, example.name
        sb.check_statement(example.sql)
        run(example.sql, db=fixture_db)  # runs (possibly empty on the small fixture)


def test_schema_browser_lists_tables_views_counts(fixture_db: Path) -> None:
    with rdb.reader(fixture_db) as con:
        objects = sb.schema_objects(con)
        columns = sb.schema_columns(con)
    rows = objects.set_index("name")
    assert rows.loc["runs", "n_rows"] == 2 and rows.loc["attempts", "n_rows"] == 6
    # a view is not run to count it unless asked (the count would read the whole store)
    assert rows.loc["v_attempts", "kind"] == "view" and pd.isna(rows.loc["v_runs", "n_rows"])
    with rdb.reader(fixture_db) as con:
        counted = sb.schema_objects(con, count_views=True).set_index("name")
    assert counted.loc["v_runs", "n_rows"] == 2 and counted.loc["v_attempts", "n_rows"] == 6
    assert counted.drop(columns="n_rows").equals(rows.drop(columns="n_rows"))
    assert (counted.loc[rows["kind"] == "table", "n_rows"] == rows.loc[rows["kind"] == "table", "n_rows"]).all()
    with rdb.reader(fixture_db) as con:  # the counts of one statement are each table's own count
        for name in rows.index[rows["kind"] == "table"]:
            assert rows.loc[name, "n_rows"] == rdb.query_rows(con, f'SELECT count(*) FROM "{name}"')[0][0], name
    described = objects.set_index("name")["description"]
    assert all(described[name] for name in sb.DESCRIPTIONS if name in described.index)
    assert described["v_attempts"].startswith("Attempts joined with their run and task")
    runs_cols = columns[columns["name"] == "runs"]
    assert {"run_id", "agent", "eval_date"} <= set(runs_cols["column"])
    assert runs_cols.set_index("column").loc["eval_date", "type"] == "DATE"


def test_friendly_views_answer_without_joins(fixture_db: Path) -> None:
    runs = run("SELECT run_id, n_attempts, n_tasks, pass_rate, cost_usd FROM v_runs ORDER BY run_id", db=fixture_db).df
    assert runs["n_attempts"].tolist() == [4, 2] and runs["n_tasks"].tolist() == [2, 2]
    assert runs["pass_rate"].tolist() == [0.5, 1.0]
    calls = run("SELECT tool, is_error FROM v_tool_calls ORDER BY attempt_id, step", db=fixture_db).df
    assert calls["tool"].tolist() == ["search", "get_accounts", "daily_data", "calculator", "daily_data"]
    assert calls["is_error"].tolist() == [False, False, False, False, True]
    caps = run(
        "SELECT task_id, capability FROM v_attempt_capabilities WHERE run_id = 'mini-human' ORDER BY ALL", db=fixture_db
    ).df
    assert caps.values.tolist() == [["T1", "search"], ["T2", "calculator"], ["T2", "search"]]


def test_fig_result_and_its_column_checks() -> None:
    df = pd.DataFrame({"agent": ["a", "b"], "score": [0.5, 0.7], "kind": ["llm", "human"]})
    fig = sb.fig_result(df, x="agent", y="score", color="kind", kind="bar")
    assert len(fig.data) == 2 and list(fig.data[0].y) == [0.5]
    with pytest.raises(ValueError, match="'nope' is not in the result"):
        sb.fig_result(df, x="nope", y="score")


def test_extract_sql_and_prompt() -> None:
    assert sb.extract_sql("Here:\n```sql\nSELECT 1\n```\nDone") == "SELECT 1"
    assert sb.extract_sql("SELECT 2") == "SELECT 2"
    gallery = sb.examples()
    msgs = sb.nl_messages("which agent?", schema="table runs(run_id VARCHAR)", gallery=gallery)
    assert msgs[-1] == {"role": "user", "content": "which agent?"}
    assert "table runs(run_id VARCHAR)" in msgs[0]["content"] and gallery[0].title in msgs[0]["content"]


def test_ask_sql_against_a_local_openai_compatible_server() -> None:
    from analytics import llm
    from tests.fake_openai_server import FakeOpenAI

    server = FakeOpenAI([("cheapest", [("reply", "```sql\nSELECT agent FROM v_runs ORDER BY cost_usd LIMIT 1\n```")])])
    server.start()
    try:
        cfg = llm.llm_config(
            {
                "OPENAI_BASE_URL": server.base_url,
                "RUNLENS_JUDGE_MODEL": "test-model",
                "RUNLENS_DISABLE_JUDGE_NETWORK": "1",
            }
        )
        sql = sb.ask_sql(
            "Which agent is cheapest?",
            schema="view v_runs(agent VARCHAR, cost_usd DOUBLE)",
            gallery=sb.examples(),
            cfg=cfg,
        )
    finally:
        server.stop()
    assert sql == "SELECT agent FROM v_runs ORDER BY cost_usd LIMIT 1"
    assert "v_runs(agent VARCHAR" in server.requests[0]["messages"][0]["content"]


# ---------------------------------------------------------------------------------------------
# The paper-table queries, checked on a small hand-built database against hand computation
# ---------------------------------------------------------------------------------------------


def _attempt(run: str, task: str, sample: int, score: float, *, calls: int = 0, errors: tuple[str, ...] = ()):
    steps = [
        {"round": i + 1, "kind": "tool_call", "tool": "search", "args": {"q": i}, "result": "r"} for i in range(calls)
    ]
    return {
        "record": "attempt",
        "run_id": run,
        "task_id": task,
        "sample": sample,
        "score": score,
        "errors": list(errors),
        "steps": steps,
    }


@pytest.fixture
def paper_db(tmp_path: Path) -> Path:
    """ad-bench, xbench-recruitment and liveagentbench in miniature (values chosen for hand computation)."""
    from ingest.pipeline import ingest_paths

    recs: list[dict] = [
        {"record": "benchmark", "benchmark": "ad-bench", "scoring": "binary"},
        {"record": "task", "benchmark": "ad-bench", "task_id": "A1", "level": "L1"},
        {"record": "task", "benchmark": "ad-bench", "task_id": "A2", "level": "L1"},
        {"record": "task", "benchmark": "ad-bench", "task_id": "B1", "level": "L3"},
        {"record": "run", "run_id": "m1", "benchmark": "ad-bench", "agent": "M1", "eval_date": "2026-01-15"},
        {"record": "run", "run_id": "m1-old", "benchmark": "ad-bench", "agent": "M1", "eval_date": "2025-12-01"},
    ]
    plan = {
        ("A1", 0): (1, 1, ()),
        ("A1", 1): (0, 2, ("TE", "PE")),
        ("A1", 2): (0, 3, ("TE", "REDUNDANT")),
        ("A2", 0): (0, 0, ("HAL",)),
        ("A2", 1): (0, 0, ()),
        ("A2", 2): (0, 0, ("LC", "TOOL")),
        ("B1", 0): (1, 4, ()),
        ("B1", 1): (1, 4, ()),
        ("B1", 2): (1, 4, ()),
    }
    for (task, sample), (score, calls, errors) in plan.items():
        recs.append(_attempt("m1", task, sample, score, calls=calls, errors=errors))
        recs.append(_attempt("m1-old", task, sample, 1, calls=9, errors=("TE",) if task == "A2" else ()))
    recs += [
        {"record": "benchmark", "benchmark": "xbench-recruitment", "scoring": "graded"},
        {"record": "task", "benchmark": "xbench-recruitment", "task_id": "C1", "category": "Company Mapping"},
        {"record": "task", "benchmark": "xbench-recruitment", "task_id": "P1", "category": "People-to-Info"},
        {"record": "task", "benchmark": "xbench-recruitment", "task_id": "I1", "category": "Info-to-People"},
        {"record": "run", "run_id": "x", "benchmark": "xbench-recruitment", "agent": "X"},
        {"record": "run", "run_id": "y", "benchmark": "xbench-recruitment", "agent": "Y"},
        _attempt("x", "C1", 0, 1.0),
        _attempt("x", "P1", 0, 0.5),
        _attempt("x", "I1", 0, 0.25),
        _attempt("y", "C1", 0, 0.75),
        _attempt("y", "P1", 0, 0.75),
        _attempt("y", "I1", 0, 0.75),
        {"record": "benchmark", "benchmark": "liveagentbench", "scoring": "binary"},
        {
            "record": "task",
            "benchmark": "liveagentbench",
            "task_id": "L1",
            "category": "W&S",
            "capabilities": ["text file"],
        },
        {
            "record": "task",
            "benchmark": "liveagentbench",
            "task_id": "L2",
            "category": "DL",
            "capabilities": ["image", "text file"],
        },
        {"record": "task", "benchmark": "liveagentbench", "task_id": "L3", "capabilities": ["audio"]},
        {"record": "run", "run_id": "h", "benchmark": "liveagentbench", "agent": "H", "kind": "human"},
        {"record": "run", "run_id": "m", "benchmark": "liveagentbench", "agent": "M", "kind": "llm"},
        _attempt("h", "L1", 0, 1),
        _attempt("h", "L2", 0, 1),
        _attempt("h", "L3", 0, 0),
        _attempt("m", "L1", 0, 0),
        _attempt("m", "L2", 0, 1),
        _attempt("m", "L3", 0, 0),
    ]
    path = tmp_path / "paper.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    db = tmp_path / "paper.duckdb"
    assert [r.outcome for r in ingest_paths([path], db=db)] == ["ingested"]
    return db


def _example(name: str, db: Path) -> pd.DataFrame:
    sql = {e.name: e.sql for e in sb.examples()}[name]
    return run(sql, db=db).df


def test_ad_bench_table2_query_by_hand(paper_db: Path) -> None:
    row = _example("ad_bench_table2", paper_db).iloc[0]
    # 4 of 9 attempts pass; A1 and B1 solved at least once (2 of 3 tasks); 18 tool calls over 9 attempts
    assert row["model"] == "M1"
    assert (row["overall_pass1"], row["overall_pass3"]) == (44.4, 66.7)
    assert (row["l1_pass1"], row["l1_pass3"]) == (16.7, 50.0)
    assert (row["l3_pass1"], row["l3_pass3"]) == (100.0, 100.0)
    assert pd.isna(row["l2_pass1"]) and row["avg_len"] == 2.0


def test_ad_bench_table3_query_by_hand(paper_db: Path) -> None:
    df = _example("ad_bench_table3", paper_db)
    assert len(df) == 1  # the 2025-12-01 run is not the paper snapshot
    got = df.iloc[0][["te", "pe", "de", "ce", "hal", "lc", "n_errors", "n_total"]].tolist()
    assert got == [2, 1, 0, 0, 1, 1, 5, 7]


def test_xbench_table9_query_by_hand(paper_db: Path) -> None:
    df = _example("xbench_table9", paper_db)
    assert df["agent"].tolist() == ["Y", "X"] and df["rank"].tolist() == [1, 2]
    assert df.iloc[1][["average", "company", "People-to-Info", "Info-to-People"]].tolist() == [58.3, 100.0, 50.0, 25.0]


def test_liveagentbench_table2_query_by_hand(paper_db: Path) -> None:
    df = _example("liveagentbench_table2", paper_db).set_index("subject")
    assert df["group"].tolist() == ["LLMs", "Human"]
    assert df.loc["H", ["overall", "W&S", "DL", "Text File", "Image", "Audio"]].tolist() == [
        66.67,
        100,
        100,
        100,
        100,
        0,
    ]
    assert df.loc["M", ["overall", "W&S", "DL", "Text File", "Image", "Audio"]].tolist() == [33.33, 0, 100, 50, 100, 0]
    assert pd.isna(df.loc["M", "Video"])


# ---------------------------------------------------------------------------------------------
# The same queries on the demo dataset reproduce the papers' published tables
# ---------------------------------------------------------------------------------------------

SEEDS = ROOT.parent / "shared" / "seeds"


def _paper_rows(name: str, header: str, n_rows: int) -> list[list[str]]:
    """Tab-separated rows that follow a header line in a seed paper, with HTML emphasis removed."""
    lines = (SEEDS / name).read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 1 :]:
        cells = [re.sub(r"</?[bu]>", "", c).strip() for c in line.split("\t")]
        if len(cells) > 3 and cells[1]:
            rows.append(cells)
        if len(rows) == n_rows:
            break
    return rows


@pytest.mark.slow
def test_demo_reproduces_ad_bench_tables_2_and_3(demo_db: Path) -> None:
    t2 = _example("ad_bench_table2", demo_db).set_index("model")
    rows = _paper_rows("ad-bench.md", "Model\tOverall", 11)[1:]  # the first row is the Pass@1/Pass@3 sub-header
    assert len(rows) == 10
    for cells in rows:
        assert t2.loc[cells[0]].tolist() == [float(c) for c in cells[1:]], cells[0]
    t3 = _example("ad_bench_table3", demo_db).set_index("model")
    for cells in _paper_rows("ad-bench.md", "Model\tTE.", 10):
        assert t3.loc[cells[0]].tolist() == [int(c) for c in cells[1:]], cells[0]


@pytest.mark.slow
def test_demo_reproduces_liveagentbench_table2_within_half_a_point(demo_db: Path) -> None:
    df = _example("liveagentbench_table2", demo_db).set_index("subject")
    rows = [c for c in _paper_rows("liveagentbench.md", "Subject\tOverall", 14) if c[0] in df.index]
    assert len(rows) == 12
    for cells in rows:
        got = df.loc[cells[0]].drop("group").astype(float).tolist()
        want = [float(c) for c in cells[1:]]
        # OpenAI Deep Research's published Overall is infeasible (see data/demo/liveagentbench.py)
        tol = 0.6 if cells[0] == "OpenAI Deep Research" else 0.5
        assert got == pytest.approx(want, abs=tol), cells[0]


@pytest.mark.slow
def test_a_parquet_folder_is_sandboxed_too(fixture_db: Path, tmp_path: Path) -> None:
    """RUNLENS_DB may be an exported Parquet folder: its views stay readable, nothing else is."""
    from store import export_parquet

    folder = tmp_path / "export"
    export_parquet.export_parquet(fixture_db, folder)

    def folder_hash() -> str:
        digest = hashlib.sha256()
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
        return digest.hexdigest()

    before = folder_hash()
    runs = run("SELECT run_id, n_attempts FROM v_runs ORDER BY run_id", db=folder).df
    assert runs.values.tolist() == [["mini-a-v1", 4], ["mini-human", 2]]
    for sql, _ in ATTACKS[:-5]:
        with pytest.raises((sb.SqlRefused, sb.SqlFailed)):
            run(sql, db=folder, limits=FAST)
    con = sb.open_sandbox(folder, limits=FAST)
    try:
        with pytest.raises(duckdb.Error):  # outside the folder the engine refuses by itself
            con.execute("SELECT * FROM read_text('/etc/passwd')").fetchall()
    finally:
        con.close()
    assert folder_hash() == before
