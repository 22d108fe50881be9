"""Validation in worker processes ahead of the writer (``ingest.pipeline.ingest_paths`` with several files): the
workers read, parse and validate the next files and hand the validated rows over on disk while the writer writes."""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import multiprocessing
import os
import pickle
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.formats import is_archive
from ingest.lazy_imports import Refusal
from ingest.pipeline import Prepared, _size, prepare_file
from ingest.records import Known
from ingest.tempdirs import SpillPlaces

WORKER_NICENESS = 5  # validation workers yield the CPU to the writer (see _init_worker)
PREFETCH_BYTES = 384 * 1024 * 1024  # validated files waiting for the writer, beyond one per worker and one more


def prepare_in_workers(
    files: list[Path],
    known: Known,
    n_jobs: int,
    *,
    fmt: str,
    progress: bool,
    places: SpillPlaces,
    **options: Any,
) -> Iterator[Prepared | None]:
    """Prepared files in order, validated by ``n_jobs`` worker processes ahead of the writer.

    Files are handed out while fewer than ``n_jobs + 1`` wait for the writer, or (up to ``4 * n_jobs``) while those
    waiting come to at most ``PREFETCH_BYTES``: the workers keep busy while the writer checkpoints, and memory
    stays bounded. Each file is validated against ``known`` as it is when the file is handed out (earlier files
    may still be being written); a failed file is yielded as None, to be validated again in this process against
    the current database, so that its errors are exactly those of a file-by-file ingest. A worker hands its
    validated rows over in Arrow files in ``places`` (``SpillPlaces.spill``; ``places.disk``: this ingest's folder,
    not the system's temporary folder, which would name it after the worker): files waiting for the writer cost
    disk or the memory folder, not this process's memory, and nothing large is pickled through a pipe.
    """
    sizes = [_size(f) for f in files]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=sum(sizes), unit="B", unit_scale=True, desc="ingest", file=sys.stderr)
    context = multiprocessing.get_context("spawn")  # never fork a process holding a DuckDB connection
    with concurrent.futures.ProcessPoolExecutor(
        n_jobs, mp_context=context, initializer=_init_worker, initargs=(os.getpid(),)
    ) as pool:
        pending: collections.deque[concurrent.futures.Future[Prepared | None]] = collections.deque()
        handed = 0  # files handed out so far (files[i] for i < handed)
        for_worker = _WorkerKnown()

        def hand_out(first: int) -> None:
            """Submit files from ``handed`` on while the budget allows; ``first`` is the oldest not yet yielded."""
            nonlocal handed
            while handed < len(files) and (
                handed - first < n_jobs + 1
                or (handed - first < 4 * n_jobs and sum(sizes[first : handed + 1]) <= PREFETCH_BYTES)
            ):
                if is_archive(files[handed]):  # read by the writer, member by member
                    pending.append(concurrent.futures.Future())
                    pending[-1].set_result(None)
                else:
                    pending.append(
                        pool.submit(
                            _prepare_worker,
                            files[handed],
                            for_worker(known),
                            fmt,
                            places,
                            options,
                        )
                    )
                handed += 1

        try:
            with _worker_environment():  # (the pool starts its workers as the first files are handed out)
                hand_out(0)
            for i in range(len(files)):
                try:
                    ready = pending.popleft().result()
                except concurrent.futures.process.BrokenProcessPool as exc:  # a worker died (killed, out of memory)
                    print(
                        f"ingest: validation workers stopped ({exc}); validating the remaining files in this process",
                        file=sys.stderr,
                    )
                    yield from (None for _ in files[i:])
                    return
                if bar is not None:
                    bar.update(sizes[i])
                yield None if ready is None or ready.error is not None else ready
                hand_out(i + 1)  # after the yield: the next files see what the writer learnt from this one
        finally:
            for future in pending:
                future.cancel()
            if bar is not None:
                bar.close()


