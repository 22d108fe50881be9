"""Uploads checked and ingested in a worker process, with limits, from files that never outlive the request.

The Upload page used to preview (detect, parse, validate) in the Streamlit process itself, on every rerun: a
1.16 MB archive cost the server 1 GB each time. Here the page's uploads are copied in chunks to files (never a
second copy in the server's memory) and checked by ``python -m ingest.upload_worker``, which runs the same code
as ``python -m ingest`` (its size limit, the archive budget, DuckDB's memory limit below the worker's) under an
address-space limit covering Python, Arrow and DuckDB and a CPU-time limit, in one of the server's bounded worker
slots (``ingest.workers``), and is killed when its time is up. The files are written under safe names (``..`` or ``a/b`` cannot name
anything outside) into a fresh ``runlens-upload-*`` folder that is deleted when the call returns, whatever
happens, so no upload stays on disk after the preview or the ingest; the folder is named after the server process,
and one left by a killed server is removed at the next upload (``ingest.tempdirs``), as is the spill folder of a
worker killed mid-ingest (at the next ingest).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ingest import tempdirs, workers
from ingest.workers import WORKER_MEMORY_BYTES
from store import PROJECT_ROOT, Location, RunlensError, reader, resolve_db_path

TEMP_PREFIX = "runlens-upload-"
DUCKDB_HEADROOM_BYTES = 640 * 1024**2  # what the worker's interpreter and records take beside DuckDB's buffers
STALE_AFTER_S = tempdirs.LEGACY_STALE_AFTER_S  # a folder without its owner in its name, this old: removed


WORKER_WAIT_S = 20.0  # how long a preview or ingest queues for a worker slot and memory (ingest.workers)
CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class WorkerLimits:
    """Bounds of one upload worker: the address space it asks for (env ``RUNLENS_UPLOAD_WORKER_MB``, else
    ``ingest.workers.WORKER_MEMORY_BYTES``; the server's memory budget may grant less), wall-clock limits."""

    memory_bytes: int = int(os.environ.get("RUNLENS_UPLOAD_WORKER_MB", "0") or 0) * 1024 * 1024 or WORKER_MEMORY_BYTES
    preview_timeout_s: float = 60.0
    ingest_timeout_s: float = 1800.0


Upload = tuple[str, "bytes | BinaryIO"]  # a name and its content: bytes, or a readable file (Streamlit's upload)


@dataclass(frozen=True)
class IngestSummary:
    """What the ingest of one uploaded file did (plain values: it crosses a process boundary)."""

    file: str
    outcome: str  # ingested | duplicate | failed
    n_runs: int = 0
    n_attempts: int = 0
    n_steps: int = 0
    seconds: float = 0.0
    error: str = ""
    warnings: tuple[str, ...] = ()  # what the reader noted without refusing the file (e.g. unscored samples)
    n_partial: int = 0  # attempts stored from a trace without its root span (marked ``trace_partial``)


class UploadWorkerError(RunlensError):
    """The worker was stopped by a limit or ended without an answer."""


def safe_name(name: str, taken: set[str]) -> str:
    """A file name for an upload that stays inside its folder, keeps ordinary names (a CSV's companion files are
    found by name) and its suffix (formats are detected by it), and is not in ``taken``."""
    base = re.split(r"[/\\]", name)[-1]
    base = re.sub(r"[^\w.\- ]", "_", base).strip().lstrip(".")
    if not base:
        base = "upload"
    stem, dot, suffix = base.partition(".")
    candidate, n = base, 1
    while candidate.lower() in taken:
        n += 1
        candidate = f"{stem}-{n}{dot}{suffix}"
    taken.add(candidate.lower())
    return candidate


@contextlib.contextmanager
def staged(files: Sequence[Upload]) -> Iterator[list[Path]]:
    """Write ``(name, content)`` uploads under safe names into a new temporary folder, deleted on exit.

    A file-like content (Streamlit's ``UploadedFile``) is copied in 1 MiB chunks from its start: no second copy of
    the upload in the server's memory (``getvalue()`` made one per file, per preview and per ingest).
    """
    remove_stale()
    folder = Path(tempdirs.owned_folder(TEMP_PREFIX))  # named after this process (ingest.tempdirs)
    try:
        taken: set[str] = set()
        paths = []
        for name, content in files:
            path = folder / safe_name(name, taken)
            with path.open("wb") as out:
                if isinstance(content, (bytes, bytearray, memoryview)):
                    out.write(content)
                else:
                    content.seek(0)
                    shutil.copyfileobj(content, out, CHUNK_BYTES)
            paths.append(path)
        yield paths
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_stale(*, now: float | None = None) -> int:
    """Delete the ``runlens-upload-*`` folders of servers that are gone (killed), and those without an owner in their
    name older than a day; return how many (``ingest.tempdirs.remove_orphans``)."""
    return tempdirs.remove_orphans(TEMP_PREFIX, now=now)


def preview_uploads(
    files: Sequence[Upload],
    *,
    db: Location,
    fmt: str = "auto",
    limits: WorkerLimits | None = None,
    **options: Any,
) -> list[Any]:
    """``uploads.Preview`` of every ``(name, content)`` upload, computed in a worker; names are the uploads' own.

    Raises:
        UploadWorkerError: the worker hit its memory or time limit.
    """
    from ingest.uploads import Preview

    limits = limits or WorkerLimits()
    with staged(files) as paths:
        request = {"mode": "preview", "paths": [str(p) for p in paths], "db": str(resolve_db_path(db)), "fmt": fmt}
        lines = _run_worker({**request, "options": options}, limits=limits, timeout_s=limits.preview_timeout_s)
    previews = [
        Preview(
            **{
                **row,
                "errors": tuple(row["errors"]),
                "runs": tuple(tuple(r) for r in row.get("runs", ())),
                "rescores": tuple(row.get("rescores", ())),
                "retries": tuple(row.get("retries", ())),
            }
        )
        for row in lines
    ]
    return [dataclasses.replace(p, file=name) for p, (name, _) in zip(previews, files, strict=True)]


def ingest_uploads(
    files: Sequence[Upload],
    ready: Sequence[str],
    *,
    db: Location,
    fmt: str = "auto",
    limits: WorkerLimits | None = None,
    on_file: Callable[[int, IngestSummary], None] | None = None,
    **options: Any,
) -> list[IngestSummary]:
    """Ingest the uploads named in ``ready`` (all of ``files`` are staged, so companion files sit beside their
    results file) in a worker, one transaction per file; ``on_file(i, summary)`` reports each as it finishes.

    Raises:
        UploadWorkerError: the worker hit its memory or time limit (files finished before it are in).
    """
    limits = limits or WorkerLimits()
    names = [name for name, _ in files]
    with staged(files) as paths:
        chosen = [str(paths[names.index(name)]) for name in ready]
        request = {"mode": "ingest", "paths": chosen, "db": str(resolve_db_path(db)), "fmt": fmt, "options": options}
        out: list[IngestSummary] = []

        def collect(row: dict[str, Any]) -> None:
            summary = IngestSummary(**{**row, "file": ready[len(out)], "warnings": tuple(row.get("warnings") or ())})
            out.append(summary)
            if on_file is not None:
                on_file(len(out) - 1, summary)

        _run_worker(request, limits=limits, timeout_s=limits.ingest_timeout_s, on_line=collect)
    return out


def _run_worker(
    request: dict[str, Any],
    *,
    limits: WorkerLimits,
    timeout_s: float,
    on_line: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``python -m ingest.upload_worker`` on ``request`` in one of the server's worker slots, with the memory the
    budget grants (``ingest.workers``); one JSON line per file comes back.

    Raises:
        UploadWorkerError: no slot came free, or the worker hit its memory or time limit.
    """
    try:
        with workers.worker_slot("Checking the upload", wait_s=WORKER_WAIT_S, want_bytes=limits.memory_bytes) as cap:
            return _run_granted(request, cap, timeout_s=timeout_s, on_line=on_line)
    except workers.WorkersBusy as exc:
        raise UploadWorkerError(str(exc)) from None


def _run_granted(
    request: dict[str, Any], cap: int, *, timeout_s: float, on_line: Callable[[dict[str, Any]], None] | None
) -> list[dict[str, Any]]:
    payload = {**request, "memory_bytes": cap, "cpu_s": int(timeout_s) + 1}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ingest.upload_worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=PROJECT_ROOT,
        env=workers.worker_env(str(PROJECT_ROOT)),
    )
    timer = threading.Timer(timeout_s, proc.kill)  # wall-clock bound; RLIMIT_CPU bounds the CPU time too
    timer.start()
    rows: list[dict[str, Any]] = []
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        for raw in proc.stdout:  # lines as the worker finishes each file (progress for ingests)
            row = json.loads(raw)
            rows.append(row)
            if on_line is not None:
                on_line(row)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0 or len(rows) != len(request["paths"]):
        if proc.returncode in (-9, -24):  # SIGKILL by the timer, SIGXCPU by RLIMIT_CPU
            why = f"time limit ({timeout_s:g} s)"
        else:
            why = f"memory limit ({cap / 1024**2:,.0f} MB)"
        tail = (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][:200]
        raise UploadWorkerError(
            f"checking the upload stopped at the worker's {why} after {len(rows)} of "
            f"{len(request['paths'])} file(s) ({tail}); nothing of the unfinished files was written; "
            "larger files go in with `python -m ingest`"
        )
    return rows


def _worker_main() -> int:
    """Entry of the worker: one JSON request on stdin, one JSON line per file on stdout."""
    request = json.loads(sys.stdin.buffer.read())
    cap = int(request["memory_bytes"])
    workers.limit_this_process(cap, int(request["cpu_s"]))
    duck_limit = f"{max(64, (cap - DUCKDB_HEADROOM_BYTES) // 1024**2)}MB"  # DuckDB's own, below the worker's
    from ingest import uploads
    from ingest.outcome_text import rescore_note

    paths = [Path(p) for p in request["paths"]]
    options = request.get("options") or {}
    if request["mode"] == "preview":
        with reader(request["db"]) as con:
            con.execute("SET memory_limit = ?", [duck_limit])
            for path in paths:
                row = dataclasses.asdict(uploads.preview_file(con, path, fmt=request["fmt"], **options))
                _emit({**row, "errors": [_relative(e, path) for e in row["errors"]]})
        return 0
    for path in paths:
        result = uploads.ingest_one(path, db=request["db"], fmt=request["fmt"], memory_limit=duck_limit, **options)
        fields = ("outcome", "n_runs", "n_attempts", "n_steps", "seconds", "n_partial")
        row = {k: getattr(result, k) for k in fields}
        error = "" if result.error is None else _relative(str(result.error), path)
        warnings = [_relative(w, path) for w in result.warnings]
        if result.rescored_runs:  # said on the page with the file's other notes
            warnings.append(rescore_note(result))
        if result.n_merged or result.n_already:  # an OTLP file completing traces stored earlier
            from ingest.otlp.filemerge import merge_note

            warnings.append(merge_note(result.n_merged, result.n_already))
        _emit({**row, "file": path.name, "error": error, "warnings": warnings})
    return 0


def _relative(text: str, path: Path) -> str:
    """A problem's text without the temporary folder (``file:line: ...`` names the upload, not a server path)."""
    return text.replace(str(path.parent) + os.sep, "")


def _emit(row: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(row, default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(_worker_main())
