"""The Inspect variants real pipelines meet, written by inspect-ai itself and compared with Inspect's own reading.

tests/inspect_real/variants.py runs once per session in the test-only virtualenv (``.venv-inspect``) and writes: a
task with four scorers (C/I, a 0-10 rating, yes/no, a dict score) and epoch reducers mode/median/max, with sample
metadata, a store, cache and reasoning tokens and task args; a log written with ``score=False`` and the same log
after ``inspect score``; an interrupted ``.eval`` beside a complete run of its task; an eval set whose task was
retried, with the errored log as it was before the retry. ``variants.json`` is what ``read_eval_log``,
``evals_df`` and Inspect's ``value_to_float`` say about each log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ingest.outcome_text import describe
from ingest.pipeline import ingest_paths
from store import RunFilter
from tests.adapter_helpers import rows
from tests.apptest import open_page
from tests.test_inspect_real import INSPECT_PYTHON, ROOT


@pytest.fixture(scope="session")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Inspect's reference for every variant (logs under its ``path``s)."""
    if not INSPECT_PYTHON.exists():
        pytest.fail(f"{INSPECT_PYTHON} not found: `bash run.sh test` installs requirements-inspect.txt there")
    out = tmp_path_factory.mktemp("inspect_variants") / "logs"
    proc = subprocess.run(
        [str(INSPECT_PYTHON), str(ROOT / "tests" / "inspect_real" / "variants.py"), str(out)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads((out / "variants.json").read_text()))


def _cli(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RUNLENS_DB": str(db)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, check=False, timeout=300)


def _run_id(ref: dict[str, Any]) -> str:
    return f"{ref['task']}-{ref['eval_id']}"


@pytest.fixture(scope="module")
def scored_db(variants: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("variants_db") / "v.duckdb"
    res = ingest_paths([variants["scorers"]["path"]], db=db)
    assert res[0].outcome == "ingested", res[0].error
    return db


def test_every_score_value_as_inspects_value_to_float(variants: dict[str, Any], scored_db: Path) -> None:
    """C/I, a 0-10 rating (kept raw, never clipped), yes/no and each key of a dict score: one score each, with
    Inspect's own value_to_float of it and the value as written."""
    ref = variants["scorers"]
    got = rows(
        scored_db,
        "SELECT a.task_id, a.sample, s.scorer, s.value, CAST(s.raw_value AS VARCHAR) FROM scores s "
        "JOIN attempts a USING (attempt_id) WHERE a.run_id = ? AND s.is_current",
        [_run_id(ref)],
    )
    mine = {(t, n + 1, scorer): (value, json.loads(raw)) for t, n, scorer, value, raw in got}
    expected = {}
    for sample in ref["samples"]:
        for name, value in sample["floats"].items():
            scorer, _, key = name.partition("/")
            raw = sample["scores"][scorer][key] if key else sample["scores"][scorer]
            expected[(sample["id"], sample["epoch"], name)] = (value, raw)
    assert mine == expected
    assert max(v for (_, _, n), (v, _) in mine.items() if n == "rating") > 1  # on its own scale
    assert {n for (_, _, n) in mine} == {"includes", "rating", "yesno", "multi/fluency", "multi/correct"}


def test_reducers_over_stored_values_give_inspects_metrics(variants: dict[str, Any], scored_db: Path) -> None:
    """Inspect's max and median reducers over the epochs of each sample, then its mean metric, from the stored
    values: the same numbers as the log's results (so the values are on Inspect's scale)."""
    ref = variants["scorers"]
    metrics = {(m["name"], m["reducer"]): m["metrics"] for m in ref["metrics"]}
    for scorer, metric in (("rating", "mean"), ("includes", "accuracy"), ("yesno", "accuracy")):
        for reducer, agg in (("max", "max"), ("median", "median")):
            got = rows(
                scored_db,
                f"SELECT avg(v) FROM (SELECT a.task_id, {agg}(s.value) AS v FROM scores s "  # agg from a fixed pair
                "JOIN attempts a USING (attempt_id) WHERE a.run_id = ? AND s.scorer = ? GROUP BY 1)",
                [_run_id(ref), scorer],
            )[0][0]
            assert got == pytest.approx(metrics[(scorer, reducer)][metric]), (scorer, reducer)


def test_leaderboard_by_scorer_and_inspects_metrics(variants: dict[str, Any], scored_db: Path) -> None:
    ref = variants["scorers"]
    out = _cli("-m", "analytics", "leaderboard", "--benchmark", "scorers", "--scorer", "rating", "--json", db=scored_db)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    row = next(r for r in rep["rows"] if r["slice"] == "all")
    ratings = [s["floats"]["rating"] for s in ref["samples"]]
    assert rep["scorer"] == "rating" and rep["scale"] == "raw"
    assert row["mean_score"] == pytest.approx(sum(ratings) / len(ratings))  # raw mean, as Inspect's mean
    assert row["pass_at"] == {"1": None, "2": None}  # no pass rate on a 0-10 scale
    own = {f"{m['reducer']}/{k}": v for m in ref["metrics"] if m["name"] == "rating" for k, v in m["metrics"].items()}
    assert row["inspect_metrics"] == pytest.approx(own)
    text = _cli("-m", "analytics", "leaderboard", "--benchmark", "scorers", "--scorer", "rating", db=scored_db)
    assert "scorer rating (raw scale" in text.stdout
    by_key = _cli(
        "-m", "analytics", "leaderboard", "--benchmark", "scorers", "--scorer", "correct", "--json", db=scored_db
    )
    assert json.loads(by_key.stdout)["scorer"] == "multi/correct"
    bad = _cli("-m", "analytics", "leaderboard", "--benchmark", "scorers", "--scorer", "nonexistent", db=scored_db)
    assert bad.returncode == 2
    assert "unknown scorer 'nonexistent'" in bad.stderr
    assert "includes, multi/correct, multi/fluency, rating, yesno" in bad.stderr


def test_ingest_scorer_choice_and_unknown_scorer(variants: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = variants["scorers"]["path"]
    bad = _cli("-m", "ingest", "--scorer", "nonexistent", path, db=db)
    said = bad.stdout + bad.stderr
    assert bad.returncode != 0 and "unknown scorer 'nonexistent'; this log has 'includes', 'rating'" in said
    res = ingest_paths([path], db=db, scorer="yesno")
    assert res[0].outcome == "ingested", res[0].error
    headline = rows(db, "SELECT DISTINCT scorer FROM scores WHERE is_headline")
    assert headline == [("yesno",)]
    yes = {(s["id"], s["epoch"] - 1): s["floats"]["yesno"] for s in variants["scorers"]["samples"]}
    assert dict(((t, n), v) for t, n, v in rows(db, "SELECT task_id, sample, score FROM attempts")) == yes
    out = _cli("-m", "analytics", "leaderboard", "--benchmark", "scorers", "--json", db=db)
    own = {
        f"{m['reducer']}/{k}": v
        for m in variants["scorers"]["metrics"]
        if m["name"] == "yesno"
        for k, v in m["metrics"].items()
    }
    assert json.loads(out.stdout)["rows"][0]["inspect_metrics"] == pytest.approx(own)  # the headline's, by default


def test_metadata_store_task_args_and_token_details_kept(variants: dict[str, Any], scored_db: Path) -> None:
    ref = variants["scorers"]
    for sample in ref["samples"]:
        extra = json.loads(
            rows(
                scored_db,
                "SELECT CAST(extra AS VARCHAR) FROM attempts WHERE run_id = ? AND task_id = ? AND sample = ?",
                [_run_id(ref), sample["id"], sample["epoch"] - 1],
            )[0][0]
        )["inspect_extra"]
        assert extra["metadata"] == sample["metadata"] and extra["store"] == sample["store"]
        usage = sample["usage"]["mockllm/model"]
        assert extra["token_details"] == {
            k: usage[k] for k in ("input_tokens_cache_read", "reasoning_tokens") if k in usage
        }
    run_extra = json.loads(rows(scored_db, "SELECT CAST(extra AS VARCHAR) FROM runs")[0][0])
    assert run_extra["task_args"] == ref["task_args"] == {"colour": "blue"}


def test_rescored_log_is_a_new_revision(variants: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    unscored, rescored = variants["unscored"], variants["rescored"]
    assert unscored["eval_id"] == rescored["eval_id"]  # `inspect score` keeps the eval
    first = ingest_paths([unscored["path"]], db=db)
    assert first[0].outcome == "ingested" and rows(db, "SELECT count(score) FROM attempts") == [(0,)]
    second = ingest_paths([rescored["path"]], db=db)
    assert second[0].outcome == "ingested", second[0].error
    assert second[0].rescored_runs == (_run_id(rescored),) and second[0].n_rescored == 3
    assert "re-scored run" in describe(second[0]) and "kept in history" in describe(second[0])
    expected = {s["id"]: s["floats"]["includes"] for s in rescored["samples"]}
    assert dict(rows(db, "SELECT task_id, score FROM attempts")) == expected
    assert rows(db, "SELECT revision, n_attempts, previous_status FROM score_revisions") == [(2, 3, "success")]
    assert rows(db, "SELECT DISTINCT revision, is_current FROM scores") == [(2, True)]
    again = ingest_paths([unscored["path"], rescored["path"]], db=db)
    assert [r.outcome for r in again] == ["duplicate", "duplicate"]
    doctor = _cli("-m", "analytics", "doctor", db=db)
    assert doctor.returncode == 0, doctor.stdout[-2000:]


def test_rescoring_with_partial_credit_widens_the_benchmark(variants: dict[str, Any], tmp_path: Path) -> None:
    """The unscored original looked binary; re-scored with C/P/I (Inspect's own scoring) it is a revision with
    0.5 for P, and the benchmark becomes continuous rather than the file being refused."""
    db = tmp_path / "p.duckdb"
    partial = variants["partial"]
    assert sorted(s["scores"]["partial_credit"] for s in partial["samples"]) == ["C", "I", "P"]
    res = ingest_paths([variants["unscored"]["path"], partial["path"]], db=db)
    assert [r.outcome for r in res] == ["ingested", "ingested"], [str(r.error) for r in res]
    assert res[1].n_rescored == 3
    expected = {s["id"]: s["floats"]["partial_credit"] for s in partial["samples"]}
    assert dict(rows(db, "SELECT task_id, score FROM attempts")) == expected
    assert rows(db, "SELECT scoring, pass_threshold FROM benchmarks") == [("continuous", 0.5)]


def test_interrupted_log_is_started_and_never_leads(variants: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "i.duckdb"
    interrupted, complete = variants["interrupted"], variants["complete"]
    assert interrupted["status"] == "started" and interrupted["n_samples"] == 2
    res = ingest_paths([interrupted["path"], complete["path"]], db=db)
    assert [r.outcome for r in res] == ["ingested", "ingested"], [str(r.error) for r in res]
    out = _cli("-m", "analytics", "leaderboard", "--benchmark", "interrupted", "--json", db=db)
    rep = json.loads(out.stdout)
    rows_ = {r["run_id"]: r for r in rep["rows"] if r["slice"] == "all"}
    cut = rows_[_run_id(interrupted)]
    assert (cut["is_complete"], cut["log_status"], cut["completed"], cut["total"]) == (
        False,
        "started",
        2,
        interrupted["dataset_samples"] * interrupted["epochs"],
    )
    assert cut["rank"] is None and cut["pass_at"]["1"] == 1.0  # 2 of 2 right, yet not ranked
    whole = rows_[_run_id(complete)]
    assert whole["is_complete"] and whole["is_leader"] and whole["pass_at"]["1"] == 0.0
    text = _cli("-m", "analytics", "leaderboard", "--benchmark", "interrupted", db=db).stdout
    assert "incomplete run (started, 2 of 6 samples)" in text
    alone = tmp_path / "alone.duckdb"  # the interrupted run on its own: no leader, unless asked for
    ingest_paths([interrupted["path"]], db=alone)
    for flags, expected in (((), None), (("--rank-incomplete",), 1)):
        out = _cli("-m", "analytics", "leaderboard", "--benchmark", "interrupted", "--json", *flags, db=alone)
        assert [r["rank"] for r in json.loads(out.stdout)["rows"] if r["slice"] == "all"] == [expected]


def test_eval_set_folder_ingests_and_a_retry_supersedes(variants: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "e.duckdb"
    evalset, errored = variants["evalset"], variants["errored"]
    assert {"logs.json", "eval-set.json"} <= set(evalset["files"]) and errored["status"] == "error"
    early = _cli("-m", "ingest", errored["path"], db=db)  # ingested while the set ran
    assert early.returncode == 0, early.stdout + early.stderr
    out = _cli("-m", "ingest", evalset["folder"], db=db)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "eval set's manifest: read as nothing" in out.stdout + out.stderr
    retry = next(r for r in evalset["logs"] if r["task"] == "flaky")
    assert retry["task_id"] == errored["task_id"] and retry["eval_id"] != errored["eval_id"]
    # the ingest line names the stored run the retry supersedes (store.retries, the leaderboard's rule)
    assert f"run {_run_id(retry)}: retry of run {_run_id(errored)} (flaky)" in out.stdout + out.stderr
    assert (out.stdout + out.stderr).count("retry of run") == 1  # the set's other task was not retried
    rep = json.loads(_cli("-m", "analytics", "leaderboard", "--benchmark", "flaky", "--json", db=db).stdout)
    assert [r["run_id"] for r in rep["rows"] if r["slice"] == "all"] == [_run_id(retry)]
    assert rows(db, "SELECT count(*) FROM runs WHERE benchmark = 'flaky'") == [(2,)]  # kept, not ranked
    import duckdb

    from analytics.runs import incomplete_table, run_health

    con = duckdb.connect(str(db), read_only=True)
    try:
        health = run_health(con, benchmark="flaky").set_index("run_id")
    finally:
        con.close()
    assert health.loc[_run_id(errored), "superseded_by"] == _run_id(retry)
    assert health.loc[_run_id(retry), "superseded_by"] is None
    shown = incomplete_table(health.reset_index())
    assert list(shown["Log status"]) == [f"error (superseded by {_run_id(retry)}: not ranked)"]


def test_leaderboard_page_picks_a_scorer_and_shows_inspects_metrics(
    variants: dict[str, Any], scored_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_page("views/leaderboard.py", scored_db, monkeypatch, benchmark="scorers")
    picker = at.selectbox(key="lb_scorer")
    assert picker.options == [
        "headline (each attempt's score)",
        "includes",
        "multi/correct",
        "multi/fluency",
        "rating",
        "yesno",
    ]
    picker.set_value("rating").run()
    assert not at.exception, [e.value for e in at.exception]
    ratings = [s["floats"]["rating"] for s in variants["scorers"]["samples"]]
    leader = next(m for m in at.metric if m.label.startswith("Leader"))
    assert leader.value.startswith(f"{sum(ratings) / len(ratings):.3g} mean score (rating, raw scale)")
    own = next(d.value for d in at.dataframe if "Max/mean" in d.value.columns)  # shown to 2 decimals
    assert float(own["Max/mean"].iloc[0]) == pytest.approx(
        next(
            m["metrics"]["mean"]
            for m in variants["scorers"]["metrics"]
            if m["name"] == "rating" and m["reducer"] == "max"
        ),
        abs=0.005,
    )


def test_upload_preview_says_a_log_rescores_a_run(variants: dict[str, Any], tmp_path: Path) -> None:
    import store
    from ingest.uploads import preview_file

    db = tmp_path / "u.duckdb"
    ingest_paths([variants["unscored"]["path"]], db=db)
    with store.reader(db) as con:
        preview = preview_file(con, Path(variants["rescored"]["path"]))
    assert preview.outcome == "ready" and preview.rescores == (_run_id(variants["rescored"]),) and preview.runs == ()
    ingest_paths([variants["errored"]["path"]], db=db)  # the eval set's retry, previewed: it retries that run
    retry = next(r for r in variants["evalset"]["logs"] if r["task"] == "flaky")
    with store.reader(db) as con:
        retried = preview_file(con, Path(retry["path"]))
    assert retried.retries == (f"run {_run_id(retry)}: retry of run {_run_id(variants['errored'])} (flaky)",)
    assert preview.retries == ()
    with store.reader(db) as con:
        for name in ("eval-set.json", "logs.json"):
            companion = preview_file(con, Path(variants["evalset"]["folder"]) / name)
            assert (companion.format, companion.outcome) == ("inspect", "companion"), companion


def test_rescoring_and_scorers_on_a_team_store(variants: dict[str, Any], lake: str) -> None:
    """The scores table, a re-scoring revision and the leaderboard by scorer on DuckLake, as on one DuckDB file."""
    import store
    from analytics import doctor
    from analytics import leaderboard as lb

    results = ingest_paths(
        [variants["unscored"]["path"], variants["rescored"]["path"], variants["scorers"]["path"]], db=lake
    )
    assert [r.outcome for r in results] == ["ingested"] * 3, [str(r.error) for r in results]
    assert results[1].rescored_runs == (_run_id(variants["rescored"]),)
    expected = {s["id"]: s["floats"]["includes"] for s in variants["rescored"]["samples"]}
    with store.reader(lake) as con:
        got = dict(
            store.query_rows(
                con, "SELECT task_id, score FROM attempts WHERE run_id = ?", [_run_id(variants["rescored"])]
            )
        )
        board = lb.leaderboard(con, RunFilter(benchmark="scorers"), scorer="rating")
    assert got == expected
    assert board["scale"].iloc[0] == "raw"
    with store.writer(lake) as con:
        report = doctor.check(con, lake)
    assert report.ok, report.problems


def test_unscored_original_after_its_rescored_log_is_refused(variants: dict[str, Any], tmp_path: Path) -> None:
    """Met in the other order, the unscored original would only empty the scores: refused, nothing written."""
    db = tmp_path / "o.duckdb"
    first = ingest_paths([variants["rescored"]["path"]], db=db)
    assert first[0].outcome == "ingested", first[0].error
    before = rows(db, "SELECT task_id, score FROM attempts ORDER BY 1")
    late = ingest_paths([variants["unscored"]["path"]], db=db)
    assert late[0].outcome == "failed" and "has no scores to revise it with" in str(late[0].error)
    assert rows(db, "SELECT task_id, score FROM attempts ORDER BY 1") == before
    assert rows(db, "SELECT count(*) FROM score_revisions") == [(0,)]


def test_cached_input_priced_as_inspect_prices_it(variants: dict[str, Any], tmp_path: Path) -> None:
    """Calls that read 800 and wrote 900 of their 1,000 input tokens from and to the prompt cache, logged without a
    cost: Runlens counts the whole input and prices the cached parts at the catalog's cache prices, which gives
    Inspect's own ``total_cost`` of the same calls (its ``compute_model_cost`` at the same prices), whether the log
    counts ``input_tokens`` without the cache (Anthropic, every provider since 0.3.184) or with it (OpenAI before)."""
    db = tmp_path / "c.duckdb"
    res = ingest_paths([variants[n]["path"] for n in ("cached", "cached_inclusive", "cached_priced")], db=db)
    assert [r.outcome for r in res] == ["ingested"] * 3, [r.error for r in res]
    own = {s["id"]: s["usage"]["mockllm/model"]["total_cost"] for s in variants["cached_priced"]["samples"]}
    assert own == pytest.approx({"c0": 0.00159, "c1": 0.004275})  # 200 x 3 + 800 x 0.3 + 50 x 15, per million
    for name, source in (("cached", "genai-prices"), ("cached_inclusive", "genai-prices"), ("cached_priced", None)):
        got = rows(
            db,
            "SELECT task_id, input_tokens, cost_usd, is_cost_computed, json_extract_string(extra, '$.cost_source') "
            "FROM attempts WHERE run_id = ? ORDER BY task_id",
            [_run_id(variants[name])],
        )
        assert [(t, n) for t, n, *_ in got] == [("c0", 1000), ("c1", 1000)], name
        assert {t: c for t, _, c, *_ in got} == pytest.approx(own), name
        assert all(computed == (source is not None) for *_, computed, _ in got), name
        assert all(src is None if source is None else source in src for *_, src in got), name
    steps = rows(
        db,
        "SELECT input_tokens, json_extract(extra, '$.cache_read_tokens')::INT, json_extract(extra, '$.cache_write_tokens')"
        "::INT FROM steps ORDER BY 2 NULLS LAST",
    )
    assert steps == [(1000, 800, None)] * 3 + [(1000, None, 900)] * 3


def test_a_new_catalog_does_not_make_a_stored_log_new_content(
    variants: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The idempotency hash leaves out the costs Runlens computed from the catalog (a new genai-prices would
    otherwise refuse every stored log as duplicate attempts), and keeps Inspect's own."""
    from ingest import inspect_usage
    from ingest.inspect_log import canonical_inspect

    def digests() -> list[bytes | None]:
        inspect_usage._catalog.cache_clear()
        out = []
        for name in ("cached", "cached_priced"):
            path = Path(variants[name]["path"])
            out.append(canonical_inspect(path, path.read_bytes(), {}))
        return out

    before = digests()
    monkeypatch.setattr(inspect_usage, "price_call", lambda *a, **k: None)  # no catalog price at all
    assert digests() == before
    inspect_usage._catalog.cache_clear()