# The workers' environment beside this process's: Arrow's allocator (mimalloc) keeps the pages it freed instead of
# giving them back to the system 10 ms later. A worker builds and frees a file's Arrow tables file after file, so
# it took them back from the system every time: a 1M-attempt file's tables cost 0.035-0.063 system CPU s to build
# (1,842 page faults), 0.008-0.018 (15 faults) with the pages kept. A worker's resident memory then stays at its
# largest Arrow tables (about a file's size) between files. Read when the library loads, so it is set for the start.
WORKER_ENV = {"MIMALLOC_PURGE_DELAY": "-1"}


@contextlib.contextmanager
def _worker_environment() -> Iterator[None]:
    """``WORKER_ENV`` in this process's environment while the pool starts its workers (they inherit it), each
    variable only where it is not set already; the environment is put back after."""
    added = {name: value for name, value in WORKER_ENV.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _init_worker(parent_pid: int) -> None:
    """In a worker: run below the writer's priority, and exit as soon as the ingest process is gone (killed)
    instead of waiting forever for work.

    The writer is the one serial stage of an ingest (its checkpoints most of all); validation ahead of it only
    has to keep up, so it takes the CPU the writer leaves (measured at 1M attempts on 2 cores: 60 s instead of 65).
    """
    os.nice(WORKER_NICENESS)
    _without_pandas_probe()

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="runlens-parent-watch", daemon=True).start()


def _without_pandas_probe() -> None:
    """Keep pyarrow from importing pandas in a worker, where nothing uses it: pyarrow's first ``pa.array`` of a
    Python list asks whether pandas is there, to tell its arrays apart, and importing it cost each worker 0.2-0.25
    CPU s. That first question is asked here with pandas refused, so pyarrow takes it as absent; an explicit use
    (``to_pandas``, ``import pandas``) still imports it, since only this one probe is answered."""
    import pyarrow as pa

    finder = Refusal(("pandas",))
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(finder)


class _WorkerKnown:
    """``known.for_worker()`` pickled, for the workers: pickled again only when it changed since the last file
    handed out (each file's definitions are the same as the last's until a file with new ones is written). At 1M
    attempts it holds 26,664 tasks: 0.59 MB, 0.008-0.009 CPU s to pickle and 0.007-0.008 to read back, a file."""

    def __init__(self) -> None:
        self.sent: Known | None = None
        self.blob = b""

    def __call__(self, known: Known) -> bytes:
        now = known.for_worker()
        last = self.sent
        if last is None or (now.benchmarks, now.runs, now.tasks, now.hashes) != (
            last.benchmarks,
            last.runs,
            last.tasks,
            last.hashes,
        ):
            self.sent, self.blob = now, pickle.dumps(now, protocol=pickle.HIGHEST_PROTOCOL)
        return self.blob


_RECEIVED: list[Any] = [b"", None]  # in a worker: the last pickled Known received, and it read back


def _known_from(blob: bytes) -> Known:
    """A worker's own copy of the pickled ``Known`` (read back only when it differs from the last one received)."""
    if blob != _RECEIVED[0]:
        _RECEIVED[:] = [blob, pickle.loads(blob)]
    known: Known = _RECEIVED[1]
    return known.copy()


def _prepare_worker(
    path: Path,
    known: Known | bytes,
    fmt: str,
    places: SpillPlaces,
    options: dict[str, Any],
) -> Prepared:
    if isinstance(known, bytes):
        known = _known_from(known)
    prepared = prepare_file(path, known, fmt=fmt, places=places, **options)
    bundle = prepared.bundle
    if bundle is not None and not bundle.revised_runs and not bundle.freeze()["score_updates"].num_rows:
        # the rows wait for the writer in ``places`` (a re-scored log is held whole); with no room on disk (OSError)
        # they go through the pipe instead, and the parts spilled before stay; what is left of a file read in parts
        # goes to disk (its parts were placed as they were read)
        with contextlib.suppress(OSError):
            places.spill(bundle, to_memory=bundle.spill_dir is None)
    return prepared
