"""lm-evaluation-harness output written by lm-eval's own evaluator and writer (tests/fixtures/lm_eval/make_fixtures.py):
runs per model and group, repeated evaluations as samples, accuracy equal to its results_*.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from analytics.runs import run_health
from ingest.pipeline import ingest_paths
from store import RunFilter
from tests.adapter_helpers import counts, rows

OUTPUT = Path(__file__).resolve().parent / "fixtures" / "lm_eval" / "output"
RESULTS = sorted(OUTPUT.glob("*/results_*.json"))


@pytest.fixture(scope="module")
def lm_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("lm_eval") / "db.duckdb"
    results = ingest_paths([OUTPUT], db=db)
    assert {r.outcome for r in results} <= {"ingested", "duplicate"}, [str(r.error) for r in results if r.error]
    assert {r.format for r in results if r.path.endswith(".json")} == {"lm-eval"}
    return db


def _evaluations() -> list[tuple[str, int, dict]]:
    """(model, sample, results doc) per results file: a model's evaluations numbered in date order."""
    out = []
    for folder in sorted({p.parent for p in RESULTS}):
        for sample, path in enumerate(sorted(folder.glob("results_*.json"))):
            doc = json.loads(path.read_text())
            out.append((doc["model_name"], sample, doc))
    return out


def test_one_run_per_model_and_group(lm_db: Path) -> None:
    models = sorted({m for m, _, _ in _evaluations()})
    assert rows(lm_db, "SELECT run_id, benchmark, agent, kind FROM runs ORDER BY run_id") == [
        (f"tiny:{m}", "tiny", m, "llm") for m in models
    ]
    n_docs = sum(len(Path(p).read_text().splitlines()) for p in OUTPUT.glob("acme__tiny-lm-v2/samples_tiny_mc_*"))
    assert rows(lm_db, "SELECT count(*) FROM tasks WHERE category = 'tiny_mc'") == [(n_docs,)]


@pytest.mark.parametrize(("task", "key"), [("tiny_mc", "acc,none"), ("tiny_gen", "exact_match,first")])
def test_mean_score_equals_the_results_file(lm_db: Path, task: str, key: str) -> None:
    for model, sample, doc in _evaluations():
        got = rows(
            lm_db,
            "SELECT avg(a.score), count(*) FROM attempts a JOIN tasks t ON t.task_id = a.task_id "
            "WHERE a.run_id = ? AND a.sample = ? AND t.category = ?",
            [f"tiny:{model}", sample, task],
        )
        assert got[0][0] == pytest.approx(doc["results"][task][key])
        assert got[0][1] == doc["n-samples"][task]["effective"]


@pytest.mark.parametrize(("task", "key"), [("tiny_mc", "acc_norm,none"), ("tiny_gen", "exact_match,majority")])
def test_other_metrics_and_filters_are_attempt_metrics(lm_db: Path, task: str, key: str) -> None:
    for model, sample, doc in _evaluations():
        got = rows(
            lm_db,
            "SELECT avg(m.value) FROM attempt_metrics m JOIN attempts a USING (attempt_id) "
            "WHERE a.run_id = ? AND a.sample = ? AND m.name = ? AND a.task_id LIKE ?",
            [f"tiny:{model}", sample, key, f"{task}/%"],
        )
        assert got[0][0] == pytest.approx(doc["results"][task][key])


def test_repeated_evaluations_are_samples_and_repeats_are_steps(lm_db: Path) -> None:
    samples = rows(lm_db, "SELECT run_id, sample, count(*) FROM attempts GROUP BY ALL ORDER BY ALL")
    per_model = {}
    for model, sample, _ in _evaluations():
        per_model.setdefault(f"tiny:{model}", []).append(sample)
    assert {(r, s) for r, s, _ in samples} == {(r, s) for r, ss in per_model.items() for s in ss}
    line = json.loads(next(OUTPUT.glob("acme__tiny-lm-v1/samples_tiny_gen_*")).read_text().splitlines()[2])
    got = rows(
        lm_db,
        "SELECT s.kind, s.content FROM steps s JOIN attempts a USING (attempt_id) "
        "WHERE a.run_id = 'tiny:acme/tiny-lm-v1' AND a.sample = 0 AND a.task_id = ? ORDER BY s.step",
        [f"tiny_gen/{line['doc_id']}"],
    )
    assert got == [("generation", text) for text in line["resps"][0]]
    [(answer,)] = rows(
        lm_db,
        "SELECT answer FROM attempts WHERE run_id = 'tiny:acme/tiny-lm-v1' AND sample = 0 AND task_id = ?",
        [f"tiny_gen/{line['doc_id']}"],
    )
    assert answer == line["filtered_resps"][0]


