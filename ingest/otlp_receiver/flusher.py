"""The flusher: a thread that writes the complete traces every ``flush_interval_s`` (``batches.write_batch``),
puts them back when the database is busy, and writes everything at shutdown; when the store has a search index, it
keeps the index up with what it writes (an ``IndexKeeper``, ``jobs.search_index``'s, given by ``serve-otlp``: a
refresh in the background at most every ``RUNLENS_OTLP_INDEX_INTERVAL_S``, 30 s)."""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

import duckdb

from ingest.errors import IngestError
from ingest.otlp_receiver.batches import write_batch
from ingest.otlp_receiver.buffer import EXAMPLES, TraceBuffer
from store import Location, RunlensError

log = logging.getLogger("runlens.otlp")


class IndexKeeper(Protocol):
    """What keeps the search index up with the flusher's writes (``jobs.search_index.IndexKeeper``)."""

    def written(self) -> None: ...

    def tick(self) -> str | None: ...


class Flusher:
    """Writes complete traces every ``flush_interval_s`` in a thread of its own; ``stop`` flushes everything."""

    def __init__(
        self, db: Location, buffer: TraceBuffer, options: dict[str, Any], *, index: IndexKeeper | None = None
    ) -> None:
        self.db = db
        self.buffer = buffer
        self.options = options
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="runlens-otlp-flusher", daemon=True)
        self.written = 0
        self.index = index

    def start(self) -> None:
        """Start the background flushes."""
        self._thread.start()

    def stop(self) -> None:
        """Stop flushing on a timer, then write every trace still buffered (complete or not)."""
        self._stop.set()
        self._thread.join()
        self.flush(everything=True)

    def _run(self) -> None:
        while not self._stop.wait(self.buffer.limits.flush_interval_s):
            while self.flush() and not self._stop.is_set():
                pass  # a full batch: more traces may be complete
            self.keep_index()

    def keep_index(self) -> None:
        """Start the search index's refresh when traces wait for it; log what the last one did."""
        if self.index is None:
            return
        try:
            line = self.index.tick()
        except OSError as exc:  # (no process could start): the next commit tries again; search scans meanwhile
            log.error("the search index's refresh did not start: %s", exc)
            return
        if line:
            log.info("%s", line)

    def flush(self, *, everything: bool = False) -> bool:
        """Write what is complete now, at most ``max_batch_traces`` per transaction (everything at shutdown);
        errors are logged, the receiver keeps running. True when a full batch was taken (more may wait)."""
        size = self.buffer.limits.max_batch_traces
        while True:
            traces = self.buffer.take_complete(everything=everything, limit=size)
            if not traces:
                return False
            self._write(traces, everything=everything)
            if not everything:
                return len(traces) >= size

    def _write(self, traces: list[tuple[str, bytes, bool]], *, everything: bool) -> None:
        rootless = [t for t, _, has_root in traces if not has_root]
        if rootless:
            why = (
                "at shutdown"
                if everything
                else f"after waiting {self.buffer.limits.root_wait_s:g} s or past --max-waiting-mb"
            )
            log.warning(
                "%d trace(s) without their root span taken %s (%s): stored marked partial, completed if the rest "
                "arrives",
                len(rootless),
                why,
                _examples([(t, b"", False) for t in rootless]),
            )
        try:
            result = write_batch(self.db, traces, self.options)
        except IngestError as exc:  # cannot happen (each trace was validated alone); never retried
            log.error("could not write %d trace(s): %s", len(traces), exc)
            return
        except (RunlensError, OSError, duckdb.Error) as exc:  # the database is busy or unwritable: retry later
            if everything:
                log.error("could not write %d trace(s) at shutdown; they are lost: %s", len(traces), exc)
                return
            log.error("could not write %d trace(s), will retry: %s", len(traces), exc)
            self.buffer.put_back(traces)
            return
        except Exception:  # a fault in reading a trace must not stop the flushes: said, with the traces' ids
            log.exception("could not read %d trace(s) (%s): not written", len(traces), _examples(traces))
            return
        self.buffer.mark_stored(result.written_ids)
        self.written += result.written
        if self.index is not None and (result.written or result.merged):
            self.index.written()
        for trace_id, why in result.rejected.items():
            log.warning("trace %s not written: %s", trace_id, why)
        for trace_id, why in result.unmergeable.items():
            log.warning("trace %s already stored; spans that came later: %s", trace_id, why)
        if result.written or result.merged:
            notes = [
                f"{n} {what}"
                for n, what in (
                    (result.merged, "merged with the spans stored earlier (the attempt replaced)"),
                    (result.partial, "partial: no root span yet (extra.trace_partial)"),
                    (result.unscored, "without a score: score empty until python -m ingest scores"),
                )
                if n
            ]
            log.info(
                "wrote %d new trace(s) in one transaction%s (%d open)",
                result.written,
                f"; {'; '.join(notes)}" if notes else "",
                self.buffer.n_open,
            )
        if result.already:
            log.info("%d trace(s) already stored with every span (a resent request): not written again", result.already)


def _examples(traces: list[tuple[str, bytes, bool]]) -> str:
    ids = [t for t, _, _ in traces[:EXAMPLES]]
    return ", ".join(ids) + (", ..." if len(traces) > EXAMPLES else "")
