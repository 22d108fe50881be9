"""Shared fixtures: databases built by the real ingest code."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.schedule import file_of, longest_first

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SHARED_DATA = ROOT.parent / "shared" / "data"
ARTIFACTS = ROOT / "tests" / "artifacts"


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test remembers its own "last benchmark used" (ui/last_used.py), never the user's ~/.cache/runlens: a
    server a test starts inherits the variable."""
    folder = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("RUNLENS_STATE_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def own_main_module() -> Iterator[None]:
    """Each test starts with pytest's own ``__main__``: Streamlit's script runner (AppTest) installs the page it runs
    as ``sys.modules["__main__"]`` and leaves it there, and a process started later with ``spawn`` (the validation
    workers) imports the parent's ``__main__`` first: it ran the app's script and died, and the ingest went on without
    its workers."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


# the project's own worker, job and command-line processes (never a server a fixture keeps for later tests)
WORKER_COMMANDS = ("-m jobs.", "-m ingest", "-m analytics", "-m cli.", "upload_worker", "sql_console.worker")


@pytest.fixture(autouse=True)
def no_process_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """A worker, job or command-line process a test starts ends with it: one left running holds memory and CPU
    that later tests on the same pytest worker would pay for (and measure, where a test measures memory).
    Processes of session and module fixtures started before this fixture are left alone, and so are their children
    (a job a module's server started belongs to it). One of the project's worker or command-line processes
    (``WORKER_COMMANDS``) the test started and that still runs a few seconds after the test ends is killed; every
    process the test left (a session fixture's server started inside the test too) is named in
    tests/artifacts/leftover-processes.txt."""
    from tests.treemem import command, descendants, parent_pid, process_state

    me = os.getpid()
    started = set(descendants(me))

    def the_tests(pid: int) -> bool:
        """Started by the test itself (through processes all new), not by a fixture's process."""
        while pid not in started and pid > 1:
            pid = parent_pid(pid)
        return pid == me

    def left_running() -> list[int]:
        return [
            p
            for p in descendants(me)
            if p not in started
            and process_state(p) not in ("", "Z")
            and the_tests(p)
            and "multiprocessing.resource_tracker" not in command(p)  # one per process, for its lifetime
        ]

    def is_worker(pid: int) -> bool:
        return any(word in command(pid) for word in WORKER_COMMANDS)

    yield
    deadline = time.monotonic() + 5
    left = left_running()
    while any(is_worker(p) for p in left) and time.monotonic() < deadline:  # a worker ending by itself
        time.sleep(0.1)
        left = left_running()
    if left:
        ARTIFACTS.mkdir(exist_ok=True)
        with (ARTIFACTS / "leftover-processes.txt").open("a") as fh:
            fh.writelines(f"{request.node.nodeid}: {p} {command(p)}\n" for p in left)
        for p in filter(is_worker, left):
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temporary folder, private to this test: what a test leaves there (spilled parts, uploads) is its
    own, and must be gone afterwards."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


@pytest.fixture
def tmp_db(tmp_path: Path) -> Path:
    """Path of a new, empty database file."""
    return tmp_path / "runlens.duckdb"


@pytest.fixture
def fixture_db(tmp_db: Path) -> Path:
    """A database holding tests/fixtures/good.jsonl."""
    from ingest.pipeline import ingest_paths

    results = ingest_paths([FIXTURES / "good.jsonl"], db=tmp_db)
    assert [r.outcome for r in results] == ["ingested"]
    return tmp_db


@pytest.fixture(scope="session")
def demo_db_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole demo dataset, ingested once per test session (read-only: copy before writing)."""
    from data.demo.build import load_demo

    path = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    load_demo(path)
    return path


def copy_store(master: Path, folder: Path) -> Path:
    """A private copy of a database file (with its snapshot) in ``folder``, as ``demo.duckdb``."""
    target = folder / "demo.duckdb"
    for suffix in ("", ".read"):
        src = Path(str(master) + suffix)
        if src.exists():
            shutil.copyfile(src, str(target) + suffix)
    return target


@pytest.fixture
def demo_db(demo_db_master: Path, tmp_path: Path) -> Path:
    """A private copy of the demo database (with its snapshot) that a test may change."""
    return copy_store(demo_db_master, tmp_path)


@pytest.fixture(scope="session")
def generated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 attempts of 6 runs on 2 benchmarks (bench/gen_logs.py, seeded), ingested once per test process: the
    test files comparing rewritten reads with their former versions share it (read-only: copy before writing)."""
    from bench.gen_logs import generate
    from ingest.pipeline import ingest_paths

    folder = tmp_path_factory.mktemp("generated")
    files = generate(folder / "logs", n_attempts=3000, n_runs=6, n_benchmarks=2, seed=33)
    db = folder / "generated.duckdb"
    ingest_paths(files, db=db, jobs=1)
    return db


@pytest.fixture(params=["demo", "generated"])
def store_db(request: pytest.FixtureRequest, demo_db_master: Path, generated_db: Path) -> Path:
    """The demo, then the generated store (both read-only: copy before writing)."""
    return demo_db_master if request.param == "demo" else generated_db


@pytest.fixture(scope="session")
def demo_app(demo_db_master: Path, tmp_path_factory: pytest.TempPathFactory):
    """The app (``streamlit run``) over a private copy of the demo, started once per test process for the browser
    tests that only read the demo and need no fresh server (a cold first request is what the leaderboard's, the
    drilldown's and the stale-link tests open): its URL. Background fits off, a state folder of its own."""
    from tests.browser_support import streamlit_server

    db = copy_store(demo_db_master, tmp_path_factory.mktemp("demo-app"))
    env = {"RUNLENS_AUTO_FIT": "0", "RUNLENS_STATE_DIR": str(tmp_path_factory.mktemp("demo-app-state"))}
    with streamlit_server(db, timeout_s=180, env=env) as url:
        yield url


@pytest.fixture
def env_db(monkeypatch: pytest.MonkeyPatch):
    """Point RUNLENS_DB at a given path for code that reads the environment (the app, CLIs)."""

    def _set(path: Path) -> Path:
        monkeypatch.setenv("RUNLENS_DB", str(path))
        return path

    return _set


def shared_data(*parts: str) -> Path:
    """A file under ../shared/data; the test fails when the folder is not beside the checkout."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} not found: ../shared/data must sit beside the checkout")
    return path


os.environ.setdefault("RUNLENS_DISABLE_JUDGE_NETWORK", "1")
# pages do not start background IRT fits in tests (each test of the Progress page asks for what it checks);
# tests/test_page_progress.py switches them on to test them
os.environ.setdefault("RUNLENS_AUTO_FIT", "0")


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL (scripts/servers.py) for the team-store tests, one per test process."""
    from scripts.servers import start_postgres

    server = start_postgres(durable=False)
    yield server
    server.stop()


@pytest.fixture
def lake(postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new, empty team store (DuckLake on the session's PostgreSQL, data in a temporary folder); RUNLENS_DB and
    RUNLENS_LAKE_DATA_PATH point at it."""
    from tests.lake_support import new_lake

    location, env = new_lake(postgres, tmp_path / "lake-data")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return location


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Test files longest first (tests/schedule.py): with ``--dist loadfile --no-loadscope-reorder`` (run.sh) the
    two workers end on short files together, not on a long one that one worker runs alone."""
    order = longest_first([item.nodeid for item in items])
    items[:] = [items[i] for i in order]


_SPENT: dict[str, float] = {}  # seconds per test file (setup, call and teardown), in the process that reports


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _SPENT[file_of(report.nodeid)] = _SPENT.get(file_of(report.nodeid), 0.0) + report.duration
    if report.failed and "crashed while running" in str(report.longrepr):
        _crashed.append(report.nodeid)


FAULTS = ARTIFACTS / "faults"  # one file per pytest-xdist worker: a fatal signal's Python stacks (faulthandler)
_fault_files: list[object] = []
_crashed: list[str] = []  # tests whose worker died under them (seen by the controller)


@pytest.hookimpl(trylast=True)  # after pytest's own faulthandler plugin, which writes to the worker's stderr
def pytest_configure(config: pytest.Config) -> None:
    """A worker that dies of a fatal signal (a segmentation fault in a native library) leaves the Python stacks of
    its threads in tests/artifacts/faults/<worker>.txt; the controller prints them in its summary (a worker's own
    stderr is not in the report: pytest-xdist says only that the worker crashed)."""
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker is None:
        shutil.rmtree(FAULTS, ignore_errors=True)  # the controller starts before its workers
        return
    FAULTS.mkdir(parents=True, exist_ok=True)
    handle = (FAULTS / f"{worker}.txt").open("w")
    _fault_files.append(handle)
    faulthandler.enable(handle, all_threads=True)


def _crash_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What is known of a worker that died: the stacks it left (``pytest_configure``) and the kernel's last words
    on the machine's processes (an out-of-memory kill leaves no stack; the kernel names it)."""
    stacks = sorted(f for f in FAULTS.glob("*.txt") if f.stat().st_size) if FAULTS.is_dir() else []
    if not (_crashed or stacks):
        return
    terminalreporter.write_sep("=", "workers that died: " + ", ".join(_crashed or ["(none reported)"]))
    for found in stacks:
        terminalreporter.write_line(f"--- {found.name}: the fatal error's Python stacks")
        runner = ("/_pytest/", "/pluggy/", "/xdist/", "/execnet/", "<string>")  # the same in every stack
        lines = [line for line in found.read_text(errors="replace").splitlines() if not any(r in line for r in runner)]
        for line in lines[:120]:
            terminalreporter.write_line(line)
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        kernel = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10)
        words = ("out of memory", "killed process", "oom", "segfault", "general protection", "trap")
        said = [line for line in kernel.stdout.splitlines() if any(w in line.lower() for w in words)][-20:]
        terminalreporter.write_line("--- the kernel's messages on killed or faulting processes:")
        unread = f"(the kernel's log could not be read: {kernel.stderr.strip()})"
        for line in said or ["(none)" if kernel.returncode == 0 else unread]:
            terminalreporter.write_line(line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The slowest test files, for tests/schedule.py's ``FILE_SECONDS``; what is known of a worker that died."""
    _crash_summary(terminalreporter)
    if not _SPENT:
        return
    terminalreporter.write_sep("=", "slowest 20 test files (setup + call + teardown)")
    for name, seconds in sorted(_SPENT.items(), key=lambda kv: -kv[1])[:20]:
        terminalreporter.write_line(f"{seconds:8.2f}s {name}")
