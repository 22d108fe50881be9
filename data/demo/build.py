"""Build the demo dataset: every generator writes native v1 JSONL, which the normal ingest path loads.

Generators are deterministic (seeded); the files land in ``data/demo/build/`` (ignored by git) and are
ingested with ``is_demo`` set, so the dashboard can say plainly that it shows demo data.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from data.demo import adbench, gembench, history, liveagentbench, xbench
from ingest.outcome_text import describe
from ingest.pipeline import FileResult, ingest_paths
from ingest.tempdirs import owned_temporary_folder, remove_orphans
from store import Location, RunlensError

DEMO_DIR = Path(__file__).resolve().parent
BUILD_DIR = DEMO_DIR / "build"
HAND_WRITTEN = DEMO_DIR / "starter.jsonl"
# A load's private folder of generated files (about 15 MB) in the system's temporary folder, named after its process
# (``ingest.tempdirs``): the next load removes the folders of loads that were killed before deleting their own.
TEMP_PREFIX = "runlens-demo-"

# (name, writer): a writer takes the output folder and returns the files it wrote, in ingest order.
Generator = Callable[[Path], list[Path]]


def _starter(out: Path) -> list[Path]:
    """The small hand-written dataset (used until the paper-calibrated generators are registered)."""
    target = out / "starter.jsonl"
    shutil.copyfile(HAND_WRITTEN, target)
    return [target]


GENERATORS: list[tuple[str, Generator]] = [
    ("adbench", adbench.generate),
    ("adbench-history", history.generate),
    ("xbench", xbench.generate),
    ("liveagentbench", liveagentbench.generate),
    ("gembench", gembench.generate),
]


def build_demo_files(out_dir: Path = BUILD_DIR) -> list[Path]:
    """Regenerate every demo file into ``out_dir`` and return them in ingest order."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    files: list[Path] = []
    for name, generate in GENERATORS:
        sub = out_dir / name
        sub.mkdir()
        files.extend(generate(sub))
    return files


def load_demo(db: Location = None, *, out: TextIO | None = None) -> list[FileResult]:
    """Generate the demo files and ingest them (idempotent: a second load adds nothing)."""
    # A private folder per load: concurrent loads (two test sessions, two app starts) never collide.
    remove_orphans(TEMP_PREFIX)
    with owned_temporary_folder(TEMP_PREFIX) as tmp:
        files = build_demo_files(Path(tmp) / "build")
        results = ingest_paths(files, db=db, fmt="native", is_demo=True, out=out)
    failed = [r for r in results if r.outcome == "failed"]
    if failed:
        raise RunlensError("demo dataset failed validation:\n" + "\n".join(describe(r) for r in failed))
    return results


if __name__ == "__main__":
    load_demo(out=sys.stderr)
