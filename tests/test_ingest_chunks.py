"""Large files are read, validated and handed to the writer in parts of bounded size (RUNLENS_INGEST_CHUNK_MB),
with the same rows, hashes, problems and locations as a file read whole. The parts here are a few KB (set through
the same setting as in production, ``ingest.pipeline.CHUNK_BYTES``) so that small files take many of them."""

from __future__ import annotations

from pathlib import Path

import duckdb
import orjson
import pyarrow as pa
import pytest

from bench.gen_logs import generate
from ingest import native, pipeline
from ingest.errors import ProblemCollector
from ingest.pipeline import ingest_paths
from ingest.records import Bundle
from tests.test_ingest_parallel import TABLES, lines, mixed_batch, outcomes

ALL_TABLES = {**TABLES, "ratings": "SELECT * FROM ratings ORDER BY ALL", "runs": "SELECT * FROM runs ORDER BY run_id"}


def snapshot(db: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {name: con.execute(sql).fetchall() for name, sql in ALL_TABLES.items()}


def rated_log(folder: Path) -> Path:
    """A log whose last lines rate attempts written several parts earlier, and repeat a long tool result."""
    folder.mkdir(parents=True, exist_ok=True)
    head = [
        {"record": "benchmark", "benchmark": "b", "scoring": "binary"},
        {"record": "task", "benchmark": "b", "task_id": "t1"},
        {"record": "run", "run_id": "rr", "benchmark": "b", "agent": "a"},
    ]
    attempts = [
        {
            "record": "attempt",
            "run_id": "rr",
            "task_id": "t1",
            "sample": i,
            "score": i % 2,
            "errors": ["TE"] if i % 2 == 0 else None,
            "metrics": {"m": float(i)},
            "steps": [{"tool": "search", "args": {"q": str(i)}, "result": "same long result " * 200}],
        }
        for i in range(40)
    ]
    ratings = [
        {
            "record": "rating",
            "run_id": "rr",
            "task_id": "t1",
            "sample": i,
            "rater": "judge",
            "dimension": "d",
            "value": i,
        }
        for i in (0, 1, 39)
    ]
    path = folder / "rated.jsonl"
    path.write_bytes(lines(*head, *attempts, *ratings))
    return path


def test_parts_give_the_same_database_and_outcomes_as_whole_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    files = [*mixed_batch(tmp_path / "logs"), rated_log(tmp_path / "logs" / "r")]
    whole = ingest_paths(files, db=tmp_path / "whole.duckdb", jobs=1)
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 16384)  # every generated file takes 15 to 18 parts, the rated log 8
    monkeypatch.setenv("RUNLENS_INGEST_CHUNK_MB", str(16384 / 1024**2))  # in the worker processes too
    assert max(f.stat().st_size for f in files) > 10 * 16384
    assert files[-1].stat().st_size > 4 * 16384  # the ratings come parts after the attempts they rate
    parts = ingest_paths(files, db=tmp_path / "parts.duckdb", jobs=1)
    in_workers = ingest_paths(files, db=tmp_path / "workers.duckdb", jobs=2)

    assert outcomes(parts) == outcomes(whole) == outcomes(in_workers)
    assert sum(r.outcome == "ingested" for r in parts) == 11
    expected = snapshot(tmp_path / "whole.duckdb")
    assert len(expected["ratings"]) == 3 and len(expected["texts"]) > 1
    assert snapshot(tmp_path / "parts.duckdb") == expected
    assert snapshot(tmp_path / "workers.duckdb") == expected
    assert list(private_tmp.iterdir()) == []  # every spilled part removed


def test_a_file_read_whole_and_the_same_in_parts_are_one_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    files = generate(tmp_path / "logs", n_attempts=200, n_runs=2, seed=5)
    db = tmp_path / "db.duckdb"
    ingest_paths(files[:1], db=db, jobs=1)
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 2048)
    again = ingest_paths(files, db=db, jobs=1)
    assert [r.outcome for r in again] == ["duplicate", "ingested"]


