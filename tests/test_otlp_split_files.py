"""A trace split across two OTLP files (the Collector's file exporter rotating, an SDK flushing finished children
before the root ends): the second file's spans are merged with the stored ones, as the live receiver merges late
spans, and the store ends as if the trace had come in one file; in either order, file by file or as one folder
(batches, parallel workers)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import set_span_in_context

from ingest.otlp_receiver.batches import write_batch
from ingest.outcome_text import describe
from ingest.pipeline import ingest_paths
from tests.adapter_helpers import counts, rows
from tests.otlp_lines import otlp_line, otlp_span
from tests.otlp_producer import MS, T0

TRACE = "0af7651916cd43dd8448eb211c80319c"
ROOT, CHILD = "00f067aa0ba902b7", "b7ad6b7169203331"
ATTEMPT = (
    "SELECT run_id, task_id, sample, status, score, input_tokens, output_tokens, n_steps, latency_s, "
    "json_extract_string(extra, '$.trace_partial'), json_extract_string(extra, '$.root_span'), "
    "json_extract(extra, '$.other_spans')::VARCHAR FROM attempts ORDER BY ALL"
)
STEPS = (
    "SELECT s.step, s.kind, s.tool, s.content, s.latency_s FROM steps s JOIN attempts a USING (attempt_id) ORDER BY ALL"
)


def _child_and_root(folder: Path, first: str = "a.jsonl", second: str = "b.jsonl") -> tuple[Path, Path]:
    """``first`` holds a child span of TRACE (its tool call), ``second`` the root span."""
    child = otlp_span(TRACE, CHILD, ROOT)
    child.update(name="tool", attributes=[])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / first).write_text(otlp_line(child) + "\n")
    (folder / second).write_text(otlp_line(otlp_span(TRACE, ROOT)) + "\n")
    return folder / first, folder / second


def _ingest(db: Path, *paths: Path, **options: Any) -> list[Any]:
    return ingest_paths(list(paths), db=db, **options)


def _store(db: Path) -> tuple[list[Any], list[Any]]:
    return rows(db, ATTEMPT), rows(db, STEPS)


def test_the_root_in_a_later_file_completes_the_partial_attempt(tmp_path: Path) -> None:
    a, b = _child_and_root(tmp_path)
    db = tmp_path / "db.duckdb"
    [first] = _ingest(db, a)
    assert (first.outcome, first.n_partial) == ("ingested", 1)
    [second] = _ingest(db, b)
    assert second.outcome == "ingested", second.error
    assert (second.n_merged, second.n_partial, second.n_attempts) == (1, 0, 1)
    assert "1 trace(s) merged with the spans stored earlier" in describe(second)
    [att] = rows(db, ATTEMPT)
    assert att[:5] == ("otel", TRACE, 0, "completed", 1.0)
    assert att[9] is None and att[10] == "agent"  # no partial mark; the root is the root
    assert json.loads(att[11])[0]["span_id"] == CHILD  # the child of the first file is in it
    # the first file's ingest_log facts follow (its attempt was replaced); the replacement is audited
    assert rows(db, "SELECT path, n_attempts FROM ingest_log ORDER BY file_id") == [(str(a), 0), (str(b), 1)]
    [(detail,)] = rows(db, "SELECT detail FROM audit_log WHERE action = 'attempts_replaced'")
    assert json.loads(detail)["trace_ids"] == [TRACE]
    # the merged trace's spans are kept too: a third file with one more span merges again
    late = otlp_span(TRACE, "c7ad6b7169203332", ROOT)
    late.update(name="late", attributes=[])
    (tmp_path / "c.jsonl").write_text(otlp_line(late) + "\n")
    [third] = _ingest(db, tmp_path / "c.jsonl")
    assert (third.outcome, third.n_merged) == ("ingested", 1), third.error
    [(others,)] = rows(db, "SELECT json_extract(extra, '$.other_spans')::VARCHAR FROM attempts")
    assert sorted(s["name"] for s in json.loads(others)) == ["late", "tool"]
    # the replaced attempts' kept spans went with them: the store keeps one text, the merged trace's
    kept = (
        "SELECT t.text_hash FROM texts t JOIN attempts a ON json_extract_string(a.extra, '$.otlp_spans') = t.text_hash"
    )
    assert rows(db, "SELECT count(*) FROM texts") == [(1,)] and len(rows(db, kept)) == 1
    assert [json.loads(d)["n_texts"] for (d,) in rows(db, "SELECT detail FROM audit_log ORDER BY at_utc")] == [1, 1]


def test_a_late_child_in_a_later_file_is_merged(tmp_path: Path) -> None:
    root_file, child_file = _child_and_root(tmp_path, first="b.jsonl", second="a.jsonl")
    db = tmp_path / "db.duckdb"
    assert [r.outcome for r in _ingest(db, child_file)] == ["ingested"]  # the root's file first
    [late] = _ingest(db, root_file)
    assert (late.outcome, late.n_merged) == ("ingested", 1), late.error
    one = tmp_path / "one"
    one.mkdir()
    (one / "all.jsonl").write_text(root_file.read_text() + child_file.read_text())
    _ingest(one / "db.duckdb", one / "all.jsonl")
    assert _store(db) == _store(one / "db.duckdb")  # the same attempt as one file holding both spans


@pytest.mark.parametrize("root_first", [False, True])
@pytest.mark.parametrize("jobs", [1, 2])
def test_both_files_in_one_folder_give_the_store_of_two_ingests(tmp_path: Path, root_first: bool, jobs: int) -> None:
    names = ("b.jsonl", "a.jsonl") if root_first else ("a.jsonl", "b.jsonl")
    first, second = _child_and_root(tmp_path / "in", *names)
    extra = tmp_path / "in" / "z-other.jsonl"  # a file of another trace: batched with whichever it may
    extra.write_text(otlp_line(otlp_span("1af7651916cd43dd8448eb211c80319c", ROOT)) + "\n")
    apart = tmp_path / "apart.duckdb"
    for path in sorted((first, second, extra)):
        assert _ingest(apart, path)[0].outcome == "ingested"
    together = tmp_path / "together.duckdb"
    results = _ingest(together, tmp_path / "in", jobs=jobs)
    assert [r.outcome for r in results] == ["ingested"] * 3, [r.error for r in results]
    assert sum(r.n_merged for r in results) == 1
    assert _store(together) == _store(apart)
    assert rows(
        together,
        "SELECT count(*), count(trace_partial) FROM (SELECT json_extract_string(extra, "
        "'$.trace_partial') AS trace_partial FROM attempts)",
    ) == [(2, 0)]
    assert rows(together, "SELECT path, n_attempts FROM ingest_log ORDER BY path") == rows(
        apart, "SELECT path, n_attempts FROM ingest_log ORDER BY path"
    )


def test_the_same_file_again_or_spans_all_stored_change_nothing(tmp_path: Path) -> None:
    a, b = _child_and_root(tmp_path)
    db = tmp_path / "db.duckdb"
    _ingest(db, a, b)
    before = (counts(db), _store(db))
    assert [r.outcome for r in _ingest(db, a, b)] == ["duplicate", "duplicate"]  # by content hash
    both = tmp_path / "both.jsonl"  # other bytes, every span stored already
    both.write_text(b.read_text() + a.read_text())
    [again] = _ingest(db, both)
    assert (again.outcome, again.n_already) == ("duplicate", 1)
    assert "every span of its 1 trace(s) is stored already" in describe(again)
    assert (counts(db), _store(db)) == before


def test_a_bad_file_naming_a_stored_trace_writes_nothing(tmp_path: Path) -> None:
    a, b = _child_and_root(tmp_path)
    db = tmp_path / "db.duckdb"
    _ingest(db, a)
    before = (counts(db), _store(db))
    b.write_text(b.read_text() + '{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "x"}]}]}]}\n')
    [bad] = _ingest(db, b)
    assert bad.outcome == "failed"
    assert str(bad.error).startswith(f"{b}:2: ")
    assert (counts(db), _store(db)) == before  # still the partial attempt, nothing else


def test_a_trace_stored_without_its_spans_is_refused_with_what_to_do(tmp_path: Path) -> None:
    a, b = _child_and_root(tmp_path)
    db = tmp_path / "db.duckdb"
    _ingest(db, a)
    con = duckdb.connect(str(db))  # as an older version stored it: no otlp_spans
    con.execute("UPDATE attempts SET extra = json_merge_patch(extra, '{\"otlp_spans\": null}')")
    con.close()
    before = (counts(db), _store(db))
    [refused] = _ingest(db, b)
    assert refused.outcome == "failed"
    message = str(refused.error)
    assert message.startswith(f"{b}:1: traceId: trace {TRACE} is stored already (run 'otel') without its spans")
    assert "delete that run" in message and "duplicate attempt" not in message
    assert (counts(db), _store(db)) == before


def test_the_receiver_merges_spans_a_file_stored(tmp_path: Path) -> None:
    a, b = _child_and_root(tmp_path)
    db = tmp_path / "db.duckdb"
    _ingest(db, a)
    result = write_batch(db, [(TRACE, b.read_bytes().strip(), True)], {})
    assert (result.merged, result.unmergeable) == (1, {})
    [att] = rows(db, ATTEMPT)
    assert att[:5] == ("otel", TRACE, 0, "completed", 1.0) and att[9] is None


# ---------------------------------------------------------------------------------------------
# The real producer: the SDK's batch processor flushes finished children while the root is open
# ---------------------------------------------------------------------------------------------


class _FileExporter(SpanExporter):
    """Each export the SDK makes, written as the Collector's file exporter writes it: one OTLP/JSON line (or a
    length-prefixed protobuf message) per request, to the file in ``self.path``."""

    def __init__(self) -> None:
        self.path: Path | None = None

    def export(self, spans: Any) -> SpanExportResult:
        assert self.path is not None
        request = encode_spans(list(spans))
        if self.path.suffix == ".pb":
            message = request.SerializeToString()
            data = len(message).to_bytes(4, "big") + message
        else:
            doc = MessageToDict(request)
            for rs in doc["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if span.get(key):
                                span[key] = base64.b64decode(span[key]).hex()
            data = (json.dumps(doc) + "\n").encode()
        with self.path.open("ab") as out:
            out.write(data)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


class _Ids(IdGenerator):
    """The same ids in every run (the SDK's are random): the split and the whole export are one trace."""

    def __init__(self) -> None:
        self.n = 0

    def generate_span_id(self) -> int:
        self.n += 1
        return 0x1000 + self.n

    def generate_trace_id(self) -> int:
        return 0x5EED_0000_0000_0000_0000_0000_0000_0001


def _agent_run(files: list[Path]) -> None:
    """One OpenInference agent trace made by the SDK; the exporter switches to the next file at each flush (the
    first flush while the root span is still open)."""
    exporter = _FileExporter()
    exporter.path = files[0]
    provider = TracerProvider(
        resource=Resource.create({"service.name": "support-agent", "service.version": "1.2"}), id_generator=_Ids()
    )
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000))
    tracer = provider.get_tracer("agent-loop")
    now = T0
    root = tracer.start_span("agent.run", start_time=now, attributes={"openinference.span.kind": "AGENT"})
    root.set_attributes({"session.id": "weather-paris", "input.value": "Weather in Paris?"})
    ctx = set_span_in_context(root)
    llm = tracer.start_span("llm.chat", context=ctx, start_time=now + 10 * MS)
    llm.set_attributes(
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.token_count.prompt": 120,
            "llm.token_count.completion": 15,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
        }
    )
    llm.end(end_time=now + 400 * MS)
    provider.force_flush()  # the root is open: its finished child goes to the first file
    exporter.path = files[-1]
    tool = tracer.start_span("tool.get_weather", context=ctx, start_time=now + 410 * MS)
    tool.set_attributes({"openinference.span.kind": "TOOL", "tool.name": "get_weather", "output.value": "sunny"})
    tool.end(end_time=now + 700 * MS)
    final = tracer.start_span("llm.chat", context=ctx, start_time=now + 710 * MS)
    final.set_attributes(
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.token_count.prompt": 160,
            "llm.token_count.completion": 6,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Sunny, 21C",
        }
    )
    final.end(end_time=now + 1000 * MS)
    ev = tracer.start_span("eval.correctness", context=ctx, start_time=now + 1001 * MS)
    ev.set_attributes(
        {"openinference.span.kind": "EVALUATOR", "evaluation.name": "correctness", "evaluation.score": 1.0}
    )
    ev.end(end_time=now + 1010 * MS)
    root.set_attribute("output.value", "Sunny, 21C")
    root.end(end_time=now + 1020 * MS)
    provider.force_flush()
    provider.shutdown()


