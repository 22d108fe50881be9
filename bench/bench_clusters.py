"""Failure clusters' two costs: ``python bench/bench_clusters.py --db DB --benchmark bench-0 [--sample 500]
[--repeat 2] [--stand-in] [--max-points 4000] [--json OUT.json]``.

DB is only read (``store.reader``); nothing is written to it, and no vector is stored anywhere.

1. **Embedding throughput**: a seeded random sample of ``--sample`` failure texts (``analytics.clusters.
   failure_texts``) embedded by the pinned all-MiniLM-L6-v2 (``analytics.embeddings.Embedder``, offline), as
   ``jobs/failures.py`` does; prints texts/s on the wall and per CPU second, and the one-off time to embed all
   the benchmark's failures extrapolated from that rate (labelled as such: embeddings are cached per text, so it
   is paid once per text). The model's load is timed apart.
2. **Clustering itself**: ``analytics.clusters.build_clusters`` (what ``failure_clusters`` does once every vector
   exists: agglomerative clustering of at most ``--max-points`` failures, nearest-centre assignment of the rest,
   c-TF-IDF naming, per-run sizes) on ALL the benchmark's failures, ``--repeat`` times, with the clustering and
   the naming also timed alone. The vectors are **stand-ins**, not the model's: the sample keeps its real vectors
   and every other text gets a seeded copy of a sample vector (picked by its text's hash) plus seeded noise, so
   the data keep about the sample's cluster structure (random unit vectors in 384 dimensions would be all
   singletons, a different workload).

``--cache-store NEW.duckdb`` (a path that must not exist yet: a throwaway store) also times the step before
``build_clusters`` in ``failure_clusters``: the stand-in vectors are written there (``jobs.failures.store_vectors``,
one writer session, timed) and read back ``--repeat`` times with ``analytics.clusters.cached_failure_vectors``.

``--stand-in`` loads no model at all: the sample's vectors are seeded random unit vectors too (the smoke test;
no embedding rate is then reported). ``--worker COPY --benchmark B [--mb MB]``: the job as the page starts it
(``python -m jobs.clusters_worker``, its caps and environment; writes to COPY), its CPU seconds and resident and
address-space peaks sampled every 0.1 s from /proc and reported per progress step (``worker_figures``), then a hash
of what it stored (documents, vectors, clustering, members: compare two copies' runs).
``--page COPY --benchmark B [--compute]``: the Failure clusters page's own
path on a copy of a store it writes to (``page_figures``): the background job's time, then the page's first render.
Each line gives wall and CPU seconds (this process, all threads; and its children that ended meanwhile),
the time its threads waited for a core (run-queue wait, summed over threads, from /proc: the part of the wall a
loaded machine adds) and for block I/O, the load average when the step started and the process's peak RSS so far.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analytics.clusters import (  # noqa: E402
    MAX_POINTS,
    build_clusters,
    cached_failure_vectors,
    cluster_vectors,
    distinctive_terms,
    failure_texts,
)
from store import reader, transaction, writer  # noqa: E402

DIM = 384  # all-MiniLM-L6-v2's width
NOISE = 0.3  # a stand-in is its anchor plus noise of this norm: cosine distance ~0.04 to it (the cut is 0.3)
SEED = 0


def peak_rss_mb() -> float:
    """This process's peak resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _text_seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "little")


def random_unit_vectors(texts: list[str]) -> np.ndarray:
    """Seeded stand-in 'encoder': one random unit vector per text, seeded by the text (no model)."""
    out = np.stack([np.random.default_rng(_text_seed(t)).standard_normal(DIM) for t in texts]).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def stand_in_vectors(texts: list[str], sample_ix: np.ndarray, sample_vecs: np.ndarray, *, seed: int) -> np.ndarray:
    """Vectors for all ``texts``: the sample's own, for the others a hash-picked sample vector plus seeded noise."""
    n = len(texts)
    anchors = np.fromiter((_text_seed(t) % len(sample_ix) for t in texts), dtype=np.int64, count=n)
    noise = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
    noise *= NOISE / np.linalg.norm(noise, axis=1, keepdims=True)
    vecs = sample_vecs[anchors] + noise
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs[sample_ix] = sample_vecs
    return vecs