def test_scorer_picks_metric_and_filter(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    shutil.copytree(OUTPUT / "acme__tiny-lm-v2", folder)
    db = tmp_path / "db.duckdb"
    [result] = ingest_paths(list(folder.glob("results_*.json")), db=db, scorer="exact_match,majority")
    assert result.outcome == "ingested", result.error
    doc = json.loads(next(folder.glob("results_*.json")).read_text())
    got = dict(rows(db, "SELECT split_part(task_id, '/', 1), avg(score) FROM attempts GROUP BY 1"))
    assert got["tiny_gen"] == pytest.approx(doc["results"]["tiny_gen"]["exact_match,majority"])
    assert got["tiny_mc"] == pytest.approx(doc["results"]["tiny_mc"]["acc,none"])  # no exact_match: its default
    [bad] = ingest_paths(list(folder.glob("results_*.json")), db=tmp_path / "other.duckdb", scorer="bleu")
    assert bad.outcome == "failed" and "--scorer: 'bleu' is no task's metric" in str(bad.error)


def test_missing_samples_file_names_it_and_writes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    shutil.copytree(OUTPUT / "acme__tiny-lm-v2", folder)
    next(folder.glob("samples_tiny_gen_*")).unlink()
    results_file = next(folder.glob("results_*.json"))
    db = tmp_path / "db.duckdb"
    [result] = ingest_paths([results_file], db=db)
    assert result.outcome == "failed"
    assert f"{results_file}:1: samples: samples_tiny_gen_" in str(result.error)
    assert counts(db)["attempts"] == 0 and counts(db)["runs"] == 0


def test_bad_samples_line_is_located(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    shutil.copytree(OUTPUT / "acme__tiny-lm-v2", folder)
    samples = next(folder.glob("samples_tiny_mc_*"))
    lines = samples.read_text().splitlines()
    lines[3] = lines[3][:40]
    samples.write_text("\n".join(lines) + "\n")
    [result] = ingest_paths(list(folder.glob("results_*.json")), db=tmp_path / "db.duckdb")
    assert result.outcome == "failed" and f"{samples}:4: -: invalid JSON" in str(result.error)


def test_reingest_adds_nothing(lm_db: Path) -> None:
    before = counts(lm_db)["attempts"]
    results = ingest_paths(RESULTS, db=lm_db)
    assert {r.outcome for r in results} == {"duplicate"}
    assert counts(lm_db)["attempts"] == before


def test_named_agent_numbers_files_of_different_model_names_as_samples(tmp_path: Path) -> None:
    """``--agent X`` over two results files whose ``model_name`` differ (a renamed checkpoint): one run of X, the
    second file its next sample (not a duplicate of the first), each sample's accuracy that of its own file."""
    folder = tmp_path / "out"
    folder.mkdir()
    for model_dir in ("acme__tiny-lm-v1", "acme__tiny-lm-v2"):
        first = sorted((OUTPUT / model_dir).glob("results_*.json"))[0]
        for path in (OUTPUT / model_dir).glob(f"*{first.stem.rsplit('_', 1)[-1]}*"):
            shutil.copy(path, folder / path.name)
    results = sorted(folder.glob("results_*.json"))
    docs = [json.loads(p.read_text()) for p in results]
    assert len({d["model_name"] for d in docs}) == 2
    db = tmp_path / "db.duckdb"
    out = ingest_paths(results, db=db, agent="X")
    assert [r.outcome for r in out] == ["ingested", "ingested"], [str(r.error) for r in out]
    assert rows(db, "SELECT DISTINCT run_id, agent FROM runs") == [("tiny:X", "X")]
    got = dict(rows(db, "SELECT sample, avg(score) FROM attempts WHERE task_id LIKE 'tiny_mc/%' GROUP BY 1 ORDER BY 1"))
    assert got == pytest.approx({i: d["results"]["tiny_mc"]["acc,none"] for i, d in enumerate(docs)})
    assert [r.outcome for r in ingest_paths(results, db=db, agent="X")] == ["duplicate", "duplicate"]


def test_every_metric_and_filter_is_a_scorer_of_the_reports(lm_db: Path) -> None:
    """Each metric x filter of a document is a scores row (the score's own flagged headline); the leaderboard ranks
    by one with ``scorer=`` and its mean per task equals the results file."""
    import duckdb

    from analytics import leaderboard as lb

    evaluations = _evaluations()
    model, _, doc = next(e for e in evaluations if [m for m, _, _ in evaluations].count(e[0]) == 1)  # evaluated once
    assert rows(lm_db, "SELECT count(*) FROM attempts a ANTI JOIN scores s USING (attempt_id)") == [(0,)]
    assert rows(lm_db, "SELECT count(*) FROM scores WHERE is_headline") == rows(lm_db, "SELECT count(*) FROM attempts")
    con = duckdb.connect(str(lm_db), read_only=True)
    try:
        board = lb.leaderboard(con, RunFilter(benchmark="tiny"), scorer="acc_norm,none", slices=("category",))
    finally:
        con.close()
    row = board[(board["run_id"] == f"tiny:{model}") & (board["slice"] == "category=tiny_mc")].iloc[0]
    assert row["mean_score"] == pytest.approx(doc["results"]["tiny_mc"]["acc_norm,none"])


def test_a_limited_evaluation_is_a_run_of_its_own_never_complete(tmp_path: Path) -> None:
    """``lm_eval --limit 2`` (lm-eval: "should only be used for testing") before the full evaluation of the same model:
    its results file says so (``config.limit``, ``n-samples`` effective < original; written here from lm-eval's own
    full output as its evaluator writes a limited one: lm-eval is not installed with the tests). It must not become
    the full run's sample 0, and the run it makes is ``limited``, 4 of 10 documents, not complete, never ranked."""
    folder = tmp_path / "acme__tiny-lm-v2"
    shutil.copytree(OUTPUT / "acme__tiny-lm-v2", folder)
    full = next(folder.glob("results_*.json"))
    doc = json.loads(full.read_text())
    early = "2026-11-23T20-00-00.000000"
    doc["config"]["limit"] = 2.0
    doc["n-samples"] = {t: {"original": n["original"], "effective": 2} for t, n in doc["n-samples"].items()}
    (folder / f"results_{early}.json").write_text(json.dumps(doc))
    for samples in folder.glob(f"samples_*_{full.stem.rsplit('_', 1)[-1]}.jsonl"):
        task = samples.name.removeprefix("samples_").rsplit("_", 1)[0]
        kept = [line for line in samples.read_text().splitlines() if json.loads(line)["doc_id"] < 2]
        (folder / f"samples_{task}_{early}.jsonl").write_text("\n".join(kept) + "\n")
    db = tmp_path / "db.duckdb"
    out = ingest_paths([folder], db=db)
    assert {r.outcome for r in out if r.path.endswith(".json")} == {"ingested"}, [str(r.error) for r in out]
    got = rows(
        db,
        "SELECT run_id, status, json_extract(extra, '$.completed_samples')::INT, "
        "json_extract(extra, '$.total_samples')::INT, (SELECT count(*) FROM attempts a WHERE a.run_id = r.run_id), "
        "(SELECT max(sample) FROM attempts a WHERE a.run_id = r.run_id) FROM runs r ORDER BY 1",
    )
    assert got == [
        ("tiny:acme/tiny-lm-v2", None, None, None, 10, 0),
        ("tiny:acme/tiny-lm-v2:limit=2.0", "limited", 4, 10, 4, 0),
    ]
    con = duckdb.connect(str(db), read_only=True)
    try:
        health = run_health(con, benchmark="tiny").set_index("run_id")["is_complete"].to_dict()
    finally:
        con.close()
    assert health == {"tiny:acme/tiny-lm-v2": True, "tiny:acme/tiny-lm-v2:limit=2.0": False}
