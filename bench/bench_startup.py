"""Start-up cost of the command-line entry points (issue 15) and of the app on a given store (issue 33).

    .venv/bin/python bench/bench_startup.py [--repeat 5] [--json out.json]
    .venv/bin/python bench/bench_startup.py --app STORE [--app STORE ...] [--repeat 3] [--json out.json]

Without ``--app``: runs each command ``--repeat`` times in a fresh interpreter (the median wall time is reported)
and, once, with ``-X importtime`` to list the modules that cost the most (cumulative microseconds). The commands:
``--help`` of ``python -m ingest`` and ``python -m analytics``, a 100-attempt ingest into a new database, and
``python -m analytics leaderboard --json`` on that database.

With ``--app STORE`` (a DuckDB file or a ``ducklake:`` location; the store is only read): the app's start, in a
fresh interpreter each time, as a new server's first visitor meets it: the imports, then the first run of app.py
(AppTest: the database check, the sidebar, the landing page), with the seconds of each cached read it made (the
sidebar's and the landing page's). Medians of ``--repeat`` runs, wall and CPU (all threads) seconds.

With ``--app STORE --phases``: the same start, taken apart (one run per repeat, the median by total shown): the
process's own imports (Streamlit and AppTest: a server has them before any visitor), AppTest's component scan
(Streamlit's ``discover_and_register_components``, also paid by a server's Runtime), then inside the first run of
app.py: its imports (until ``ui.shell.run_app`` starts), the store's preparation (``_bootstrap``), the version pin,
the lake's engine (extensions loaded) and each attachment (with the thread that paid them), the sidebar, each
cached read, and the landing page (``StreamlitPage.run``); each with wall, the CPU of its own thread and the CPU of
the whole process over the same interval. The run's imports by package come from ``-X importtime`` (self times).
And the script's thread from /proc (its schedstat): the wall of the script's execution, the part of it on a CPU,
and the part it waited, runnable, for a CPU (the machine's load): on a loaded machine the wall less that wait is
the nearer estimate of the quiet machine's wall.

With ``--server STORE``: what ``bash run.sh app`` does, in real processes: ``python -m data.demo.prepare`` on the
store (run.sh runs it before the server), then ``streamlit run app.py`` on a free port: seconds until
``/_stcore/health`` answers (Streamlit's start: its imports, the config, the Runtime's component scan), then until
the script health check (the warm-up's first run of the app, the landing page included) returns; the server's CPU
seconds (all threads, from /proc) at each point. ``--server-option`` adds a ``streamlit run`` option.

With ``--pages STORE PAGE [PAGE ...]``: ``bench/bench_pages.py``'s first and warm render of each page (the app's
bootstrap first), except that Streamlit's component scan runs once in the process, as a server runs it once at its
start: AppTest runs it again for every new AppTest (0.14 CPU s, 0.2-0.7 s wall each time on this machine), so
bench_pages' first render of every page carries it; ``--scan-per-page`` keeps that, to compare.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gen_logs import generate  # noqa: E402

HEAVY = ("torch", "sentence_transformers", "py_irt", "pyro", "plotly", "streamlit", "sklearn", "scipy", "pandas")


def _run(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def _heavy_imports(args: list[str]) -> dict[str, float]:
    """Import milliseconds of each heavy package this command loads: the sum of the self times of its modules
    (absent packages are not listed)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=ROOT, capture_output=True, text=True)
    out: dict[str, float] = {}
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[0].isdigit():
            root = parts[2].split(".")[0]
            if root in HEAVY:
                out[root] = out.get(root, 0.0) + int(parts[0]) / 1000
    return out


APP_START = """
import json, os, sys, time
start_wall, start_cpu = time.perf_counter(), time.process_time()
os.environ["RUNLENS_DB"] = sys.argv[1]
from streamlit.testing.v1 import AppTest
import ui.common
reads = []
plain_cached = ui.common.cached
def timed(fn, **kwargs):
    t = time.perf_counter()
    try:
        return plain_cached(fn, **kwargs)
    finally:
        reads.append((fn.__qualname__, round(time.perf_counter() - t, 3)))
ui.common.cached = timed
import ui.shell
ui.shell.common.cached = timed
at = AppTest.from_file("app.py", default_timeout=1800)
imported_wall, imported_cpu = time.perf_counter(), time.process_time()
at.run()
end_wall, end_cpu = time.perf_counter(), time.process_time()
print(json.dumps({
    "imports_s": round(imported_wall - start_wall, 3),
    "first_run_s": round(end_wall - imported_wall, 3),
    "total_s": round(end_wall - start_wall, 3),
    "total_cpu_s": round(end_cpu - start_cpu, 3),
    "reads": reads,
    "problems": [str(e.value)[:200] for e in at.exception],
}))
"""


