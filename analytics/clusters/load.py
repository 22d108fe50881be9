"""What a failure's cluster is computed from: the informative part of each failed attempt, and its cached vector.

The **document** of a failed attempt (``failure_documents``) is what went wrong, not the transcript:

* every step with an **error**, and every tool result that **reads as a failure** (``FAILING_RESULT``: it names an
  error, an exception, a refusal, an HTTP 4xx/5xx status, something missing, says so in a structured field
  (``"ok": false``), or it is empty; decided on its text without the code it shows, a listing's numbered lines or
  a diff's: ``LISTING_LINE``, ``DIFF_LINE``), unless the agent **recovered** from it (the same tool succeeded
  later) or **moved past** it (``MOVED_PAST_TOOLS`` other tools succeeded later: ``find``'s "Permission denied"
  before an edit and a passing test run): its
  text, at most the last ``MAX_ERRORS``, except that a **consequence** gives way to its cause: when the last is a
  long output read by its failure lines (a test run's) right after a failure of another command (``what``: the
  tool and its ``command`` argument's first word; not an empty result, ``EMPTY_RESULT``), that earlier failure is
  kept (an edit refused by a read-only file system, then the tests failing as before the edit); the final answer
  then only as it compares with the reference (the answer after a failed tool is a consequence, mostly an
  apology); a JSON result's keys and strings are its text (``unjson``); ``IndentationError`` and ``TabError`` are
  named with their family, ``SyntaxError``, and a text of a family several tools word their own way with its name
  (``FAMILIES``: "timed out", "edit not applied", "rate limited", "build failed", "element not found", "click
  intercepted", "browser crashed"); a traceback (or a frame alone, Python's report of a script that does not
  parse) is read by its exception line and a long text (a test runner's output) by the lines that carry its
  failure (``FAILURE_LINES``), not by its head or last line, and without such lines by its end (a run killed for
  its time after pytest's header); a harness's **footer** (the lines it closes every observation
  with, "(Current directory: /testbed)", a shell prompt: ``FOOTER_LINES``) is cut from the end of a text first; a
  crashed attempt's last message (a harness saying why it stopped) is such a step too;
* a **loop** (the attempt ran out of its budget, status ``timeout``, repeating tool calls: ``LOOP_REPEATS``) is
  "repeated call" and the status alone, whatever it kept hitting or said when it was stopped;
* a **question to the user** (a final answer with a sentence ending in "?", or asking for more details, to clarify
  or confirm, not an offer of more work: ``asks_the_user``) is "the final answer asks the user a question" and
  how it compares with the reference alone, whatever failed before it or was seen last;
* without such a step: the **final answer against the reference** ("final answer: 6.14 ad groups (a different
  number than the reference)") and the **last tool result**, what the agent saw before it answered ("last result:
  sold out"), leaving out results that are code alone (a listing's numbered lines, a diff: the file an agent
  viewed, the patch it submitted, its own code echoed back, not an outcome; ``prose_sql`` says ``code``); after a
  repeated call within the budget, as what it kept seeing ("repeated call: report status: pending");
* what the **trajectory** says, in a few words: ``no tool called``, ``repeated call`` (a tool called again with the
  same arguments), ``skipped <tools>`` (reference tools never called);
* the attempt's **status** when it is not ``completed`` (a step budget, a crash).

Then **boilerplate** is cut: a segment (one of the lines above, digits and ids masked) found in at least
``BOILERPLATE_SHARE`` of the failures says nothing about why one failure differs from another and is dropped
(a document left empty keeps its segments). Plans, account look-ups and the task's own text never enter.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics.clusters.compute_summary import LABEL_PROMPT_VERSION, ClusterError, Clusters, build_clusters
from analytics.clusters.documents import (
    BOILERPLATE_SHARE,
    failure_documents,
    segments_of,
)
from analytics.clusters.reading import (
    CODE_ONLY,
    DIFF_HUNK,
    DIFF_LINE,
    EMPTY_RESULT,
    FAILING_RESULT,
    FAILURE_LINES,
    LISTING,
    LISTING_LINE,
    back_sql,
    footer_key,
    last_lines,
    lines_sql,
    peel_sql,
    prose_sql,
    shown_sql,
    split_sql,
)
from analytics.embeddings import STATIC_MODEL
from store import query_df

MAX_ERRORS = 1
MOVED_PAST_TOOLS = 2  # a failure after which this many other tools succeeded: the agent moved past it
STEP_CHARS = 240
ANSWER_CHARS = 240

_FAILURE_SQL_TEMPLATE = r"""
WITH f AS (
    SELECT a.attempt_id, a.run_id, a.task_id, a.sample, r.agent, r.agent_version, r.eval_date, a.answer, a.status,
           t.reference_answer, t.reference_trajectory
    FROM attempts a JOIN runs r USING (run_id)
    LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
    WHERE r.benchmark = $benchmark AND ($run_id IS NULL OR a.run_id = $run_id) AND a.passed = false
),
s0 AS (
    SELECT s.attempt_id, s.step, s.kind, s.tool, s.args::VARCHAR AS args, s.error AS raw_error,
           coalesce(s.result, tx.text, s.content) AS raw_body,
           f.status = 'crashed' AND s.step = max(s.step) OVER (PARTITION BY s.attempt_id)
               AS is_last_word  -- the last step of a crashed attempt: a harness's message there says why
    FROM steps s JOIN (SELECT attempt_id, status FROM f) f USING (attempt_id)
    LEFT JOIN texts tx ON tx.text_hash = s.result_hash  -- an equality only: a hash join (its text is used only
                                                        -- when result is null: coalesce below)
),
tails AS (  -- the last lines of each tool result of several lines, and each as a footer is recognised (``footer_key``)
    SELECT attempt_id, h, line, {footer_key} AS key
    FROM (SELECT attempt_id, hash(coalesce(raw_error, raw_body)) AS h, unnest({last_lines}) AS line
          FROM s0 WHERE kind = 'tool_call' AND contains(coalesce(raw_error, raw_body), chr(10)))
),
feet AS (  -- a harness's footer (``FOOTER_LINES``): a line that closes two different results of the attempt, not a
           -- failure's (the test on the few lines that close two results only)
    SELECT attempt_id, list(key) AS feet
    FROM (SELECT attempt_id, key, list(DISTINCT lower(line)) AS lines FROM tails WHERE key <> ''
          GROUP BY ALL HAVING count(DISTINCT h) >= 2)
    WHERE NOT list_bool_or(list_transform(lines, l -> regexp_matches(l, $failing)))
    GROUP BY attempt_id
),
s AS (  -- each step's texts without their footer
    SELECT * EXCLUDE (feet, back_error, back_body) REPLACE ({peel_error} AS raw_error, {peel_body} AS raw_body)
    FROM (SELECT *, {back_error} AS back_error, {back_body} AS back_body FROM s0 LEFT JOIN feet USING (attempt_id))
),
x AS (  -- the lines of a long text or a traceback, and those of them that carry the failure (``FAILURE_LINES``)
    SELECT *, {lines_error}, {lines_body}
    FROM (SELECT *, {split_error}, {split_body} FROM s)
),
t AS (  -- what a step shows: its failure's own lines, not a runner's header or footer
    SELECT attempt_id, step, kind, tool, args, is_last_word,
           replace(left({shown_error}, $chars), chr(10), ' ') AS error,
           replace(left(raw_body, $chars), chr(10), ' ') AS body,
           CASE WHEN kind = 'tool_call' THEN {prose_body} END AS prose,  -- read of a tool's result only
           replace(left({shown_body}, $chars), chr(10), ' ') AS shown,
           coalesce({any_body_lines} > 0, false) AS has_failure_lines
    FROM x
),
r AS (
    SELECT *, coalesce(error, CASE WHEN kind = 'tool_call' AND (has_failure_lines
                                                                 OR regexp_matches(lower(coalesce(prose, '')), $failing))
                                   THEN shown
                                   WHEN kind = 'message' AND is_last_word AND trim(body) <> '' THEN shown END)
                  AS raw_failure
    FROM t
),
ok AS (  -- a failure the agent recovered from (the same tool succeeded later) or moved past (``MOVED_PAST_TOOLS``
         -- other tools succeeded later) is not why the attempt failed
    SELECT *, sum((kind = 'tool_call' AND raw_failure IS NULL AND step = last_ok)::INTEGER)
                  OVER (PARTITION BY attempt_id ORDER BY step ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)
                  AS n_past  -- the tools whose last call that did not fail comes after this step
    FROM (SELECT *, max(CASE WHEN kind = 'tool_call' AND raw_failure IS NULL THEN step END)
                        OVER (PARTITION BY attempt_id, tool) AS last_ok
          FROM r)
),
e AS (
    SELECT *, CASE WHEN raw_failure IS NOT NULL AND coalesce(last_ok, -1) < step
                   AND coalesce(n_past, 0) < $past THEN raw_failure END AS failure,
           row_number() OVER (PARTITION BY attempt_id, failure IS NULL ORDER BY step DESC) AS back,
           CASE WHEN failure IS NOT NULL  -- the command that failed: its tool and its command's first word
                THEN coalesce(tool, kind) || ' ' || coalesce(regexp_extract(args, '"command"\s*:\s*"([^" ]+)', 1), '')
           END AS what
    FROM ok
),
c AS (  -- a test run's failure right after another command's failure is its consequence (see the module docstring):
        -- ``consequence`` marks the test run, ``caused`` the failure before it
    SELECT *, back = 1 AND has_failure_lines AND lag(what) OVER w <> what
                  AND NOT regexp_matches(lower(lag(failure) OVER w), $empty) AS consequence,
              lead(back = 1 AND has_failure_lines) OVER w AND lead(what) OVER w <> what
                  AND NOT regexp_matches(lower(failure), $empty) AS caused
    FROM e WINDOW w AS (PARTITION BY attempt_id ORDER BY step)
),
agg AS (
    SELECT attempt_id,
           string_agg(coalesce(tool, kind) || ': ' || failure, chr(10) ORDER BY step)
               FILTER (WHERE failure IS NOT NULL AND (back <= $max_errors AND NOT coalesce(consequence, false)
                                                   OR caused)) AS errors,
           count(*) FILTER (WHERE kind = 'tool_call') AS n_tool_calls,
           list(DISTINCT tool) FILTER (WHERE tool IS NOT NULL) AS tools,
           count(*) FILTER (WHERE kind = 'tool_call') - count(DISTINCT tool || '|' || coalesce(args, ''))
               FILTER (WHERE kind = 'tool_call') AS n_repeated,
           arg_max(body, step) FILTER (WHERE kind = 'final') AS final_text,
           arg_max(shown, step) FILTER (WHERE kind = 'tool_call' AND raw_failure IS NULL AND prose <> '{code_only}')
               AS last_result  -- not code alone (a listing, a diff): the agent's own code echoed back
    FROM c GROUP BY attempt_id
),
codes AS (
    SELECT attempt_id, list(DISTINCT code ORDER BY code) AS codes
    FROM error_labels SEMI JOIN f USING (attempt_id) WHERE source = 'label' GROUP BY attempt_id
)
SELECT f.attempt_id, f.run_id, f.task_id, f.sample, f.agent, f.agent_version, f.eval_date,
       coalesce(c.codes, []) AS codes, f.status, left(coalesce(f.answer, g.final_text), $answer_chars) AS answer,
       f.reference_answer, f.reference_trajectory, g.errors,
       coalesce(g.n_tool_calls, 0) AS n_tool_calls, coalesce(g.n_repeated, 0) AS n_repeated, g.tools,
       g.last_result
