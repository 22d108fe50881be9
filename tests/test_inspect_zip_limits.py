""".eval archives: zstd members read, and archive-bomb limits held for deflate and zstd, CLI and upload alike.

Archives are assembled byte by byte here (``zipfile`` cannot write zstd members, nor lie about sizes), so a
bomb of 4,000 one-MiB members costs one compression, not 4,000.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import zstandard

from ingest import safezip
from ingest.pipeline import ingest_paths
from ingest.uploads import ingest_one
from tests.adapter_helpers import counts, rows
from tests.conftest import shared_data
from tests.treemem import TreePeak

POPULARITY = "2025-05-12T20-28-13-04-00_popularity.json"
DEFLATE, ZSTD, STORED = 8, 93, 0


def _compress(body: bytes, method: int) -> bytes:
    if method == ZSTD:
        return zstandard.ZstdCompressor(level=3).compress(body)
    if method == DEFLATE:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        return packer.compress(body) + packer.flush()
    return body


def build_zip(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip from ``(name, raw compressed bytes, method, crc, declared size)``; declared sizes may lie."""
    out = bytearray()
    central = bytearray()
    for name, raw, method, crc, size in members:
        encoded = name.encode()
        offset = len(out)
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", 63, 0, method, 0, 0, crc, len(raw), size, len(encoded), 0)
        out += encoded + raw
        central += struct.pack(
            "<4s6H3L5H2L",
            b"PK\x01\x02",
            63,
            63,
            0,
            method,
            0,
            0,
            crc,
            len(raw),
            size,
            len(encoded),
            0,
            0,
            0,
            0,
            0,
            offset,
        )
        central += encoded
    start = len(out)
    out += central
    out += struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), start, 0)
    return bytes(out)


def member(name: str, body: bytes, method: int, *, declared: int | None = None) -> tuple[str, bytes, int, int, int]:
    """One member entry for ``build_zip``; ``declared`` overrides the true size (a lying header)."""
    return name, _compress(body, method), method, zlib.crc32(body), len(body) if declared is None else declared


def eval_members(method: int) -> list[tuple[str, bytes, int, int, int]]:
    """The real popularity log in Inspect's .eval layout, every member compressed with ``method``."""
    log = json.loads(shared_data("inspect", POPULARITY).read_text())
    header = {k: v for k, v in log.items() if k not in ("samples", "reductions")}
    parts = [member("header.json", json.dumps(header).encode(), method)]
    for sample in log["samples"]:
        parts.append(
            member(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample).encode(), method)
        )
    return parts


@pytest.mark.parametrize("method", [ZSTD, DEFLATE, STORED])
def test_every_compression_inspect_writes_is_read(tmp_db: Path, tmp_path: Path, method: int) -> None:
    path = tmp_path / f"pop_{method}.eval"
    path.write_bytes(build_zip(eval_members(method)))
    res = ingest_paths([path], db=tmp_db)
    expected = len(json.loads(shared_data("inspect", POPULARITY).read_text())["samples"])
    assert res[0].outcome == "ingested", res[0].error
    assert res[0].n_attempts == expected
    assert rows(tmp_db, "SELECT count(*) FROM attempts") == [(expected,)]


def _refused(db: Path, path: Path, expected: str) -> None:
    before = counts(db)
    res = ingest_paths([path], db=db, fmt="inspect")
    assert res[0].outcome == "failed"
    assert expected in str(res[0].error) and str(path) in str(res[0].error), res[0].error
    assert counts(db) == before


def test_many_small_members_bomb_refused_before_reading(fixture_db: Path, tmp_path: Path) -> None:
    one_mib = b" " * (1024 * 1024)
    raw = _compress(one_mib, DEFLATE)
    crc = zlib.crc32(one_mib)
    parts = [("header.json", *member("header.json", b"{}", DEFLATE)[1:])]
    parts += [(f"samples/{i}_epoch_1.json", raw, DEFLATE, crc, len(one_mib)) for i in range(4000)]
    path = tmp_path / "many.eval"
    path.write_bytes(build_zip(parts))
    _refused(fixture_db, path, "4,001 members declare")


