"""Several small files written in one transaction (``ingest.pipeline.ingest_paths`` with several files).

A file's write has a cost that does not follow its size: on a lake each COMMIT writes catalog rows and a
snapshot, each statement (the inserts, the aggregates' eleven) pays for its catalog reads, and each insert writes
Parquet files of its own. A folder of files of up to half a batch each therefore takes validated files into a
batch, up to ``BATCH_BYTES`` of files (``RUNLENS_INGEST_BATCH_MB``, 512; 0: one transaction per file) or
``BATCH_FILES`` files, and writes the batch with one statement per table and one commit
(``store.ingest_writer.write_batch``): the same rows, file_ids and attempt ids as file after file.

Each file stays atomic and idempotent: the batch's transaction holds all of its files or none of them. When
writing the batch fails, it rolls back whole, what this process knows of the store is put back as it was before
the batch, and its files are then written one by one, each in its own transaction, with the outcome (and error)
each would have had alone. A file is idempotent by its content hash as before: its ``ingest_log`` row is in the
transaction that writes its rows. Only files whose runs are all their own go into a batch (``batchable``); any
other file (extending or re-scoring stored runs, a duplicate, an invalid file, an archive) first has the batch
written, then goes alone, so files are written and reported in order.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from ingest.pipeline import FileResult, Prepared, _new_definitions
from ingest.records import DEFINITION_TABLES, Known
from ingest.rule_labels import RuleLabels, batch_rule_labels
from ingest.rule_labels import label_rules as _label_rules
from store.ingest_writer import BatchFile, batchable, write_batch
from store.retries import retry_keys, retry_notes

# 512 MB: nine of the 1M generator's 56 MB files go together (64 MB -> 256: the writer's CPU 56.1 -> 29.9 s, its
# largest process 488 -> 836 MB, BENCHMARKS.md "Ingest, sixth pass"; 256 -> 512: fewer COMMITs and statements a
# folder, "Ingest, eleventh pass")
BATCH_BYTES = int(float(os.environ.get("RUNLENS_INGEST_BATCH_MB") or 512) * 1024 * 1024)
BATCH_FILES = 64


@dataclass
class _Pending:
    prepared: Prepared
    definitions: dict[str, dict[str, list[Any]]]  # the bundle's definition columns before known ones were dropped
    labels: RuleLabels | None  # its rule findings (written for the whole batch at once: batch_rule_labels)
    size: int


class Batch:
    """Validated files waiting to be written together; ``alone(prepared)`` writes one file by itself (the
    caller's path for every file a batch does not take) and ``emit`` reports a file's outcome."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        known: Known,
        *,
        is_demo: bool,
        alone: Callable[[Prepared], FileResult],
        emit: Callable[[FileResult], None],
    ) -> None:
        self.con, self.known, self.is_demo, self.alone, self.emit = con, known, is_demo, alone, emit
        self.pending: list[_Pending] = []
        self.saved: tuple[Any, ...] | None = None
        self.size = 0
        self.traces: set[str] = set()  # OTLP trace ids of the files waiting (a trace in two files: merged)

    def offer(self, prepared: Prepared, size: int) -> bool:
        """Take a validated file into the batch (True), or write the batch and leave the file to the caller (False)."""
        bundle = prepared.bundle
        if (
            BATCH_BYTES <= 0
            or 2 * size > BATCH_BYTES  # no second file would fit: written alone straight away
            or bundle is None
            or prepared.error is not None
            or prepared.duplicate_of is not None
            or prepared.content_hash in self.known.hashes
            or not batchable(bundle)
            or (bundle.traces and self._names_trace_seen(bundle.traces))
        ):
            self.flush()
            return False
        if self.size + size > BATCH_BYTES:
            self.flush()
        known = self.known
        definitions = {attr: getattr(bundle, attr) for attr in DEFINITION_TABLES.values()}
        new_rows = _new_definitions(bundle, known)
        if new_rows is None or not batchable(bundle):  # a conflict, or a run an earlier file defined: alone
            for attr, cols in definitions.items():
                setattr(bundle, attr, cols)
            self.flush()
            return False
        if not self.pending:
            self.saved = _snapshot(known)
        labels = _label_rules(bundle, known)
        for kind, row in new_rows:
            known.add(kind, row)
        known.hashes[prepared.content_hash] = prepared.path
        self.pending.append(_Pending(prepared, definitions, labels, size))
        self.traces.update(bundle.traces)
        self.size += size
        if len(self.pending) >= BATCH_FILES:
            self.flush()
        return True

    def flush(self) -> None:
        """Write the files waiting (one transaction; if it fails, each file alone) and report them."""
        pending, self.pending, self.size = self.pending, [], 0
        self.traces = set()
        if not pending:
            return
        started = time.perf_counter()
        try:
            if len(pending) == 1:
                raise _Alone
            files = [
                BatchFile(
                    p.prepared.bundle,
                    p.prepared.path,
                    p.prepared.content_hash,
                    p.prepared.format,
                    p.prepared.started_at,
                    p.prepared.seconds,
                )
                for p in pending
                if p.prepared.bundle is not None
            ]
            labels = batch_rule_labels([p.labels for p in pending if p.labels is not None])
            _, retries = write_batch(self.con, files, is_demo=self.is_demo, before_commit=labels)
        # rolled back whole (a statement, the COMMIT, or putting the files' Arrow tables together failed): each
        # file alone, as if never batched
        except (_Alone, duckdb.Error, pa.ArrowException, MemoryError):
            assert self.saved is not None
            _restore(self.known, self.saved)
            for p in pending:
                assert p.prepared.bundle is not None
                for attr, cols in p.definitions.items():
                    setattr(p.prepared.bundle, attr, cols)
                self.emit(self.alone(p.prepared))
            return
        share = (time.perf_counter() - started) / len(pending)
        note = (f"the commit conflicted with another one and was retried {retries} time(s)",) if retries else ()
        for p in pending:
            bundle = p.prepared.bundle
            assert bundle is not None
            keys = retry_keys(bundle.runs)  # read before the bundle's parts are released
            bundle.release()
            self.emit(
                FileResult(
                    p.prepared.path,
                    p.prepared.format,
                    "ingested",
                    len(bundle.runs["run_id"]),
                    len(bundle.tasks["task_id"]),
                    bundle.n_attempts,
                    bundle.n_steps,
                    p.prepared.seconds + share,
                    warnings=p.prepared.warnings + note,
                    n_partial=bundle.n_partial,
                    retries=retry_notes(self.con, keys),
                )
            )

    def _names_trace_seen(self, traces: dict[str, str]) -> bool:
        """An OTLP file naming a trace of a file waiting, or one stored: written alone, after the batch (merged)."""
        from ingest.otlp.merge import stored_traces

        return not self.traces.isdisjoint(traces) or bool(stored_traces(self.con, traces))

    def release(self) -> None:
        """Give up the files waiting (the ingest stopped): remove their parts from disk."""
        for p in self.pending:
            if p.prepared.bundle is not None:
                p.prepared.bundle.release()
        self.pending = []


class _Alone(Exception):
    """A batch of one file: written the usual way."""


def _snapshot(known: Known) -> tuple[Any, ...]:
    return (
        dict(known.benchmarks),
        dict(known.runs),
        set(known.tasks),
        dict(known.definitions),
        dict(known.hashes),
        set(known.loaded_benchmarks),
    )


def _restore(known: Known, saved: tuple[Any, ...]) -> None:
    """Put back what ``known`` held at ``_snapshot`` (a batch that was not written)."""
    benchmarks, runs, tasks, definitions, hashes, loaded = saved
    known.benchmarks, known.runs, known.tasks = dict(benchmarks), dict(runs), set(tasks)
    known.definitions, known.hashes, known.loaded_benchmarks = dict(definitions), dict(hashes), set(loaded)
