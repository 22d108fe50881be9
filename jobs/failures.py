"""Failure clusters' derived data: sentence embeddings of failed attempts and the clusters' cached LLM labels.

analytics/ only reads; this job computes what is missing and appends it through the one writer."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from analytics import llm
from analytics.clusters import (
    LABEL_PROMPT_VERSION,
    Clusters,
    build_clusters,
    cached_failure_vectors,
    cached_labels,
    clean_label,
    clustering_key,
    document_table,
    failure_frame,
    failure_texts,
    label_messages,
    stored_failure_texts,
    summary_to_json,
    undocumented_failures,
)
from analytics.embeddings import STATIC_MODEL, make_embedder, text_hash
from store import Location, derived, publish, reader, resolve_db_path, transaction, writer
from store import failure_clusters as stored

BATCH = 20_000  # texts embedded and written per step: bounds memory (a batch of vectors is about 20 MB)
DOC_BATCH = (
    200_000  # failure documents built per step (their steps' texts, cut: about 100 MB); one read of the steps each
)


def store_vectors(
    con: object,
    texts: Sequence[str],
    vectors: np.ndarray,
    *,
    model: str,
    batch: int = BATCH,
    rows: np.ndarray | None = None,
) -> int:
    """Append (text hash, model, vector) rows to ``embeddings`` in batches of ``batch`` rows (the vectors go as an
    Arrow list column, never one Python list per vector); ``con`` is a writer connection. ``rows``: the rows of
    ``vectors`` that belong to ``texts``, in order (default: all of them), so a caller keeps one array of vectors
    and no copy of the new ones (a batch is copied at a time)."""
    import pyarrow as pa

    if not len(texts):
        return 0
    for s in range(0, len(texts), batch):
        part = np.ascontiguousarray(
            vectors[s : s + batch] if rows is None else vectors[rows[s : s + batch]], np.float32
        )
        flat = pa.array(part.reshape(-1), pa.float32())
        offsets = pa.array(np.arange(0, part.size + 1, part.shape[1], dtype=np.int32), pa.int32())
        frame = pa.table(
            {
                "text_hash": pa.array([text_hash(t) for t in texts[s : s + batch]], pa.string()),
                "model": pa.array([model] * len(part), pa.string()),
                "vector": pa.ListArray.from_arrays(offsets, flat),
            }
        )
        derived.insert_embeddings(con, frame)  # type: ignore[arg-type]
    return len(texts)


def embed_failures(
    db: Location,
    *,
    benchmark: str,
    run_id: str | None = None,
    encode: Callable[[list[str]], np.ndarray] | None = None,
    model: str = STATIC_MODEL,
    progress: Callable[[float, str], None] | None = None,
    batch: int = BATCH,
) -> int:
    """Embed the failed attempts of ``benchmark`` (or one run) that have no cached vector; return how many.

    ``encode`` defaults to the model's embedder (the static model distilled from all-MiniLM-L6-v2, loaded only
    when something is missing). Texts are embedded and written ``batch`` at a time, each batch its own
    transaction, so memory stays bounded and an interrupted job keeps what it wrote; ``progress(fraction,
    message)`` is told after each batch.
    """
    with writer(db, publish_snapshot=False) as con:
        failures = failure_texts(con, benchmark=benchmark, run_id=run_id)
        _, missing = cached_failure_vectors(con, failures, model=model)
        if not missing:
            return 0
        fn = encode or make_embedder(model).encode
        if progress is not None:
            progress(0.0, f"embedding {len(missing):,} failure texts (the first use also distils the static model)")
        done = 0
        for s in range(0, len(missing), batch):
            part = missing[s : s + batch]
            vectors = fn(part)
            with transaction(con):
                done += store_vectors(con, part, vectors, model=model, batch=batch)
            if progress is not None:
                progress(done / len(missing), f"embedded {done:,} of {len(missing):,} failure texts")
        publish(con, resolve_db_path(db))
    return done


def label_clusters(
    db: Location,
    clusters: Clusters,
    *,
    cfg: llm.LLMConfig | None = None,
    client: Any = None,
) -> int:
    """Ask the configured LLM for a one-line label of each cluster not labelled yet; return how many calls were made.

    Labels are cached in ``cluster_labels`` by (content key, model, prompt version): a cluster seen before costs
    nothing. Without a configured endpoint (``llm.llm_config()`` is None) nothing is called and 0 is returned.
    """
    cfg = cfg or llm.llm_config()
    if cfg is None:
        return 0
    todo = clusters.summary[clusters.summary["cluster_id"] >= 0]
    with writer(db, publish_snapshot=False) as con:
        have = cached_labels(con, todo["content_key"].tolist(), model=cfg.model)
        todo = todo[~todo["content_key"].isin(have)].drop_duplicates("content_key")
        if todo.empty:
            return 0
        client = client or llm.make_client(cfg)
        rows = []
        for r in todo.itertuples():
            res = llm.chat(client, cfg, label_messages(list(r.phrases), list(r.examples)), max_tokens=60)
            rows.append((r.content_key, clean_label(res.text) or r.label, res))
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        derived.insert_cluster_labels(
            con,
            [
                (key, cfg.model, LABEL_PROMPT_VERSION, label, res.input_tokens, res.output_tokens, now)
                for key, label, res in rows
            ],
        )
        publish(con, resolve_db_path(db))
    return len(rows)


def failure_vectors(
    con: object,
    failures: Any,
    *,
    model: str,
    encode: Callable[[list[str]], np.ndarray] | None = None,
    batch: int = BATCH,
    say: Callable[[float, str], None] | None = None,
) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    """The vector of each failure's text (one row per failure, in order): the cached ones read in one Arrow read,
    the others embedded ``batch`` at a time (nothing written: ``con`` may be a reader).

    Returns the vectors per failure, the texts that had none, and where their new vectors are: an array and the
    row of each (``store_vectors(con, texts, array, rows=rows)``). The vectors are held once per distinct text
    and, only when some texts repeat, once more per failure: each embedded batch is written into place, and when
    every text is distinct (the usual case) the array per text is the array per failure (1.07M vectors of 256
    float32: 1.09 GB once, where the list of batches, their concatenation and the two arrays made four)."""
    import pandas as pd

    from analytics.clusters import read_vectors

    codes, uniques = pd.factorize(pd.Series(failures["text"].tolist(), dtype=object))
    texts = [str(u) for u in uniques]
    del uniques
    vecs, ix = read_vectors(con, [text_hash(t) for t in texts], model=model)  # type: ignore[arg-type]
    have = np.zeros(len(texts), dtype=bool)
    have[ix] = True
    todo = np.flatnonzero(~have)
    missing = [texts[i] for i in todo]
    fn = (encode or make_embedder(model).encode) if missing else None
    by_unique: np.ndarray | None = None
    if len(vecs):
        by_unique = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
        by_unique[ix] = vecs
    del vecs
    for s in range(0, len(missing), batch):
        if say is not None:
            say(0.3 + 0.3 * s / len(missing), f"embedding failure texts: {s:,} of {len(missing):,} done")
        part = np.asarray(fn(missing[s : s + batch]), dtype=np.float32)  # type: ignore[misc]
        if by_unique is None:
            by_unique = np.empty((len(texts), part.shape[1]), dtype=np.float32)
        by_unique[todo[s : s + batch]] = part
    if by_unique is None:  # no text at all
        by_unique = np.zeros((len(texts), 0), dtype=np.float32)
    per_failure = by_unique if len(texts) == len(codes) else by_unique[codes]  # all distinct: codes is 0, 1, 2 ...
    return per_failure, missing, by_unique, todo


def configure(con: Any, settings: Mapping[str, str] | None) -> None:
    """Apply DuckDB ``settings`` (``memory_limit``, ``temp_directory``, ``threads``) to ``con``'s instance: the clusters job's
    own process sets them (``jobs.clusters_worker``); a server's instance is shared by every page and never is."""
    for name, value in (settings or {}).items():
        if name not in ("memory_limit", "temp_directory", "threads"):
            raise ValueError(f"not a setting of the clusters job: {name!r}")
        if name == "temp_directory" and con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0] == value:
            continue  # the reader's instance again (a lake's engine is one per process): DuckDB refuses to switch it
        con.execute(f"SET {name} = ?", [value])


