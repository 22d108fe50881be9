"""Uploads checked and ingested in a worker process, with limits, from files that never outlive the request.

The Upload page used to preview (detect, parse, validate) in the Streamlit process itself, on every rerun: a
1.16 MB archive cost the server 1 GB each time. Here the page hands the uploaded bytes to
``python -m ingest.upload_worker``, which runs the same code as ``python -m ingest`` (its size limit, the
readers' own archive limits, DuckDB's ingest memory limit) under an address-space limit and a CPU-time limit,
and is killed when its time is up. The files are written under safe names (``..`` or ``a/b`` cannot name
anything outside) into a fresh ``runlens-upload-*`` folder that is deleted when the call returns, whatever
happens, so no upload stays on disk after the preview or the ingest.
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
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store import PROJECT_ROOT, Location, RunlensError, reader, resolve_db_path

TEMP_PREFIX = "runlens-upload-"
STALE_AFTER_S = 24 * 3600  # a folder this old was left by a killed server: removed at the next upload


@dataclass(frozen=True)
class WorkerLimits:
    """Bounds of one upload worker (env ``RUNLENS_UPLOAD_WORKER_MB`` sets the address space)."""

    memory_bytes: int = int(os.environ.get("RUNLENS_UPLOAD_WORKER_MB", "4096")) * 1024 * 1024
    preview_timeout_s: float = 300.0
    ingest_timeout_s: float = 1800.0


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
def staged(files: Sequence[tuple[str, bytes]]) -> Iterator[list[Path]]:
    """Write ``(name, bytes)`` uploads under safe names into a new temporary folder, deleted on exit."""
    remove_stale()
    folder = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
    try:
        taken: set[str] = set()
        paths = []
        for name, data in files:
            path = folder / safe_name(name, taken)
            path.write_bytes(data)
            paths.append(path)
        yield paths
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_stale(*, now: float | None = None) -> int:
    """Delete ``runlens-upload-*`` folders older than a day (left by a killed server); return how many."""
    now = time.time() if now is None else now
    n = 0
    for folder in Path(tempfile.gettempdir()).glob(TEMP_PREFIX + "*"):
        try:
            if folder.is_dir() and now - folder.stat().st_mtime > STALE_AFTER_S:
                shutil.rmtree(folder, ignore_errors=True)
                n += 1
        except OSError:
            continue  # another server removed it meanwhile
    return n


def preview_uploads(
    files: Sequence[tuple[str, bytes]],
    *,
    db: Location,
    fmt: str = "auto",
    limits: WorkerLimits | None = None,
    **options: Any,
) -> list[Any]:
    """``uploads.Preview`` of every ``(name, bytes)`` upload, computed in a worker; names are the uploads' own.

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
            }
        )
        for row in lines
    ]
    return [dataclasses.replace(p, file=name) for p, (name, _) in zip(previews, files, strict=True)]


def ingest_uploads(
    files: Sequence[tuple[str, bytes]],
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
    """Run ``python -m ingest.upload_worker`` on ``request``; one JSON line per file comes back."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    payload = {**request, "memory_bytes": limits.memory_bytes, "cpu_s": int(timeout_s) + 1}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ingest.upload_worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=PROJECT_ROOT,
        env=env,
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
        why = "time" if proc.returncode in (-9, -24) else "memory"  # SIGKILL by the timer, SIGXCPU by RLIMIT_CPU
        tail = (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][:200]
        raise UploadWorkerError(
            f"checking the upload stopped at the worker's {why} limit after {len(rows)} of "
            f"{len(request['paths'])} file(s) ({tail}); nothing of the unfinished files was written"
        )
    return rows


def _worker_main() -> int:
    """Entry of the worker: one JSON request on stdin, one JSON line per file on stdout."""
    import resource

    request = json.loads(sys.stdin.buffer.read())
    cap = int(request["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    resource.setrlimit(resource.RLIMIT_CPU, (int(request["cpu_s"]), int(request["cpu_s"])))
    from ingest import uploads
    from ingest.pipeline import rescore_note

    paths = [Path(p) for p in request["paths"]]
    options = request.get("options") or {}
    if request["mode"] == "preview":
        with reader(request["db"]) as con:
            for path in paths:
                row = dataclasses.asdict(uploads.preview_file(con, path, fmt=request["fmt"], **options))
                _emit({**row, "errors": [_relative(e, path) for e in row["errors"]]})
        return 0
    for path in paths:
        result = uploads.ingest_one(path, db=request["db"], fmt=request["fmt"], **options)
        fields = ("outcome", "n_runs", "n_attempts", "n_steps", "seconds")
        row = {k: getattr(result, k) for k in fields}
        error = "" if result.error is None else _relative(str(result.error), path)
        warnings = [_relative(w, path) for w in result.warnings]
        if result.rescored_runs:  # said on the page with the file's other notes
            warnings.append(rescore_note(result))
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
