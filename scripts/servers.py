"""Local servers for a team store (DuckLake): a throwaway PostgreSQL catalog and an S3-compatible object store.

Used by the tests and by ``bash run.sh team-demo``; nothing here is assumed to be running already. Each server
gets a free localhost port and a temporary folder, and stops with the process that started it, also when that
process is killed without a chance to stop it (``kill -9``, a test run ended by a timeout): the S3 server gets
``die_with_parent`` (the kernel's parent-death signal), PostgreSQL, which ``pg_ctl`` detaches from its starter, a
watchdog (``watch_postgres``) that stops it and deletes its folder when its starter is gone.

* PostgreSQL: Debian's ``postgresql`` binaries (``initdb``, ``pg_ctl``; ``run.sh`` installs the package). The
  cluster is made with ``initdb`` in a temporary folder, trust authentication on 127.0.0.1 only. PostgreSQL
  refuses to run as root: as root it runs as the ``postgres`` user (or ``nobody``).
* S3: moto's server (``moto[s3,server]`` in its own virtualenv ``.venv-s3``: botocore pins an older
  python-dateutil than requirements.txt). For real use, MinIO, Ceph, R2 or S3 itself (docs/scale.md).

``python -m scripts.servers team-demo`` starts both, migrates the demo dataset into a new lake on them and opens
the dashboard on it; ``python -m scripts.servers postgres`` starts only PostgreSQL and prints its location.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
S3_PYTHON = ROOT / ".venv-s3" / "bin" / "python"
S3_KEYS = {"AWS_ACCESS_KEY_ID": "runlens", "AWS_SECRET_ACCESS_KEY": "runlens-secret", "AWS_REGION": "us-east-1"}


PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when the thread that started it ends


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess.Popen`` that makes the child get ``sig`` when its starter ends, however it
    ends (``kill -9`` too); None where the kernel has no parent-death signal (not Linux).

    The signal comes when the starting *thread* ends: start servers from a thread that outlives them (the main
    thread, as the tests' fixtures do). A setuid program clears it: wrap no ``sudo``/``runuser`` in the child."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here: the child between fork and exec only calls it
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the starter ended before the signal was asked for
            os._exit(1)

    return preexec


class ServerError(RuntimeError):
    """A server could not be started (the message says what is missing)."""


def free_port() -> int:
    """A TCP port nobody listens on right now (127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pg_binary(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if not found:
        raise ServerError(f"PostgreSQL's {name} was not found: install Debian's postgresql (bash run.sh does)")
    return found


def _run_as() -> list[str]:
    """The command prefix that drops root (PostgreSQL will not run as root); empty for other users."""
    if os.geteuid() != 0:
        return []
    for user in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(user)
            return ["runuser", "-u", user, "--"]
    raise ServerError("running as root and no postgres or nobody user to run PostgreSQL as")


@dataclass
class Postgres:
    """A running throwaway PostgreSQL cluster."""

    folder: Path
    port: int
    user: str = "runlens"
    watchdog: int | None = field(default=None, repr=False)  # the pipe end whose closing stops the server

    def conninfo(self, dbname: str = "runlens") -> str:
        """The libpq connection string of database ``dbname``."""
        return f"dbname={dbname} host=127.0.0.1 port={self.port} user={self.user}"

    def lake(self, dbname: str = "runlens") -> str:
        """The team-store location (``RUNLENS_DB``) whose catalog is database ``dbname``."""
        return f"ducklake:postgres:{self.conninfo(dbname)}"

    def create_database(self, dbname: str) -> None:
        """A new, empty database in the cluster."""
        subprocess.run(
            [*_run_as(), _pg_binary("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, dbname],
            check=True,
            capture_output=True,
        )

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its folder; then its watchdog ends with nothing to do."""
        subprocess.run(
            [*_run_as(), _pg_binary("pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop"],
            capture_output=True,
        )
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.watchdog is not None:
            os.close(self.watchdog)
            self.watchdog = None


def watch_postgres(folder: Path) -> int:
    """Start a watchdog that stops the cluster in ``folder`` (``pg_ctl stop -m immediate``) and deletes the folder
    once the returned pipe end is closed: by ``Postgres.stop``, or by the kernel when this process ends, however it
    ends. ``pg_ctl start`` detaches the server from its starter (no parent-death signal reaches it), so a test
    process killed by a timeout used to leave its cluster running. The watchdog has a session of its own (a signal
    to the starter's process group does not end it before it has stopped the server)."""
    read_end, write_end = os.pipe()  # neither inherited by other children (PEP 446); the watchdog gets read_end
    subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "watch-postgres", str(read_end), str(folder)],
        pass_fds=(read_end,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(read_end)
    return write_end


def _watchdog(read_end: int, folder: Path) -> int:
    """The watchdog's side: wait for end of file on ``read_end``, then stop the cluster if its folder is still there."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        while os.read(read_end, 4096):
            pass
    if (folder / "data").exists():
        subprocess.run(
            [*_run_as(), _pg_binary("pg_ctl"), "-D", str(folder / "data"), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=60,
        )
    shutil.rmtree(folder, ignore_errors=True)
    return 0


def start_postgres(*, durable: bool = True) -> Postgres:
    """initdb a cluster in a temporary folder and start it on a free localhost port, with a database ``runlens``.

    Args:
        durable: keep fsync on (off for tests: faster, and a lost test cluster costs nothing).

    Raises:
        ServerError: PostgreSQL is not installed or did not start (its log is in the message).
    """
    prefix = _run_as()
    folder = Path(tempfile.mkdtemp(prefix="runlens-pg-"))
    if prefix:
        shutil.chown(folder, user=prefix[2])
    data = folder / "data"
    initdb = [*prefix, _pg_binary("initdb"), "-D", str(data), "-A", "trust", "-U", "runlens", "-E", "UTF8"]
    done = subprocess.run([*initdb, "--no-sync"] if not durable else initdb, capture_output=True, text=True)
    if done.returncode:
        shutil.rmtree(folder, ignore_errors=True)
        raise ServerError(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")
    watchdog = watch_postgres(folder)
    port = free_port()
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
    if not durable:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    log = folder / "server.log"
    started = subprocess.run(
        [*prefix, _pg_binary("pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start"],
        capture_output=True,
        text=True,
    )
    server = Postgres(folder, port, watchdog=watchdog)
    if started.returncode:
        text = log.read_text(errors="replace") if log.exists() else started.stderr
        server.stop()
        raise ServerError(f"PostgreSQL did not start: {text.strip()[-2000:]}")
    server.create_database("runlens")
    return server


@dataclass
class S3Server:
    """A running moto S3 server."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The AWS variables that point DuckDB (and any S3 client) at this server."""
        return {**S3_KEYS, "AWS_ENDPOINT_URL": self.endpoint}

    def create_bucket(self, bucket: str) -> None:
        request = urllib.request.Request(f"{self.endpoint}/{bucket}", method="PUT")
        with urllib.request.urlopen(request, timeout=10):
            pass

    def list_keys(self, bucket: str) -> list[str]:
        """Object keys of ``bucket`` (first 1,000)."""
        import xml.etree.ElementTree as ET

        with urllib.request.urlopen(f"{self.endpoint}/{bucket}?list-type=2", timeout=10) as resp:
            tree = ET.fromstring(resp.read())
        return [el.text or "" for el in tree.iter() if el.tag.endswith("}Key")]

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_s3(python: Path = S3_PYTHON) -> S3Server:
    """moto's S3 server on a free localhost port.

    Raises:
        ServerError: moto's virtualenv is missing (``bash run.sh test`` or ``team-demo`` makes it) or it did not
            answer within 30 s.
    """
    if not python.exists():
        raise ServerError(f"{python} not found: `bash run.sh test` installs requirements-s3.txt there")
    port = free_port()
    process = subprocess.Popen(
        [str(python), "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent(),
    )
    server = S3Server(process, port)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{server.endpoint}/", timeout=1):
                return server
        except (urllib.error.URLError, OSError):
            if process.poll() is not None:
                raise ServerError(f"moto's server exited with {process.returncode}") from None
            time.sleep(0.2)
    server.stop()
    raise ServerError("moto's S3 server did not answer within 30 s")


@contextlib.contextmanager
def team_store(*, s3: bool, durable: bool = True) -> Iterator[dict[str, str]]:
    """PostgreSQL (and an S3 server when ``s3``) for one lake; yields the environment that points Runlens at it."""
    pg = start_postgres(durable=durable)
    s3_server = None
    try:
        env = {"RUNLENS_DB": pg.lake()}
        if s3:
            s3_server = start_s3()
            s3_server.create_bucket("runlens")
            env |= s3_server.env() | {"RUNLENS_LAKE_DATA_PATH": "s3://runlens/lake/"}
        else:
            env["RUNLENS_LAKE_DATA_PATH"] = str(pg.folder / "lake-data")
        yield env
    finally:
        if s3_server is not None:
            s3_server.stop()
        pg.stop()


def team_demo(argv: list[str]) -> int:
    """Start the servers, migrate the demo dataset into a new lake and run the dashboard on it (Ctrl-C stops)."""
    parser = argparse.ArgumentParser(prog="python -m scripts.servers team-demo")
    parser.add_argument("--local-data", action="store_true", help="keep the lake's Parquet files in a folder, not S3")
    args, streamlit_args = parser.parse_known_args(argv)
    with team_store(s3=not args.local_data) as env:
        os.environ.update(env)
        from data.demo.build import load_demo

        print(f"team store: {env['RUNLENS_DB']}, data in {env['RUNLENS_LAKE_DATA_PATH']}", file=sys.stderr)
        load_demo(env["RUNLENS_DB"], out=sys.stderr)
        print(
            "the demo dataset is in the lake; opening the dashboard (Ctrl-C stops it and the servers)", file=sys.stderr
        )
        command = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), *streamlit_args]
        with contextlib.suppress(KeyboardInterrupt):
            return subprocess.call(command, env=os.environ.copy(), preexec_fn=die_with_parent())
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["team-demo"]:
        return team_demo(argv[1:])
    if argv[:1] == ["watch-postgres"] and len(argv) == 3:
        return _watchdog(int(argv[1]), Path(argv[2]))
    if argv[:1] == ["postgres"]:
        pg = start_postgres()
        print(f"RUNLENS_DB='{pg.lake()}'  (Ctrl-C stops it)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
        pg.stop()
        return 0
    print("usage: python -m scripts.servers team-demo [--local-data] [streamlit options] | postgres", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
