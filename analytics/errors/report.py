"""errors, reported: the JSON report, the text report, Table 3 and the rate table as people read them, the
diff as sentences."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import formatting as fmt
from analytics import stats
from analytics.errors.compute import (
    ADBENCH_CODES,
    CODE_NAMES,
    SOURCES,
    TABLE3_COLUMNS,
    chosen_sources,
    codes_of,
    run_labels,
)
from analytics.errors.load import error_table
from store import ALL_RUNS, RunFilter


def report(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    sources: Sequence[str] | str | None = None,
) -> dict[str, Any]:
    """The JSON report of issue 5: ``{"rows": [{run_id, agent, slice, counts, n_errors, n_total, n_failed}]}``."""
    df = error_table(con, run_filter, sources=sources)
    rows = []
    for rec in df.to_dict("records"):
        rows.append(
            {
                "run_id": rec["run_id"],
                "agent": rec["agent"],
                "benchmark": rec["benchmark"],
                "eval_date": None if pd.isna(rec["eval_date"]) else str(rec["eval_date"])[:10],
                "slice": rec["slice"],
                "counts": {c: int(rec[c]) for c in codes_of(df)},
                "n_errors": int(rec["n_errors"]),
                "n_total": int(rec["n_total"]),
                "n_failed": int(rec["n_failed"]),
            }
        )
    return {"benchmark": run_filter.benchmark, "sources": chosen_sources(sources) or list(SOURCES), "rows": rows}


def table3(table: pd.DataFrame, *, slice_name: str = "all") -> pd.DataFrame:
    """AD-Bench Table 3 layout: Model, TE. PE. DE. CE. Hal. LC. #Error #Total, fewest #Error first."""
    part = table[table["slice"] == slice_name]
    if part.empty:
        return pd.DataFrame(columns=["run_id", "Model", *TABLE3_COLUMNS.values()])
    out = pd.DataFrame({"run_id": part["run_id"], "Model": run_labels(part)})
    for col, title in TABLE3_COLUMNS.items():
        out[title] = part[col].astype(int).to_numpy()
    return out.sort_values(["#Error", "#Total", "Model"], ignore_index=True)


def rate_table(table: pd.DataFrame, *, slice_name: str = "all") -> pd.DataFrame:
    """Error rates per attempt, comparable across runs of different sizes: per run, its attempts (n), the share
    failed and, per AD-Bench code, the share of attempts carrying it, each with a Wilson 95% interval over the
    run's attempts (``62.1 [55.0–69.0]`` in %). Rows: fewest failed first."""
    part = table[table["slice"] == slice_name]
    codes = [c for c in TABLE3_COLUMNS if c in ADBENCH_CODES]
    if part.empty:
        return pd.DataFrame(columns=["run_id", "Model", "Attempts", "Failed %", *(f"{c} %" for c in codes)])
    n = part["n_attempts"].to_numpy(dtype=float)

    def rate(k: np.ndarray) -> list[str]:
        p = np.where(n > 0, k / np.maximum(n, 1), np.nan)
        return [fmt.interval(pi, stats.wilson(pi, ni)) for pi, ni in zip(p, n, strict=True)]

    out = pd.DataFrame({"run_id": part["run_id"].to_numpy(), "Model": run_labels(part), "Attempts": n.astype(int)})
    out["Failed %"] = rate(part["n_failed"].to_numpy(dtype=float))
    for code in codes:
        out[f"{code} %"] = rate(part[code].to_numpy(dtype=float))
    failed_share = part["n_failed"].to_numpy(dtype=float) / np.maximum(n, 1)
    return out.iloc[np.argsort(failed_share, kind="stable")].reset_index(drop=True)


def diff_sentences(diff: pd.DataFrame, label_a: str, label_b: str, *, min_pct: float = 10.0) -> list[str]:
    """Readable lines, biggest relative changes first: 'parameter errors -40% from v3 to v4, mostly on L3'."""
    out = []
    part = diff[diff["code"].isin(CODE_NAMES.keys()) | ~diff["code"].str.startswith("n_")]
    part = part[part["change"] != 0].assign(mag=lambda d: d["pct_change"].abs()).sort_values("mag", ascending=False)
    for r in part.itertuples(index=False):
        if np.isfinite(r.pct_change) and abs(r.pct_change) < min_pct:
            continue
        name = f"{CODE_NAMES.get(r.code, r.code)} errors ({r.code})"
        pct = f"{r.pct_change:+.0f}%" if np.isfinite(r.pct_change) else f"new ({r.n_b:,})"
        where = f", mostly on {r.mostly_on}" if r.mostly_on else ""
        out.append(f"{name} {pct} from {label_a} to {label_b} ({r.n_a:,} -> {r.n_b:,}){where}")
    return out


def text_report(rep: dict[str, Any]) -> str:
    """Error counts per run (AD-Bench Table 3 layout), fewest errors first."""
    rows = [r for r in rep["rows"] if r["slice"] == "all"]
    if not rows:
        return "no runs match"
    codes = list(rows[0]["counts"])
    lines = [f"{'agent':<24} {'run':<28} " + " ".join(f"{c:>5}" for c in codes) + "  #Error #Total failed"]
    for r in sorted(rows, key=lambda r: (r["n_errors"], r["n_total"])):
        lines.append(
            f"{r['agent']:<24} {r['run_id']:<28} "
            + " ".join(f"{r['counts'][c]:>5}" for c in codes)
            + f"  {r['n_errors']:>6} {r['n_total']:>6} {r['n_failed']:>6}"
        )
    return "\n".join(lines)