@pytest.mark.parametrize("second", ["b.jsonl", "b.pb"])
def test_a_real_export_split_by_a_flush_gives_the_attempt_of_one_file(tmp_path: Path, second: str) -> None:
    split = tmp_path / "split"
    split.mkdir()
    first, rest = split / "a.jsonl", split / second
    _agent_run([first, rest])
    assert first.read_bytes().count(b"\n") == 1 and b'"llm.chat"' in first.read_bytes()  # the child alone
    whole = tmp_path / "whole"
    whole.mkdir()
    _agent_run([whole / "all.jsonl"])
    one = whole / "db.duckdb"
    assert _ingest(one, whole / "all.jsonl")[0].outcome == "ingested"
    want = _store(one)
    assert want[0][0][:8] == ("support-agent@1.2", "weather-paris", 0, "completed", 1.0, 280, 21, 3)

    db = split / "db.duckdb"
    [partial] = _ingest(db, first)
    assert (partial.outcome, partial.n_partial) == ("ingested", 1)
    [merged] = _ingest(db, rest)
    assert (merged.outcome, merged.n_merged, merged.n_partial) == ("ingested", 1, 0), merged.error
    assert _store(db) == want  # steps, tokens, score, status; no partial mark
    assert rows(db, "SELECT name, value FROM attempt_metrics") == rows(one, "SELECT name, value FROM attempt_metrics")

    folder_db = tmp_path / "folder.duckdb"  # both files as one folder
    assert [r.outcome for r in _ingest(folder_db, split)] == ["ingested", "ingested"]
    assert _store(folder_db) == want


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_archive_members_naming_stored_traces_merge_as_files_do(tmp_path: Path, kind: str) -> None:
    """A real export split by a flush, both files in one archive (the second member names the trace the first
    stored), and the rest alone in an archive after the first file: each ends as the trace in one file."""
    import tarfile
    import zipfile

    def pack(archive: Path, *members: Path) -> Path:
        if kind == "zip":
            with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
                for m in members:
                    zf.write(m, f"traces/{m.name}")
        else:
            with tarfile.open(archive, "w:gz") as tf:
                for m in members:
                    tf.add(m, f"traces/{m.name}")
        return archive

    split = tmp_path / "split"
    split.mkdir()
    first, rest = split / "a.jsonl", split / "b.pb"
    _agent_run([first, rest])
    whole = tmp_path / "all.jsonl"
    _agent_run([whole])
    one = tmp_path / "one.duckdb"
    assert _ingest(one, whole)[0].outcome == "ingested"
    want = _store(one)

    both = tmp_path / "both.duckdb"
    results = _ingest(both, pack(tmp_path / f"both.{kind}", first, rest))
    assert [(r.outcome, r.n_partial, r.n_merged) for r in results] == [("ingested", 1, 0), ("ingested", 0, 1)], [
        r.error for r in results
    ]
    assert _store(both) == want

    later = tmp_path / "later.duckdb"
    _ingest(later, first)
    [merged] = _ingest(later, pack(tmp_path / f"rest.{kind}", rest))
    assert (merged.outcome, merged.n_merged, merged.n_partial) == ("ingested", 1, 0), merged.error
    assert _store(later) == want
    assert rows(later, "SELECT path FROM ingest_log ORDER BY file_id") == [
        (str(first),),
        (f"{tmp_path}/rest.{kind}!traces/b.pb",),
    ]
    [again] = _ingest(later, rest)  # the same bytes as a plain file: already present
    assert again.outcome == "duplicate"
    assert _store(later) == want