def _waits() -> tuple[float, float]:
    """Seconds this process's threads have so far spent runnable but waiting for a core (the kernel's run-queue
    delay, summed over every thread in /proc/self/task/*/schedstat) and waiting for block I/O (delay accounting,
    /proc/self/stat field 42; 0 where the kernel does not account it). Linux only; (0, 0) elsewhere."""
    run = 0.0
    try:
        for task in Path("/proc/self/task").iterdir():
            try:
                run += int((task / "schedstat").read_text().split()[1]) / 1e9
            except (OSError, IndexError, ValueError):
                continue  # a thread that ended while we read
        blkio = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[39]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0, 0.0
    return run, blkio


def _children_cpu() -> float:
    """CPU seconds of this process's children that have ended (a worker pool's processes)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    load = os.getloadavg()[0]
    r0, b0 = _waits()
    k0 = _children_cpu()
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    r1, b1 = _waits()
    return out, {
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "cpu_children_s": round(_children_cpu() - k0, 3),  # child processes that ended meanwhile
        "run_queue_wait_s": round(r1 - r0, 3),  # threads' time runnable without a core (summed over threads)
        "blkio_wait_s": round(b1 - b0, 3),
        "load1": round(load, 2),
        "load1_after": round(os.getloadavg()[0], 2),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def _line(name: str, t: dict[str, float], extra: str = "") -> None:
    print(
        f"{name:28} wall {t['wall_s']:8.2f} s  cpu {t['cpu_s']:8.2f} s (+ {t.get('cpu_children_s', 0):.2f} s children)  "
        f"run-queue wait {t.get('run_queue_wait_s', 0):7.2f} s  I/O wait {t.get('blkio_wait_s', 0):6.2f} s  "
        f"load1 {t['load1']:5.1f}  peak RSS {t['peak_rss_mb']:7.0f} MB  {extra}",
        flush=True,
    )


def embed_sample(texts: list[str], *, is_stand_in: bool) -> tuple[np.ndarray, dict[str, Any]]:
    """The sample's vectors and the embedding figures (model load and encode timed apart)."""
    if is_stand_in:
        vecs, t = _timed(lambda: random_unit_vectors(texts))
        _line("sample vectors (stand-in)", t, f"{len(texts)} texts, no model")
        return vecs, {"stand_in": True, "encode": t}
    from analytics.embeddings import Embedder

    embedder = Embedder()
    _, load_t = _timed(lambda: embedder.encode(texts[:1]))  # loads the model (and warms it up on one text)
    _line("model load + 1 text", load_t)
    vecs, t = _timed(lambda: embedder.encode(texts))
    rate = {"texts_per_wall_s": len(texts) / t["wall_s"], "texts_per_cpu_s": len(texts) / max(t["cpu_s"], 1e-9)}
    _line(
        "embed sample (model)",
        t,
        f"{len(texts)} texts: {rate['texts_per_wall_s']:.1f} texts/s wall, {rate['texts_per_cpu_s']:.1f} per CPU s",
    )
    return vecs, {"stand_in": False, "model_load": load_t, "encode": t, **rate}


def time_cache_read(store_path: Path, failures: pd.DataFrame, vectors: np.ndarray, *, repeat: int) -> dict[str, Any]:
    """Write the stand-in vectors to a NEW throwaway store, then time reading them back as ``failure_clusters`` does."""
    from jobs.failures import store_vectors

    if store_path.exists():
        raise SystemExit(f"{store_path} exists: --cache-store must be a new, throwaway store")
    model = "all-MiniLM-L6-v2"
    texts = failures["text"].tolist()

    def write() -> None:
        with writer(store_path) as con, transaction(con):
            store_vectors(con, texts, vectors, model=model)

    _, t_write = _timed(write)
    _line("write stand-ins (throwaway)", t_write, f"{len(texts):,} vectors to {store_path}")
    reads = []
    for _ in range(max(1, repeat)):
        with reader(store_path) as con:
            (got, missing), t = _timed(lambda: cached_failure_vectors(con, failures, model=model))  # noqa: B023
        if missing or not np.allclose(got, vectors, atol=1e-6):
            raise SystemExit("the vectors read back differ from those written")
        reads.append(t)
        _line("cached_failure_vectors", t, f"{len(got):,} vectors read back")
    return {"write": t_write, "read": reads}