FROM f LEFT JOIN agg g USING (attempt_id) LEFT JOIN codes c USING (attempt_id)
ORDER BY f.run_id, f.task_id, f.sample
"""

_FAILURE_SQL = (
    _FAILURE_SQL_TEMPLATE.replace("{last_lines}", last_lines("coalesce(raw_error, raw_body)"))
    .replace("{footer_key}", footer_key("line"))
    .replace("{back_error}", back_sql("raw_error"))
    .replace("{back_body}", back_sql("raw_body"))
    .replace("{peel_error}", peel_sql("raw_error", "back_error"))
    .replace("{peel_body}", peel_sql("raw_body", "back_body"))
    .replace("{split_error}", split_sql("raw_error", "el"))
    .replace("{split_body}", split_sql("raw_body", "bl"))
    .replace("{lines_error}", lines_sql("el", "e_"))
    .replace("{lines_body}", lines_sql("bl", "b_"))
    .replace("{shown_error}", shown_sql("raw_error", "el", "e_"))
    .replace("{shown_body}", shown_sql("raw_body", "bl", "b_"))
    .replace("{prose_body}", prose_sql("raw_body"))
    .replace("{code_only}", CODE_ONLY)
    .replace("{any_body_lines}", " + ".join(f"len(b_{kind})" for kind in FAILURE_LINES))
)


def failure_frame(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    run_id: str | None = None,
    attempt_ids: np.ndarray | None = None,
) -> pd.DataFrame:
    """One row per failed attempt with the raw pieces its document is made of (see ``failure_documents``); with
    ``attempt_ids``, of those failed attempts only."""
    import pyarrow as pa

    params = {
        "benchmark": benchmark,
        "run_id": run_id,
        "chars": STEP_CHARS,
        "answer_chars": ANSWER_CHARS,
        "max_errors": MAX_ERRORS,
        "failing": FAILING_RESULT,
        "past": MOVED_PAST_TOOLS,
        "listing": LISTING,
        "listing_line": LISTING_LINE,
        "hunk": DIFF_HUNK,
        "diff": DIFF_LINE,
        "empty": EMPTY_RESULT,
    }
    if attempt_ids is None:
        return query_df(con, _FAILURE_SQL, params)
    con.register("_rl_fids", pa.table({"attempt_id": pa.array(np.asarray(attempt_ids, dtype=np.int64))}))
    try:
        return query_df(con, _FAILURE_SQL.replace(_FAILED, _FAILED + _ONLY_IDS), params)
    finally:
        con.unregister("_rl_fids")


_FAILED = "AND a.passed = false"
_ONLY_IDS = " AND a.attempt_id IN (SELECT attempt_id FROM _rl_fids)"


def failure_texts(con: duckdb.DuckDBPyConnection, *, benchmark: str, run_id: str | None = None) -> pd.DataFrame:
    """One row per failed attempt: ids, run, agent version, evaluation date, the log's codes, and ``text``: the
    document that is embedded."""
    raw = failure_frame(con, benchmark=benchmark, run_id=run_id)
    keep = ["attempt_id", "run_id", "task_id", "sample", "agent", "agent_version", "eval_date", "codes"]
    return raw[keep].assign(text=failure_documents(raw))


def read_vectors(con: duckdb.DuckDBPyConnection, hashes: list[str], *, model: str) -> tuple[np.ndarray, np.ndarray]:
    """Vectors of the distinct ``hashes`` cached for ``model``, as one float32 matrix read through Arrow (no Python
    object per vector), and for each row the index in ``hashes`` it belongs to."""
    import pyarrow as pa

    keys = pa.table({"text_hash": pa.array(hashes, pa.string()), "ix": pa.array(np.arange(len(hashes)), pa.int64())})
    con.register("_rl_emb_keys", keys)
    try:
        tbl = con.execute(
            "SELECT k.ix, e.vector FROM embeddings e JOIN _rl_emb_keys k USING (text_hash) WHERE e.model = ?",
            [model],
        ).to_arrow_table()
    finally:
        con.unregister("_rl_emb_keys")
    if tbl.num_rows == 0:
        return np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=np.int64)
    col = tbl.column("vector").combine_chunks()
    flat = col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return flat.reshape(tbl.num_rows, -1), tbl.column("ix").to_numpy()


def cached_failure_vectors(
    con: duckdb.DuckDBPyConnection, failures: pd.DataFrame, *, model: str
) -> tuple[np.ndarray, list[str]]:
    """Cached vectors of the failures' texts in order, and the texts that have none yet (then no vectors)."""
    from analytics.embeddings import text_hash

    texts = failures["text"].tolist()
    codes, uniques = pd.factorize(pd.Series(texts, dtype=object))
    hashes = [text_hash(t) for t in uniques]
    vecs, ix = read_vectors(con, hashes, model=model)
    have = np.zeros(len(hashes), dtype=bool)
    have[ix] = True
    if not have.all():
        return np.zeros((0, 0), dtype=np.float32), [str(uniques[i]) for i in np.flatnonzero(~have)]
    if not texts:
        return np.zeros((0, 0), dtype=np.float32), []
    by_unique = np.empty((len(hashes), vecs.shape[1]), dtype=np.float32)
    by_unique[ix] = vecs
    return by_unique[codes], []


