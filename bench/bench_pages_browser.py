"""The times a person feels, in Chromium: a first start on an empty store, every page's first render, and the
warm interactions (a filter, a click, a picker) on the demo.

``python bench/bench_pages_browser.py [--width 1280] [--json OUT.json]``

* **start**: ``python -m data.demo.prepare`` on an empty store (what ``bash run.sh app`` runs before the server),
  the server's start until it answers, then the first page (the leaderboard at ``/``) until its script finished.
* **first render**: each page opened from its URL in a new session, from the navigation to the last script run
  before the app stays quiet for 1 s; *first* with the server's data cache empty for that page, *again* a second
  visit (cached loaders, what every later visitor gets).
* **interaction**: from the click (or key) to the last script run it caused, in the session that opened the page.

Times come from Streamlit's ``script_finished`` message as the browser received it (tests/browser_support.py,
``ScriptClock``): the app's answer, without the fixed cost of polling the page. Plotly draws after that (about
0.1-0.3 s more for a chart). Wall times on a shared machine: report the load average beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (url, what to do in the session that opened it: name -> action)
Action = Callable[[Any], None]


def _radio(name: str) -> Action:
    return lambda page: page.locator('[data-testid="stMain"]').get_by_role("radio", name=name, exact=True).first.click()


def _pick(label: str, nth: int = 1) -> Action:
    def act(page: Any) -> None:
        page.get_by_label(label).first.click()
        page.get_by_role("option").nth(nth).click()

    return act


def _agents(*, every: bool) -> Action:
    """One agent picked in the sidebar (the first listed), or every agent by the list's "Select all"."""

    def act(page: Any) -> None:
        page.locator('[data-testid="stSidebar"] [data-testid="stMultiSelect"] input').first.click()
        options = page.get_by_role("option")
        if not options.count():  # the list stays shut when the box still had the focus: open it from the keyboard
            page.keyboard.press("ArrowDown")
        (options.filter(has_text="Select all") if every else options.filter(has_not_text="Select all")).first.click()
        page.keyboard.press("Escape")  # the list closed, as a person leaves it

    return act


def _hourly_rate(page: Any) -> None:
    page.get_by_text("Change the assumptions").first.click()
    box = page.get_by_label("Human hourly rate (USD)").first
    box.fill("120")
    box.press("Enter")


PAGES: list[tuple[str, dict[str, Action]]] = [
    (
        "leaderboard?benchmark=ad-bench",
        {
            "breakdown by category": _radio("category"),
            "one agent": _agents(every=False),
            "every agent": _agents(every=True),
        },
    ),
    ("progress?benchmark=ad-bench", {}),
    ("tmf?benchmark=ad-bench", {"hourly rate": _hourly_rate}),
    ("errors?benchmark=ad-bench", {"facet level": _radio("level")}),
    (
        "drilldown?benchmark=ad-bench",
        {"next failed": lambda p: p.get_by_role("button", name="Next failed ▶").first.click()},
    ),
    ("search?benchmark=ad-bench&q=budget", {}),
    ("clusters?benchmark=ad-bench", {}),
    ("review?benchmark=ad-bench", {"queue calibration": _radio("calibration")}),
    ("diff?benchmark=ad-bench", {"candidate picker": _pick("Candidate run B (after)", 2)}),
    ("gem?benchmark=gem-bench", {}),
    ("sql", {}),
    ("upload", {}),
]


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def cold_start(db: Path) -> dict[str, float]:
    """``python -m data.demo.prepare`` on an empty store: the demo build run.sh does before the server starts."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "data.demo.prepare", "--db", str(db)], cwd=ROOT, check=True, capture_output=True
    )
    return {"prepare_s": round(time.perf_counter() - start, 2)}


def fit_irt(db: Path) -> None:
    """The Progress page draws a stored fit (a first visit would fit in the background instead)."""
    import store as rdb
    from jobs.irt import fit_and_store

    with rdb.writer(db) as con:
        fit_and_store(con, benchmark="ad-bench", model="1pl")


def server_cpu_s(url: str) -> float:
    """CPU seconds (user + system) the server process at ``url`` has used so far (Linux /proc)."""
    port = url.rsplit(":", 1)[1]
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(cmd) and port.encode() in cmd:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return float("nan")


def timed(page: Any, clock: Any, url: str, act: Callable[[], None]) -> dict[str, float]:
    """Wall seconds to the app's answer, and the server's CPU seconds meanwhile (less sensitive to other load)."""
    cpu, since = server_cpu_s(url), time.monotonic()
    act()
    wall = clock.answer_s(page, since)
    runs = [round(t - since, 2) for t in clock.finished if t > since]
    return {"wall": wall, "cpu": round(server_cpu_s(url) - cpu, 2), "runs": runs}


def measure(db: Path, *, width: int, pages: list[tuple[str, dict[str, Action]]], is_warmed: bool) -> dict[str, Any]:
    import threading

    from tests.browser_support import ScriptClock, chromium_page, streamlit_server
    from ui.warmup import warm

    out: dict[str, Any] = {"width": width, "pages": {}}
    spawned = time.monotonic()
    with streamlit_server(db, timeout_s=180, env={"RUNLENS_AUTO_FIT": "0"}) as url:
        out["server_answers_s"] = round(time.monotonic() - spawned, 2)
        warmed: list[float | None] = []
        warmer = threading.Thread(target=lambda: warmed.append(warm(url)))  # what run.sh starts beside the server
        if is_warmed:
            warmer.start()
        with chromium_page(width=width, height=900) as page:
            clock = ScriptClock(page)
            # the visitor run.sh's browser brings at once, while the warm-up runs
            out["first_page"] = timed(page, clock, url, lambda: page.goto(url))
            if is_warmed:
                warmer.join()
                out["warm_up_s"] = round(warmed[0] or float("nan"), 2)
            for link, actions in pages:
                row: dict[str, Any] = {"load": _load()}
                for visit in ("first", "again"):
                    row[visit] = timed(page, clock, url, lambda link=link: page.goto(f"{url}/{link}"))
                for name, act in actions.items():
                    row[name] = timed(page, clock, url, lambda act=act: act(page))
                out["pages"][link.split("?")[0]] = row
                print(link, row, file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--pages", nargs="*", help="url paths to time (default: every page)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-warmup", action="store_true", help="without run.sh's warm-up beside the server")
    args = parser.parse_args(argv)
    chosen = [p for p in PAGES if not args.pages or p[0].split("?")[0] in args.pages]
    with tempfile.TemporaryDirectory(prefix="runlens-bench-pages-") as tmp:
        db = Path(tmp) / "runlens.duckdb"
        result: dict[str, Any] = {"load_before": _load(), **cold_start(db)}
        if any(p[0].startswith("progress") for p in chosen):
            fit_irt(db)
        result.update(measure(db, width=args.width, pages=chosen, is_warmed=not args.no_warmup))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
