"""The held-out scale check of issue 33: a large store against a small one, pass or fail with its thresholds.

``python bench/scale_check.py --small ducklake:sqlite:SMALL/store.lake --large ducklake:sqlite:LARGE/store.lake
--work DIR [--ingest-sizes 10000 1000000 | --ingest-json FILE] [--pages views/X.py ...] [--lock FILE] [--json OUT]``

"Done when ... the held-out scale check (1M against 10k: page and upload costs flat, ingest ratio) passes". Three
checks, each on CPU seconds (the figure a shared machine does not inflate much), each printed with its limit:

* **pages flat**: every page's first render (``bench/bench_pages.py --pages-only``: the app's bootstrap and each
  page with the data cache cleared) costs at most ``FLAT_FACTOR`` x its cost on the small store plus
  ``FLAT_SLACK_S`` on the large one;
* **upload flat**: a 100-attempt upload (``python -m ingest`` of one new run in a fresh process, three times, the
  median) into a copy of each store, the same bound;
* **ingest ratio**: ``python -m ingest`` of a folder of generated logs into a fresh local lake costs at most
  ``INGEST_RATIO`` x DuckDB's ``read_json`` of the same files (the floor, per file), at each size from
  ``INGEST_MIN_ATTEMPTS`` (the issue names 100k, 1M and 10M; a smaller size's ratio is printed, not judged: the
  1.3 CPU s of a process start outweigh its floor) (``bench/bench_ingest.py --stores lake``; or its ``--json``
  output given with ``--ingest-json``).

The stores are only read: each upload goes to a copy in ``--work`` (a lake's catalog copied, its data files hard
linked, the copy's data path pointed at them; a DuckDB file copied whole). ``--lock FILE`` is held (``flock``)
while the large store is read, so that measurements of one large store never overlap. The page and upload figures
are kept in ``--work`` (``--reuse`` takes them from there instead of measuring again). Exit status 0 when every
check passes, 1 when one fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_scale import held, measure_upload  # noqa: E402

FLAT_FACTOR = 1.5  # "flat": the large store costs at most this much more than the small one ...
FLAT_SLACK_S = 0.2  # ... plus this many CPU seconds (a tenth of a second is noise at these sizes)
INGEST_RATIO = 1.5  # issue 33: ingest within 1.5x DuckDB read_json of the same files ...
INGEST_MIN_ATTEMPTS = 100_000  # ... at 100k, 1M and 10M: below, a process start (1.3 CPU s) outweighs the floor
LAKE = "ducklake:sqlite:"


@dataclass(frozen=True)
class Check:
    """One line of the verdict: what was compared, its base (the small store's cost, or the ingest floor), the
    measured cost (the large store's, or the ingest's), the limit on it and whether it held."""

    name: str
    base: float
    value: float
    limit: float
    passed: bool


def flat(name: str, small: float, large: float) -> Check:
    """``large`` within ``FLAT_FACTOR * small + FLAT_SLACK_S``."""
    limit = round(FLAT_FACTOR * small + FLAT_SLACK_S, 3)
    return Check(name, round(small, 3), round(large, 3), limit, large <= limit)


def judge(
    pages: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    uploads: tuple[list[float], list[float]],
    ingest_rows: list[dict[str, Any]],
) -> list[Check]:
    """The checks from the figures: ``pages`` (bench_pages.py's ``pages`` lists, small then large), ``uploads`` (CPU
    seconds of each upload, small then large) and ``ingest_rows`` (bench_ingest.py's rows, one per size)."""
    small_pages = {p["page"]: p for p in pages[0]}
    checks = []
    for page in pages[1]:
        if page["page"] not in small_pages:
            raise ValueError(f"{page['page']} was measured on the large store only")
        name = f"page {page['page']}: first render CPU s"
        checks.append(flat(name, float(small_pages[page["page"]]["first_cpu_s"]), float(page["first_cpu_s"])))
        if page["problems"]:
            checks.append(Check(f"page {page['page']}: problems shown", 0, len(page["problems"]), 0, False))
    checks.append(
        flat("upload of 100 attempts: median CPU s", statistics.median(uploads[0]), statistics.median(uploads[1]))
    )
    for row in sorted(ingest_rows, key=lambda r: int(r["attempts"])):
        ingest, floor = float(row["lake"]["cpu_s"]), float(row["read_json"]["cpu_s"])
        attempts = int(row["attempts"])
        name = f"ingest of {attempts:,} attempts: CPU s against read_json's (ratio {ingest / floor:.2f})"
        limit = round(INGEST_RATIO * floor, 3)
        if attempts < INGEST_MIN_ATTEMPTS:  # reported, not judged
            checks.append(
                Check(
                    f"{name}, not judged below {INGEST_MIN_ATTEMPTS:,}", round(floor, 3), round(ingest, 3), limit, True
                )
            )
            continue
        checks.append(Check(name, round(floor, 3), round(ingest, 3), limit, ingest <= limit))
    return checks


def copy_store(location: str, dest: Path) -> str:
    """A writable copy of ``location`` in ``dest`` (which must not exist): a lake's catalog copied (SQLite's
    backup: consistent while others read or write it), its data files hard linked (copied across file systems),
    the copy's data path pointed at them; a DuckDB file copied whole."""
    dest.mkdir(parents=True)
    if not location.startswith(LAKE):
        copy = dest / Path(location).name
        shutil.copy2(location, copy)
        return str(copy)
    source = Path(location.removeprefix(LAKE))
    catalog = dest / source.name
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as src, sqlite3.connect(catalog) as dst:
        src.backup(dst)
    files = Path(f"{catalog}.files")
    for path in Path(f"{source}.files").rglob("*"):
        target = files / path.relative_to(f"{source}.files")
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)  # DuckLake never rewrites a data file in place: sharing them is safe
        except OSError:
            shutil.copy2(path, target)
    with sqlite3.connect(catalog) as con:  # the data files are stored relative to the lake's data path
        relative = con.execute(
            "SELECT count(*) = 0 FROM (SELECT path_is_relative FROM ducklake_data_file "
            "UNION ALL SELECT path_is_relative FROM ducklake_delete_file) WHERE NOT path_is_relative"
        ).fetchone()
        if not relative or not relative[0]:
            raise RuntimeError(f"{location}: a data file is stored by an absolute path; copy the lake whole")
        con.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", [f"{files}/"])
    return f"{LAKE}{catalog}"


def _python(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **(env or {})}
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=7200)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done