def cached_labels(con: duckdb.DuckDBPyConnection, keys: Sequence[str], *, model: str) -> dict[str, str]:
    """Cached LLM labels of these cluster keys for ``model`` and the current prompt version."""
    if not keys:
        return {}
    rows = query_df(
        con,
        "SELECT content_key, label FROM cluster_labels WHERE list_contains($keys, content_key) "
        "AND model = $model AND prompt_version = $version",
        {"keys": list(keys), "model": model, "version": LABEL_PROMPT_VERSION},
    )
    return dict(zip(rows["content_key"], rows["label"], strict=True))


def apply_llm_labels(con: duckdb.DuckDBPyConnection, clusters: Clusters, *, model: str | None) -> Clusters:
    """``clusters`` with the ``llm_label`` column filled from the cache (None where no label is cached)."""
    summary = clusters.summary.copy()
    have = cached_labels(con, summary["content_key"].tolist(), model=model) if model else {}
    summary["llm_label"] = [
        None if cid < 0 else have.get(k) for cid, k in zip(summary["cluster_id"], summary["content_key"], strict=True)
    ]
    return dataclasses.replace(clusters, summary=summary)


def failure_clusters(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    run_id: str | None = None,
    model: str = STATIC_MODEL,
    label_model: str | None = None,
) -> Clusters | None:
    """Clusters from cached embeddings (None while some failure has no cached vector: embed them first with
    ``jobs.failures.embed_failures``, or ``python -m analytics clusters``, which does it).

    With ``label_model``, ``llm_label`` holds the cached LLM labels of that model (``jobs.failures.label_clusters``
    makes them); without it, ``llm_label`` is None."""
    failures = failure_texts(con, benchmark=benchmark, run_id=run_id)
    if failures.empty:
        raise ClusterError(f"no failed attempts in {benchmark}" + (f" run {run_id}" if run_id else ""))
    vectors, missing = cached_failure_vectors(con, failures, model=model)
    if missing:
        return None
    return apply_llm_labels(con, build_clusters(failures, vectors, model=model), model=label_model)


