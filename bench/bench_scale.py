"""Growth at scale: builds the stores of one size once, keeps them, and measures what must not grow with them.

``python bench/bench_scale.py --size 1000000 --work DIR [--measure upload search] [--json OUT]``

Kept in ``DIR/<size>/`` and reused by every later run (delete the folder to rebuild):

* ``logs/``: seeded native logs (``bench/gen_logs.py``, 50 files);
* ``file.duckdb`` (and its ``.read`` snapshot): a DuckDB file store, ``python -m ingest`` of the logs;
* ``store.lake`` (and ``store.lake.files/``): a local lake (``ducklake:sqlite:``, SQLite catalog, Parquet on the
  local disk), made from the file store with ``python -m analytics migrate-store``.

With ``--stream`` (for 10M, whose logs and two stores do not fit on this disk together) only the local lake, the
default store, is built, the way a user fills it: each log file is generated, ingested with ``python -m ingest``
into ``lake/store.lake`` and deleted before the next is written (the files are those of the plain build), so the
disk holds one log file at a time. Each file's ingest (wall, CPU, peak RSS of the process tree) goes to
``lake/build.json``. A rerun resumes: files already ingested are recognised by their content hash and skipped.

Measured (``--measure``):

* ``upload``: ``python -m ingest`` of one native file of 100 attempts (a new run), in a fresh process, three times
  per store: the latency a user or CI job sees, Python start-up included. Each upload adds its run to the kept
  stores (100 attempts; tagged by time so a rerun never repeats one).
* ``search``: ``python -m analytics search`` of a phrase, a word and an identifier on each store, in a fresh process.
* ``sql``: the SQL console's AD-Bench Table 2 query (pointed at ``bench-0``) and a few analyst queries
  (``ANALYST_QUERIES``), each through the console's sandbox (``analytics.sql_console.try_query``): CPU and wall.
* ``irt``: a fresh 1PL fit of ``--irt-benchmark`` with the shipped settings, nothing stored: the read of its
  responses (``load_responses``), then ``analytics.irt.estimate``, whose progress messages (its epochs, then the item
  statistics and the bootstrap of the abilities' sd) are logged with the CPU so far; ``phases`` gives the CPU of each
  (preparation to the first epoch, the epochs, the item statistics, the bootstrap, the rest). A fit that passes
  ``--irt-cap-cpu`` CPU seconds (or ``--irt-cap-wall`` s) is stopped at its next message and reported with the
  message it reached.
* ``irt-worker``: the Progress page's fit as the page starts it: ``python -m jobs.irt`` given
  ``jobs.irt.worker_request`` (the worker's address-space and CPU caps, ``RUNLENS_IRT_WORKER_MB`` and
  ``RUNLENS_IRT_WORKER_CPU_S``), which fits 1PL of ``--irt-benchmark`` and **stores** it (a copy only). Each of its
  messages is logged with the worker's CPU, resident peak and address-space peak so far (``/proc``); then its exit
  status, its last message (``done`` or the ``error`` the page would show) and its CPU and peak RSS in all.
* ``clusters-worker``: the Failure clusters page's job as the page starts it: ``python -m jobs.clusters_worker``
  given ``jobs.clusters_worker.worker_request`` (its caps; ``--job-memory-mb`` starts it, or ``irt-worker``, with a
  smaller limit, as when the server's memory budget grants less), which **stores** the clustering (a copy only);
  logged as ``irt-worker`` is, a message per step.
* ``clusters``: the failures of every benchmark (the count the Failure clusters page would cluster), then (not
  with ``--clusters-count-only``) the page's job on ``--clusters-benchmark`` (``bench/bench_clusters.py --page STORE --compute``: documents, vectors,
  clustering, stored), which **writes**: use it only with ``--store`` on a copy. With ``--clusters-steps`` the job
  (``jobs.failures.cluster_failures``) runs in a process of its own that samples its resident memory every 0.1 s:
  each step (the job's progress messages, its batches joined) with its CPU, wall and **peak RSS**.

``--store LOCATION`` measures that store instead of building one (``--size`` then only labels the figures): a kept
10M lake is measured read-only for ``sql`` and ``irt``; ``upload`` and ``clusters`` write, so give them a copy (a
copy of the catalog with ``RUNLENS_LAKE_DATA_PATH`` at the kept data folder, or hard links of the data files).
``--lock FILE`` holds that file lock (``flock``) only while a measurement reads the store, so measurements of
one large store by several people never overlap and the IRT fit's CPU-only part does not hold it.

Run it under ``nice -n 19`` on a shared machine. Building 1M attempts takes about 4 minutes here (generation, ingest,
migration); 10M about 25 minutes and 50 GB of disk (logs 27 GB, file store 15 GB plus its snapshot, lake 7 GB), or
with ``--stream`` the lake alone and one 0.55 GB log file at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_lake import upload_files  # noqa: E402
from bench.gen_logs import generate, iter_generate  # noqa: E402

SEARCHES = {"phrase": "budget week growth", "word": "threshold", "identifier": "t000123"}

# What an analyst types into the SQL console of a large store (beside the shipped AD-Bench Table 2 query).
ANALYST_QUERIES = {
    "pass rate per run": "SELECT run_id, agent, avg(passed::INTEGER) AS pass_rate, count(*) AS n FROM v_attempts "
    "GROUP BY ALL ORDER BY pass_rate DESC",
    "hardest tasks of bench-0": "SELECT task_id, avg(passed::INTEGER) AS pass_rate, count(*) AS n FROM v_attempts "
    "WHERE benchmark = 'bench-0' GROUP BY task_id ORDER BY pass_rate, task_id LIMIT 20",
    "tool calls per level": "SELECT benchmark, level, avg(n_tool_calls) AS calls, quantile_cont(n_tool_calls, 0.9) "
    "AS p90 FROM v_attempts GROUP BY ALL ORDER BY ALL",
    "one attempt's steps": "SELECT step, kind, tool FROM steps WHERE attempt_id = (SELECT min(attempt_id) FROM "
    "attempts) ORDER BY step",
}


@contextlib.contextmanager
def held(lock: Path | None) -> Iterator[None]:
    """Hold ``lock`` (an exclusive ``flock``, as the ``flock`` command takes it) for the block; no lock: nothing."""
    if lock is None:
        yield
        return
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args: list[str], *, timeout: float = 7200) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall seconds of ``python args`` in a fresh process (its CPU seconds: ``_cpu()`` before and after)."""
    start = time.perf_counter()
    env = {**os.environ, "RUNLENS_MAX_FILE_BYTES": str(1 << 40)}  # generated files pass 512 MiB at 10M
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start, done


