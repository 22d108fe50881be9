"""Steps 2 and 3 of the sandbox, inside the worker: a locked-down in-memory DuckDB on the read snapshot, a watchdog, streamed Arrow batches kept within row and byte bounds, and exports (CSV, Parquet)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

import store as rdb
from analytics import csvsafe
from analytics.sql_console.check import VIEW_SQL_VIEWS, check_statement
from analytics.sql_console.limits import SandboxLimits, SqlFailed, SqlRefused, SqlResult


def open_sandbox(db: str | Path | None = None, *, limits: SandboxLimits | None = None) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB reading the store's published data, locked down (``Store.sandbox``)."""
    limits = limits or SandboxLimits()
    config: dict[str, Any] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "memory_limit": limits.memory_limit,
        "threads": limits.threads,
        "max_temp_directory_size": "0B",
        # no temp directory at all: DuckDB keeps its temp directory writable after external access is
        # switched off, so a COPY ... TO '.tmp/x' would otherwise still write a file
        "temp_directory": "",
    }
    return rdb.open(db).sandbox(config)


class _Watchdog:
    """Interrupts a connection's running query once ``timeout_s`` has passed."""

    def __init__(self, con: duckdb.DuckDBPyConnection, timeout_s: float) -> None:
        self._con = con
        self._done = threading.Event()
        self.fired = False
        self.deadline = time.monotonic() + timeout_s
        self._thread = threading.Thread(target=self._run, args=(timeout_s,), daemon=True, name="sql-watchdog")

    def _run(self, timeout_s: float) -> None:
        if not self._done.wait(timeout_s):
            self.fired = True
            self._con.interrupt()

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    @property
    def is_expired(self) -> bool:
        return self.fired or time.monotonic() > self.deadline


def _engine_error(exc: BaseException, dog: _Watchdog | None, limits: SandboxLimits) -> SqlFailed:
    text = str(exc)
    if isinstance(exc, MemoryError):  # ArrowMemoryError: the worker's own limit, beyond DuckDB's
        return SqlFailed(
            f"the statement needed more than the sandbox worker's {limits.worker_memory_bytes() / 1024**2:,.0f} MB "
            "(Python, Arrow and DuckDB together) and was stopped; aggregate in SQL or add a LIMIT",
            kind="memory",
        )
    if (dog is not None and dog.fired) or "INTERRUPT" in text:
        return SqlFailed(f"the statement ran longer than {limits.timeout_s:g} s and was stopped", kind="timeout")
    if isinstance(exc, duckdb.OutOfMemoryException) or "Out of Memory" in text:
        return SqlFailed(
            f"the statement needed more memory than the sandbox allows (DuckDB {limits.memory_limit}, the worker "
            f"{limits.worker_memory_bytes() / 1024**2:,.0f} MB in all) and was stopped: {text.splitlines()[0]}",
            kind="memory",
        )
    if isinstance(exc, duckdb.PermissionException) or "Permission Error" in text:
        return SqlFailed(f"refused by the engine (no file, network or extension access): {text}", kind="permission")
    if "read-only" in text:
        return SqlFailed(f"refused by the engine (the database is read-only): {text}", kind="permission")
    return SqlFailed(text)


@dataclass
class _Run:
    """What ``_stream`` learnt about a run (filled in as it goes, so a timeout keeps what was seen)."""

    statement: str = ""
    schema: pa.Schema | None = None
    duck_types: tuple[tuple[str, str], ...] = ()
    elapsed_s: float = 0.0


def _relation(con: duckdb.DuckDBPyConnection, statement: str) -> duckdb.DuckDBPyRelation:
    """A lazy relation for the statement (it streams, unlike ``execute``).

    ``con.sql`` drops the ``LINE n: ... ^`` position from binder errors; binding again through
    ``execute`` fails the same way before anything runs, and its message carries the position.
    """
    try:
        return con.sql(statement)
    except (duckdb.BinderException, duckdb.CatalogException) as exc:
        try:
            con.execute(statement)
        except (duckdb.BinderException, duckdb.CatalogException) as located:
            raise located from None
        raise exc


def _denied(db: str | Path | None) -> frozenset[str]:
    """Views whose SQL names a server path (an exported Parquet folder's views are read_parquet('<folder>/...'))."""
    return VIEW_SQL_VIEWS if rdb.open(db).view_sql_names_paths else frozenset()