def cluster_failures(
    db: Location,
    *,
    benchmark: str,
    run_id: str | None = None,
    encode: Callable[[list[str]], np.ndarray] | None = None,
    model: str = STATIC_MODEL,
    progress: Callable[[float, str], None] | None = None,
    batch: int = BATCH,
    doc_batch: int = DOC_BATCH,
    force: bool = False,
    duckdb_settings: Mapping[str, str] | None = None,
    work_dir: str | None = None,
) -> str:
    """Compute and store the clustering of the benchmark's (or run's) failures as they are now; return its key.

    What is missing only: the documents of failed attempts that have none (``doc_batch`` at a time), the vectors of
    texts that have none (``batch`` at a time), then the clustering itself unless one is stored under the failures'
    current key (``clustering_key``; ``force``: computed again even then). Everything is computed from a reader
    (an upload meanwhile is not kept waiting); the writer is taken once at the end for one short transaction that
    stores the new documents, the new vectors and the clustering, which replaces the earlier clusterings of the
    same benchmark and run. The clustering is stored only if the failures' key is still the one it was computed
    for (documents and vectors are stored either way: they do not depend on the other failures).
    ``progress(fraction, message)`` is told along the way (the page shows it). ``duckdb_settings``: set on the
    reader's and the writer's DuckDB instances (``configure``; the job's own process bounds DuckDB's memory).

    Nothing grows with the failures beyond their texts and one array of their vectors: the new documents wait for
    the store step in a Parquet file and the new vectors in a file of their own, both in a temporary folder under
    ``work_dir`` (default: the system's), removed at the end."""

    def say(fraction: float, message: str) -> None:
        if progress is not None:
            progress(fraction, message)

    with tempfile.TemporaryDirectory(dir=work_dir, prefix="runlens-clusters-job-") as work:
        with reader(db) as con:  # 1. what is missing, computed without the writer
            configure(con, duckdb_settings)
            say(0.0, "finding the failed attempts without a document")
            todo = undocumented_failures(con, benchmark=benchmark, run_id=run_id)
            docs = _new_documents(con, todo, os.path.join(work, "documents.parquet"), benchmark, run_id, doc_batch, say)
            key, n, n_missing = clustering_key(con, benchmark=benchmark, run_id=run_id, model=model, pending=docs)
            if n_missing:  # a failure ingested between the two reads: the next visit documents it
                raise RuntimeError(f"{n_missing:,} failed attempts still have no document")
            have = con.execute("SELECT count(*) FROM failure_clusterings WHERE clustering_key = ?", [key]).fetchall()
            if have[0][0] and not force and docs is None:
                say(1.0, "the clusters are stored")
                return key
            say(0.3, f"reading the documents of {n:,} failed attempts")
            failures = stored_failure_texts(con, benchmark=benchmark, run_id=run_id, pending=docs)
            vectors, missing, new, new_rows = failure_vectors(
                con, failures, model=model, encode=encode, batch=batch, say=say
            )
        # the new vectors wait for the store step in a file, so the clustering may centre ``vectors`` in place (the
        # new ones are rows of them when every text is distinct): one array of the vectors in memory, not two
        kept = os.path.join(work, "vectors.f32")
        width = int(new.shape[1]) if len(missing) else 0
        with open(kept, "wb") as out:
            for s in range(0, len(missing), batch):
                out.write(np.ascontiguousarray(new[new_rows[s : s + batch]], dtype=np.float32).tobytes())
        del new, new_rows
        say(0.6, f"clustering {len(failures):,} failed attempts")  # 2. the clustering, the longest step
        clusters = build_clusters(failures, vectors, model=model, overwrite=True)
        del vectors, failures
        same = _store(db, key, docs, missing, kept, width, clusters, benchmark, run_id, model, batch,
                      duckdb_settings, say)  # fmt: skip
    if same:
        say(1.0, "the clusters are stored")
    else:
        say(1.0, "the failures changed while they were clustered: the next visit computes them again")
    return key


