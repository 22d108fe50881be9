"""Step 4 of the sandbox: every statement is parsed and run in a worker process (``python -m analytics.sql_console.worker``) with address-space and CPU limits, killed after its timeout, one of a bounded pool (``ingest.workers``); its answer comes back in a file, never on its stdout; the calling process only checks the statement's length."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import store as rdb
from analytics.sql_console.check import check_size
from analytics.sql_console.limits import (
    WORKER_HEADROOM_BYTES,
    SandboxLimits,
    SqlFailed,
    SqlOutcome,
    SqlRefused,
    SqlResult,
)
from analytics.sql_console.run import _export_in_process, _run_in_process
from ingest import workers


def try_query(sql: str, *, db: str | Path | None = None, limits: SandboxLimits | None = None) -> SqlOutcome:
    """``run_query`` that returns refusals and engine errors instead of raising (for caching in pages)."""
    try:
        return SqlOutcome(run_query(sql, db=db, limits=limits))
    except SqlRefused as exc:
        return SqlOutcome(None, "refused", exc.reason)
    except SqlFailed as exc:
        return SqlOutcome(None, exc.kind, exc.message, exc.line)


def run_query(
    sql: str, *, db: str | Path | None = None, limits: SandboxLimits | None = None, is_isolated: bool = True
) -> SqlResult:
    """Run one statement in the sandbox; keep at most ``limits.max_rows`` rows, count the rest.

    When the timeout hits after the displayed rows were collected, the result is returned with
    ``is_count_exact = False`` instead of failing: the user still sees the first page.

    Args:
        sql: one statement.
        db: store location (default: ``RUNLENS_DB`` or the local lake ``data/runlens.lake``); its snapshot is read.
        limits: time, memory and size bounds.
        is_isolated: run in a killable worker process (default); False runs in this process.

    Raises:
        SqlRefused: the statement is too long (checked here) or not allowed (decided in the worker by
            DuckDB's parser, before the statement runs).
        SqlFailed: DuckDB's error (with ``line``), or a bound was hit (``kind`` timeout / memory).
    """
    limits = limits or SandboxLimits()
    check_size(sql, limits=limits)  # the only check in this process: parsing happens in the worker
    if not is_isolated:
        return _run_in_process(sql, db=db, limits=limits)
    result = _in_worker({"mode": "run", "sql": sql}, db=db, limits=limits)
    assert isinstance(result, SqlResult)
    return result


def export_result(
    sql: str, fmt: str, *, db: str | Path | None = None, limits: SandboxLimits | None = None, is_isolated: bool = True
) -> bytes:
    """The FULL result of ``sql`` as CSV or Parquet bytes, streamed under the sandbox and a byte cap."""
    with tempfile.TemporaryDirectory(prefix="runlens-sql-") as tmp:
        dest = Path(tmp) / f"export.{fmt}"
        size = export_to(sql, fmt, dest, db=db, limits=limits, is_isolated=is_isolated)
        _check_room_for(size)
        return dest.read_bytes()


def _check_room_for(size: int) -> None:
    """Refuse to bring a download of ``size`` bytes into a server that the memory budget (``ingest.workers``) has
    no room for: the page hands the bytes to Streamlit, which keeps them while the session lives.

    Raises:
        SqlFailed: ``kind`` too_large, with the sizes and the command that streams the result instead.
    """
    budget = workers.budget_bytes()
    if budget is None:
        return
    server = workers.server_rss_bytes()
    if server + 2 * size > budget:  # the bytes read, and Streamlit's stored copy
        raise SqlFailed(
            f"the full result ({size / 1024**2:,.0f} MB) would take the server ({server / 1024**2:,.0f} MB now) past "
            f"its memory budget of {budget / 1024**2:,.0f} MB; aggregate or add a LIMIT, or run it with "
            "`python -m analytics sql`, which streams it",
            kind="too_large",
        )


def export_to(
    sql: str,
    fmt: str,
    dest: Path,
    *,
    db: str | Path | None = None,
    limits: SandboxLimits | None = None,
    is_isolated: bool = True,
) -> int:
    """Write the FULL result of ``sql`` to the file ``dest`` as CSV or Parquet, streamed batch by batch under the
    sandbox and a byte cap (nothing of it is held in memory at once); return its size in bytes."""
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"fmt must be 'csv' or 'parquet', not {fmt!r}")
    limits = limits or SandboxLimits()
    check_size(sql, limits=limits)
    if not is_isolated:
        return _export_in_process(sql, fmt, dest, db=db, limits=limits)
    size = _in_worker({"mode": fmt, "sql": sql, "export_path": str(dest)}, db=db, limits=limits)
    assert isinstance(size, int)
    return size


WORKER_WAIT_S = 20.0  # how long a statement queues for a worker slot before it is refused (ingest.workers)
MIN_DUCKDB_BYTES = 128 * 1024**2  # the least DuckDB memory a statement is started with when the budget is short


def _in_worker(request: dict[str, Any], *, db: str | Path | None, limits: SandboxLimits) -> Any:
    """Run ``request`` in ``python -m analytics.sql_console.worker``; return its value or raise its error.

    The answer comes back in a file of a private temporary folder, never on the worker's stdout or stderr:
    DuckDB's progress bar (or anything else a library prints) cannot corrupt it. At most
    ``ingest.workers.WORKER_SLOTS`` workers run at once; this one queues up to ``WORKER_WAIT_S`` for a slot.
    """
    import dataclasses
    import subprocess

    try:
        want = limits.worker_memory_bytes()
        least = min(want, WORKER_HEADROOM_BYTES + MIN_DUCKDB_BYTES)
        with (
            workers.worker_slot("The SQL statement", wait_s=WORKER_WAIT_S, want_bytes=want, min_bytes=least) as cap,
            tempfile.TemporaryDirectory(prefix="runlens-sql-") as tmp,
        ):
            answer = Path(tmp) / "answer.pickle"
            payload = {
                **request,
                "db": str(rdb.resolve_db_path(db)),
                "limits": dataclasses.asdict(granted_limits(limits, cap)),
                "answer_path": str(answer),
            }
            proc = subprocess.Popen(
                [sys.executable, "-m", "analytics.sql_console.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,  # progress bars and prints: not the result channel
                stderr=subprocess.PIPE,
                cwd=rdb.PROJECT_ROOT,
                env=workers.worker_env(str(rdb.PROJECT_ROOT)),
            )
            try:
                _, err = proc.communicate(
                    json.dumps(payload).encode(), timeout=limits.timeout_s + limits.startup_grace_s
                )
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                raise SqlFailed(
                    f"the statement ran longer than {limits.timeout_s:g} s and was stopped", kind="timeout"
                ) from None
            outcome = _read_answer(answer, proc.returncode, err, limits)
    except workers.WorkersBusy as exc:
        raise SqlFailed(str(exc), kind="busy") from None
    kind, value = outcome
    if kind == "refused":
        raise SqlRefused(value)
    if kind == "failed":
        raise SqlFailed(value[0], kind=value[1])
    return value


def granted_limits(limits: SandboxLimits, cap: int) -> SandboxLimits:
    """``limits`` within ``cap`` bytes (what the server's budget granted): DuckDB's limit lowered to fit under it."""
    import dataclasses

    if cap >= limits.worker_memory_bytes():
        return limits
    duck_mb = max(MIN_DUCKDB_BYTES, cap - WORKER_HEADROOM_BYTES) // 1024**2
    return dataclasses.replace(limits, memory_limit=f"{duck_mb}MB", process_memory_bytes=cap)


def _read_answer(answer: Path, returncode: int | None, err: bytes, limits: SandboxLimits) -> tuple[str, Any]:
    """The worker's ``(kind, value)``; a worker that died without one hit its memory (or CPU) limit."""
    import pickle

    try:
        data = answer.read_bytes()
    except OSError:
        data = b""
    if returncode != 0 or not data:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {returncode}"]
        return "failed", (
            f"the statement needed more than the sandbox worker's {limits.worker_memory_bytes() / 1024**2:,.0f} MB "
            f"and was stopped ({tail[0][:200]})",
            "memory",
        )
    try:
        # The worker is our own code (same interpreter, same tree) writing into our private folder: trusted.
        kind, value = pickle.loads(data)  # noqa: S301
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
        return "failed", ("the sandbox worker's answer could not be read; run the statement again", "error")
    return kind, value


def _worker_main() -> int:
    """Entry of the worker process: one JSON request on stdin, one pickled ``(kind, value)`` in ``answer_path``."""
    import pickle

    request = json.loads(sys.stdin.buffer.read())
    limits = SandboxLimits(**request["limits"])
    workers.limit_this_process(limits.worker_memory_bytes(), int(limits.timeout_s + limits.startup_grace_s) + 1)
    os.dup2(2, 1)  # anything printed to stdout (DuckDB's progress bar) goes where diagnostics go
    outcome: tuple[str, Any]
    try:
        if request["mode"] == "run":
            outcome = ("ok", _run_in_process(request["sql"], db=request["db"], limits=limits, check_apart=True))
        else:
            dest = Path(request["export_path"])
            outcome = (
                "ok",
                _export_in_process(
                    request["sql"], request["mode"], dest, db=request["db"], limits=limits, check_apart=True
                ),
            )
    except SqlRefused as exc:
        outcome = ("refused", exc.reason)
    except SqlFailed as exc:
        outcome = ("failed", (exc.message, exc.kind))
    except MemoryError:
        outcome = ("failed", (_memory_message(limits), "memory"))
    except Exception as exc:  # noqa: BLE001 - the worker's boundary: report the project's error, never a traceback
        outcome = ("failed", (f"the sandbox could not run this statement ({type(exc).__name__})", "error"))
    answer = Path(request["answer_path"])
    partial = answer.with_suffix(".partial")
    partial.write_bytes(pickle.dumps(outcome))
    partial.replace(answer)  # whole or absent: a worker killed while writing leaves no half answer
    return 0


def _memory_message(limits: SandboxLimits) -> str:
    return (
        f"the statement needed more than the sandbox worker's {limits.worker_memory_bytes() / 1024**2:,.0f} MB "
        "(Python, Arrow and DuckDB together) and was stopped; aggregate in SQL or add a LIMIT"
    )


if __name__ == "__main__":
    sys.exit(_worker_main())
