"""IRT fit times and recovery: ``python bench/bench_irt.py [--write] [--skip-large]``.

Cases: a rotating-item design of 50 agents x 500 tasks (1PL and 2PL), the real SWE-bench Verified matrix
(156 x 500, ingested through the shipped CSV mapping), and 500 agents x 5,000 tasks with 50% of the cells
missing at random (1.25M observations), each with the shipped default settings. Then the render time of the
cached Progress page (AppTest, second run). ``--write`` replaces the "IRT" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import store as rdb  # noqa: E402
from analytics import irt  # noqa: E402
from analytics import progress as prog  # noqa: E402
from jobs.irt import fit_and_store  # noqa: E402

SWE_CSV = ROOT.parent / "shared" / "data" / "swebench_verified" / "instance_results.csv"


def _sim_case(name: str, model: str, **design: object) -> dict[str, object]:
    obs, truth = irt.simulate_rotating(model=model, seed=11, **design)  # type: ignore[arg-type]
    started = time.perf_counter()
    res = irt.estimate(obs, irt.settings_for(model))
    seconds = time.perf_counter() - started
    rec = irt.recovery(res, truth)
    return {
        "case": name,
        "model": model,
        "agents": obs["subject"].nunique(),
        "tasks": obs["task_id"].nunique(),
        "observations": len(obs),
        "fit_s": seconds,
        **rec,
    }


def _swe_case(tmp: Path) -> tuple[dict[str, object], Path]:
    from ingest.pipeline import ingest_paths

    db = tmp / "swe.duckdb"
    ingest_paths([SWE_CSV], db=db, fmt="csv", mapping="swebench-verified")
    started = time.perf_counter()
    with rdb.writer(db) as con:
        fit = fit_and_store(con, benchmark="swe-bench-verified")
    seconds = time.perf_counter() - started
    with rdb.reader(db) as con:
        ab = prog.progress_view(con, benchmark="swe-bench-verified").abilities
    rho = float(ab["ability"].rank().corr(ab["raw_score"].rank()))
    return (
        {
            "case": "SWE-bench Verified (real)",
            "model": "1pl",
            "agents": len(ab),
            "tasks": len(fit.items),
            "observations": int(fit.info["n_obs"]),
            "fit_s": seconds,
            "spearman": float("nan"),
            "spearman_raw": rho,
            "coverage90": float("nan"),
            "pearson": float("nan"),
        },
        db,
    )


def _page_render_s(db: Path) -> tuple[float, float]:
    """Seconds of the first and of a cached (second) AppTest run of the Progress page."""
    from streamlit.testing.v1 import AppTest

    os.environ["RUNLENS_DB"] = str(db)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("views/progress.py")
    started = time.perf_counter()
    at.run()
    first = time.perf_counter() - started
    assert not at.exception, at.exception
    started = time.perf_counter()
    at.run()
    return first, time.perf_counter() - started


def _table(rows: list[dict[str, object]]) -> str:
    head = "| case | model | agents x tasks | observations | fit (s) | Spearman vs truth | Spearman raw vs truth | 90% coverage |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]

    def f(r: dict[str, object], key: str) -> str:
        v = float(r[key])  # type: ignore[arg-type]
        return "-" if v != v else f"{v:.3f}"

    for r in rows:
        lines.append(
            f"| {r['case']} | {r['model']} | {r['agents']} x {r['tasks']} | {r['observations']:,} | "
            f"{float(r['fit_s']):.1f} | {f(r, 'spearman')} | {f(r, 'spearman_raw')} | {f(r, 'coverage90')} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="write the IRT section of BENCHMARKS.md")
    parser.add_argument("--skip-large", action="store_true", help="leave out the 500 x 5,000 case")
    args = parser.parse_args(argv)
    rows = []
    rotating = dict(n_periods=5, agents_per_period=10, items_per_period=132, overlap=0.3, growth=0.8)
    for model in ("1pl", "2pl"):
        rows.append(_sim_case("rotating 50 x 500", model, **rotating))
        print(rows[-1], flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        swe, db = _swe_case(Path(tmp))
        rows.append(swe)
        print(rows[-1], flush=True)
        first_s, cached_s = _page_render_s(db)
        print(f"page first {first_s:.2f} s, cached {cached_s:.2f} s", flush=True)
    if not args.skip_large:
        rows.append(
            _sim_case(
                "500 x 5,000, 50% missing",
                "1pl",
                n_periods=1,
                agents_per_period=500,
                items_per_period=5000,
                missing=0.5,
                growth=0.0,
            )
        )
        print(rows[-1], flush=True)
    text = (
        f"## IRT\n\nCommand: `python bench/bench_irt.py --write` on {platform.node() or 'the dev box'} "
        f"({os.cpu_count()} cores, shared with other jobs; load average at the end "
        f"{os.getloadavg()[0]:.1f}), Python {platform.python_version()}, py-irt 0.7.1, torch CPU, one torch thread. "
        "Default settings (`analytics.irt.settings_for`). For SWE-bench the 'Spearman raw' column is the "
        "agreement of abilities with resolve rates (no ground truth exists).\n\n"
        f"{_table(rows)}\n\nProgress page on SWE-bench with the fit stored: first render {first_s:.2f} s, "
        f"cached rerun {cached_s:.2f} s.\n"
    )
    print(text)
    if args.write:
        path = ROOT / "BENCHMARKS.md"
        old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
        if re.search(r"^## IRT\n", old, flags=re.M):
            new = re.sub(r"^## IRT\n.*?(?=^## |\Z)", text + "\n", old, flags=re.M | re.S)
        else:
            new = old.rstrip("\n") + "\n\n" + text
        path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