def _new_documents(
    con: Any,
    todo: np.ndarray,
    path: str,
    benchmark: str,
    run_id: str | None,
    doc_batch: int,
    say: Callable[[float, str], None],
) -> Any:
    """The documents of the failed attempts ``todo``, built ``doc_batch`` at a time and written to the Parquet file
    ``path`` as they are (a million failures' documents are most of a gigabyte), as a dataset DuckDB scans in place
    of an Arrow table (None when there are none)."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    if not len(todo):
        return None
    out: Any = None
    try:
        for s in range(0, len(todo), doc_batch):
            say(0.3 * s / len(todo), f"building the documents of failed attempts: {s:,} of {len(todo):,} done")
            raw = failure_frame(con, benchmark=benchmark, run_id=run_id, attempt_ids=todo[s : s + doc_batch])
            table = document_table(raw)
            del raw
            out = out or pq.ParquetWriter(path, table.schema)
            out.write_table(table)
            del table
    finally:
        if out is not None:
            out.close()
    return ds.dataset(path, format="parquet")


def _kept_vectors(path: str, width: int, start: int, stop: int) -> np.ndarray:
    """Rows ``start``..``stop`` of the float32 vectors of ``width`` written to the file ``path``."""
    return np.fromfile(path, dtype=np.float32, count=(stop - start) * width, offset=start * width * 4).reshape(
        stop - start, width
    )


def _store(
    db: Location,
    key: str,
    docs: Any,
    missing: list[str],
    kept: str,
    width: int,
    clusters: Clusters,
    benchmark: str,
    run_id: str | None,
    model: str,
    batch: int,
    duckdb_settings: Mapping[str, str] | None,
    say: Callable[[float, str], None],
) -> bool:
    """The job's one short write: the new documents, the new vectors (read back from ``kept`` a batch at a time),
    and the clustering if the failures' key is still ``key``; whether it was."""
    members = pa.table(
        {
            "attempt_id": pa.array(clusters.members["attempt_id"].to_numpy(dtype=np.int64)),
            "cluster_id": pa.array(clusters.members["cluster_id"].to_numpy(dtype=np.int32)),
        }
    )
    summary = summary_to_json(clusters.summary)
    say(0.95, "storing the clusters")
    with writer(db, publish_snapshot=False) as con:  # 3. one short write
        configure(con, duckdb_settings)
        with transaction(con):
            if docs is not None:
                stored.insert_failure_documents(con, docs)
            for s in range(0, len(missing), batch):
                part = missing[s : s + batch]
                store_vectors(con, part, _kept_vectors(kept, width, s, s + len(part)), model=model, batch=batch)
            same = clustering_key(con, benchmark=benchmark, run_id=run_id, model=model)[0] == key
            if same:
                stored.replace_clustering(
                    con, key=key, benchmark=benchmark, run_id=run_id, model=model, summary_json=summary, members=members
                )
        publish(con, resolve_db_path(db))
        say(0.99, "stored; publishing for readers")
    return same
