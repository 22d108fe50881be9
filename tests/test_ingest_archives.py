"""Archives of logs (.tar.gz, .zip, ...): every member is ingested as a file of its own, streamed out of the
archive, with the rows, hashes, problems and outcomes that the same files give on disk; an archive of any size
goes in (the limit is on one record, refused at ``archive!member:line``)."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import duckdb
import pytest

from ingest import archives, native, pipeline, safezip
from ingest.pipeline import ingest_paths
from tests.test_ingest_chunks import snapshot
from tests.test_ingest_parallel import lines, mixed_batch, outcomes


def pack(archive: Path, files: list[Path], root: Path) -> Path:
    """``files`` (in this order) into ``archive``, named by their path under ``root``."""
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in files:
                zf.write(f, f.relative_to(root).as_posix())
    else:
        with tarfile.open(archive, "w:gz") as tf:
            for f in files:
                tf.add(f, f.relative_to(root).as_posix())
    return archive


def located(results: list, archive: Path, root: Path) -> list[tuple[str, str, str | None]]:
    """``outcomes`` with the archive's member locations written as the files' paths on disk."""
    for r in results:
        for attr in ("path", "duplicate_of"):
            if getattr(r, attr):
                setattr(r, attr, getattr(r, attr).replace(f"{archive}!", f"{root}/"))
    return [(name, outcome, err and err.replace(f"{archive}!", f"{root}/")) for name, outcome, err in outcomes(results)]


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_an_archive_over_the_limits_gives_what_its_members_give(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    private_tmp: Path,
    suffix: str,
) -> None:
    files = mixed_batch(tmp_path / "logs")
    plain = ingest_paths(files, db=tmp_path / "plain.duckdb", jobs=1)
    archive = pack(tmp_path / f"logs{suffix}", files, tmp_path)
    # the members stream through parts of 2 KB, and the archive is larger than what a .eval may expand to
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 2048)
    monkeypatch.setattr(safezip, "MAX_TOTAL_BYTES", 4096)
    monkeypatch.setattr(safezip, "MAX_MEMBER_BYTES", 4096)
    assert archive.stat().st_size > 4096 and sum(f.stat().st_size for f in files) > 20 * 2048
    packed = ingest_paths([archive], db=tmp_path / "packed.duckdb", jobs=1)

    assert [r.path.split("!")[-1] for r in packed] == [f.relative_to(tmp_path).as_posix() for f in files]
    assert located(packed, archive, tmp_path) == outcomes(plain)
    assert sum(r.outcome == "ingested" for r in packed) == 10
    assert snapshot(tmp_path / "packed.duckdb") == snapshot(tmp_path / "plain.duckdb")
    # a member's content hash is the file's: the files on disk add nothing to the store the archive filled
    again = ingest_paths(files, db=tmp_path / "packed.duckdb", jobs=1)
    assert [r.outcome for r in again] == ["failed" if r.outcome == "failed" else "duplicate" for r in plain]
    assert list(private_tmp.iterdir()) == []


def test_a_record_over_the_limit_in_a_member_is_refused_at_its_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    private_tmp: Path,
) -> None:
    monkeypatch.setattr(native, "MAX_LINE_BYTES", 5000)
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 1024)
    head = {"record": "benchmark", "benchmark": "b", "scoring": "binary"}
    long = b'{"record": "task", "benchmark": "b", "task_id": "t", "x": "' + b"y" * 20_000 + b'"}\n'
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a-good.jsonl").write_bytes(lines(head, {"record": "task", "benchmark": "b", "task_id": "t0"}))
    (folder / "b-long.jsonl").write_bytes(lines(head) + long + lines(head))
    (folder / "notes.txt").write_text("not a log: not read")
    archive = pack(tmp_path / "logs.tgz", sorted(folder.iterdir()), tmp_path)
    results = ingest_paths([archive], db=tmp_path / "db.duckdb", jobs=1)

    assert [(r.path, r.outcome) for r in results] == [
        (f"{archive}!logs/a-good.jsonl", "ingested"),
        (f"{archive}!logs/b-long.jsonl", "failed"),
    ]
    problems = results[1].error.problems  # type: ignore[union-attr]
    assert [(p.location, p.reason.split(" exceeds")[0]) for p in problems] == [
        (f"{archive}!logs/b-long.jsonl:2", f"line of {len(long) - 1:,} bytes")
    ]
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        assert con.execute("SELECT task_id FROM tasks").fetchall() == [("t0",)]


def test_a_damaged_archive_and_one_without_logs_are_refused_with_the_reason(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.tar.gz"
    damaged.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 200)
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("README.md", "no logs here")
    blank = tmp_path / "blank.zip"
    with zipfile.ZipFile(blank, "w") as zf:
        zf.writestr("x.jsonl", "\n  \n")
    results = ingest_paths([damaged, empty, blank], db=tmp_path / "db.duckdb", jobs=1)

    assert [(r.path, r.outcome) for r in results] == [
        (str(damaged), "failed"),
        (str(empty), "failed"),
        (f"{blank}!x.jsonl", "failed"),
    ]
    assert str(results[0].error).startswith(f"{damaged}:1: -: cannot read archive")
    assert "no member with a suffix a format reads" in str(results[1].error)
    assert str(results[2].error) == f"{blank}!x.jsonl:1: -: empty file: nothing to ingest"


def test_a_member_streams_in_reads_of_a_part_never_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A native member is read from the decompressing stream in reads of at most a part (the head first)."""
    body = lines(*({"record": "task", "benchmark": "b", "task_id": f"t{i}"} for i in range(3000)))
    archive = tmp_path / "one.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        info = tarfile.TarInfo("big.jsonl")
        info.size = len(body)
        tf.addfile(info, io.BytesIO(body))
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 4096)
    reads: list[int] = []
    real = archives._Guarded.read

    def counted(self: archives._Guarded, n: int = -1) -> bytes:
        block = real(self, n)
        reads.append(len(block))
        return block

    monkeypatch.setattr(archives._Guarded, "read", counted)
    results = ingest_paths([archive], db=tmp_path / "db.duckdb", jobs=1)
    assert results[0].outcome == "failed"  # tasks of a benchmark never defined: validated to the end
    assert len(body) > 20 * 4096 and sum(reads) == len(body)
    assert max(reads) <= 65536 and len(reads) > 20