# ---- stored documents and clusterings (migration 010): what the page reads once the job has computed them ----

DOC_VERSION = (
    "failure-doc@v15"  # bump when the failure SQL, ``_segments`` or ``mask`` change: every document is built again
)
CLUSTER_VERSION = "clusters@v9"  # bump when the clustering or the names change: every clustering is computed again


def document_table(raw: pd.DataFrame) -> Any:
    """Rows for ``failure_documents`` (an Arrow table) from rows of ``failure_frame``: each failure's segments
    before the boilerplate cut, each segment masked as boilerplate is recognised, and a hash of the segments."""
    import hashlib

    import pyarrow as pa

    segs, masked = segments_of(raw)

    def digest(ss: list[str]) -> int:
        h = hashlib.blake2b("\x1f".join(ss).encode("utf-8", "surrogatepass"), digest_size=8).digest()
        return int.from_bytes(h, "little", signed=True)

    return pa.table(
        {
            "attempt_id": pa.array(raw["attempt_id"].to_numpy(dtype=np.int64)),
            "doc_version": pa.array([DOC_VERSION] * len(segs), pa.string()),
            "segments": pa.array(segs, pa.list_(pa.string())),
            "masked": pa.array(masked, pa.list_(pa.string())),
            "content_hash": pa.array([digest(ss) for ss in segs], pa.int64()),
        }
    )