def test_the_upload_preview_shows_the_merge_the_ingest_makes(tmp_path: Path) -> None:
    from ingest.uploads import preview_file

    a, b = _child_and_root(tmp_path)
    db = tmp_path / "db.duckdb"
    _ingest(db, a)
    con = duckdb.connect(str(db), read_only=True)
    try:
        preview = preview_file(con, b)
        again = preview_file(con, a)
    finally:
        con.close()
    assert (preview.outcome, preview.format, preview.n_attempts, preview.n_partial) == ("ready", "otlp", 1, 0)
    assert again.outcome == "duplicate"


def test_spans_kept_plain_by_an_earlier_receiver_are_merged(tmp_path: Path) -> None:
    a, b = _child_and_root(tmp_path)
    db = tmp_path / "db.duckdb"
    _ingest(db, a)
    con = duckdb.connect(str(db))  # the receiver before compression kept the trace's OTLP/JSON line as it was
    [(digest, text)] = con.execute("SELECT text_hash, text FROM texts").fetchall()
    assert text.startswith("otlp+zlib:")
    con.execute("UPDATE texts SET text = ? WHERE text_hash = ?", [a.read_text().strip(), digest])
    con.close()
    [merged] = _ingest(db, b)
    assert (merged.outcome, merged.n_merged) == ("ingested", 1), merged.error
    [att] = rows(db, ATTEMPT)
    assert att[9] is None and json.loads(att[11])[0]["span_id"] == CHILD


