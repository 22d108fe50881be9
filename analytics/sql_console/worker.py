"""Step 4 of the sandbox: every statement is parsed and run in a worker process (``python -m analytics.sql_console.worker``) with address-space and CPU limits, killed after its timeout; the calling process only checks the statement's length."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import store as rdb
from analytics.sql_console.check import check_size
from analytics.sql_console.limits import SandboxLimits, SqlFailed, SqlOutcome, SqlRefused, SqlResult
from analytics.sql_console.run import _export_in_process, _run_in_process


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
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"fmt must be 'csv' or 'parquet', not {fmt!r}")
    limits = limits or SandboxLimits()
    check_size(sql, limits=limits)
    if not is_isolated:
        return _export_in_process(sql, fmt, db=db, limits=limits)
    data = _in_worker({"mode": fmt, "sql": sql}, db=db, limits=limits)
    assert isinstance(data, bytes)
    return data


def _in_worker(request: dict[str, Any], *, db: str | Path | None, limits: SandboxLimits) -> Any:
    """Run ``request`` in ``python -m analytics.sql_console.worker``; return its value or raise its error."""
    import dataclasses
    import os
    import pickle
    import subprocess

    payload = {**request, "db": str(rdb.resolve_db_path(db)), "limits": dataclasses.asdict(limits)}
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(rdb.PROJECT_ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "analytics.sql_console.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=rdb.PROJECT_ROOT,
        env=env,
    )
    try:
        out, err = proc.communicate(json.dumps(payload).encode(), timeout=limits.timeout_s + limits.startup_grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise SqlFailed(
            f"the statement ran longer than {limits.timeout_s:g} s and was stopped", kind="timeout"
        ) from None
    if proc.returncode != 0 or not out:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise SqlFailed(
            f"the statement exhausted the sandbox worker's memory and was stopped ({tail[0][:200]})", kind="memory"
        )
    # The worker is our own code (same interpreter, same tree): its pickle is trusted.
    kind, value = pickle.loads(out)  # noqa: S301
    if kind == "refused":
        raise SqlRefused(value)
    if kind == "failed":
        raise SqlFailed(value[0], kind=value[1])
    return value


def _worker_main() -> int:
    """Entry of the worker process: one JSON request on stdin, one pickled ``(kind, value)`` on stdout."""
    import pickle
    import resource

    request = json.loads(sys.stdin.buffer.read())
    limits = SandboxLimits(**request["limits"])
    cap = limits.process_memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    cpu_s = int(limits.timeout_s + limits.startup_grace_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    outcome: tuple[str, Any]
    try:
        if request["mode"] == "run":
            outcome = ("ok", _run_in_process(request["sql"], db=request["db"], limits=limits))
        else:
            outcome = ("ok", _export_in_process(request["sql"], request["mode"], db=request["db"], limits=limits))
    except SqlRefused as exc:
        outcome = ("refused", exc.reason)
    except SqlFailed as exc:
        outcome = ("failed", (exc.message, exc.kind))
    except MemoryError:
        outcome = ("failed", ("the statement exhausted the sandbox worker's memory and was stopped", "memory"))
    except Exception as exc:  # noqa: BLE001 - the worker's boundary: report the project's error, never a traceback
        outcome = ("failed", (f"the sandbox could not run this statement ({type(exc).__name__})", "error"))
    sys.stdout.buffer.write(pickle.dumps(outcome))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main())