_FAILED_OF = """
    SELECT a.attempt_id, a.run_id, a.task_id, a.sample, r.agent, r.agent_version, r.eval_date
    FROM attempts a JOIN runs r USING (run_id)
    WHERE r.benchmark = $benchmark AND ($run_id IS NULL OR a.run_id = $run_id) AND a.passed = false
"""


_PENDING_DOCS = (
    "(SELECT attempt_id, doc_version, segments, masked, content_hash FROM failure_documents "
    "UNION ALL SELECT attempt_id, doc_version, segments, masked, content_hash FROM _rl_pending_docs)"
)


@contextlib.contextmanager
def _with_pending(con: duckdb.DuckDBPyConnection, pending: Any) -> Iterator[str]:
    """The relation of the stored failure documents, with ``pending`` (an Arrow table of ``document_table`` rows
    not stored yet) added when given: what a job reads before it writes its documents."""
    if pending is None:
        yield "failure_documents"
        return
    con.register("_rl_pending_docs", pending)
    try:
        yield _PENDING_DOCS
    finally:
        con.unregister("_rl_pending_docs")


def undocumented_failures(con: duckdb.DuckDBPyConnection, *, benchmark: str, run_id: str | None = None) -> np.ndarray:
    """Ids of the failed attempts that have no stored document of the current version, in order."""
    sql = f"""
        WITH f AS ({_FAILED_OF})
        SELECT attempt_id FROM f
        ANTI JOIN (SELECT attempt_id FROM failure_documents WHERE doc_version = $version) d USING (attempt_id)
        ORDER BY attempt_id
    """
    rows = con.execute(sql, {"benchmark": benchmark, "run_id": run_id, "version": DOC_VERSION}).fetchnumpy()
    return np.asarray(rows["attempt_id"], dtype=np.int64)


