"""An incomplete run (the leaderboard's ``is_complete``: ``runs.with_completeness``, a run cut short) is no TMF point
unless asked, Version diff says which run of the pair is incomplete, and Progress leaves it out of the pooled
version; each page names it. The cut run passes every task it holds, so counting it changes every number below.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from analytics import diff as rd
from analytics import runs, tmf
from analytics.progress.load import raw_scores_and_left_out
from ingest.pipeline import ingest_paths
from store import RunFilter
from tests.apptest import open_page
from tests.run_log import write_run_log

N_TASKS = 24
RUNS = {  # run id: (agent, Inspect task id, status, eval date, tasks held, passed when task index % n)
    "m-cut": ("m", "task-m1", "cancelled", "2026-11-02", N_TASKS - 4, 1),
    "m-full": ("m", "task-m2", "success", "2026-11-03", N_TASKS, 3),
    "n-run": ("n", "task-n", "success", "2026-10-01", N_TASKS, 2),
}


# a log that finished ("success") but counts more samples than it holds: incomplete by its counts alone
SHORT = {"k-short": N_TASKS - 4, "k-full": N_TASKS}  # run id: samples held, of N_TASKS the log counts


def _log(tmp_path: Path, run_id: str) -> Path:
    benchmark = "short" if run_id in SHORT else "cut"
    agent, task_id, status, date, n_tasks, every = (
        ("k", run_id, "success", "2026-11-01", SHORT[run_id], 2) if run_id in SHORT else RUNS[run_id]
    )
    counts = {"total_samples": N_TASKS, "completed_samples": n_tasks} if run_id in SHORT else {}
    run = {
        "run_id": run_id,
        "benchmark": benchmark,
        **counts,
        "agent": agent,
        "agent_version": "1",
        "eval_date": date,
        "status": status,
        "inspect_task_id": task_id,
        "inspect_created": f"{date}T12:00:00+00:00",
    }
    return write_run_log(tmp_path / f"{run_id}.jsonl", run, n_listed=N_TASKS, n_held=n_tasks, every=every)


@pytest.fixture(scope="module")
def cut_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("cut")
    db = tmp / "c.duckdb"
    res = ingest_paths([_log(tmp, r) for r in [*RUNS, *SHORT]], db=db)
    assert [r.outcome for r in res] == ["ingested"] * 5, [str(r.error) for r in res]
    return db


def _pass_rate(run_id: str) -> float:
    _, _, _, _, n_tasks, every = RUNS[run_id]
    return sum(i % every == 0 for i in range(n_tasks)) / n_tasks


def _load(db: Path, benchmark: str = "cut", **kwargs: object) -> tmf.TmfInputs:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return tmf.load(con, RunFilter(benchmark=benchmark), **kwargs)  # type: ignore[arg-type]
    finally:
        con.close()


def test_tmf_leaves_the_incomplete_run_out_unless_asked(cut_db: Path) -> None:
    inputs = _load(cut_db)
    assert inputs.incomplete == ("m-cut (cancelled)",) and not inputs.included_incomplete
    assert inputs.runs is not None and sorted(inputs.runs["run_id"]) == ["m-full", "n-run"]
    assert set(inputs.tasks["run_id"]) == {"m-full", "n-run"}
    result = tmf.analyse(inputs)
    points = result.points.set_index("run_id")
    assert sorted(points.index) == ["m-full", "n-run"]
    assert points.loc["m-full", "performance"] == pytest.approx(_pass_rate("m-full"))
    assert "1 incomplete run not shown, as on the Leaderboard: m-cut (cancelled)" in tmf.comparison_caption(result)
    asked = _load(cut_db, include_incomplete=True)  # the Leaderboard's "rank incomplete runs"
    assert asked.incomplete == ("m-cut (cancelled)",) and asked.included_incomplete
    assert set(asked.tasks["run_id"]) == set(RUNS)
    assert "1 incomplete run shown as points, as asked" in tmf.comparison_caption(tmf.analyse(asked))


def test_version_diff_says_which_run_is_incomplete_and_pairs_shared_tasks_only(cut_db: Path) -> None:
    con = duckdb.connect(str(cut_db), read_only=True)
    try:
        runs = rd.run_pairs(con, benchmark="cut")
        result = rd.compare_runs(con, run_a="m-cut", run_b="m-full")
        both_complete = rd.compare_runs(con, run_a="n-run", run_b="m-full")
    finally:
        con.close()
    assert dict(zip(runs["run_id"], runs["is_complete"], strict=True)) == {
        "m-cut": False,
        "m-full": True,
        "n-run": True,
    }
    shared = RUNS["m-cut"][4]
    # the paired statistics are of the tasks both hold: the cut run's tasks, not the full run's
    assert len(result.tasks) == shared and result.n_only_b == N_TASKS - shared and result.n_only_a == 0
    assert result.paired is not None and result.paired.n_shared == shared
    note = rd.incomplete_note(runs, result)
    assert note == (
        "A m-cut is incomplete (cancelled): A holds 20 tasks, B 24 tasks. The flips, the paired test and the deltas "
        "are of the 20 tasks both hold only."
    )
    assert rd.incomplete_note(runs, both_complete) is None


def test_progress_leaves_the_incomplete_run_out_of_its_version(cut_db: Path) -> None:
    con = duckdb.connect(str(cut_db), read_only=True)
    try:
        raw, n_tasks, n_superseded, incomplete = raw_scores_and_left_out(con, benchmark="cut")
        board = runs.load_runs(con, RunFilter(benchmark="cut"))  # the Leaderboard's rule, in Python
    finally:
        con.close()
    # m-cut and m-full are one subject (same agent and version): the cut run's attempts would be pooled in
    assert dict(zip(raw["subject"], raw["raw_score"], strict=True)) == pytest.approx(
        {"m 1": _pass_rate("m-full"), "n 1": _pass_rate("n-run")}
    )
    assert (n_tasks, n_superseded, incomplete) == (N_TASKS, 0, ("m-cut",))
    assert sorted(board["run_id"][~board["is_complete"]]) == list(incomplete)  # the SQL form says the same


def test_a_log_that_holds_fewer_samples_than_it_counts_is_incomplete_everywhere(cut_db: Path) -> None:
    con = duckdb.connect(str(cut_db), read_only=True)
    try:
        board = runs.load_runs(con, RunFilter(benchmark="short"))  # the Leaderboard's rule
        pairs = rd.run_pairs(con, benchmark="short")
        _, _, _, incomplete = raw_scores_and_left_out(con, benchmark="short")
    finally:
        con.close()
    assert sorted(board["run_id"][~board["is_complete"]]) == ["k-short"]
    assert sorted(pairs["run_id"][~pairs["is_complete"]]) == ["k-short"]
    assert incomplete == ("k-short",)
    assert _load(cut_db, benchmark="short").incomplete == ("k-short (success, 20 of 24 samples)",)


def _plain(markdown: str) -> str:
    """A caption's text without the escapes ``ui.common.plain`` adds."""
    return markdown.replace("\\", "")


def test_the_pages_say_which_incomplete_run_they_left_out(cut_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNLENS_AUTO_FIT", "0")
    at = open_page("views/tmf.py", cut_db, monkeypatch, benchmark="cut")
    assert any(
        "1 incomplete run not shown, as on the Leaderboard: m-cut (cancelled)" in _plain(c.value) for c in at.caption
    )
    assert "m-cut" not in at.dataframe[0].value.to_string()
    assert at.checkbox(key="tmf_incomplete").value is False
    at = at.checkbox(key="tmf_incomplete").check().run()
    assert any("1 incomplete run shown as points, as asked" in _plain(c.value) for c in at.caption)
    assert "m-cut" in at.dataframe[0].value.to_string()
    at = open_page("views/diff.py", cut_db, monkeypatch, benchmark="cut", baseline="m-cut", candidate="m-full")
    assert any("A m-cut is incomplete (cancelled)" in _plain(w.value) for w in at.warning)
    at = open_page("views/progress.py", cut_db, monkeypatch, benchmark="cut")
    assert any(
        "1 incomplete run (an unfinished log" in _plain(c.value) and "m-cut" in _plain(c.value) for c in at.caption
    )
