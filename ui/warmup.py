"""Warm a just-started dashboard before its first visitor: ``python -m ui.warmup [the streamlit run options]``.

``bash run.sh app`` starts this in the background beside the server. It waits until the server answers, then asks
Streamlit's script health check (``server.scriptHealthCheckEnabled``, .streamlit/config.toml) to run the app once
in a session of its own: the heavy imports (SciPy, Plotly, the analytics) happen and the landing page's data is
cached, so the first person to open the page does not wait for them. It never fails the start: a server it cannot
reach within two minutes is left alone, with one line saying so.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.request
from collections.abc import Sequence

HEALTH = "/_stcore/health"
SCRIPT_HEALTH = "/_stcore/script-health-check"


def server_url(args: Sequence[str]) -> str:
    """The URL the server listens on, from ``--server.port``/``--server.address`` among the options given to
    ``streamlit run`` (``--opt value`` or ``--opt=value``), else Streamlit's environment variables, else its
    defaults (8501, this machine)."""
    opts: dict[str, str] = {}
    items = list(args)
    for i, item in enumerate(items):
        name, eq, value = item.partition("=")
        if name in ("--server.port", "--server.address", "--server.baseUrlPath"):
            opts[name] = value if eq else (items[i + 1] if i + 1 < len(items) else "")
    port = opts.get("--server.port") or os.environ.get("STREAMLIT_SERVER_PORT") or "8501"
    address = opts.get("--server.address") or os.environ.get("STREAMLIT_SERVER_ADDRESS") or "127.0.0.1"
    if address in ("0.0.0.0", "::", ""):  # listening everywhere: this machine answers too
        address = "127.0.0.1"
    base = (opts.get("--server.baseUrlPath") or os.environ.get("STREAMLIT_SERVER_BASE_URL_PATH") or "").strip("/")
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}:{port}" + (f"/{base}" if base else "")


def warm(url: str, *, wait_s: float = 120.0, run_s: float = 180.0) -> float | None:
    """Wait for ``url`` to answer, then run the app once through the script health check; the seconds the run
    took, or None when the server never answered."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with urllib.request.urlopen(url + HEALTH, timeout=2):
                break
        except OSError:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)  # a refused connection costs microseconds: the run starts at most 50 ms late
    start = time.monotonic()
    try:
        with urllib.request.urlopen(url + SCRIPT_HEALTH, timeout=run_s) as resp:
            resp.read()
    except OSError:
        pass  # a 503 (the script raised) shows on the page itself; the warm-up only warms
    return time.monotonic() - start


def main(argv: Sequence[str] | None = None) -> int:
    url = server_url(sys.argv[1:] if argv is None else argv)
    took = warm(url)
    if took is None:
        print(f"runlens: warm-up skipped, no answer from {url}", file=sys.stderr)
    else:
        print(f"runlens: the first page is ready ({url}, warmed in {took:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