TEXT_CHUNK = 48  # DuckDB vectors (2,048 rows each) fetched at a time by ``stored_failure_texts``


def stored_failure_texts(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    run_id: str | None = None,
    boilerplate_share: float = BOILERPLATE_SHARE,
    pending: Any = None,
) -> pd.DataFrame:
    """``failure_texts`` from the stored documents (and ``pending``, documents not stored yet: ``document_table``
    rows), the boilerplate cut in SQL (the same cut as
    ``failure_documents``: a masked segment in at least ``boilerplate_share`` of the failures, when there are at
    least 10, is dropped; a document left empty keeps its segments). Failures without a stored document are left
    out (``undocumented_failures`` lists them).

    Two statements, neither of which holds every document at once: the boilerplate (the masked segments counted
    over every document: a grouping, which spills), then each document's text cut with it row by row (a list filter,
    not an ordered ``string_agg`` per failure, which does not spill: it took DuckDB past 3 GB at ten million
    attempts), in order (a sort, which spills), fetched a chunk at a time."""
    with_d = f"""
        WITH f AS ({_FAILED_OF}),
        d AS (
            SELECT attempt_id, segments, masked FROM failure_documents SEMI JOIN f USING (attempt_id)
            WHERE doc_version = $version
        )
    """
    common_sql = f"""{with_d},
        n AS (SELECT count(*) AS n FROM d)
        SELECT m FROM (SELECT DISTINCT attempt_id, m FROM (SELECT attempt_id, unnest(masked) AS m FROM d)) GROUP BY m
        HAVING count(*) >= $share * (SELECT n FROM n) AND (SELECT n FROM n) >= 10
        ORDER BY m
    """
    texts_sql = f"""{with_d},
        k AS (  -- the segments whose masked form is not boilerplate, in order
            SELECT attempt_id, segments,
                   list_filter(segments, (x, i) -> NOT list_contains($common::VARCHAR[], masked[i])) AS kept
            FROM d
        ),
        codes AS (
            SELECT attempt_id, list(DISTINCT code ORDER BY code) AS codes
            FROM error_labels SEMI JOIN f USING (attempt_id) WHERE source = 'label' GROUP BY attempt_id
        )
        SELECT f.attempt_id, f.run_id, f.task_id, f.sample, f.agent, f.agent_version, f.eval_date,
               coalesce(c.codes, []) AS codes,
               array_to_string(CASE WHEN len(k.kept) > 0 THEN k.kept ELSE k.segments END, ' | ') AS text
        FROM f JOIN k USING (attempt_id) LEFT JOIN codes c USING (attempt_id)
        ORDER BY f.run_id, f.task_id, f.sample
    """
    params = {"benchmark": benchmark, "run_id": run_id, "version": DOC_VERSION}
    with _with_pending(con, pending) as docs:

        def sql(text: str) -> str:
            return text.replace("FROM failure_documents", f"FROM {docs}")

        common = [r[0] for r in con.execute(sql(common_sql), {**params, "share": boilerplate_share}).fetchall()]
        res = con.execute(sql(texts_sql), {**params, "common": common})
        seen: dict[str, str] = {}
        parts = [_shared(res.fetch_df_chunk(TEXT_CHUNK), seen)]
        while len(parts[-1]):
            parts.append(_shared(res.fetch_df_chunk(TEXT_CHUNK), seen))
    if len(parts) > 1:
        parts.pop()  # the empty chunk at the end
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


