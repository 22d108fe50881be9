"""Helpers behind the Upload page: preview (validate without writing), ingest, and the ingest history.

A rejected file writes nothing to the database (the CLI contract), so failed uploads are remembered
in a small sidecar file beside the database, ``<db>.uploads.jsonl`` (the newest ``MAX_SIDECAR``
entries), never in the database itself.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import duckdb
import pandas as pd

from ingest.csv_long import companion_of, header_of
from ingest.errors import IngestError
from ingest.formats import FORMATS
from ingest.inspect_log import eval_set_companion
from ingest.known import load_known
from ingest.pipeline import FileResult, choose_format, ingest_file, prepare_file, read_input
from store import Location, query_df, writer
from store import open as open_store
from store.retries import retry_keys, retry_notes

MAX_SIDECAR = 500
FIRST_ERRORS = 5


def is_read_only() -> bool:
    """True when uploads and deletions are switched off (env ``RUNLENS_READ_ONLY=1``)."""
    return os.environ.get("RUNLENS_READ_ONLY", "").strip().lower() in ("1", "true", "yes", "on")


def upload_limit_mb() -> int:
    """Largest accepted upload in MB (env ``RUNLENS_UPLOAD_MAX_MB``, default 100: what a 1 GiB upload worker can
    validate, about a sixth of its memory; larger files go in with ``python -m ingest``)."""
    try:
        return max(1, int(os.environ.get("RUNLENS_UPLOAD_MAX_MB", "100")))
    except ValueError:
        return 100


def upload_total_mb() -> int:
    """Most MB of uploads one page session keeps at once (env ``RUNLENS_UPLOAD_TOTAL_MB``, default 200): Streamlit
    holds every file dropped on the page in the server's memory, and the server has one memory budget."""
    try:
        return max(1, int(os.environ.get("RUNLENS_UPLOAD_TOTAL_MB", "200")))
    except ValueError:
        return 200


def within_upload_limits(sizes: list[int]) -> list[str]:
    """For each upload of ``sizes`` (bytes, in order): "" when kept, else why it is refused (too large, or past
    the total that one session may hold)."""
    each, total = upload_limit_mb() * 1024 * 1024, upload_total_mb() * 1024 * 1024
    verdicts, kept = [], 0
    for size in sizes:
        if size > each:
            verdicts.append(f"larger than {upload_limit_mb()} MB; not read (use `python -m ingest` for it)")
        elif kept + size > total:
            verdicts.append(f"past the {upload_total_mb()} MB the page takes at once; not read")
        else:
            kept += size
            verdicts.append("")
    return verdicts


@dataclass(frozen=True)
class Preview:
    """What a file would bring, found without writing anything."""

    file: str
    sha256: str
    format: str
    outcome: str  # ready | duplicate | invalid | companion
    n_runs: int = 0
    n_tasks: int = 0
    n_attempts: int = 0
    n_steps: int = 0
    errors: tuple[str, ...] = field(default_factory=tuple)
    n_errors: int = 0
    runs: tuple[tuple[str, str, str], ...] = ()  # what it would create: (run_id, benchmark, agent)
    rescores: tuple[str, ...] = ()  # runs whose scores it would replace by a new revision (a re-scored log)
    retries: tuple[str, ...] = ()  # its runs that retry a stored run, or that a stored retry supersedes (in words)
    n_partial: int = 0  # attempts it would store from a trace without its root span (marked ``trace_partial``)


def _options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if v}


def preview_file(con: duckdb.DuckDBPyConnection, path: Path, *, fmt: str = "auto", **options: Any) -> Preview:
    """Detect, parse and validate one file against the database on ``con`` (read-only is enough).

    The same checks as an ingest (size limit, format, duplicate content, every record), nothing written.
    """
    opts = _options(options)
    sha = ""
    try:
        data = read_input(path)
        sha = hashlib.sha256(data).hexdigest()
        chosen = choose_format(path, data, fmt)
    except IngestError as exc:
        return Preview(
            path.name,
            sha,
            fmt,
            "invalid",
            errors=tuple(str(p) for p in exc.problems[:FIRST_ERRORS]),
            n_errors=len(exc.problems),
        )
    if chosen.name == "csv" and not opts.get("mapping") and companion_of(header_of(data)):
        return Preview(
            path.name,
            sha,
            "csv",
            "companion",
            errors=(f"companion file of the {companion_of(header_of(data))} mapping: read with its results file",),
        )
    if chosen.name == "inspect" and eval_set_companion(path) is not None:
        return Preview(
            path.name, sha, "inspect", "companion", errors=(f"{eval_set_companion(path)}: read with the set's logs",)
        )
    known = load_known(con)
    prepared = prepare_file(path, known.copy(), fmt=chosen.name, data=data, **opts)
    if prepared.format == "otlp":  # spans of traces stored already: shown as the ingest would merge them
        from dataclasses import replace

        from ingest.otlp.filemerge import read_merged

        try:
            merged = read_merged(con, prepared, known, opts)
        except IngestError as exc:
            merged, prepared = None, replace(prepared, error=exc, bundle=None)
        if merged is not None and merged.bundle is None:
            return Preview(path.name, sha, "otlp", "duplicate")
        if merged is not None:
            prepared = replace(prepared, bundle=merged.bundle, error=None)
    if prepared.error is not None:
        problems = prepared.error.problems
        return Preview(
            path.name,
            sha,
            prepared.format,
            "invalid",
            n_errors=len(problems),
            errors=tuple(str(p) for p in problems[:FIRST_ERRORS]),
        )
    if prepared.duplicate_of is not None:
        return Preview(path.name, sha, prepared.format, "duplicate")
    bundle = prepared.bundle
    assert bundle is not None
    return Preview(
        path.name,
        sha,
        prepared.format,
        "ready",
        len(bundle.runs["run_id"]),
        len(bundle.tasks["task_id"]),
        bundle.n_attempts,
        bundle.n_steps,
        runs=tuple(
            (str(r), str(b), str(a))
            for r, b, a in zip(bundle.runs["run_id"], bundle.runs["benchmark"], bundle.runs["agent"], strict=True)
        ),
        rescores=tuple(bundle.revised_runs),
        n_partial=bundle.n_partial,
        retries=retry_notes(con, retry_keys(bundle.runs)),  # the rule the pages read (store.retries)
    )