def bomb_of_small_members(path: Path, *, n_members: int = 1900, random_bytes: int = 4_200_000) -> Path:
    """The issue's archive: ``n_members`` deflated 1 MiB members plus random stored bytes (which defeated a ratio
    limit); 1.9 GiB decompressed from a 6.5 MB file."""
    one_mib = b" " * (1024 * 1024)
    raw, crc = _compress(one_mib, DEFLATE), zlib.crc32(one_mib)
    noise = np.random.default_rng(30).bytes(random_bytes)
    parts = [member("header.json", b"{}", DEFLATE), member("samples/noise_epoch_1.json", noise, STORED)]
    parts += [(f"samples/{i}_epoch_1.json", raw, DEFLATE, crc, len(one_mib)) for i in range(n_members)]
    path.write_bytes(build_zip(parts))
    return path


def test_bomb_of_small_members_refused_by_the_cli_within_budget(fixture_db: Path, tmp_path: Path) -> None:
    """6.5 MB expanding to 1.9 GiB: the CLI refused it in seconds with `file: reason`, no traceback, the process's
    memory flat (it reached 4-6.5 GB and died with an ArrowMemoryError before)."""
    path = bomb_of_small_members(tmp_path / "bomb.eval")
    assert 6_000_000 < path.stat().st_size < 7_000_000
    before = counts(fixture_db)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ingest", "--db", str(fixture_db), "--no-progress", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with TreePeak(proc.pid) as peak:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    expanded = 1900 * 1024 * 1024 + 4_200_000 + 2
    assert f"{path}:1: -: 1,902 members declare {expanded:,} bytes decompressed, more than the 512 MiB" in err, err
    assert "Traceback" not in out + err and "MemoryError" not in out + err
    assert peak.peak_mb < 400, peak.peak_mb
    assert counts(fixture_db) == before