def page_costs(location: str, out: Path, pages: list[str] | None, *, reuse: bool = False) -> list[dict[str, Any]]:
    """``bench/bench_pages.py --pages-only`` on ``location``: its ``pages`` list (with ``reuse``, ``out``'s if kept).
    ``RUNLENS_AUTO_FIT=0``: no page starts a background job (the Progress page's IRT fit would write to the store)."""
    if reuse and out.exists():
        return list(json.loads(out.read_text())["pages"])
    _python(
        [
            "bench/bench_pages.py",
            "--db",
            location,
            "--pages-only",
            "--json",
            str(out),
            *(["--pages", *pages] if pages else []),
        ],
        env={"RUNLENS_AUTO_FIT": "0"},
    )
    return list(json.loads(out.read_text())["pages"])


def upload_costs(location: str, work: Path, *, reuse: bool = False) -> list[float]:
    """CPU seconds of three 100-attempt uploads into a copy of ``location`` (the copy removed after; the figures
    kept in ``work/upload.json``, and with ``reuse`` read from there if kept)."""
    kept = work / "upload.json"
    if reuse and kept.exists():
        return [float(x) for x in json.loads(kept.read_text())]
    copy = work / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    try:
        result = measure_upload({"copy": copy_store(location, copy)}, work)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    cpu = [float(x) for x in result["copy"]["cpu_seconds"]]  # type: ignore[index]
    kept.write_text(json.dumps(cpu) + "\n")
    return cpu


def ingest_rows(work: Path, sizes: list[int], runs: int) -> list[dict[str, Any]]:
    """``bench/bench_ingest.py --stores lake`` at ``sizes``: its rows."""
    out = work / "ingest.json"
    _python(["bench/bench_ingest.py", "--sizes", *map(str, sizes), "--runs", str(runs), "--stores", "lake",
             "--work", str(work / "ingest"), "--json", str(out)])  # fmt: skip
    return list(json.loads(out.read_text())["rows"])


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", required=True, help="the small store (only read)")
    parser.add_argument("--large", required=True, help="the large store (only read)")
    parser.add_argument("--work", type=Path, required=True, help="copies, generated logs and figures go here")
    parser.add_argument("--pages", nargs="+", help="the pages to time (default: bench_pages.py's, all of them)")
    parser.add_argument("--ingest-sizes", type=int, nargs=2, default=[10_000, 1_000_000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--ingest-runs", type=int, default=50, help="files (runs) of the generated logs")
    parser.add_argument("--ingest-json", type=Path, help="bench_ingest.py --json output to use instead of measuring")
    parser.add_argument("--lock", type=Path, help="an flock file held while the large store is read")
    parser.add_argument("--reuse", action="store_true", help="use the page and upload figures kept in --work")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    load = [os.getloadavg()[0]]
    small_pages = page_costs(args.small, work / "pages-small.json", args.pages, reuse=args.reuse)
    small_uploads = upload_costs(args.small, work / "upload-small", reuse=args.reuse)
    with held(args.lock):
        large_pages = page_costs(args.large, work / "pages-large.json", args.pages, reuse=args.reuse)
        large_uploads = upload_costs(args.large, work / "upload-large", reuse=args.reuse)
    load.append(os.getloadavg()[0])
    if args.ingest_json:
        rows = list(json.loads(args.ingest_json.read_text())["rows"])
    else:
        rows = ingest_rows(work, list(args.ingest_sizes), args.ingest_runs)
    load.append(os.getloadavg()[0])
    checks = judge((small_pages, large_pages), (small_uploads, large_uploads), rows)
    passed = all(c.passed for c in checks)
    for c in checks:
        print(f"{'pass' if c.passed else 'FAIL'}  {c.name}: {c.value} against {c.base}, limit {c.limit}")
    print(f"scale check: {'PASSED' if passed else 'FAILED'} (load average {', '.join(f'{x:.1f}' for x in load)})")
    if args.json:
        report = {"passed": passed, "load_average": load, "small": args.small, "large": args.large,
                  "checks": [asdict(c) for c in checks]}  # fmt: skip
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
