"""A run a retry superseded (``store.retries``: a later Inspect log of the same ``eval.task_id``, the leaderboard's
rule) is left out of TMF, Version diff and Progress, each saying so; the ingest line and the Upload preview name the
stored run a file retries. Logs as ``tests/test_inspect_retry.py`` writes them (native records carrying the Inspect
task id and creation time a reader keeps); the errored run passes every task it holds, so counting it changes every
number below.
"""

from __future__ import annotations

import io
from pathlib import Path

import duckdb
import pytest

from analytics import diff as rd
from analytics import tmf
from analytics.progress.load import raw_scores_and_left_out
from ingest.pipeline import ingest_paths
from store import RunFilter
from tests.apptest import open_page
from tests.run_log import write_run_log

N_TASKS = 24
RUNS = {  # run id: (agent, Inspect task id, created, status, eval date, tasks held, passed when task index % n)
    "m-errored": ("m", "task-m", "01", "error", "2026-11-02", N_TASKS // 2, 1),
    "m-retry": ("m", "task-m", "02", "success", "2026-11-03", N_TASKS, 3),
    "n-run": ("n", "task-n", "01", "success", "2026-10-01", N_TASKS, 2),
}


def _log(tmp_path: Path, run_id: str) -> Path:
    agent, task_id, created, status, date, n_tasks, every = RUNS[run_id]
    run = {
        "run_id": run_id,
        "benchmark": "chain",
        "agent": agent,
        "agent_version": "1",
        "eval_date": date,
        "status": status,
        "inspect_task_id": task_id,
        "inspect_created": f"2026-11-27T12:00:{created}+00:00",
    }
    return write_run_log(tmp_path / f"{run_id}.jsonl", run, n_listed=N_TASKS, n_held=n_tasks, every=every)


@pytest.fixture(scope="module")
def retried_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("retried")
    db = tmp / "r.duckdb"
    res = ingest_paths([_log(tmp, r) for r in RUNS], db=db)
    assert [r.outcome for r in res] == ["ingested"] * 3, [str(r.error) for r in res]
    return db


def _pass_rate(run_id: str) -> float:
    _, _, _, _, _, n_tasks, every = RUNS[run_id]
    return sum(i % every == 0 for i in range(n_tasks)) / n_tasks


def test_the_ingest_line_names_the_run_a_file_retries_and_the_retry_that_supersedes(tmp_path: Path) -> None:
    db, out = tmp_path / "i.duckdb", io.StringIO()
    ingest_paths([_log(tmp_path, "m-errored"), _log(tmp_path, "n-run")], db=db, out=out)
    ingest_paths([_log(tmp_path, "m-retry")], db=db, out=out)
    lines = out.getvalue().splitlines()
    assert lines[-1].endswith("; run m-retry: retry of run m-errored (chain)"), lines
    assert not any("retry" in line for line in lines[:-1]), lines  # the other task's run retries nothing
    late, out = tmp_path / "late.duckdb", io.StringIO()  # the retry stored first: the errored log says it is replaced
    ingest_paths([_log(tmp_path, "m-retry")], db=late, out=out)
    ingest_paths([_log(tmp_path, "m-errored")], db=late, out=out)
    assert (
        out.getvalue().splitlines()[-1].endswith("; run m-errored: superseded by stored run m-retry (chain), its retry")
    )


def test_the_upload_preview_names_the_run_a_file_retries(tmp_path: Path) -> None:
    from ingest import upload_worker

    db = tmp_path / "u.duckdb"
    ingest_paths([_log(tmp_path, "m-errored")], db=db)
    uploads = [(f"{r}.jsonl", _log(tmp_path, r).read_bytes()) for r in ("m-retry", "n-run")]
    retry, other = upload_worker.preview_uploads(uploads, db=db)  # in the page's worker, as the page calls it
    assert retry.outcome == "ready" and retry.retries == ("run m-retry: retry of run m-errored (chain)",)
    assert other.outcome == "ready" and other.retries == ()


def test_tmf_leaves_the_superseded_run_out(retried_db: Path) -> None:
    con = duckdb.connect(str(retried_db), read_only=True)
    try:
        inputs = tmf.load(con, RunFilter(benchmark="chain"))
    finally:
        con.close()
    assert inputs.superseded == ("m-errored",)
    assert inputs.runs is not None and sorted(inputs.runs["run_id"]) == ["m-retry", "n-run"]
    assert set(inputs.tasks["run_id"]) == {"m-retry", "n-run"}
    result = tmf.analyse(inputs)
    points = result.points.set_index("run_id")
    assert sorted(points.index) == ["m-retry", "n-run"]
    assert points.loc["m-retry", "performance"] == pytest.approx(_pass_rate("m-retry"))
    assert "1 run superseded by a retry (m-errored" in tmf.comparison_caption(result)


def test_progress_scores_the_retry_alone(retried_db: Path) -> None:
    con = duckdb.connect(str(retried_db), read_only=True)
    try:
        raw, n_tasks, n_superseded, _ = raw_scores_and_left_out(con, benchmark="chain")
    finally:
        con.close()
    # both m runs are one subject (same agent and version): the errored run's attempts would be pooled in
    assert dict(zip(raw["subject"], raw["raw_score"], strict=True)) == pytest.approx(
        {"m 1": _pass_rate("m-retry"), "n 1": _pass_rate("n-run")}
    )
    assert (n_tasks, n_superseded) == (N_TASKS, 1)


def test_version_diff_pickers_leave_the_superseded_run_out(retried_db: Path) -> None:
    con = duckdb.connect(str(retried_db), read_only=True)
    try:
        every = rd.run_pairs(con, benchmark="chain")
    finally:
        con.close()
    runs, gone = rd.without_superseded(every)
    assert gone == ["m-errored"] and list(runs["run_id"]) == ["m-retry", "n-run"]
    assert rd.default_pair(runs) == ("n-run", "m-retry")  # counted, m's two runs would be the pair
    kept, gone = rd.without_superseded(every, keep=["m-errored"])  # a link naming it still opens it
    assert gone == [] and "m-errored" in set(kept["run_id"])


def _plain(markdown: str) -> str:
    """A caption's text without the escapes ``ui.common.plain`` adds."""
    return markdown.replace("\\", "")


def test_the_pages_say_what_they_left_out(retried_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNLENS_AUTO_FIT", "0")
    at = open_page("views/diff.py", retried_db, monkeypatch, benchmark="chain")
    assert len(at.selectbox(key="df_a").options) == 2 and "m-errored" not in " ".join(at.selectbox(key="df_a").options)
    assert (at.selectbox(key="df_a").value, at.selectbox(key="df_b").value) == ("n-run", "m-retry")
    assert any("1 run superseded by a retry" in c.value and "m-errored" in _plain(c.value) for c in at.caption)
    at = open_page("views/diff.py", retried_db, monkeypatch, benchmark="chain", baseline="m-errored")
    assert at.selectbox(key="df_a").value == "m-errored" and not at.info  # a link naming it still opens it
    at = open_page("views/tmf.py", retried_db, monkeypatch, benchmark="chain")
    assert any("1 run superseded by a retry (m-errored" in _plain(c.value) for c in at.caption)
    assert "m-errored" not in at.dataframe[0].value.to_string()
    at = open_page("views/progress.py", retried_db, monkeypatch, benchmark="chain")
    assert any("1 run superseded by a retry" in c.value for c in at.caption)
