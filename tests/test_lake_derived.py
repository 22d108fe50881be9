"""Derived data on the team store: a human review, rule findings, a judge's verdicts and labels, an IRT fit and
embeddings are written through the one writer into a lake exactly as into the single-file store."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import store as rdb
from analytics import doctor, irt, llm
from analytics.judge import Outcome
from ingest.pipeline import ingest_paths
from jobs.failures import store_vectors
from jobs.irt import fit_and_store
from jobs.judge import store_outcomes
from jobs.reviews import record_review
from jobs.rules import refresh_rules
from tests.conftest import FIXTURES

TABLES = ("reviews", "error_labels", "judge_verdicts", "irt_fits", "irt_abilities", "irt_items", "embeddings")


def _derive(db: str | Path) -> dict[str, list[tuple[object, ...]]]:
    """Write one of each kind of derived data into ``db``; return the rows each table holds (ids left out)."""
    assert [r.outcome for r in ingest_paths([FIXTURES / "good.jsonl"], db=db)] == ["ingested"]
    with rdb.reader(db) as con:
        first, second = (
            r[0] for r in con.execute("SELECT attempt_id FROM attempts ORDER BY attempt_id LIMIT 2").fetchall()
        )
    assert record_review(db, attempt_id=first, reviewer="ann", verdict="incorrect", note="wrong unit") == 1
    assert record_review(db, attempt_id=second, reviewer="bob", verdict="correct") == 2
    refresh_rules(db, force=True)
    cfg = llm.LLMConfig(base_url="http://127.0.0.1:1", api_key="-", model="judge-m")
    settings = irt.IrtSettings(model="1pl", epochs=40, n_boot=0)
    with rdb.writer(db) as con:
        store_outcomes(
            con,
            [
                Outcome(first, verdict={"result_correct": False}, labels=[("HAL", "made up")]),
                Outcome(second, failure="timeout"),
            ],
            prompt_version="v1",
            cfg=cfg,
        )
        fit_and_store(con, benchmark="mini-bench", settings=settings)
        store_vectors(con, ["a failure", "another"], np.array([[0.1, 0.2], [0.3, 0.4]], dtype=np.float32), model="emb")
    out = {}
    with rdb.reader(db) as con:
        for table in TABLES:
            cols = [c for (c,) in con.execute(f"SELECT column_name FROM (DESCRIBE {table})").fetchall()]
            keep = [c for c in cols if c not in ("created_at", "seconds", "extra", "fit_key")]  # timings differ
            out[table] = sorted(map(tuple, con.execute(f"SELECT {', '.join(keep)} FROM {table}").fetchall()), key=repr)
    return out


def test_every_kind_of_derived_data_is_stored_alike_on_a_lake(lake: str, tmp_db: Path) -> None:
    on_lake, on_file = _derive(lake), _derive(tmp_db)
    for table in TABLES:
        assert on_file[table], f"{table}: nothing written, nothing compared"
        assert on_lake[table] == on_file[table], table
    with rdb.writer(lake) as con:
        assert doctor.check(con, lake, rehash_sources=False).ok