def check_in_child(sql: str, *, limits: SandboxLimits, denied: frozenset[str] = frozenset()) -> str:
    """``check_statement`` in a forked child process; the statement to run, or the child's refusal or error.

    DuckDB's allocator keeps the address space a parse took (``json_serialize_sql`` of a 200 KB IN list: about
    330 MB, of the worker's 1 GB), and the run of the statement then had that much less: a large constant IN
    list failed with a memory error in about one run of three. In a child, that memory goes when the child exits.
    The child inherits the worker's limits, and an alarm ends it if it hangs.

    Raises:
        SqlRefused: the statement is not allowed.
        SqlFailed: a syntax error, or the check itself ran out of memory or time.
    """
    import os
    import pickle
    import signal

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: check, write the verdict, and leave without the parent's exit handlers
        verdict: tuple[str, str]
        try:
            os.close(read_fd)
            signal.alarm(int(limits.timeout_s + limits.startup_grace_s) + 1)
            verdict = ("ok", check_statement(sql, limits=limits, denied=denied)[0])
        except SqlRefused as exc:
            verdict = ("refused", exc.reason)
        except SqlFailed as exc:
            verdict = ("failed", exc.message)
        except BaseException as exc:  # noqa: BLE001 - the child's boundary: MemoryError and the like
            verdict = ("memory" if isinstance(exc, MemoryError) else "error", type(exc).__name__)
        try:
            with os.fdopen(write_fd, "wb") as out:
                out.write(pickle.dumps(verdict))
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as inp:
        data = inp.read()
    _, status = os.waitpid(pid, 0)
    # our own child writing into our own pipe: trusted
    kind, value = pickle.loads(data) if data else ("stopped", str(status))  # noqa: S301
    if kind == "ok":
        return str(value)
    if kind == "refused":
        raise SqlRefused(value)
    if kind == "failed":
        raise SqlFailed(value)
    raise SqlFailed(
        f"checking the statement needed more than the sandbox worker's {limits.worker_memory_bytes() / 1024**2:,.0f}"
        " MB or more time than it has, and was stopped; use a shorter statement (a smaller IN list)",
        kind="memory",
    )


def _stream(
    sql: str,
    *,
    db: str | Path | None,
    limits: SandboxLimits,
    consume: Callable[[pa.RecordBatch], bool],
    run: _Run | None = None,
    check_apart: bool = False,
) -> _Run:
    """Check and run ``sql``, passing Arrow batches to ``consume`` until it returns False (``check_apart``: the
    check in a child process, ``check_in_child``; the sandbox worker does that).

    Raises:
        SqlRefused: the statement is not allowed (nothing ran).
        SqlFailed: DuckDB's error, the timeout, the memory limit or the byte cap.
    """
    run = run if run is not None else _Run()
    if check_apart:  # the whole check in a child process: what the parse held is not held by the run's process
        run.statement = check_in_child(sql, limits=limits, denied=_denied(db))
    else:
        check_statement(sql, is_deep=False, limits=limits)  # refuse writes, settings, ... before opening anything
    con = open_sandbox(db, limits=limits)
    try:
        if not check_apart:
            run.statement, _ = check_statement(sql, con=con, limits=limits, denied=_denied(db))
        start = time.perf_counter()
        dog: _Watchdog | None = None
        try:
            with _Watchdog(con, limits.timeout_s) as dog:
                rel = _relation(con, run.statement)
                run.duck_types = tuple((c, str(t)) for c, t in zip(rel.columns, rel.types, strict=True))
                reader = rel.to_arrow_reader(limits.batch_rows)
                run.schema = reader.schema
                for batch in reader:
                    if dog.is_expired:  # between batches the interrupt may not surface as an error
                        raise SqlFailed(
                            f"the statement ran longer than {limits.timeout_s:g} s and was stopped", kind="timeout"
                        )
                    if not consume(batch):
                        break
        except (duckdb.Error, pa.ArrowException, OSError) as exc:
            raise _engine_error(exc, dog, limits) from exc
        finally:
            run.elapsed_s = time.perf_counter() - start
        return run
    finally:
        con.close()


def _within_bytes(batch: pa.RecordBatch, budget: int) -> pa.RecordBatch:
    """The longest head of ``batch`` whose buffers take at most ``budget`` bytes (binary search on rows)."""
    if batch.nbytes <= budget:
        return batch
    lo, hi = 0, batch.num_rows  # invariant: head(lo) fits, head(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if batch.slice(0, mid).nbytes <= budget else (lo, mid)
    return batch.slice(0, lo)


