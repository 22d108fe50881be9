"""Peak memory of the dashboard's process tree under the attacks of issue 30, through the real app.

``PYTHONPATH=. python bench/bench_tree_budget.py --db DEMO.duckdb [--upload-mb 155]`` starts ``streamlit run
app.py`` on a free loopback port, drives Debian's Chromium through each attack and prints one JSON line per case:
the peak resident memory of the server and every worker it started, summed (sampled every 10 ms from /proc,
tests/treemem.py), the seconds until the page answered, and what it said. The budget it checks: 1.5 GB for one
attack, 2.5 GB for four at once.

Cases: the SQL memory attack (2 GB of Arrow strings), the issue's cross-join link (DuckDB's progress bar), the
6.5 MB zip bomb on the Upload page, four uploads of ``--upload-mb`` MB at once, and four SQL memory attacks in four
tabs at once.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser_support import chromium_page, streamlit_server  # noqa: E402
from tests.test_browser_plaintext import BUSY_JS  # noqa: E402
from tests.test_inspect_zip_limits import bomb_of_small_members  # noqa: E402
from tests.treemem import TreePeak, listening_pid, tree_rss_bytes  # noqa: E402

SQL_DONE = re.compile("^Stopped|^Refused|^DuckDB error|rows? ·")
MEMORY_ATTACK = "SELECT repeat('x', 100000000) AS s FROM range(20)"
CROSS_JOIN = "SELECT count(*) FROM steps a, steps b, steps c"
ANSWERS = ("Stopped", "Refused", "DuckDB error", "row", "invalid", "not started", "stopped", "not read", "bomb", "MiB")


ALERTS_JS = """() => [...document.querySelectorAll(
    '[data-testid="stMain"] [data-testid="stAlert"], [data-testid="stMain"] [data-testid="stCode"], '
    + '[data-testid="stMain"] [data-testid="stCaptionContainer"]')].map(e => e.innerText)"""


def answered(page: object, *, marker: re.Pattern[str] | None = None, timeout_s: float = 120) -> str:
    """Wait until ``marker`` shows (if given) and the script has finished; return the page's messages."""
    deadline = time.monotonic() + timeout_s
    if marker is not None:
        page.locator('[data-testid="stMain"]').get_by_text(marker).first.wait_for(  # type: ignore[attr-defined]
            timeout=timeout_s * 1000
        )
    quiet = 0
    page.wait_for_timeout(1000)  # type: ignore[attr-defined]
    while time.monotonic() < deadline and quiet < 2:
        quiet = quiet + 1 if page.evaluate(BUSY_JS) == 0 else 0  # type: ignore[attr-defined]
        page.wait_for_timeout(500)  # type: ignore[attr-defined]
    texts = page.evaluate(ALERTS_JS)  # type: ignore[attr-defined]
    wanted = [t for t in texts if any(a in t for a in ANSWERS) and "One read-only statement" not in t]
    return " / ".join(t.replace("\n", " ")[:200] for t in wanted[:3])


ONLY: list[str] = []