@pytest.mark.parametrize("encoding", ["jsonl", "pb"])
def test_collector_zstd_files_read_as_their_uncompressed_exports(
    tmp_path: Path, encoding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Collector file exporter's ``compression: zstd``, in its two layouts (each export compressed and length-
    prefixed; one zstd stream of the whole file), around the exports the SDK made: the store of the plain file.
    A file that expands past the budget is refused at line 1."""
    import zstandard

    plain = tmp_path / f"plain.{encoding}"
    _agent_run([plain, plain])  # two exports (the flush while the root is open, then the rest)
    data = plain.read_bytes()
    if encoding == "jsonl":
        exports = [line + b"\n" for line in data.splitlines()]
    else:
        exports, offset = [], 0
        while offset < len(data):
            size = int.from_bytes(data[offset : offset + 4], "big")
            exports.append(data[offset + 4 : offset + 4 + size])
            offset += 4 + size
    assert len(exports) == 2
    zstd = zstandard.ZstdCompressor()
    framed = b"".join(len(c).to_bytes(4, "big") + c for c in (zstd.compress(e) for e in exports))
    files = {"framed": framed, "stream": zstd.compress(data)}
    want_db = tmp_path / "plain.duckdb"
    assert _ingest(want_db, plain)[0].outcome == "ingested"
    want = _store(want_db)
    for layout, body in files.items():
        path = tmp_path / f"{layout}.{encoding}"
        path.write_bytes(body)
        [res] = _ingest(tmp_path / f"{layout}.duckdb", path)
        assert (res.outcome, res.format) == ("ingested", "otlp"), res.error
        assert _store(tmp_path / f"{layout}.duckdb") == want, layout
    monkeypatch.setattr("ingest.otlp_decode.MAX_ZSTD_BYTES", 100)
    [refused] = _ingest(tmp_path / "bomb.duckdb", tmp_path / f"stream.{encoding}", jobs=1)
    assert refused.outcome == "failed" and "zstd data expands past 100 bytes" in str(refused.error)
