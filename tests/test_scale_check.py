"""The held-out scale check (bench/scale_check.py) and bench_scale.py's measurements of a given store, at tiny sizes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import bench_irt_bootstrap, bench_scale, scale_check
from bench.gen_logs import generate
from tests.conftest import ROOT


def _page(name: str, cpu: float, problems: list[str] | None = None) -> dict[str, Any]:
    return {"page": name, "first_cpu_s": cpu, "problems": problems or []}


def _ingest(attempts: int, ingest: float, floor: float) -> dict[str, Any]:
    return {"attempts": attempts, "lake": {"cpu_s": ingest}, "read_json": {"cpu_s": floor}}


def test_judge_passes_flat_costs_and_fails_growth() -> None:
    small = [_page("views/a.py", 1.0), _page("views/b.py", 0.1)]
    flat_pages = [_page("views/a.py", 1.6), _page("views/b.py", 0.34)]  # 1.5 x 1.0 + 0.2 = 1.7; 1.5 x 0.1 + 0.2
    checks = scale_check.judge(
        (small, flat_pages),
        ([1.2, 1.3, 1.4], [1.5, 1.6, 2.0]),
        [_ingest(100_000, 14.9, 10.0), _ingest(10_000, 50.0, 1.0)],
    )
    assert [c.passed for c in checks] == [True, True, True, True, True]  # 10k: reported, not judged
    assert checks[0].limit == pytest.approx(1.7) and checks[2].limit == pytest.approx(1.5 * 1.3 + 0.2)

    grown = [_page("views/a.py", 1.8), _page("views/b.py", 0.34, ["an error"])]
    checks = scale_check.judge((small, grown), ([1.0, 1.0, 1.0], [1.8, 1.8, 1.8]), [_ingest(1_000_000, 15.1, 10.0)])
    failed = [c.name for c in checks if not c.passed]
    assert len(failed) == 4  # page a grew, page b showed a problem, the upload grew, the ingest passed 1.5x
    assert "views/a.py" in failed[0] and "problems" in failed[1] and "upload" in failed[2] and "ingest" in failed[3]
    with pytest.raises(ValueError, match="large store only"):
        scale_check.judge(([], flat_pages), ([1.0], [1.0]), [])


def _tiny_lake(folder: Path, attempts: int, runs: int = 2) -> str:
    logs = folder / "logs"
    generate(logs, n_attempts=attempts, n_runs=runs, seed=attempts)
    location = f"ducklake:sqlite:{folder / 'store.lake'}"
    done = subprocess.run(
        [sys.executable, "-m", "ingest", "--no-progress", "--db", location, str(logs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return location


def _catalog_state(location: str) -> tuple[object, ...]:
    """The lake's last snapshot, its data path and data files (the catalog's view and the folder's)."""
    catalog = Path(location.removeprefix("ducklake:sqlite:"))
    with sqlite3.connect(f"file:{catalog}?mode=ro", uri=True) as con:
        snapshot = con.execute("SELECT max(snapshot_id), count(*) FROM ducklake_snapshot").fetchone()
        path = con.execute("SELECT value FROM ducklake_metadata WHERE key = 'data_path'").fetchone()
        stored = sorted(r[0] for r in con.execute("SELECT path FROM ducklake_data_file"))
    files = sorted(str(p.relative_to(f"{catalog}.files")) for p in Path(f"{catalog}.files").rglob("*"))
    return snapshot, path, stored, files


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny lake of 200 attempts, built once for the module: the tests below check that they leave it as it was."""
    return _tiny_lake(tmp_path_factory.mktemp("small"), 200)


def test_scale_check_runs_on_tiny_stores_and_leaves_them_as_they_were(tmp_path: Path, small_lake: str) -> None:
    small, large = small_lake, _tiny_lake(tmp_path / "large", 600)
    before = _catalog_state(small), _catalog_state(large)
    out = tmp_path / "check.json"
    args = ["--small", small, "--large", large, "--work", str(tmp_path / "work"), "--pages", "views/upload.py"]
    ingest = tmp_path / "ingest.json"  # bench_ingest.py's output (that script has its own smoke test)
    ingest.write_text(json.dumps({"rows": [_ingest(200, 2.0, 0.5), _ingest(100_000, 9.0, 4.4)]}))
    args += ["--ingest-json", str(ingest), "--lock", str(tmp_path / "lock"), "--json", str(out)]
    status = scale_check.main(args)
    report = json.loads(out.read_text())
    assert status == (0 if report["passed"] else 1)
    names = [c["name"] for c in report["checks"]]
    assert any("views/upload.py" in n for n in names) and any("(app bootstrap" in n for n in names)
    assert sum("upload of 100 attempts" in n for n in names) == 1
    rows = [c for c in report["checks"] if c["name"].startswith("ingest")]
    assert [c["name"].split(" attempts")[0] for c in rows] == ["ingest of 200", "ingest of 100,000"]
    assert rows[0]["passed"] and "not judged" in rows[0]["name"]  # below 100k: printed only
    assert not rows[1]["passed"] and rows[1]["limit"] == pytest.approx(6.6)  # 9.0 > 1.5 x 4.4
    assert status == 1 and not report["passed"]
    assert report["passed"] == all(c["passed"] for c in report["checks"])
    assert all(c["value"] > 0 and c["base"] > 0 for c in report["checks"])
    assert (_catalog_state(small), _catalog_state(large)) == before  # the uploads went to copies
    assert not (tmp_path / "work" / "upload-large" / "copy").exists()


def test_a_copied_lake_takes_an_upload_the_original_does_not_see(tmp_path: Path, small_lake: str) -> None:
    from store import query_rows, reader

    source = small_lake
    before = _catalog_state(source)
    copy = scale_check.copy_store(source, tmp_path / "copy")
    result = bench_scale.measure_upload({"copy": copy}, tmp_path / "up")
    assert len(result["copy"]["cpu_seconds"]) == 3  # type: ignore[index]
    count = "SELECT count(*) FROM runs"
    with reader(source) as con:
        n_source = query_rows(con, count)[0][0]
    with reader(copy) as con:
        assert query_rows(con, count)[0][0] == n_source + 3
    assert _catalog_state(source) == before


def test_bench_scale_measures_a_given_store(tmp_path: Path) -> None:
    location = _tiny_lake(tmp_path / "s", 400, runs=8)  # two runs (agents) of each of the four benchmarks
    out = tmp_path / "m.json"
    args = ["--size", "300", "--work", str(tmp_path / "w"), "--store", location, "--lock", str(tmp_path / "lock")]
    assert bench_scale.main([*args, "--measure", "sql", "irt", "--irt-cap-cpu", "0", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    table2 = result["sql"]["AD-Bench Table 2 (bench-0)"]
    assert table2["timeout 600 s"]["rows"] and not table2["timeout 600 s"]["error"]
    assert set(result["sql"]) >= set(bench_scale.ANALYST_QUERIES)
    assert all(result["sql"][q]["timeout 600 s"]["error"] is None for q in bench_scale.ANALYST_QUERIES)
    irt = result["irt"]
    assert irt["observations"] > 0 and irt["fit"].startswith("stopped at its cap") and irt["reached"]["epoch"]
    boot = tmp_path / "boot.json"  # the bootstrap of the sd and the former estimator on the same responses
    assert bench_irt_bootstrap.main(["--db", location, "--former", "--json", str(boot)]) == 0
    figures = json.loads(boot.read_text())
    assert figures["observations"] == irt["observations"] and figures["max_relative_difference"] < 1e-6


def test_irt_phases_split_a_fit_by_its_messages() -> None:
    reached = [
        {"epoch": "epoch 0/300", "cpu_seconds": 12.5},
        {"epoch": "epoch 294/300", "cpu_seconds": 41.0},
        {"epoch": "item statistics of 66,666 tasks", "cpu_seconds": 42.5},
        {"epoch": "the abilities' sd: 30 task-bootstrap replicates", "cpu_seconds": 44.2},
    ]
    assert bench_scale.irt_phases(reached, 47.2) == {
        "preparation": 12.5,
        "epochs": 30.0,
        "item statistics": 1.7,
        "bootstrap of the sd, and the rest": 3.0,
    }
    assert bench_scale.irt_phases(reached[:1], 13.0) == {"preparation": 12.5, "bootstrap of the sd, and the rest": 0.5}
    me = bench_scale._proc_figures(os.getpid())
    assert me["cpu_seconds"] > 0 and 0 < me["peak_rss_mb"] <= me["peak_address_space_mb"]
