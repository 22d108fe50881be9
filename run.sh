#!/usr/bin/env bash
# Runlens developer entry point.
#   bash run.sh app    install (first time) and open the dashboard on the demo data, on 127.0.0.1 only
#                      (.streamlit/config.toml; to expose it: bash run.sh app --server.address 0.0.0.0)
#   bash run.sh test   install (first time) and run the whole test suite, browser tests included
#   bash run.sh team-demo   the dashboard on a team store (DuckLake: PostgreSQL + a local S3 server) holding the demo
#   bash run.sh install
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3

install() {
  if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
  fi
  # torch is pinned to the CPU build already on the machine (requirements.txt): never an unpinned torch.
  # pip checks every pin even when nothing is missing (3.5 s of each start on a quiet machine, 14 s loaded), so it
  # runs only when requirements.txt differs from the one last installed into this virtualenv (its hash in
  # .venv/.runlens-requirements; RUNLENS_REINSTALL=1 runs it anyway, e.g. after removing a package by hand).
  local want
  want=$(sha256sum requirements.txt | cut -d' ' -f1)
  if [ -n "${RUNLENS_REINSTALL:-}" ] || [ "$(cat .venv/.runlens-requirements 2>/dev/null || true)" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
    echo "$want" > .venv/.runlens-requirements
  fi
}

install_inspect() {
  # Test-only: inspect-ai writes the real logs tests/test_inspect_real.py checks the reader against. Its own
  # virtualenv, because its dependencies need other versions of pinned packages (fsspec, python-dateutil, rich).
  if [ ! -x .venv-inspect/bin/python ]; then
    "$PY" -m venv .venv-inspect
  fi
  .venv-inspect/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-inspect.txt
}

install_s3() {
  # Test and team-demo only: moto's S3 server, in its own virtualenv (botocore pins an older python-dateutil).
  if [ ! -x .venv-s3/bin/python ]; then
    "$PY" -m venv .venv-s3
  fi
  .venv-s3/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-s3.txt
}

install_postgres() {
  # The team store's catalog: Debian's PostgreSQL binaries (scripts/servers.py runs initdb in a temporary folder).
  if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "run.sh: installing Debian's postgresql for the team store" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
  fi
}

install_browser() {
  if [ ! -x /usr/bin/chromium ]; then
    echo "run.sh: installing Debian's chromium for the browser tests" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  fi
}

case "${1:-app}" in
  install)
    install ;;
  app)
    install
    shift || true
    # The store before the server: the demo dataset is built here, with progress, not while the first visitor waits;
    # and a warm-up beside the server runs the app once as soon as it answers (imports, the landing page's data).
    # When the default store is already there, its check (a process importing the store and opening it, about 1 s;
    # a migration when this code is newer) runs beside the server's own start, and the warm-up after it; the app
    # runs the same check first (ui/shell.py), so a visitor who comes before it ends waits for it there.
    if [ -z "${RUNLENS_DB:-}" ] && [ -e data/runlens.lake ]; then
      { .venv/bin/python -m data.demo.prepare && .venv/bin/python -m ui.warmup "$@"; } &
    else
      .venv/bin/python -m data.demo.prepare
      .venv/bin/python -m ui.warmup "$@" &
    fi
    exec .venv/bin/python -m streamlit run app.py --server.headless "${RUNLENS_HEADLESS:-false}" "$@" ;;
  team-demo)
    install
    install_postgres
    install_s3
    shift || true
    exec .venv/bin/python -m scripts.servers team-demo --server.headless "${RUNLENS_HEADLESS:-false}" "$@" ;;
  test)
    install
    install_browser
    install_inspect
    install_postgres
    install_s3
    shift || true
    # Lint, format and types first: cheap, and the house style asks for them (ruff check, ruff format, mypy).
    .venv/bin/ruff check --quiet .
    .venv/bin/ruff format --check --quiet .
    .venv/bin/mypy  # analytics/, ingest/, jobs/, store/, ui/, views/ and app.py (pyproject.toml)
    # pytest exits 5 when it collected no test: that is a failure here, like any other non-zero exit.
    # Two workers (CI has 2 cores), a test file per worker (module fixtures built once): much of the suite waits on
    # servers, browsers and subprocesses, so the whole run took 10:43 against 17:57 serially on this machine.
    # Files longest first (tests/schedule.py; --no-loadscope-reorder keeps that order instead of pytest-xdist's most
    # tests first, which left the long browser files of one test for the end): both workers end on short files.
    # The 30 slowest tests and the 20 slowest files are listed at the end: where the suite's time goes, run by run.
    exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "${RUNLENS_TEST_WORKERS:-2}" --dist loadfile \
      --no-loadscope-reorder --durations=30 "$@" ;;
  *)
    echo "usage: bash run.sh [app|test|team-demo|install]" >&2
    exit 2 ;;
esac
