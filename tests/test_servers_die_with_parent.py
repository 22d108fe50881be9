"""The servers the tests and scripts start (scripts/servers.py) stop when their starter is killed with ``kill -9``
(a test process ended by a timeout, a killed test run): two PostgreSQL servers of killed runs were found running
with parent 1. Each server is started from a child process, the child is killed, and the server must be gone
within a few seconds: PostgreSQL (``pg_ctl`` detaches it: a watchdog stops it and deletes its folder), moto's S3
server and the tests' OTLP receiver (the kernel's parent-death signal).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from scripts.servers import ROOT, S3_PYTHON, _pg_binary, _run_as

STARTER = """
import json, sys, time
from scripts import servers
if sys.argv[1] == "postgres":
    server = servers.start_postgres(durable=False)
    pid = int((server.folder / "data" / "postmaster.pid").read_text().split()[0])
    print(json.dumps({"pid": pid, "port": server.port, "folder": str(server.folder)}), flush=True)
elif sys.argv[1] == "s3":
    s3 = servers.start_s3()
    print(json.dumps({"pid": s3.process.pid, "port": s3.port}), flush=True)
else:
    from pathlib import Path
    from tests.test_otlp_receiver import Receiver, _free_port
    folder = Path(sys.argv[2])
    receiver = Receiver(folder / "live.duckdb", _free_port(), folder / "receiver.log")
    print(json.dumps({"pid": receiver.proc.pid, "port": receiver.port}), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """The process runs (a zombie nobody reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


def _start_and_kill_the_starter(kind: str, *args: str) -> tuple[dict[str, object], float]:
    """Start a ``kind`` server from a child process, ``kill -9`` the child; the server's facts and when it died."""
    child = subprocess.Popen([sys.executable, "-c", STARTER, kind, *args], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    server = json.loads(child.stdout.readline())
    assert _alive(int(server["pid"])) and _listening(int(server["port"]))
    child.kill()
    child.wait()
    return server, time.monotonic()


def _gone_within(pid: int, port: int, since: float, seconds: float) -> bool:
    while time.monotonic() - since < seconds:
        if not _alive(pid) and not _listening(port):
            return True
        time.sleep(0.1)
    return False


def test_postgres_stops_when_its_starter_is_killed() -> None:
    server, killed = _start_and_kill_the_starter("postgres")
    pid, port, folder = int(server["pid"]), int(server["port"]), Path(str(server["folder"]))
    try:
        assert _gone_within(pid, port, killed, 10), "PostgreSQL still runs 10 s after its starter was killed"
        deadline = time.monotonic() + 5
        while folder.exists() and time.monotonic() < deadline:  # the watchdog deletes the folder after the stop
            time.sleep(0.1)
        assert not folder.exists()
    finally:  # the old code's leak: never leave it running
        if _alive(pid):
            subprocess.run([*_run_as(), _pg_binary("pg_ctl"), "-D", str(folder / "data"), "-m", "immediate", "stop"])
        shutil.rmtree(folder, ignore_errors=True)


def test_the_s3_server_stops_when_its_starter_is_killed() -> None:
    assert S3_PYTHON.exists(), f"{S3_PYTHON} not found: `bash run.sh test` installs requirements-s3.txt there"
    server, killed = _start_and_kill_the_starter("s3")
    pid, port = int(server["pid"]), int(server["port"])
    try:
        assert _gone_within(pid, port, killed, 5), "moto's server still runs 5 s after its starter was killed"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_tests_otlp_receiver_stops_when_its_starter_is_killed(tmp_path: Path) -> None:
    server, killed = _start_and_kill_the_starter("otlp", str(tmp_path))
    pid, port = int(server["pid"]), int(server["port"])
    try:
        assert _gone_within(pid, port, killed, 10), "the receiver still runs 10 s after its starter was killed"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