def measure(pid: int, name: str, action) -> None:  # noqa: ANN001
    if ONLY and ONLY[0] not in name:
        return
    before = tree_rss_bytes(pid)
    started = time.perf_counter()
    with TreePeak(pid) as peak:
        outcome = action()
    print(
        json.dumps(
            {
                "attack": name,
                "tree_before_mb": round(before / 1024**2),
                "tree_peak_mb": round(peak.peak_mb),
                "seconds": round(time.perf_counter() - started, 1),
                "outcome": outcome,
            }
        ),
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True, help="a Runlens database (the demo: python -m ingest --demo --db X)")
    parser.add_argument(
        "--upload-mb", type=int, default=95, help="size of each of the four uploads (the page takes 100 MB a file)"
    )
    parser.add_argument("--line-mb", type=int, default=500, help="size of the single-line file for the CLI")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rl-tree-"))
    bomb = bomb_of_small_members(work / "bomb.eval")
    ONLY.extend([args.only] if args.only else [])
    if not ONLY or "cli" in ONLY[0]:
        cli_cases(args.db, work, bomb, args.line_mb)
    big = []
    for i in range(4):
        path = work / f"big-{i}.jsonl"
        with path.open("wb") as fh:  # not a log: refused by format, after the server has received it
            for _ in range(args.upload_mb):
                fh.write(os.urandom(1024 * 1024))
        big.append(path)
    with streamlit_server(Path(args.db), env={"RUNLENS_SKIP_DEMO": "1"}) as url, chromium_page() as page:
        pid = listening_pid(int(url.rsplit(":", 1)[1]))
        page.goto(f"{url}/sql?q=SELECT%201")  # type: ignore[attr-defined]
        answered(page)

        def sql(q: str) -> str:
            page.goto(f"{url}/sql?q={quote(q)}")  # type: ignore[attr-defined]
            return answered(page, marker=SQL_DONE)

        def upload(paths: list[Path]) -> str:
            page.goto(f"{url}/upload")  # type: ignore[attr-defined]
            answered(page)
            page.locator('input[type="file"]').set_input_files([str(p) for p in paths])  # type: ignore[attr-defined]
            # the preview table, or the refusal of the check, once every file is in the server
            return answered(page, marker=re.compile("^Preview$|not started|not read|stopped at"), timeout_s=300)

        measure(pid, "sql_memory_attack", lambda: sql(MEMORY_ATTACK))
        measure(pid, "sql_cross_join_link", lambda: sql(CROSS_JOIN))
        measure(pid, "upload_zip_bomb_6.5MB", lambda: upload([bomb]))
        measure(pid, "four_sql_memory_attacks_at_once", lambda: four_tabs(page, url))
        measure(pid, f"upload_4x{args.upload_mb}MB", lambda: upload(big))
        page.goto(f"{url}/sql?q=SELECT%202")  # type: ignore[attr-defined]
        measure(pid, "upload_kept_after", lambda: answered(page, marker=SQL_DONE))
    return 0


def cli_cases(db: str, work: Path, bomb: Path, line_mb: int) -> None:
    """The command line's attacks: the zip bomb and a single line of ``line_mb`` MB (the issue: 500 MB cost 1.09 GB)."""
    import subprocess

    line = work / "line.jsonl"
    with line.open("wb") as fh:
        fh.write(b'{"record": "benchmark", "benchmark": "b"}\n{"record": "attempt", "answer": "')
        for _ in range(line_mb):
            fh.write(b"x" * 1024 * 1024)
        fh.write(b'"}\n')
    for name, path in (("cli_zip_bomb_6.5MB", bomb), (f"cli_single_line_{line_mb}MB", line)):
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "ingest", "--db", db, "--no-progress", str(path)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        with TreePeak(proc.pid) as peak:
            _, err = proc.communicate()
        said = next((ln for ln in err.splitlines() if ": -: " in ln), err.strip()[-200:])
        print(
            json.dumps(
                {
                    "attack": name,
                    "tree_peak_mb": round(peak.peak_mb),
                    "seconds": round(time.perf_counter() - started, 1),
                    "outcome": said.replace(str(work) + "/", "")[:240],
                }
            ),
            flush=True,
        )
    line.unlink()


def four_tabs(page: object, url: str) -> str:
    """Four tabs of one browser open the memory attack at the same moment."""
    browser = page.context.browser  # type: ignore[attr-defined]
    tabs = [browser.new_page(viewport={"width": 1400, "height": 1000}) for _ in range(4)]
    for tab in tabs:
        # each its own statement (a repeated one would come from the page's result cache)
        tab.goto(f"{url}/sql?q={quote(MEMORY_ATTACK.replace('range(20)', f'range({21 + tabs.index(tab)})'))}")
    answers = [answered(tab, marker=SQL_DONE, timeout_s=180) for tab in tabs]
    for tab in tabs:
        tab.close()
    return " | ".join(answers)


if __name__ == "__main__":
    threading.excepthook = lambda exc: None  # a sampler thread of an ended process
    sys.exit(main())
