#!/usr/bin/env bash
# Runlens developer entry point.
#   bash run.sh app    install (first time) and open the dashboard on the demo data
#   bash run.sh test   install (first time) and run the whole test suite, browser tests included
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
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
}

install_inspect() {
  # Test-only: inspect-ai writes the real logs tests/test_inspect_real.py checks the reader against. Its own
  # virtualenv, because its dependencies need other versions of pinned packages (fsspec, python-dateutil, rich).
  if [ ! -x .venv-inspect/bin/python ]; then
    "$PY" -m venv .venv-inspect
  fi
  .venv-inspect/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-inspect.txt
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
    exec .venv/bin/python -m streamlit run app.py --server.headless "${RUNLENS_HEADLESS:-false}" "$@" ;;
  test)
    install
    install_browser
    install_inspect
    shift || true
    # Lint, format and types first: cheap, and the house style asks for them (ruff check, ruff format, mypy).
    .venv/bin/ruff check --quiet .
    .venv/bin/ruff format --check --quiet .
    .venv/bin/mypy  # analytics/, ingest/ and store/ (pyproject.toml)
    # pytest exits 5 when it collected no test: that is a failure here, like any other non-zero exit.
    exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@" ;;
  *)
    echo "usage: bash run.sh [app|test|install]" >&2
    exit 2 ;;
esac