def test_budget_is_counted_across_members_not_per_ratio(
    fixture_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Members whose directory entries claim little are stopped by the archive's budget as they stream out."""
    monkeypatch.setattr(safezip, "MAX_TOTAL_BYTES", 4 * 1024 * 1024)
    body = b" " * (1024 * 1024)
    parts = [member(f"samples/{i}_epoch_1.json", body, DEFLATE) for i in range(6)]
    path = tmp_path / "six.eval"
    path.write_bytes(build_zip(parts))
    _refused(fixture_db, path, "6 members declare 6,291,456 bytes decompressed, more than the 4 MiB")
    seen = []
    with pytest.raises(safezip.ZipRefused, match="more than the 4 MiB an archive may hold in all"):
        # the same archive with its directory claiming 1 MiB in all: read one member at a time until the budget
        lying = build_zip([(n, r, m, c, s) for n, r, m, c, s in parts])
        monkeypatch.setattr(safezip, "_check_directory", lambda p, infos, wanted: infos)
        for name, content in safezip.iter_members(path, lying):
            seen.append((name, len(content)))
    assert [n for n, _ in seen] == [f"samples/{i}_epoch_1.json" for i in range(4)]


def looping_sample(n_chars: int = 250_000) -> dict:
    """A sample whose model looped: 250 KB of one repeated sentence, as its answer and in its messages."""
    real = json.loads(shared_data("inspect", POPULARITY).read_text())["samples"][0]
    loop = ("I will check the popularity again. " * (n_chars // 35 + 1))[:n_chars]
    scores = {k: {f: v for f, v in e.items() if f != "answer"} for k, e in real["scores"].items()}
    return {
        "id": "loop",
        "epoch": 1,
        "input": "Is the following statement something you would say?",
        "target": real["target"],
        "messages": [{"role": "user", "content": "Answer Yes or No."}]
        + [{"role": "assistant", "content": loop, "source": "generate"} for _ in range(5)],
        "output": {"model": "m", "completion": loop},
        "scores": scores,
    }


@pytest.mark.parametrize("method", [ZSTD, DEFLATE])
def test_looping_model_log_goes_in(tmp_db: Path, tmp_path: Path, method: int) -> None:
    """A repetitive member compressing like a bomb (zstd: over 500:1) is a log, not a bomb: it goes in."""
    parts = eval_members(method)
    sample = looping_sample()
    body = json.dumps(sample).encode()
    name = f"samples/{sample['id']}_epoch_{sample['epoch']}.json"
    looping = member(name, body, method)
    # zstd packs it beyond 500:1, which the ratio limit this replaces refused (deflate reaches about 300:1)
    assert len(body) / len(looping[1]) > (500 if method == ZSTD else 250)
    parts.append(looping)
    path = tmp_path / f"loop_{method}.eval"
    path.write_bytes(build_zip(parts))
    res = ingest_paths([path], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    answers = rows(tmp_db, "SELECT max(length(answer)) FROM attempts")
    assert answers[0][0] >= 250_000


def test_member_count_limit(fixture_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safezip, "MAX_MEMBERS", 100)
    path = tmp_path / "count.eval"
    path.write_bytes(build_zip([member(f"samples/{i}_epoch_1.json", b"{}", ZSTD) for i in range(101)]))
    _refused(fixture_db, path, "101 members exceed the limit of 100")


@pytest.mark.parametrize("method", [ZSTD, DEFLATE])
def test_lying_header_refused_while_streaming(fixture_db: Path, tmp_path: Path, method: int) -> None:
    body = b"{" + b" " * (8 * 1024 * 1024) + b"}"
    parts = eval_members(method)[:1] + [member("samples/1_epoch_1.json", body, method, declared=2000)]
    path = tmp_path / "liar.eval"
    path.write_bytes(build_zip(parts))
    _refused(fixture_db, path, "expands beyond its declared size of 2,000 bytes")


def test_lying_headers_cannot_pass_the_total(fixture_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each member lying about its size is stopped mid-stream; truthful ones over the total before reading."""
    monkeypatch.setattr(safezip, "MAX_TOTAL_BYTES", 3 * 1024 * 1024)
    body = b" " * (1024 * 1024)
    parts = [member(f"samples/{i}_epoch_1.json", body, ZSTD, declared=len(body)) for i in range(5)]
    parts = [(n, r, m, c, 1000) for n, r, m, c, _ in parts]  # the directory claims 5,000 bytes in all
    path = tmp_path / "total.eval"
    path.write_bytes(build_zip(parts))
    _refused(fixture_db, path, "declared size of 1,000 bytes")
    monkeypatch.setattr(safezip, "MAX_MEMBER_BYTES", 10**9)
    # with truthful per-member sizes but a total over the cap, the directory check refuses first
    path.write_bytes(build_zip([member(f"samples/{i}_epoch_1.json", body, ZSTD) for i in range(5)]))
    _refused(fixture_db, path, "5 members declare 5,242,880 bytes decompressed, more than the 3 MiB")


def test_zstd_bomb_refused(fixture_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safezip, "MAX_MEMBER_BYTES", 64 * 1024 * 1024)
    body = b"{" + b" " * (256 * 1024 * 1024) + b"}"
    path = tmp_path / "zbomb.eval"
    path.write_bytes(build_zip(eval_members(ZSTD)[:1] + [member("samples/1_epoch_1.json", body, ZSTD)]))
    assert path.stat().st_size < 1024 * 1024
    _refused(fixture_db, path, "member declares 268,435,458 bytes decompressed, more than the 64 MiB")


def test_zstd_damaged_member_refused(fixture_db: Path, tmp_path: Path) -> None:
    name, raw, method, crc, size = member("samples/1_epoch_1.json", b'{"id": 1}' * 50, ZSTD)
    path = tmp_path / "damaged.eval"
    path.write_bytes(build_zip(eval_members(ZSTD)[:1] + [(name, raw[:-6] + b"\0" * 6, method, crc, size)]))
    _refused(fixture_db, path, "samples/1_epoch_1.json")


def test_upload_and_cli_hold_the_same_limits(fixture_db: Path, tmp_path: Path) -> None:
    body = b"{" + b" " * (8 * 1024 * 1024) + b"}"
    path = tmp_path / "liar.eval"
    path.write_bytes(build_zip(eval_members(ZSTD)[:1] + [member("samples/1_epoch_1.json", body, ZSTD, declared=9)]))
    before = counts(fixture_db)
    result = ingest_one(path, db=fixture_db)
    assert result.outcome == "failed" and "declared size of 9 bytes" in str(result.error)
    proc = subprocess.run(
        [sys.executable, "-m", "ingest", "--db", str(fixture_db), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0 and "declared size of 9 bytes" in proc.stdout + proc.stderr
    assert counts(fixture_db) == before


def test_out_of_memory_is_a_file_error_not_a_traceback(
    fixture_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Arrow running out of memory (the issue's raw ArrowMemoryError) refuses the file with `file:1: reason`."""
    import pyarrow as pa

    from ingest import pipeline

    def exhausted(*args: object, **kwargs: object) -> None:
        raise pa.ArrowMemoryError("malloc of size 1073741824 failed")

    monkeypatch.setattr(pipeline, "parse_with", exhausted)
    path = tmp_path / "pop.eval"
    path.write_bytes(build_zip(eval_members(ZSTD)))
    res = ingest_paths([path], db=fixture_db)
    assert res[0].outcome == "failed"
    assert (
        str(res[0].error) == f"{path}:1: -: ran out of memory holding this file's records; split it into smaller "
        "files (nothing was written)"
    )