def test_problems_in_parts_are_those_of_the_whole_file_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    good = generate(tmp_path / "gen", n_attempts=120, n_runs=1, seed=2)[0].read_bytes().splitlines(keepends=True)
    bad = list(good)
    bad[5] = b"{not json\n"
    bad[60] = bad[60].replace(b'"score":', b'"score":7,"x":', 1)
    bad.append(b'{"record": "attempt", "run_id": "nope", "task_id": "t", "sample": 0}')  # last line, no newline
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(bad))
    whole = ingest_paths([path], db=tmp_path / "whole.duckdb", jobs=1)
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 1000)
    parts = ingest_paths([path], db=tmp_path / "parts.duckdb", jobs=1)
    assert parts[0].outcome == "failed"
    assert str(parts[0].error) == str(whole[0].error)
    text = str(parts[0].error)
    assert f"{path}:6: -: invalid JSON" in text and f"{path}:61: score:" in text and f"{path}:{len(bad)}: " in text
    with duckdb.connect(str(tmp_path / "parts.duckdb"), read_only=True) as con:
        assert con.execute("SELECT (SELECT count(*) FROM attempts) + (SELECT count(*) FROM runs)").fetchall() == [(0,)]
    assert list(private_tmp.iterdir()) == []


def test_a_line_over_the_record_limit_is_skipped_unread_in_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(native, "MAX_LINE_BYTES", 5000)
    short = orjson.dumps({"record": "benchmark", "benchmark": "b"}) + b"\n"
    path = tmp_path / "long.jsonl"
    path.write_bytes(short + b'{"record": "attempt", "x": "' + b"y" * 20_000 + b'"}\n' + short * 3)
    problems = ProblemCollector()
    records = [rec for part in native.parse_native_chunks(path, problems, None, 1024) for rec in part]
    assert [loc for loc, _ in records] == [f"{path}:1", f"{path}:3", f"{path}:4", f"{path}:5"]
    assert [(p.location, p.reason.split(" exceeds")[0]) for p in problems.problems] == [
        (f"{path}:2", "line of 20,030 bytes")
    ]
    whole = ProblemCollector()
    assert [loc for loc, _ in native.parse_native(path, path.read_bytes(), whole)] == [loc for loc, _ in records]
    assert whole.problems == problems.problems


def test_parts_read_in_place_give_the_lines_of_the_whole_file_at_every_block_size(tmp_path: Path) -> None:
    """The reader cuts each block at its last line end and reads its lines where they are, joining only the line a
    block left unfinished to the next block's start: at every block size from a byte to the whole file, the records,
    their ``file:line`` and the problems are those of the file read whole (blank and space-only lines, a line over
    several blocks, a bad line, no line end at the end of the file)."""
    attempt = {"record": "attempt", "run_id": "r", "task_id": "t", "steps": [{"tool": "x", "result": "z" * 90}]}
    body = b"\n".join(
        [
            orjson.dumps({"record": "benchmark", "benchmark": "b"}),
            b"",
            orjson.dumps(attempt),
            b"   ",
            b"{not json",
            orjson.dumps({**attempt, "task_id": "u"}),
            b"",
            b"",
            orjson.dumps({"record": "run", "run_id": "r"}),
        ]
    )
    path = tmp_path / "lines.jsonl"
    path.write_bytes(body)
    whole = ProblemCollector()
    expected = [(loc, rec.raw if hasattr(rec, "raw") else rec) for loc, rec in native.parse_native(path, body, whole)]
    assert len(expected) == 4 and [p.location for p in whole.problems] == [f"{path}:5"]
    for size in range(1, len(body) + 2):
        problems = ProblemCollector()
        got = [
            (loc, rec.raw if hasattr(rec, "raw") else rec)
            for part in native.parse_native_chunks(path, problems, None, size)
            for loc, rec in part
        ]
        assert got == expected, size
        assert problems.problems == whole.problems, size