def synthetic(n: int, *, embed_n: int, max_points: int, repeat: int, tile: bool = False) -> dict[str, Any]:
    """The static model's rate on ``embed_n`` generated documents, the vectors' write through ``store_vectors`` (a
    throwaway store, peak RSS), and ``build_clusters`` on ``n`` generated failures with their real static vectors
    (tests/failure_sets.documents: 8 causes). With ``tile``, only ``embed_n`` documents are generated and embedded
    and failure i is a copy of document i mod ``embed_n`` (to time ``build_clusters`` at a million without
    embedding a million; the vectors are not written then)."""
    import tempfile

    from sklearn.metrics import adjusted_rand_score

    from analytics.embeddings import STATIC_MODEL, StaticEmbedder
    from jobs.failures import store_vectors
    from tests.failure_sets import documents

    out: dict[str, Any] = {"n": n}
    (texts, truth), t = _timed(lambda: documents(seed=SEED, n_causes=8, n=embed_n if tile else n))
    _line("generate documents", t, f"{len(texts):,}")
    emb = StaticEmbedder()
    _, t_load = _timed(lambda: emb.encode(texts[:1]))
    _line("static model load", t_load)
    vecs_part, t = _timed(lambda: emb.encode(texts[:embed_n]))
    rate = embed_n / t["wall_s"]
    _line("embed (static)", t, f"{embed_n:,} texts: {rate:,.0f} texts/s wall, {embed_n / t['cpu_s']:,.0f} per CPU s")
    out["embed"] = {**t, "texts": embed_n, "texts_per_wall_s": round(rate), "model": STATIC_MODEL}
    if tile:
        reps = -(-n // embed_n)
        texts, truth = (texts * reps)[:n], (truth * reps)[:n]
        vectors = np.tile(vecs_part, (reps, 1))[:n]
        out["tiled_from"] = embed_n
    else:
        vectors, t = _timed(lambda: np.vstack([vecs_part, emb.encode(texts[embed_n:])]) if n > embed_n else vecs_part)
        _line("embed the rest", t, f"{n - embed_n:,} texts")
    if not tile:
        with tempfile.TemporaryDirectory(prefix="runlens-bench-vectors-") as tmp:
            store = Path(tmp) / "v.duckdb"
            before = peak_rss_mb()

            def write() -> None:
                with writer(store) as con, transaction(con):
                    store_vectors(con, texts, vectors, model=STATIC_MODEL)

            _, t = _timed(write)
            _line("store_vectors (batches)", t, f"{n:,} vectors; peak RSS before {before:,.0f} MB")
            out["store_vectors"] = {**t, "peak_rss_before_mb": round(before, 1)}
    failures = pd.DataFrame(
        {"attempt_id": np.arange(n), "run_id": [f"r{i % 3}" for i in range(n)], "task_id": [f"t{i}" for i in range(n)],
         "sample": 0, "agent": "A", "agent_version": [str(i % 3) for i in range(n)], "eval_date": None,
         "codes": [[] for _ in range(n)], "text": texts}
    )  # fmt: skip
    runs = []
    for _ in range(max(1, repeat)):
        clusters, t = _timed(lambda: build_clusters(failures, vectors, model=STATIC_MODEL, max_points=max_points))
        runs.append(t)
        labels = clusters.members["cluster_id"]
        ari = adjusted_rand_score(truth, labels)
        _line("build_clusters (all)", t, f"{int((clusters.summary['cluster_id'] >= 0).sum())} clusters, ARI {ari:.2f}")
    out["build_clusters"] = runs
    out["ari"] = round(float(ari), 3)
    return out


def page_figures(store: Path, benchmark: str, *, compute: bool) -> dict[str, Any]:
    """The page's path (``--page``): with ``compute``, the job the page starts (``jobs.failures.cluster_failures``:
    documents, vectors and the clustering, stored in ``store``: a copy), timed; then the Failure clusters page's
    first render (AppTest, data cache cleared, after the app's bootstrap as a running server has) and a warm rerun.
    Nothing starts by itself (RUNLENS_AUTO_FIT=0): without a stored clustering the page says so and stops."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from jobs.failures import cluster_failures

    out: dict[str, Any] = {"store": str(store), "benchmark": benchmark}
    if compute:
        steps: list[tuple[float, float, float, float, str]] = []
        w0, c0 = time.perf_counter(), time.process_time()
        r0, b0 = _waits()

        def said(message: str) -> None:
            r, b = _waits()
            steps.append((time.perf_counter() - w0, time.process_time() - c0, r - r0, b - b0, message))

        _, out["job"] = _timed(lambda: cluster_failures(store, benchmark=benchmark, progress=lambda f, m: said(m)))
        out["job_steps"] = [(round(t, 2), round(c, 2), round(r, 2), round(b, 2), m) for t, c, r, b, m in steps]
        for t, c, r, b, m in steps:  # wall, CPU and wait seconds since the job began, when each message was said
            print(f"  {t:8.1f} s  cpu {c:7.1f} s  run-queue wait {r:7.1f} s  I/O wait {b:5.1f} s  {m}", flush=True)
        _line("job (documents ... stored)", out["job"])
    os.environ["RUNLENS_DB"] = str(store)
    os.environ["RUNLENS_AUTO_FIT"] = "0"
    boot = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    _, out["bootstrap"] = _timed(boot.run)
    st.cache_data.clear()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    at.query_params["benchmark"] = benchmark
    at.switch_page("views/clusters.py")
    _, out["first_render"] = _timed(at.run)
    _, out["warm_render"] = _timed(at.run)
    out["filled"] = bool(at.dataframe) and not at.exception
    out["problems"] = [str(e.value)[:200] for e in at.exception] + [str(e.value)[:200] for e in at.error]
    _line("page first render", out["first_render"], "filled" if out["filled"] else "NOT filled")
    _line("page warm rerun", out["warm_render"])
    return out


def _proc(pid: int) -> tuple[float, int, int]:
    """CPU seconds (user + system, all threads), resident and address-space bytes of process ``pid`` now."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    status = {k: v for k, _, v in (ln.partition(":") for ln in Path(f"/proc/{pid}/status").read_text().splitlines())}
    return cpu, int(status["VmRSS"].split()[0]) * 1024, int(status["VmSize"].split()[0]) * 1024


def stored_hash(store: str, benchmark: str) -> dict[str, Any]:
    """A fingerprint of what the clusters job stored (documents, vectors, the clustering's summary and members) and
    ``benchmark``'s clustering key: equal on two copies when the job stored the same."""
    from analytics.clusters import clustering_key

    out: dict[str, Any] = {}
    with reader(store) as con:
        key = clustering_key(con, benchmark=benchmark)[0]
        tables = {  # an order-free fingerprint of each table: its rows and the sum of their hashes
            "documents": "failure_documents",
            "vectors": "embeddings",
            "clustering": "(SELECT * EXCLUDE (created_at) FROM failure_clusterings)",
            "members": "failure_cluster_members",
        }
        for name, table in tables.items():
            n, total = con.execute(f"SELECT count(*), sum(hash(t)::HUGEINT)::VARCHAR FROM {table} t").fetchall()[0]
            out[name] = {"rows": int(n), "hash_sum": total}
    out["key"] = key
    return out


def worker_figures(store: str, benchmark: str, *, mb: int | None) -> dict[str, Any]:
    """The page's job in its own process (``--worker``): CPU, resident and address-space peaks per progress step."""
    import subprocess
    import threading

    from ingest import workers

    env = workers.worker_env(str(ROOT))
    if mb is not None:
        env["RUNLENS_CLUSTERS_WORKER_MB"] = str(mb)
    code = "import json, sys; from jobs.clusters_worker import worker_request as w; "
    code += "print(json.dumps(w(sys.argv[1], benchmark=sys.argv[2], run_id=None)))"
    request = subprocess.run(
        [sys.executable, "-c", code, store, benchmark], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    load = os.getloadavg()[0]
    w0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobs.clusters_worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=ROOT,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request)
    proc.stdin.close()
    state = {"rss": 0, "vm": 0, "cpu": 0.0, "step_rss": 0, "step_vm": 0}
    stop = threading.Event()
    guard = threading.Lock()

    def sample() -> None:
        while not stop.is_set():
            try:
                cpu, rss, vm = _proc(proc.pid)
            except (OSError, KeyError, IndexError, ValueError):
                break  # ended
            with guard:
                state["cpu"] = cpu
                for k, v in (("rss", rss), ("vm", vm), ("step_rss", rss), ("step_vm", vm)):
                    state[k] = max(state[k], v)
            time.sleep(0.1)

    threading.Thread(target=sample, daemon=True).start()
    steps: list[dict[str, Any]] = []
    last: dict[str, Any] = {}
    cpu0 = 0.0
    for line in proc.stdout:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        with guard:
            row = {
                "step": last.get("message", "start"),
                "cpu_s": round(state["cpu"] - cpu0, 1),
                "peak_rss_mb": round(state["step_rss"] / 2**20),
                "peak_vm_mb": round(state["step_vm"] / 2**20),
            }
            cpu0, state["step_rss"], state["step_vm"] = state["cpu"], 0, 0
        if row["cpu_s"] or not steps:
            steps.append(row)
            print(f"  cpu {row['cpu_s']:7.1f} s  peak RSS {row['peak_rss_mb']:6,} MB  "
                  f"peak VM {row['peak_vm_mb']:6,} MB  {row['step']}", flush=True)  # fmt: skip
        else:  # a step without CPU: its peak goes to the next
            state["step_rss"], state["step_vm"] = (
                max(state["step_rss"], row["peak_rss_mb"] * 2**20),
                max(state["step_vm"], row["peak_vm_mb"] * 2**20),
            )
        last = message
    status = proc.wait()
    stop.set()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    out: dict[str, Any] = {
        "store": store,
        "benchmark": benchmark,
        "load_at_start": round(load, 2),
        "load_at_end": round(os.getloadavg()[0], 2),
        "wall_s": round(time.perf_counter() - w0, 1),
        "status": status,
        "last": last,
        "steps": steps,
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),  # the worker's and the request's (tiny) processes
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "peak_vm_mb": round(state["vm"] / 2**20),
    }
    print(f"worker: status {status}, {out['cpu_s']} CPU s, peak RSS {out['peak_rss_mb']:,} MB, peak address space "
          f"{out['peak_vm_mb']:,} MB, {out['wall_s']} s wall, load {load:.1f} -> {out['load_at_end']}: {last}")  # fmt: skip
    if status == 0:
        out["stored"] = stored_hash(store, benchmark)
        print(json.dumps(out["stored"]))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the two costs; with ``--json``, also write them to a file."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", help="the store to read (not with --synthetic)")
    parser.add_argument("--synthetic", type=int, help="N generated failures instead of a store (see synthetic())")
    parser.add_argument("--embed", type=int, default=100_000, help="with --synthetic: texts timed for the rate")
    parser.add_argument("--tile", action="store_true", help="with --synthetic: copies of the --embed documents")
    parser.add_argument("--benchmark", default="bench-0")
    parser.add_argument("--sample", type=int, default=500, help="texts embedded by the model (seeded sample)")
    parser.add_argument("--repeat", type=int, default=2, help="clustering runs (report best and median)")
    parser.add_argument("--stand-in", action="store_true", help="no model: the sample's vectors are stand-ins too")
    parser.add_argument("--max-points", type=int, default=MAX_POINTS, help="failures clustered directly")
    parser.add_argument("--cache-store", type=Path, help="NEW throwaway store: also time the cached-vector read")
    parser.add_argument("--page", type=Path, help="A COPY of a store: the page's job and first render (writes)")
    parser.add_argument("--compute", action="store_true", help="with --page: run and time the job first")
    parser.add_argument("--worker", help="A COPY of a store (its location): the job in its own process (writes)")
    parser.add_argument("--mb", type=int, help="with --worker: RUNLENS_CLUSTERS_WORKER_MB (default: the shipped one)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.worker:
        figures = worker_figures(args.worker, args.benchmark, mb=args.mb)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, default=float))
        return 0 if figures["status"] == 0 else 1
    if args.page:
        figures = page_figures(args.page, args.benchmark, compute=args.compute)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, default=float))
        return 0
    if args.synthetic:
        figures = synthetic(args.synthetic, embed_n=min(args.embed, args.synthetic), max_points=args.max_points,
                            repeat=args.repeat, tile=args.tile)  # fmt: skip
        figures["peak_rss_mb"] = round(peak_rss_mb(), 1)
        print(f"peak RSS {figures['peak_rss_mb']:,.0f} MB")
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, default=float))
        return 0
    if not args.db:
        parser.error("--db is needed (or --synthetic N)")
    result: dict[str, Any] = {"db": args.db, "benchmark": args.benchmark, "load_at_start": os.getloadavg()}
    print(f"{args.db} {args.benchmark}: load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with reader(args.db) as con:
        failures, t = _timed(lambda: failure_texts(con, benchmark=args.benchmark))
    n = len(failures)
    texts = failures["text"].tolist()
    _line(
        "failure_texts", t, f"{n:,} failures, {len(set(texts)):,} distinct texts, {failures['run_id'].nunique()} runs"
    )
    result.update(n_failures=n, n_distinct_texts=len(set(texts)), failure_texts=t)

    sample_ix = np.sort(np.random.default_rng(SEED).choice(n, min(args.sample, n), replace=False))
    sample_vecs, emb = embed_sample([texts[i] for i in sample_ix], is_stand_in=args.stand_in)
    if not args.stand_in:
        emb["extrapolated_all_failures_s"] = result["n_distinct_texts"] / emb["texts_per_wall_s"]
        print(
            f"EXTRAPOLATED one-off embedding of all {result['n_distinct_texts']:,} distinct failure texts at this "
            f"rate: {emb['extrapolated_all_failures_s'] / 60:,.0f} min ({emb['extrapolated_all_failures_s'] / 3600:.1f} h)"
        )
    result["embedding"] = emb
    vectors, t = _timed(lambda: stand_in_vectors(texts, sample_ix, sample_vecs, seed=SEED))
    _line("stand-in vectors", t, f"{n:,} x {DIM}")

    if args.cache_store:
        result["cache"] = time_cache_read(args.cache_store, failures, vectors, repeat=args.repeat)
    runs = []
    for _ in range(max(1, args.repeat)):
        clusters, t = _timed(lambda: build_clusters(failures, vectors, model="stand-in", max_points=args.max_points))
        runs.append(t)
        n_clusters = int((clusters.summary["cluster_id"] >= 0).sum())
        _line("build_clusters (all)", t, f"{n_clusters} clusters (+ pooled small ones)")
    labels, t_cluster = _timed(lambda: cluster_vectors(vectors, max_points=args.max_points))
    _line("  of which cluster_vectors", t_cluster)
    _, t_terms = _timed(lambda: distinctive_terms(texts, labels.tolist()))
    _line("  of which c-TF-IDF terms", t_terms)
    n_direct = min(n, args.max_points)
    sizes = clusters.summary["n_attempts"]
    result["clustering"] = {
        "stand_in_vectors": True,
        "n_clustered_directly": n_direct,
        "n_assigned": n - n_direct,
        "n_clusters": n_clusters,
        "pooled_small": int(sizes[clusters.summary["cluster_id"] < 0].sum()),
        "member_total": int(sizes.sum()),
        "by_run_total": int(sum(sum(b.values()) for b in clusters.summary["by_run"])),
        "build_clusters": runs,
        "wall_s_best": min(r["wall_s"] for r in runs),
        "wall_s_median": statistics.median(r["wall_s"] for r in runs),
        "cluster_vectors": t_cluster,
        "terms": t_terms,
    }
    print(f"clustered directly {n_direct:,}, assigned to the nearest centre {n - n_direct:,}")
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