def app_start(location: str, *, repeat: int) -> dict[str, object]:
    """The app's start on ``location`` in ``repeat`` fresh interpreters: medians, and the reads of the median run."""
    runs = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", APP_START, location], cwd=ROOT, check=True, capture_output=True, text=True
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    runs.sort(key=lambda r: r["total_s"])
    median = runs[len(runs) // 2]
    keys = ("imports_s", "first_run_s", "total_s", "total_cpu_s")
    return {
        "store": location,
        **{k: statistics.median(float(r[k]) for r in runs) for k in keys},
        "runs": [{k: r[k] for k in keys} for r in runs],
        "reads_of_median_run": median["reads"],
        "problems": median["problems"],
    }


APP_PHASES = r"""
import importlib.abc, importlib.util, json, os, sys, threading, time
T0 = time.perf_counter()
os.environ["RUNLENS_DB"] = sys.argv[1]
marks = []

def wrap(owner, name, label=None):
    fn = getattr(owner, name)
    def timed(*args, **kwargs):
        w, t, p = time.perf_counter(), time.thread_time(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            marks.append({
                "what": label or name, "at_s": round(w - T0, 3), "wall_s": round(time.perf_counter() - w, 3),
                "thread_cpu_s": round(time.thread_time() - t, 3), "process_cpu_s": round(time.process_time() - p, 3),
                "thread": threading.current_thread().name,
            })
    setattr(owner, name, timed)

def hook_common(m):
    wrap(m, "pin_version")
    plain = m.cached
    def cached(fn, **kwargs):
        w, t, p = time.perf_counter(), time.thread_time(), time.process_time()
        try:
            return plain(fn, **kwargs)
        finally:
            marks.append({
                "what": "read " + fn.__qualname__, "at_s": round(w - T0, 3),
                "wall_s": round(time.perf_counter() - w, 3), "thread_cpu_s": round(time.thread_time() - t, 3),
                "process_cpu_s": round(time.process_time() - p, 3), "thread": threading.current_thread().name,
            })
    m.cached = cached

def hook_shell(m):
    def run_app_started(fn=m.run_app):
        def run_app(pages):
            marks.append({"what": "app.py's imports done", "at_s": round(time.perf_counter() - T0, 3)})
            return fn(pages)
        return run_app
    m.run_app = run_app_started()
    for name in ("_bootstrap", "_sidebar", "render_shell"):
        wrap(m, name)

def hook_lake(m):
    wrap(m, "_new_instance", "lake engine: DuckDB instance, extensions loaded")
    wrap(m, "connect", "lake attach (a snapshot)")
    wrap(m, "refresh", "lake catalog: snapshot range (sqlite)")

HOOKS = {"ui.common": hook_common, "ui.shell": hook_shell, "store.lake": hook_lake}

class AfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in HOOKS:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        load = spec.loader.exec_module
        def exec_module(module):
            load(module)
            HOOKS[name](module)
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, AfterImport())
from streamlit.testing.v1 import AppTest
from streamlit.navigation.page import StreamlitPage
import streamlit.components.v2.component_manager as ccm
wrap(ccm.BidiComponentManager, "discover_and_register_components", "Streamlit's component scan (AppTest; a server's Runtime)")
wrap(StreamlitPage, "run", "the landing page (StreamlitPage.run, its reads included)")
import streamlit.runtime.scriptrunner.script_runner as runner
script = {}

def schedstat():
    # the calling thread's nanoseconds on a CPU and waiting for one (runnable, not running: the machine's load)
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as stat:
        on_cpu, waiting, _ = (int(x) for x in stat.read().split())
    return on_cpu, waiting

def exec_script(fn=runner.exec_func_with_error_handling):
    def run(*args, **kwargs):
        w, (c, q) = time.perf_counter(), schedstat()
        try:
            return fn(*args, **kwargs)
        finally:
            c2, q2 = schedstat()
            script.update(wall_s=round(time.perf_counter() - w, 3), on_cpu_s=round((c2 - c) / 1e9, 3),
                          runqueue_s=round((q2 - q) / 1e9, 3))
    return run
runner.exec_func_with_error_handling = exec_script()
at = AppTest.from_file("app.py", default_timeout=1800)
imported_wall, imported_cpu = time.perf_counter(), time.process_time()
print("RUNLENS-PHASES-START", file=sys.stderr, flush=True)
at.run()
end_wall, end_cpu = time.perf_counter(), time.process_time()
print(json.dumps({
    "process_imports_s": round(imported_wall - T0, 3),
    "first_run_s": round(end_wall - imported_wall, 3),
    "first_run_cpu_s": round(end_cpu - imported_cpu, 3),
    "total_s": round(end_wall - T0, 3),
    "marks": marks,
    "script_thread": script,
    "problems": [str(e.value)[:200] for e in at.exception],
}))
"""

IMPORT_GROUPS = ("pandas", "pyarrow", "numpy", "scipy", "plotly", "duckdb", "streamlit", "store", "analytics", "views")


def _imports_after_marker(stderr: str) -> dict[str, float]:
    """Seconds of module bodies imported during the app's first run (``-X importtime`` self times after the
    marker), summed by top-level package (the rest as ``other``)."""
    out: dict[str, float] = {}
    seen = False
    for line in stderr.splitlines():
        if line.startswith("RUNLENS-PHASES-START"):
            seen = True
            continue
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if not seen or len(parts) != 3 or not parts[0].isdigit():
            continue
        root = parts[2].split(".")[0]
        group = root if root in IMPORT_GROUPS else "other"
        out[group] = round(out.get(group, 0.0) + int(parts[0]) / 1e6, 3)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def app_phases(location: str, *, repeat: int) -> dict[str, object]:
    """The app's start on ``location`` taken apart (see the module's docstring): the run of median total."""
    runs = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", APP_PHASES, location],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        run = json.loads(done.stdout.strip().splitlines()[-1])
        run["imports_in_first_run_s"] = _imports_after_marker(done.stderr)
        runs.append(run)
    runs.sort(key=lambda r: r["total_s"])
    return {"store": location, "totals": [r["total_s"] for r in runs], **runs[len(runs) // 2]}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system, every thread) of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_start(location: str, *, options: list[str], timeout_s: float = 600.0) -> dict[str, object]:
    """``bash run.sh app``'s start in real processes (see the module's docstring): seconds and CPU seconds."""
    env = {**os.environ, "RUNLENS_DB": location}
    t0 = time.perf_counter()
    prepared = subprocess.run(
        [sys.executable, "-m", "data.demo.prepare"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    prepare_s = time.perf_counter() - t0
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port)]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as log:  # the server's own messages, for the error below
        proc = subprocess.Popen([*cmd, *options], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            while True:
                try:
                    with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                        break
                except OSError as exc:
                    if proc.poll() is not None or time.perf_counter() - t0 > timeout_s:
                        log.seek(0)
                        raise RuntimeError(f"the server did not answer: {log.read().decode(errors='replace')}") from exc
                    time.sleep(0.02)
            health_s, health_cpu = time.perf_counter() - t0, _cpu_of(proc.pid)
            with urllib.request.urlopen(url + "/_stcore/script-health-check", timeout=timeout_s) as resp:
                answer = resp.read().decode()
            first_s, first_cpu = time.perf_counter() - t0, _cpu_of(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return {
        "store": location,
        "prepare_s": round(prepare_s, 3),
        "prepare_said": prepared.stderr.strip().splitlines()[-1:],
        "health_s": round(health_s, 3),
        "health_cpu_s": round(health_cpu, 3),
        "first_run_done_s": round(first_s, 3),
        "first_run_done_cpu_s": round(first_cpu, 3),
        "script_health": answer[:200],
    }


def pages_as_a_server(location: str, pages: list[str], *, scan_per_page: bool = False) -> dict[str, object]:
    """bench_pages' page renders with Streamlit's component scan run once per process (see the module's docstring)."""
    import streamlit.components.v2.manifest_scanner as scanner

    from bench import bench_pages

    scan = scanner.scan_component_manifests
    if not scan_per_page:  # the scan's result is the same for every AppTest of this process: kept from the first
        scanner.scan_component_manifests = functools.cache(scan)
    load = [round(x, 2) for x in os.getloadavg()]
    try:
        rows = bench_pages.render_pages(Path(location), pages)
    finally:
        scanner.scan_component_manifests = scan
    return {"db": location, "scan_per_page": scan_per_page, "loadavg": load, "pages": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--app", action="append", help="a store whose app start to time (repeatable)")
    parser.add_argument("--phases", action="store_true", help="with --app: the start taken apart")
    parser.add_argument("--server", action="append", help="a store to start a real server on (repeatable)")
    parser.add_argument("--server-option", action="append", default=[], help="a `streamlit run` option (repeatable)")
    parser.add_argument("--pages", nargs="+", metavar="STORE PAGE", help="a store, then the pages to render")
    parser.add_argument("--scan-per-page", action="store_true", help="with --pages: AppTest's scan for every page")
    args = parser.parse_args(argv)
    if args.pages:
        res = pages_as_a_server(args.pages[0], args.pages[1:], scan_per_page=args.scan_per_page)
        for row in res["pages"]:  # type: ignore[attr-defined]
            print(
                f"{row['page']}: first {row['first_wall_s']:.2f} s ({row['first_cpu_s']:.2f} CPU s), warm "
                f"{row['warm_wall_s'] or 0:.2f} s ({row['warm_cpu_s'] or 0:.2f} CPU s) {row['problems'] or ''}"
            )
        if args.json:
            args.json.write_text(json.dumps(res, indent=1))
        return 0
    if args.server:
        starts = []
        for location in args.server:
            for _ in range(args.repeat):
                res = server_start(location, options=args.server_option)
                starts.append(res)
                print(
                    f"{location}: prepare {res['prepare_s']:.2f} s; server answers at {res['health_s']:.2f} s "
                    f"({res['health_cpu_s']:.2f} CPU s), first run done at {res['first_run_done_s']:.2f} s "
                    f"({res['first_run_done_cpu_s']:.2f} CPU s): {res['script_health']}"
                )
        if args.json:
            args.json.write_text(json.dumps(starts, indent=1))
        return 0
    if args.app and args.phases:
        phases = [app_phases(location, repeat=args.repeat) for location in args.app]
        for res in phases:
            print(
                f"{res['store']}: total {res['total_s']:.2f} s (of {res['totals']}); process imports "
                f"{res['process_imports_s']:.2f}, first run {res['first_run_s']:.2f} ({res['first_run_cpu_s']:.2f} "
                f"CPU s); imports in it: {res['imports_in_first_run_s']}"
            )
            st: dict[str, float] = res["script_thread"]  # type: ignore[assignment]
            print(
                f"   the script's thread: {st['wall_s']:.3f} s wall, of which {st['on_cpu_s']:.3f} on a CPU and "
                f"{st['runqueue_s']:.3f} waiting for one (the load); the rest waited on other threads or the disk"
            )
            for mark in res["marks"]:  # type: ignore[attr-defined]
                cost = (
                    f"{mark['wall_s']:.3f} wall, {mark['thread_cpu_s']:.3f} thread CPU, "
                    f"{mark['process_cpu_s']:.3f} process CPU [{mark['thread']}]"
                    if "wall_s" in mark
                    else ""
                )
                print(f"   at {mark['at_s']:6.3f} s  {mark['what']:<60} {cost}")
        if args.json:
            args.json.write_text(json.dumps(phases, indent=1))
        return 0
    if args.app:
        results = [app_start(location, repeat=args.repeat) for location in args.app]
        for res in results:
            reads = ", ".join(f"{name} {s:.2f}" for name, s in res["reads_of_median_run"])  # type: ignore[attr-defined]
            print(
                f"{res['store']}: {res['total_s']:.2f} s (imports {res['imports_s']:.2f}, first run "
                f"{res['first_run_s']:.2f}; CPU {res['total_cpu_s']:.2f}); reads: {reads}"
            )
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        files = generate(Path(tmp) / "logs", n_attempts=100, n_runs=2, seed=15)
        db = str(Path(tmp) / "startup.duckdb")
        commands = {
            "ingest --help": ["-m", "ingest", "--help"],
            "analytics --help": ["-m", "analytics", "--help"],
            "ingest 100 attempts": ["-m", "ingest", "--db", db, *map(str, files)],
            "analytics leaderboard --json": ["-m", "analytics", "leaderboard", "--db", db, "--json"],
        }
        rows = []
        for name, cmd in commands.items():
            if name == "ingest 100 attempts":  # a new database each time: the ingest is real, not a duplicate
                times = []
                for i in range(args.repeat):
                    fresh = str(Path(tmp) / f"startup-{i}.duckdb")
                    times.append(_run(["-m", "ingest", "--db", fresh, *map(str, files)]))
                _run(cmd)
            else:
                times = [_run(cmd) for _ in range(args.repeat)]
            heavy = _heavy_imports(cmd if name != "ingest 100 attempts" else [*cmd[:3], db + ".x", *cmd[4:]])
            rows.append(
                {
                    "command": f"python {' '.join(name.split())}",
                    "median_s": statistics.median(times),
                    "heavy_imports_ms": heavy,
                }
            )
    for r in rows:
        ms: dict[str, float] = r["heavy_imports_ms"]  # type: ignore[assignment]
        named = ", ".join(f"{k} {v:.0f}" for k, v in sorted(ms.items(), key=lambda kv: -kv[1]))
        print(f"{r['command']:<40} {r['median_s']:6.2f} s   {named or '-'}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