def ingest_one(
    path: Path, *, db: Location = None, fmt: str = "auto", memory_limit: str | None = None, **options: Any
) -> FileResult:
    """Ingest one file (one transaction); a rejection is returned, and remembered in the sidecar.

    Args:
        memory_limit: DuckDB's memory limit for the write (the upload worker keeps it below its own limit).
    """
    opts = _options(options)
    with writer(db) as con:
        if memory_limit is not None:
            con.execute("SET memory_limit = ?", [memory_limit])
        try:
            result = ingest_file(con, path, fmt=fmt, **opts)
        except IngestError as exc:
            result = FileResult(str(path), fmt, "failed", error=exc)
    if result.outcome == "failed":
        record_failure(path, result, db=db)
    return result


def sidecar_path(db: Location = None) -> Path:
    """The failed-upload history file beside the database (a team store's is under data/, named by its catalog)."""
    return open_store(db).sidecar_path(".uploads.jsonl")


def record_failure(path: Path, result: FileResult, *, db: Location = None) -> None:
    """Append a rejected upload to the sidecar (keeping the newest MAX_SIDECAR entries)."""
    try:
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        sha = ""
    problems = result.error.problems if result.error is not None else []
    entry = {
        "file": path.name,
        "content_hash": sha,
        "format": result.format,
        "outcome": "failed",
        "started_at": dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(timespec="seconds"),
        "n_errors": len(problems),
        "errors": "\n".join(str(p) for p in problems[:FIRST_ERRORS]),
    }
    side = sidecar_path(db)
    lines = side.read_text(encoding="utf-8").splitlines() if side.exists() else []
    lines = (lines + [json.dumps(entry)])[-MAX_SIDECAR:]
    side.write_text("\n".join(lines) + "\n", encoding="utf-8")


def failed_uploads(db: Location = None) -> pd.DataFrame:
    """Rejected uploads from the sidecar (newest first)."""
    side = sidecar_path(db)
    rows = []
    if side.exists():
        for line in side.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a torn last line after a crash is not worth failing the page for
    df = pd.DataFrame(rows, columns=["file", "content_hash", "format", "outcome", "started_at", "n_errors", "errors"])
    return df.iloc[::-1].reset_index(drop=True)


def ingest_history(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every file the database took in (or later released by deleting its runs), newest first."""
    return query_df(
        con,
        "SELECT path AS file, content_hash, format, n_runs, n_tasks, n_attempts, n_steps, "
        "started_at, round(seconds, 2) AS seconds, outcome, errors, is_demo "
        "FROM ingest_log ORDER BY started_at DESC NULLS LAST, file_id DESC",
    )


def history_table(history: pd.DataFrame) -> pd.DataFrame:
    """``ingest_history`` as people read it: the file's name (its folder apart), a short hash, counts, when and how
    it went, ``–`` for what is missing; the raw frame (full paths and hashes) stays the download."""

    def text(value: Any) -> str:
        return "–" if value is None or value is pd.NA or value != value or value == "" else str(value)

    def count(value: Any) -> str:  # 200,000 attempts, as every other table writes a count
        return "–" if text(value) == "–" else f"{int(value):,}"

    paths = history["file"].astype(str)
    return pd.DataFrame(
        {
            "File": paths.map(lambda p: PurePath(p).name or p),
            "Folder": paths.map(lambda p: str(PurePath(p).parent) if PurePath(p).name else "–"),
            "Hash": history["content_hash"].map(lambda h: text(h)[:12] + "…" if text(h) != "–" else "–"),
            "Format": history["format"].map(text),
            "Runs": history["n_runs"].map(count),
            "Tasks": history["n_tasks"].map(count),
            "Attempts": history["n_attempts"].map(count),
            "Steps": history["n_steps"].map(count),
            "Ingested (UTC)": pd.to_datetime(history["started_at"]).dt.strftime("%Y-%m-%d %H:%M").fillna("–"),
            "Seconds": history["seconds"].map(lambda v: "–" if v is None or v != v else f"{float(v):.2f}"),
            "Outcome": history["outcome"].map(text),
            "Demo": history["is_demo"].map(lambda v: "demo" if v is True else ""),
        }
    )


def run_list(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Runs with their benchmark, agent and attempt count (for the delete picker). The count is the one the writer
    keeps per run (``run_judge_counts``, migration 009), not a count of every attempt of the store."""
    return query_df(
        con,
        "SELECT r.run_id, r.benchmark, r.agent, r.eval_date, coalesce(j.n_attempts, 0)::BIGINT AS n_attempts "
        "FROM runs r LEFT JOIN run_judge_counts j USING (run_id) ORDER BY r.benchmark, r.run_id",
    )


def deletions(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Recorded run deletions (audit_log), newest first."""
    return query_df(
        con, "SELECT at_utc, subject AS run_id, detail FROM audit_log WHERE action = 'run_deleted' ORDER BY at_utc DESC"
    )


def format_names() -> list[str]:
    """``auto`` and every registered format."""
    return ["auto", *FORMATS]