def _run_in_process(
    sql: str, *, db: str | Path | None = None, limits: SandboxLimits | None = None, check_apart: bool = False
) -> SqlResult:
    """Run one statement in the sandbox; keep at most ``limits.max_rows`` rows, count the rest.

    When the timeout hits after the displayed rows were collected, the result is returned with
    ``is_count_exact = False`` instead of failing: the user still sees the first page.
    """
    limits = limits or SandboxLimits()
    kept: list[pa.RecordBatch] = []
    counts = {"kept": 0, "seen": 0, "bytes": 0, "is_full": False}

    def consume(batch: pa.RecordBatch) -> bool:
        counts["seen"] += batch.num_rows
        room = limits.max_rows - counts["kept"]
        if room > 0 and not counts["is_full"]:
            part = _within_bytes(batch.slice(0, room), limits.max_result_bytes - counts["bytes"])
            counts["is_full"] = part.num_rows < min(room, batch.num_rows)
            kept.append(part)
            counts["kept"] += part.num_rows
            counts["bytes"] += part.get_total_buffer_size()
        return True

    run = _Run()
    is_exact = True
    try:
        _stream(sql, db=db, limits=limits, consume=consume, run=run, check_apart=check_apart)
    except SqlFailed as exc:
        if exc.kind != "timeout" or (counts["kept"] < limits.max_rows and not counts["is_full"]):
            raise
        is_exact = False
    table = pa.Table.from_batches(kept, schema=run.schema) if run.schema is not None else pa.table({})
    return SqlResult(
        sql=run.statement,
        df=_to_pandas(table),
        n_rows=counts["seen"],
        is_truncated=counts["seen"] > counts["kept"],
        is_count_exact=is_exact,
        elapsed_s=run.elapsed_s,
        column_types=run.duck_types,
    )


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow to pandas; exotic types (intervals, unions) fall back to their text form."""
    try:
        return table.to_pandas()
    except (pa.ArrowException, TypeError, ValueError):
        cols = {
            name: [None if v is None else str(v) for v in table.column(name).to_pylist()] for name in table.column_names
        }
        return pd.DataFrame(cols)


def _export_in_process(
    sql: str,
    fmt: str,
    dest: Path,
    *,
    db: str | Path | None = None,
    limits: SandboxLimits | None = None,
    check_apart: bool = False,
) -> int:
    """Write the FULL result of ``sql`` to ``dest`` as CSV or Parquet, batch by batch, under the sandbox and a byte
    cap; return the file's size. Nothing of the result is held beyond one batch."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if fmt not in ("csv", "parquet"):
        raise ValueError(f"fmt must be 'csv' or 'parquet', not {fmt!r}")
    limits = limits or SandboxLimits()
    writers: list[Any] = []
    with open(dest, "wb") as out:

        def open_writer(schema: pa.Schema) -> Any:
            return pacsv.CSVWriter(out, schema) if fmt == "csv" else pq.ParquetWriter(out, schema)

        def consume(batch: pa.RecordBatch) -> bool:
            batch = _exportable(batch, is_csv=fmt == "csv")
            if fmt == "csv":  # formula prefixes neutralised for spreadsheets; Parquet keeps raw values
                batch = csvsafe.csv_safe_batch(batch)
            if not writers:
                writers.append(open_writer(batch.schema))
            writers[0].write_batch(batch)
            if out.tell() > limits.max_export_bytes:
                raise SqlFailed(
                    f"the result is larger than {limits.max_export_bytes / 1e6:.0f} MB; add a LIMIT or aggregate",
                    kind="too_large",
                )
            return True

        run = _stream(sql, db=db, limits=limits, consume=consume, check_apart=check_apart)
        if not writers:  # no rows: still write the header / an empty file with the columns
            empty = pa.RecordBatch.from_pylist([], schema=run.schema or pa.schema([]))
            empty = _exportable(empty, is_csv=fmt == "csv")
            writers.append(open_writer((csvsafe.csv_safe_batch(empty) if fmt == "csv" else empty).schema))
        writers[0].close()
        return out.tell()


def _needs_text(data_type: pa.DataType, *, is_csv: bool) -> bool:
    """Types a writer cannot store: Parquet lacks null, union, interval; CSV also nested, binary, extension."""
    if pa.types.is_null(data_type) or pa.types.is_union(data_type) or pa.types.is_interval(data_type):
        return True
    if is_csv:
        return (
            pa.types.is_nested(data_type)
            or pa.types.is_binary(data_type)
            or pa.types.is_large_binary(data_type)
            or isinstance(data_type, pa.BaseExtensionType)
        )
    return False


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, default=str)
    return str(value)


def _exportable(batch: pa.RecordBatch, *, is_csv: bool) -> pa.RecordBatch:
    """Columns a writer cannot store become text (nested values as JSON, bytes as hex)."""
    arrays, fields = [], []
    for f, col in zip(batch.schema, batch.columns, strict=True):
        if _needs_text(f.type, is_csv=is_csv):
            col = pa.array([_as_text(v) for v in col.to_pylist()], type=pa.string())
            f = pa.field(f.name, pa.string())
        arrays.append(col)
        fields.append(f)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def result_csv(result: SqlResult) -> str:
    """CSV text of the rows a result holds (formula prefixes neutralised, see ``analytics.csvsafe``)."""
    return csvsafe.csv_text(result.df)


def result_json(result: SqlResult) -> dict[str, Any]:
    return {
        "columns": [c for c, _ in result.column_types],
        "types": [t for _, t in result.column_types],
        "rows": json.loads(result.df.to_json(orient="values", date_format="iso", default_handler=str)),
        "n_rows": result.n_rows,
        "is_truncated": result.is_truncated,
        "is_count_exact": result.is_count_exact,
        "elapsed_s": round(result.elapsed_s, 4),
    }
