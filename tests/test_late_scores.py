"""Scores given after the run: ``python -m ingest scores FILE.csv`` and the receiver's ``POST /v1/scores``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from ingest.__main__ import main as ingest_main
from ingest.pipeline import ingest_paths
from tests.adapter_helpers import rows
from tests.test_adapter_otlp import _line, _unscored
from tests.test_otlp_receiver import TOKEN, Receiver, _free_port, _oi_span, _request, _snapshot, _span

TRACES = [format(i + 1, "032x") for i in range(3)]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Three score-less traces (the last crashed), ingested from a file: stored unscored."""
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(_line(_unscored(t, format(i + 1, "016x"), crashed=i == 2)) for i, t in enumerate(TRACES)))
    out = tmp_path / "db.duckdb"
    [result] = ingest_paths([path], db=out)
    assert result.outcome == "ingested", result.error
    return out


def _scores(db: Path) -> list[tuple[Any, ...]]:
    return rows(
        db,
        "SELECT task_id, score, passed, json_extract_string(extra, '$.late_score.source') FROM attempts ORDER BY task_id",
    )


def test_a_scores_csv_sets_scores_by_trace_id_or_by_run_task_and_sample(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _scores(db) == [(t, None, None, None) for t in TRACES]
    csv_path = tmp_path / "late.csv"
    csv_path.write_text(
        "trace_id,run_id,task_id,sample,score,helpfulness,note\n"
        f"{TRACES[0].upper()},,,,1,0.75,great\n"  # trace ids in any case
        f",otel,{TRACES[1]},0,0.25,,\n"
        f"{TRACES[2]},,,,0,,crashed\n"
    )
    assert ingest_main(["scores", str(csv_path), "--db", str(db)]) == 0
    assert "3 row(s): 3 attempt(s) scored" in capsys.readouterr().err
    source = "file late.csv"
    assert _scores(db) == [
        (TRACES[0], 1.0, True, source),
        (TRACES[1], 0.25, False, source),  # continuous: passed at 0.5
        (TRACES[2], 0.0, False, source),
    ]
    assert rows(db, "SELECT name, value FROM attempt_metrics") == [("helpfulness", 0.75)]  # "note" is text
    assert ingest_main(["scores", str(csv_path), "--db", str(db)]) == 0  # applied twice: the same scores
    assert _scores(db)[0] == (TRACES[0], 1.0, True, source)
    assert rows(db, "SELECT count(*) FROM attempt_metrics") == [(1,)]

    from analytics.doctor import check
    from store import reader

    with reader(db) as con:
        report = check(con, str(db), rehash_sources=False)
    assert report.ok, report.problems  # the files' recorded digests follow the new scores


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ("trace_id,score\n" + "f" * 32 + ",1\n", ":2: trace_id:", "no stored attempt for trace"),
        (f"trace_id,score\n{TRACES[0]},1\n{TRACES[1]},7\n", ":3: score:", "outside [0, 1]"),
        (f"trace_id,passed\n{TRACES[0]},maybe\n", ":2: passed:", "is not true/false"),
        ("trace_id,label\nx,y\n", ":1: -:", "needs trace_id (or run_id, task_id and sample) and score"),
        ("run_id,task_id,sample,score\notel,t,x,1\n", ":2: sample:", "is not a sample number"),
    ],
)
def test_a_bad_row_writes_nothing(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, where: str, reason: str
) -> None:
    csv_path = tmp_path / "bad.csv"
    csv_path.write_text(text)
    assert ingest_main(["scores", str(csv_path), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"{csv_path}{where}" in err and reason in err, err
    assert _scores(db) == [(t, None, None, None) for t in TRACES]


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    folder = tmp_path_factory.mktemp("scores")
    running = Receiver(folder / "s.duckdb", _free_port(), folder / "s.log")
    yield running
    running.proc.kill()
    running.proc.wait()


def test_the_receiver_takes_scores_with_its_token(receiver: Receiver) -> None:
    trace = "9cf7651916cd43dd8448eb211c80319c"
    assert receiver.post(_request(_span(trace, "00000000000000a0", score=None))).status_code == 200
    sql = "SELECT score, passed FROM attempts WHERE json_extract_string(extra, '$.trace_id') = ?"
    deadline = time.monotonic() + 30
    while not _snapshot(receiver.db, sql, [trace]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _snapshot(receiver.db, sql, [trace]) == [(None, None)]  # stored unscored
    url = receiver.url.replace("/v1/traces", "/v1/scores")
    body = json.dumps({"scores": [{"trace_id": trace, "score": 0.9, "judge_agreement": 1}]})
    headers = {"Content-Type": "application/json"}
    assert requests.post(url, data=body, headers=headers, timeout=10).status_code == 401
    wrong = requests.post(
        url,
        data=json.dumps({"scores": [{"trace_id": "e" * 32, "score": 1}]}),
        timeout=10,
        headers={**headers, "Authorization": f"Bearer {TOKEN}"},
    )
    assert wrong.status_code == 400 and "no stored attempt for trace" in wrong.json()["problems"][0]
    done = requests.post(url, data=body, headers={**headers, "Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert (done.status_code, done.json()) == (200, {"rows": 1, "attempts": 1})
    deadline = time.monotonic() + 30
    while _snapshot(receiver.db, sql, [trace]) != [(0.9, True)] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _snapshot(receiver.db, sql, [trace]) == [(0.9, True)]
    # more of the trace arrives after its late score: the attempt is rebuilt, and keeps the score and its metric
    late_llm = _oi_span(trace, "00000000000000a7", "00000000000000a0", "LLM", 3, **{"llm.token_count.prompt": 5})
    assert receiver.post(_request(late_llm)).status_code == 200
    merged = (
        "SELECT score, passed, n_steps, (SELECT value FROM attempt_metrics m WHERE m.attempt_id = a.attempt_id "
        "AND name = 'judge_agreement') FROM attempts a WHERE json_extract_string(extra, '$.trace_id') = ?"
    )
    deadline = time.monotonic() + 30
    while _snapshot(receiver.db, merged, [trace]) != [(0.9, True, 1, 1.0)] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _snapshot(receiver.db, merged, [trace]) == [(0.9, True, 1, 1.0)], receiver.log()
    csv_body = f"trace_id,passed\n{trace},false\n"
    done = requests.post(
        url, data=csv_body, headers={"Content-Type": "text/csv", "Authorization": f"Bearer {TOKEN}"}, timeout=10
    )
    assert done.status_code == 200
