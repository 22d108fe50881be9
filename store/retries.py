"""Which run a retry supersedes: the one definition, read by every page and by ingest.

Inspect's ``eval_retry`` keeps the errored log's ``eval.task_id`` (an eval set's retries and a plain
``inspect eval-retry`` alike; every other eval, also of the same task, gets a new one), so a run is superseded by a
later Inspect log of the same task id (``inspect_created``, kept in the run's ``extra``). The latest of several
retries is the one that stands.

``RETRY_OF_SQL`` relates a run ``later`` to a run ``r`` it retries; ``IS_SUPERSEDED_SQL`` is true for a run ``r`` of
the ``runs`` table that a stored run retries. The leaderboard (``analytics/sql/leaderboard_runs.sql``), run health,
TMF, Version diff and Progress read them; ``retry_notes`` says at ingest (the CLI's line, the Upload preview) which
stored run a file's run retries, or which stored run supersedes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from store.query import query_rows

RETRY_OF_SQL = (
    "later.run_id <> r.run_id"
    " AND json_extract_string(later.extra, '$.inspect_task_id') = json_extract_string(r.extra, '$.inspect_task_id')"
    " AND json_extract_string(later.extra, '$.inspect_created') > json_extract_string(r.extra, '$.inspect_created')"
)
IS_SUPERSEDED_SQL = f"EXISTS (SELECT 1 FROM runs later WHERE later.benchmark = r.benchmark AND {RETRY_OF_SQL})"


def latest_key(table: str) -> str:
    """The key by which the latest of several runs (``table``'s alias) is the one that stands: its Inspect creation
    time, then its id (for ``arg_max``)."""
    return f"[json_extract_string({table}.extra, '$.inspect_created'), {table}.run_id]"


# The file's runs (``f``: id, benchmark, extra as given) against the stored runs of their benchmarks, both ways:
# the stored run each one retries (the latest before it) and the stored retry that supersedes it (the latest).
_NOTES_SQL = f"""
WITH f AS (
    SELECT unnest($run_ids::VARCHAR[]) AS run_id, unnest($benchmarks::VARCHAR[]) AS benchmark,
           unnest($extras::VARCHAR[]) AS extra
),
retried AS (
    SELECT later.run_id, arg_max(r.run_id, {latest_key("r")}) AS other
    FROM f later JOIN runs r ON r.benchmark = later.benchmark AND {RETRY_OF_SQL}
    GROUP BY later.run_id
),
superseding AS (
    SELECT r.run_id, arg_max(later.run_id, {latest_key("later")}) AS other
    FROM f r JOIN runs later ON later.benchmark = r.benchmark AND {RETRY_OF_SQL}
    GROUP BY r.run_id
)
SELECT f.run_id, f.benchmark, rt.other AS retry_of, sp.other AS superseded_by
FROM f LEFT JOIN retried rt USING (run_id) LEFT JOIN superseding sp USING (run_id)
WHERE rt.other IS NOT NULL OR sp.other IS NOT NULL
ORDER BY f.run_id
"""


def retry_keys(runs: Mapping[str, Sequence[Any]]) -> list[tuple[str, str, str]]:
    """The runs of a file (a bundle's ``runs`` columns) that can retry or be retried: (run id, benchmark, extra as
    JSON text) of those whose ``extra`` names an Inspect task id and creation time. Read in Python: a file without
    one (any log but Inspect's) asks the store nothing."""
    keys = []
    for run_id, benchmark, extra in zip(runs["run_id"], runs["benchmark"], runs["extra"], strict=True):
        if not isinstance(extra, str) or "inspect_task_id" not in extra:
            continue
        fields = json.loads(extra)
        if isinstance(fields, dict) and fields.get("inspect_task_id") and fields.get("inspect_created"):
            keys.append((str(run_id), str(benchmark), extra))
    return keys


def retry_notes(con: duckdb.DuckDBPyConnection, keys: Sequence[tuple[str, str, str]]) -> tuple[str, ...]:
    """For each run of ``keys`` (``retry_keys``) that retries a stored run or that a stored run retries, one phrase:
    "run X: retry of run Y (benchmark)" or "run X: superseded by stored run Y (benchmark), its retry" (the rule of
    ``RETRY_OF_SQL``; a run's own stored row is not its retry). One statement; none without keys."""
    if not keys:
        return ()
    rows = query_rows(
        con,
        _NOTES_SQL,
        {
            "run_ids": [k[0] for k in keys],
            "benchmarks": [k[1] for k in keys],
            "extras": [k[2] for k in keys],
        },
    )
    notes = []
    for run_id, benchmark, retry_of, superseded_by in rows:
        if retry_of is not None:
            notes.append(f"run {run_id}: retry of run {retry_of} ({benchmark})")
        if superseded_by is not None:
            notes.append(f"run {run_id}: superseded by stored run {superseded_by} ({benchmark}), its retry")
    return tuple(notes)