def build(work: Path, size: int) -> dict[str, str]:
    """The stores of ``size`` attempts under ``work/<size>`` (built once): {kind: location}."""
    folder = work / str(size)
    folder.mkdir(parents=True, exist_ok=True)
    logs, db, lake = folder / "logs", folder / "file.duckdb", folder / "store.lake"
    if not (logs / "DONE").exists():
        shutil.rmtree(logs, ignore_errors=True)
        t = time.perf_counter()
        generate(logs, n_attempts=size, seed=size)
        (logs / "DONE").write_text("")
        print(f"generated {size:,} attempts in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    if not Path(f"{db}.read").exists():
        for stale in folder.glob("file.duckdb*"):
            stale.unlink()
        seconds, _ = _run(["-m", "ingest", "--db", str(db), "--no-progress", str(logs)])
        print(f"ingested into {db} in {seconds:.0f} s", file=sys.stderr)
    if not (folder / "LAKE_DONE").exists():
        for stale in folder.glob("store.lake*"):
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
        seconds, _ = _run(["-m", "analytics", "migrate-store", "--from", str(db), "--to", f"ducklake:sqlite:{lake}"])
        (folder / "LAKE_DONE").write_text("")
        print(f"migrated into {lake} in {seconds:.0f} s", file=sys.stderr)
    return {"file": str(db), "lake": f"ducklake:sqlite:{lake}"}


def build_streamed(work: Path, size: int) -> dict[str, str]:
    """The local lake of ``size`` attempts under ``work/<size>/lake``, one log file on disk at a time."""
    folder = work / str(size) / "lake"
    folder.mkdir(parents=True, exist_ok=True)
    lake, done, record = folder / "store.lake", folder / "DONE", folder / "build.json"
    location = f"ducklake:sqlite:{lake}"
    if done.exists():
        return {"lake": location}
    files: list[dict[str, object]] = []
    started = time.perf_counter()
    for path in iter_generate(folder / "logs", n_attempts=size, seed=size):
        before = _cpu()
        seconds, _ = _run(["-m", "ingest", "--db", location, "--no-progress", str(path)])
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        files.append(
            {
                "file": path.name,
                "bytes": path.stat().st_size,
                "seconds": round(seconds, 1),
                "cpu_seconds": round(_cpu() - before, 1),
                "peak_rss_mb_so_far": round(peak_mb),
                "load_average": os.getloadavg()[0],
            }
        )
        path.unlink()
        record.write_text(json.dumps({"size": size, "files": files}, indent=1) + "\n")
        print(f"{path.name}: {seconds:.0f} s", file=sys.stderr)
    total = {
        "size": size,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "ingest_seconds": round(sum(float(f["seconds"]) for f in files), 1),  # type: ignore[arg-type]
        "ingest_cpu_seconds": round(sum(float(f["cpu_seconds"]) for f in files), 1),  # type: ignore[arg-type]
        "disk_bytes": _disk_bytes(location),
        "files": files,
    }
    record.write_text(json.dumps(total, indent=1) + "\n")
    done.write_text("")
    return {"lake": location}


def _disk_bytes(location: str) -> int:
    if location.startswith("ducklake:sqlite:"):
        catalog = Path(location.removeprefix("ducklake:sqlite:"))
        files = Path(f"{catalog}.files")
        return catalog.stat().st_size + sum(p.stat().st_size for p in files.rglob("*") if p.is_file())
    return sum(
        Path(f"{location}{suffix}").stat().st_size for suffix in ("", ".read") if Path(f"{location}{suffix}").exists()
    )


def measure_upload(stores: dict[str, str], folder: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    tag = f"up{int(time.time())}"
    for kind, location in stores.items():
        files = upload_files(folder / "uploads", f"{tag}-{kind}", 3)
        seconds, cpu = [], []
        for path in files:
            before = _cpu()
            seconds.append(round(_run(["-m", "ingest", "--db", location, "--no-progress", str(path)])[0], 3))
            cpu.append(round(_cpu() - before, 3))
        out[kind] = {
            "seconds": seconds,
            "cpu_seconds": cpu,
            "median_s": statistics.median(seconds),
            "disk_bytes": _disk_bytes(location),
            "load_average": os.getloadavg()[0],
        }
        print(f"upload {kind}: {seconds} s wall, {cpu} s CPU", file=sys.stderr)
    return out


def measure_search(stores: dict[str, str]) -> dict[str, object]:
    """Each search in a fresh process, first scanning (no index), then through the index (refreshed before)."""
    out: dict[str, object] = {}
    for kind, location in stores.items():
        row: dict[str, object] = {}
        for state in ("scan", "index"):
            if state == "scan":
                _run(["-m", "analytics", "search-index", "--db", location, "--drop"])
            else:
                before = _cpu()
                seconds, _ = _run(["-m", "analytics", "search-index", "--db", location])
                row["index_refresh"] = {"seconds": round(seconds, 3), "cpu_seconds": round(_cpu() - before, 3)}
            for what, text in SEARCHES.items():
                before = _cpu()
                seconds, done = _run(["-m", "analytics", "search", "--db", location, "--json", text])
                report = json.loads(done.stdout)
                row[f"{state} {what}"] = {
                    "seconds": round(seconds, 3),
                    "cpu_seconds": round(_cpu() - before, 3),
                    "n_attempts": report.get("n_attempts"),
                }
        out[kind] = row
        print(f"search {kind}: {row}", file=sys.stderr)
    return out


def measure_sql(location: str, lock: Path | None) -> dict[str, object]:
    """The Table 2 query (pointed at ``bench-0``) and ``ANALYST_QUERIES`` through the console's sandbox."""
    from analytics import sql_console as sb

    shipped = (ROOT / "queries" / "ad_bench_table2.sql").read_text(encoding="utf-8")
    queries = {
        "AD-Bench Table 2 (bench-0)": shipped.replace(
            "benchmark = 'ad-bench' AND eval_date = DATE '2026-01-15'", "benchmark = 'bench-0'"
        ),
        **ANALYST_QUERIES,
    }
    # As shipped (10 s wall: on a loaded machine the limit is reached before the CPU is), then with the wall limit
    # raised so the CPU the statement needs is seen (the sandbox's one thread and memory limit unchanged).
    limits = {"shipped limits": sb.SandboxLimits(), "timeout 600 s": sb.SandboxLimits(timeout_s=600.0)}
    out: dict[str, object] = {"load_average": os.getloadavg()[0]}
    with held(lock):
        for name, sql in queries.items():
            row: dict[str, object] = {}
            for label, limit in limits.items():
                wall, cpu = time.perf_counter(), _self_cpu() + _cpu()
                outcome = sb.try_query(sql, db=location, limits=limit)
                row[label] = {
                    "seconds": round(time.perf_counter() - wall, 3),
                    "cpu_seconds": round(_self_cpu() + _cpu() - cpu, 3),
                    "rows": outcome.result.n_rows if outcome.result is not None else None,
                    "error": outcome.error,
                }
            out[name] = row
            print(f"sql {name}: {row}", file=sys.stderr)
    out["peak_rss_mb"] = _peak_mb()
    return out


def irt_phases(reached: list[dict[str, Any]], total: float) -> dict[str, float]:
    """CPU seconds of each part of a fit from its logged messages (CPU so far at each): preparation (arrays, model,
    JML start) to the first epoch, the epochs, the item statistics, the bootstrap of the sd, and the rest."""
    at = {str(r["epoch"]).split(":")[0].split(" of ")[0]: float(r["cpu_seconds"]) for r in reversed(reached)}
    first = next((float(r["cpu_seconds"]) for r in reached if str(r["epoch"]).startswith("epoch ")), None)
    marks = [("preparation", first), ("epochs", at.get("item statistics"))]
    marks += [("item statistics", at.get("the abilities' sd")), ("bootstrap of the sd, and the rest", total)]
    out, before = {}, 0.0
    for name, until in marks:
        if until is not None:
            out[name], before = round(until - before, 2), until
    return out


class _CapReached(Exception):
    """The IRT fit passed its cap (``--irt-cap-cpu``, ``--irt-cap-wall``)."""


def measure_irt(
    location: str, lock: Path | None, *, benchmark: str, cap_cpu: float, cap_wall: float
) -> dict[str, object]:
    """A fresh 1PL fit of ``benchmark`` (shipped settings, nothing stored): the read under ``lock``, then the fit."""
    import store as rdb
    from analytics.irt import estimate, load_responses, settings_for

    out: dict[str, object] = {"benchmark": benchmark, "load_average": os.getloadavg()[0]}
    with held(lock):
        wall, cpu = time.perf_counter(), _self_cpu()
        with rdb.reader(location) as con:
            obs = load_responses(con, benchmark=benchmark)
        out["read"] = {"seconds": round(time.perf_counter() - wall, 3), "cpu_seconds": round(_self_cpu() - cpu, 3)}
    out["observations"] = len(obs)
    out["subjects"] = int(obs["subject"].nunique())
    out["tasks"] = int(obs["task_id"].nunique())
    print(f"irt read: {out}", file=sys.stderr)
    settings = settings_for("1pl")
    reached: list[dict[str, object]] = []
    wall, cpu = time.perf_counter(), _self_cpu()

    def progress(fraction: float, message: str) -> None:
        spent = _self_cpu() - cpu
        reached.append({"epoch": message.split(",")[0], "cpu_seconds": round(spent, 2)})
        print(f"irt {message}: {spent:.1f} CPU s", file=sys.stderr)
        if spent > cap_cpu or time.perf_counter() - wall > cap_wall:
            raise _CapReached

    try:
        estimate(obs, settings, progress=progress)
        out["fit"] = "finished"
    except _CapReached:
        out["fit"] = f"stopped at its cap ({cap_cpu:.0f} CPU s or {cap_wall:.0f} s wall)"
    out["fit_seconds"] = round(time.perf_counter() - wall, 3)
    out["fit_cpu_seconds"] = round(_self_cpu() - cpu, 3)
    out["epochs"] = settings.epochs
    out["reached"] = reached[-1] if reached else None
    out["phases"] = irt_phases(reached, round(_self_cpu() - cpu, 3))
    out["peak_rss_mb"] = _peak_mb()
    return out


def _proc_figures(pid: int) -> dict[str, float]:
    """CPU seconds, resident peak and address-space peak (MB) of a live process, from ``/proc``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
        )
    except OSError:
        return {}
    ticks = os.sysconf("SC_CLK_TCK")
    return {
        "cpu_seconds": round((int(fields[11]) + int(fields[12])) / ticks, 2),
        "peak_rss_mb": round(int(status["VmHWM"].split()[0]) / 1024),
        "peak_address_space_mb": round(int(status["VmPeak"].split()[0]) / 1024),
    }


def measure_irt_worker(
    location: str, lock: Path | None, *, benchmark: str, memory_mb: int | None = None
) -> dict[str, object]:
    """``python -m jobs.irt`` as the Progress page starts it (its caps), on ``location`` (it stores the fit: a copy)."""
    from jobs.irt import worker_request

    def kept(message: dict[str, object]) -> bool:  # every message but the epochs between the first and the last
        return "fraction" not in message or str(message.get("message", "")).startswith(("epoch 0/", "item", "the"))

    request = worker_request(location, benchmark=benchmark, model="1pl")
    return measure_job_worker("jobs.irt", request, lock, kept=kept, memory_mb=memory_mb)


def measure_clusters_worker(
    location: str, lock: Path | None, *, benchmark: str, memory_mb: int | None = None
) -> dict[str, object]:
    """``python -m jobs.clusters_worker`` as the Failure clusters page starts it (its caps), on ``location`` (it
    stores the clustering: a copy); a message is kept when its step changes."""
    from jobs.clusters_worker import worker_request

    seen: set[str] = set()

    def kept(message: dict[str, object]) -> bool:
        step = str(message.get("message", "")).split(":")[0]
        if step in seen and "fraction" in message:
            return False
        seen.add(step)
        return True

    request = worker_request(location, benchmark=benchmark, run_id=None)
    return measure_job_worker("jobs.clusters_worker", request, lock, kept=kept, memory_mb=memory_mb)


def measure_job_worker(
    module: str,
    request: dict[str, object],
    lock: Path | None,
    *,
    kept: Callable[[dict[str, object]], bool],
    memory_mb: int | None = None,
) -> dict[str, object]:
    """A job's process (``python -m module``) given ``request`` (``memory_mb``: started with that address-space
    limit instead of its cap, as when the server's memory budget grants less), in the environment the server gives
    it (``ingest.workers.worker_env``: its allocators): each kept message with the process's
    CPU, resident peak and address-space peak so far (``/proc``), its exit status, last message, CPU and peak RSS."""
    from ingest import workers

    if memory_mb is not None:
        request = {**request, "memory_bytes": memory_mb * 1024 * 1024}
    request = {**request, "parent_pid": os.getpid()}
    out: dict[str, object] = {"request": request, "load_average": os.getloadavg()[0]}
    messages: list[dict[str, object]] = []
    last: dict[str, object] | None = None
    with held(lock):
        wall, before = time.perf_counter(), _cpu()
        proc = subprocess.Popen(
            [sys.executable, "-m", module],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=workers.worker_env(str(ROOT)),  # the page's allocators (the address space measures memory)
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request))
        proc.stdin.close()
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            row = {"wall_seconds": round(time.perf_counter() - wall, 1), **message, **_proc_figures(proc.pid)}
            if kept(message):
                messages.append(row)
                print(f"{module}: {row}", file=sys.stderr)
            last = row
        code = proc.wait()
    out["messages"] = messages
    out["last_message"] = last
    out["exit_status"] = code
    out["seconds"] = round(time.perf_counter() - wall, 1)
    out["cpu_seconds"] = round(_cpu() - before, 2)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    return out


FAILURES_SQL = """
SELECT r.benchmark, count(*) AS attempts, count(*) FILTER (WHERE a.passed = false) AS failures
FROM attempts a JOIN runs r USING (run_id) GROUP BY r.benchmark ORDER BY r.benchmark
"""


CLUSTERS_STEPS = """
import json, resource, sys, threading, time
from pathlib import Path
from jobs.failures import cluster_failures

def rss_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0

steps, state, stop = [], {"peak": rss_mb(), "name": "start", "wall": time.perf_counter(), "cpu": time.process_time()}, threading.Event()

def sample():
    while not stop.wait(0.1):
        state["peak"] = max(state["peak"], rss_mb())

def said(fraction, message):
    name = message.split(":")[0]
    if name != state["name"]:
        wall, cpu = time.perf_counter(), time.process_time()
        rss = rss_mb()
        steps.append({"step": state["name"], "wall_s": round(wall - state["wall"], 2), "cpu_s": round(cpu - state["cpu"], 2),
                      "peak_rss_mb": round(max(state["peak"], rss)), "rss_after_mb": round(rss)})
        print(json.dumps(steps[-1]), file=sys.stderr, flush=True)
        state.update(peak=rss, name=name, wall=wall, cpu=cpu)

threading.Thread(target=sample, daemon=True).start()
cluster_failures(sys.argv[1], benchmark=sys.argv[2], progress=said)
said(1.0, "end")
stop.set()
print(json.dumps({"steps": steps, "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
"""


def measure_clusters(
    location: str, lock: Path | None, *, benchmark: str, work: Path, job: bool = True, steps: bool = False
) -> dict[str, object]:
    """The failures per benchmark, then the Failure clusters page's job on ``benchmark`` (writes: a copy only)."""
    import store as rdb

    out: dict[str, object] = {"load_average": os.getloadavg()[0]}
    with held(lock):
        wall, cpu = time.perf_counter(), _self_cpu()
        with rdb.reader(location) as con:
            rows = rdb.query_rows(con, FAILURES_SQL)
        out["count"] = {"seconds": round(time.perf_counter() - wall, 3), "cpu_seconds": round(_self_cpu() - cpu, 3)}
        out["failures"] = {str(b): {"attempts": int(n), "failures": int(f)} for b, n, f in rows}
        print(f"clusters failures: {out['failures']}", file=sys.stderr)
        if not job:
            return out
        if steps:
            before = _cpu()
            seconds, done = _run(["-c", CLUSTERS_STEPS, location, benchmark])
            out["job"] = {
                "benchmark": benchmark,
                "seconds": round(seconds, 1),
                "cpu_seconds": round(_cpu() - before, 1),
                **json.loads(done.stdout.strip().splitlines()[-1]),
            }
            return out
        figures = work / f"clusters-{benchmark}.json"
        before = _cpu()
        seconds, _ = _run(
            [
                "bench/bench_clusters.py",
                "--page",
                location,
                "--benchmark",
                benchmark,
                "--compute",
                "--json",
                str(figures),
            ]
        )
        out["job"] = {
            "benchmark": benchmark,
            "seconds": round(seconds, 1),
            "cpu_seconds": round(_cpu() - before, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
            "figures": json.loads(figures.read_text()),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, required=True, help="where the stores are kept (outside the repository)")
    parser.add_argument(
        "--measure",
        nargs="*",
        default=["upload"],
        choices=["upload", "search", "sql", "irt", "irt-worker", "clusters", "clusters-worker"],
    )
    parser.add_argument("--store", help="measure this existing store (a copy for upload and clusters): no build")
    parser.add_argument("--lock", type=Path, help="an flock file held while a measurement reads the store")
    parser.add_argument("--irt-benchmark", default="bench-0")
    parser.add_argument("--irt-cap-cpu", type=float, default=3600.0, help="stop the IRT fit past these CPU s")
    parser.add_argument("--irt-cap-wall", type=float, default=7200.0, help="or past these wall seconds")
    parser.add_argument("--clusters-benchmark", default="bench-0")
    parser.add_argument("--clusters-count-only", action="store_true", help="count the failures, run no job")
    parser.add_argument("--clusters-steps", action="store_true", help="the job alone: CPU and peak RSS of each step")
    parser.add_argument(
        "--job-memory-mb", type=int, help="start irt-worker / clusters-worker with this limit instead of its cap"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--stream", action="store_true", help="build only the local lake, one log file at a time")
    args = parser.parse_args(argv)
    if args.store:
        stores = {"store": args.store}
    else:
        stores = build_streamed(args.work, args.size) if args.stream else build(args.work, args.size)
    result: dict[str, object] = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "size": args.size}
    folder = args.work / str(args.size)
    folder.mkdir(parents=True, exist_ok=True)
    if "upload" in args.measure:
        with held(args.lock):
            result["upload"] = measure_upload(stores, folder)
    if "search" in args.measure:
        with held(args.lock):
            result["search"] = measure_search(stores)
    location = stores.get("lake") or next(iter(stores.values()))  # the default store, or the one given
    if "sql" in args.measure:
        result["sql"] = measure_sql(location, args.lock)
    if "irt" in args.measure:
        result["irt"] = measure_irt(
            location, args.lock, benchmark=args.irt_benchmark, cap_cpu=args.irt_cap_cpu, cap_wall=args.irt_cap_wall
        )
    if "irt-worker" in args.measure:
        result["irt_worker"] = measure_irt_worker(
            location, args.lock, benchmark=args.irt_benchmark, memory_mb=args.job_memory_mb
        )
    if "clusters-worker" in args.measure:
        result["clusters_worker"] = measure_clusters_worker(
            location, args.lock, benchmark=args.clusters_benchmark, memory_mb=args.job_memory_mb
        )
    if "clusters" in args.measure:
        result["clusters"] = measure_clusters(
            location,
            args.lock,
            benchmark=args.clusters_benchmark,
            work=folder,
            job=not args.clusters_count_only,
            steps=args.clusters_steps,
        )
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