def test_a_blank_large_file_is_refused_as_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 16)
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n" * 100)
    result = ingest_paths([path], db=tmp_path / "db.duckdb", jobs=1, fmt="native")[0]
    assert result.outcome == "failed" and "empty file" in str(result.error)


def test_a_full_disk_refuses_a_large_file_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    files = generate(tmp_path / "logs", n_attempts=100, n_runs=1, seed=4)
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 2048)

    def full(self: object, parent: str | None = None) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Bundle, "spill", full)
    [result] = ingest_paths(files, db=tmp_path / "db.duckdb", jobs=1)
    assert result.outcome == "failed"
    assert f"{files[0]}:1: -: cannot keep the validated parts of this large file on disk (No space left" in str(
        result.error
    )
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM attempts").fetchall() == [(0,)]


def test_a_spill_that_fails_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A part that cannot be written leaves the bundle as it was: earlier parts on disk, these rows in memory."""
    from ingest.records import Known, Normaliser

    log = generate(tmp_path / "logs", n_attempts=60, n_runs=1, seed=6)[0]
    lines_ = log.read_bytes().splitlines(keepends=True)
    normaliser = Normaliser(Known(), ProblemCollector())
    normaliser.feed_part(native.parse_native(log, b"".join(lines_[:40]), ProblemCollector()))
    bundle = normaliser.bundle
    bundle.spill(str(tmp_path))
    normaliser.feed_part(native._records(str(log), b"".join(lines_[40:]), 40, ProblemCollector(), None))
    before = (bundle.n_attempts, bundle.n_steps, list(bundle.spilled))

    def broken(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pa, "OSFile", broken)
    with pytest.raises(OSError):
        bundle.spill(str(tmp_path))
    monkeypatch.undo()
    assert (bundle.n_attempts, bundle.n_steps, list(bundle.spilled)) == before
    assert len(list(Path(bundle.spill_dir or "").iterdir())) == 1  # the failed part's folder removed
    ix = [i for tables in bundle.parts() for i in tables["attempts"].column("attempt_ix").to_pylist()]
    assert ix == list(range(60))
    bundle.release()
    assert bundle.spill_dir is None


def test_a_large_files_parts_wait_in_memory_within_the_cap_then_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    """The parts of a file read in parts go to the memory folder while they fit within RUNLENS_INGEST_MEMORY_SPILL_MB
    (in this process too, without workers), the rest to the disk's: the same rows as the file read whole, and both
    folders emptied."""
    files = generate(tmp_path / "logs", n_attempts=200, n_runs=1, seed=7)
    whole = ingest_paths(files, db=tmp_path / "whole.duckdb", jobs=1)
    memory = tmp_path / "memory"
    memory.mkdir()
    monkeypatch.setattr(pipeline, "memory_parent", lambda: str(memory))
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(pipeline, "MEMORY_SPILL_BYTES", 60_000)  # a few of its parts
    parents: list[str] = []
    spill = Bundle.spill

    def kept(self: Bundle, parent: str | None = None) -> None:
        parents.append(str(parent))
        spill(self, parent)

    monkeypatch.setattr(Bundle, "spill", kept)
    parts = ingest_paths(files, db=tmp_path / "parts.duckdb", jobs=1)
    assert outcomes(parts) == outcomes(whole)
    assert snapshot(tmp_path / "parts.duckdb") == snapshot(tmp_path / "whole.duckdb")
    in_memory = [p for p in parents if Path(p).parent == memory]
    assert 0 < len(in_memory) < len(parents) and parents[: len(in_memory)] == in_memory  # memory first, then disk
    assert all(Path(p).parent == private_tmp for p in parents[len(in_memory) :])
    assert list(memory.iterdir()) == [] and list(private_tmp.iterdir()) == []