_REPEATED = ("run_id", "task_id", "agent", "agent_version")  # a few values each, repeated over the failures


def _shared(chunk: pd.DataFrame, seen: dict[str, str]) -> pd.DataFrame:
    """``chunk`` with each value of its ``_REPEATED`` columns one string object, shared with the earlier chunks
    (``seen``): the same values, without one object per row (about 200 MB for a million failures)."""
    for col in _REPEATED:
        values = chunk[col].to_numpy(dtype=object)
        codes, uniques = pd.factorize(values)
        if not len(uniques):
            continue
        one = np.array([seen.setdefault(u, u) for u in uniques], dtype=object)
        out = values.copy()
        ok = codes >= 0
        out[ok] = one[codes[ok]]
        chunk[col] = out
    return chunk


def clustering_key(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    run_id: str | None = None,
    model: str = STATIC_MODEL,
    pending: Any = None,
) -> tuple[str, int, int]:
    """The key a clustering of these failures is stored under, the number of failed attempts and how many of them
    have no stored document yet (``pending``: documents not stored yet, counted as stored: the key they will have
    once they are). The key holds the benchmark, run, model, the document and clustering versions and
    a fingerprint of the failures' documents (their count, ids and content hashes): any change to the failures
    gives a new key."""
    import hashlib

    sql = f"""
        WITH f AS ({_FAILED_OF})
        SELECT count(*) AS n, count(d.attempt_id) AS n_docs, coalesce(sum(f.attempt_id), 0)::VARCHAR AS ids,
               coalesce(sum(d.content_hash), 0)::VARCHAR AS content
        FROM f LEFT JOIN failure_documents d ON d.attempt_id = f.attempt_id AND d.doc_version = $version
    """
    with _with_pending(con, pending) as docs:
        n, n_docs, ids, content = con.execute(
            sql.replace("LEFT JOIN failure_documents", f"LEFT JOIN {docs}"),
            {"benchmark": benchmark, "run_id": run_id, "version": DOC_VERSION},
        ).fetchall()[0]
    parts = [benchmark, run_id or "", model, DOC_VERSION, CLUSTER_VERSION, str(n), str(n_docs), ids, content]
    key = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return key, int(n), int(n) - int(n_docs)


_STORED_MEMBERS = """
    WITH m AS (
        SELECT attempt_id, cluster_id FROM failure_cluster_members
        WHERE clustering_key = $key AND ($cluster_id IS NULL OR cluster_id = $cluster_id)
    ),
    top AS (  -- the rows shown first: the codes are read for them only, not for every member of a large cluster
        SELECT m.attempt_id, a.run_id, a.task_id, a.sample, m.cluster_id
        FROM m JOIN attempts a USING (attempt_id) ORDER BY a.run_id, a.task_id, a.sample LIMIT $limit
    ),
    codes AS (
        SELECT attempt_id, list(DISTINCT code ORDER BY code) AS codes
        FROM error_labels SEMI JOIN top USING (attempt_id) WHERE source = 'label' GROUP BY attempt_id
    )
    SELECT t.attempt_id, t.run_id, t.task_id, t.sample, r.agent,
           coalesce(r.agent_version, '(none)') AS agent_version, r.eval_date, coalesce(c.codes, []) AS codes,
           t.cluster_id
    FROM top t JOIN runs r USING (run_id) LEFT JOIN codes c USING (attempt_id)
    ORDER BY t.run_id, t.task_id, t.sample
"""


def stored_clusters(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    run_id: str | None = None,
    model: str = STATIC_MODEL,
    label_model: str | None = None,
    with_members: bool = True,
) -> Clusters | None:
    """The stored clustering of the benchmark's (or run's) failures as they are now, with the cached LLM labels of
    ``label_model``; None when none is stored for them (the failures changed since, or it was never computed:
    ``jobs.failures.cluster_failures`` computes it). Raises ``ClusterError`` when there is no failed attempt.
    ``with_members=False``: ``members`` is left empty (the page reads one cluster's with ``stored_members``)."""
    from analytics.clusters.compute_summary import summary_from_json

    key, n, _ = clustering_key(con, benchmark=benchmark, run_id=run_id, model=model)
    if n == 0:
        raise ClusterError(f"no failed attempts in {benchmark}" + (f" run {run_id}" if run_id else ""))
    row = con.execute(
        "SELECT summary, n_failures, model FROM failure_clusterings WHERE clustering_key = ?", [key]
    ).fetchall()
    if not row:
        return None
    sql = _STORED_MEMBERS if with_members else _STORED_MEMBERS.replace("$key", "$key AND false")
    members = query_df(con, sql, {"key": key, "cluster_id": None, "limit": None})
    summary_json, n_failures, stored_model = row[0]
    clusters = Clusters(
        summary=summary_from_json(summary_json),
        members=members,
        n_failures=int(n_failures),
        model=stored_model,
        key=key,
    )
    return apply_llm_labels(con, clusters, model=label_model)


def stored_members(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    cluster_id: int,
    run_id: str | None = None,
    model: str = STATIC_MODEL,
    limit: int | None = None,
    key: str | None = None,
) -> pd.DataFrame:
    """The member attempts of one cluster of the stored clustering of these failures (as ``Clusters.members``), the
    first ``limit`` by run, task and sample; empty when no clustering is stored for the failures as they are now.
    ``key``: the stored clustering's (``Clusters.key`` of ``stored_clusters``), not computed again from the
    failures (a pass over all of them)."""
    if key is None:
        key = clustering_key(con, benchmark=benchmark, run_id=run_id, model=model)[0]
    return query_df(con, _STORED_MEMBERS, {"key": key, "cluster_id": int(cluster_id), "limit": limit})
