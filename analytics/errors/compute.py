"""errors, computed: the taxonomy's codes, the error table per (run, slice) from the loaded cells, shares, the
run-to-run diff (pure: frames in, frames out)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analytics.runs import row_label

ADBENCH_CODES = ("TE", "PE", "DE", "CE", "HAL", "LC")
KNOWN_CODES = (*ADBENCH_CODES, "TOOL", "NO_TOOL", "REDUNDANT")
SOURCES = ("label", "rule", "judge")
CODE_NAMES = {
    "TE": "trajectory",
    "PE": "parameter",
    "DE": "dependency",
    "CE": "calculation",
    "HAL": "hallucination",
    "LC": "long-context",
    "TOOL": "tool instability",
    "NO_TOOL": "instruction violation",
    "REDUNDANT": "redundant calls",
}
TABLE3_COLUMNS = {
    "TE": "TE.",
    "PE": "PE.",
    "DE": "DE.",
    "CE": "CE.",
    "HAL": "Hal.",
    "LC": "LC.",
    "n_errors": "#Error",
    "n_total": "#Total",
}


def chosen_sources(sources: Sequence[str] | str | None) -> list[str] | None:
    """Allow-listed sources (None = all)."""
    if sources is None or sources == ():
        return None
    chosen = [sources] if isinstance(sources, str) else list(sources)
    bad = [s for s in chosen if s not in SOURCES]
    if bad:
        raise ValueError(f"unknown label source(s) {bad}; choose from {', '.join(SOURCES)}")
    return chosen


def _slice_frames(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Sum a (run, level, category, ...) frame into the slices all / level=L / category=C."""
    parts = [df.groupby(list(keys), dropna=False, as_index=False).sum(numeric_only=True).assign(slice="all")]
    for kind in ("level", "category"):
        sub = df.dropna(subset=[kind])
        if not sub.empty:
            g = sub.groupby([*keys, kind], as_index=False).sum(numeric_only=True)
            parts.append(g.assign(slice=kind + "=" + g[kind].astype(str)).drop(columns=[kind]))
    return pd.concat(parts, ignore_index=True)


def code_order(codes: Sequence[str]) -> list[str]:
    """Known codes in taxonomy order, then any other code a log brings, alphabetically."""
    return [c for c in KNOWN_CODES if c in codes] + sorted(c for c in set(codes) if c not in KNOWN_CODES)


def table_of_cells(runs: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """``error_table`` from its two loaded frames: ``failed_cells`` (not empty) and ``error_cells``."""
    meta_cols = ["run_id", "benchmark", "agent", "agent_version", "kind", "eval_date"]
    meta = runs[meta_cols].drop_duplicates("run_id")
    base = _slice_frames(runs.drop(columns=meta_cols[1:]), ["run_id"])
    codes = code_order([*ADBENCH_CODES, *cells["code"].unique()])
    if cells.empty:
        wide = base[["run_id", "slice"]].copy()
    else:
        counts = _slice_frames(cells, ["run_id", "code"])
        wide = counts.pivot_table(index=["run_id", "slice"], columns="code", values="n", aggfunc="sum").reset_index()
    out = base.merge(wide, on=["run_id", "slice"], how="left")
    for code in codes:
        out[code] = out[code].fillna(0).astype(int) if code in out else 0
    out["n_errors"] = out[list(ADBENCH_CODES)].sum(axis=1).astype(int)
    out["n_total"] = out[codes].sum(axis=1).astype(int)
    out["n_failed"] = out["n_failed"].astype(int)
    out["errors_per_failed"] = np.where(out["n_failed"] > 0, out["n_total"] / out["n_failed"].clip(lower=1), np.nan)
    out = meta.merge(out, on="run_id")
    out.attrs["codes"] = codes
    return out.sort_values(
        ["eval_date", "agent", "run_id", "slice"], ascending=[False, True, True, True], ignore_index=True
    )


def codes_of(table: pd.DataFrame) -> list[str]:
    """The code columns of an ``error_table`` frame, in display order."""
    return table.attrs.get("codes") or [c for c in table.columns if c in KNOWN_CODES or c.isupper()]


def run_labels(df: pd.DataFrame) -> list[str]:
    """Shortest unambiguous label per row: agent, else agent + version (``runs.run_label``), else + run id."""
    agents = df["agent"].astype(str)
    if not agents.duplicated(keep=False).any():
        return agents.tolist()
    labels = pd.Series([row_label(r, with_date=False) for _, r in df.iterrows()], index=df.index)
    clash = labels.duplicated(keep=False)
    return [f"{lab} ({rid})" if c else lab for lab, rid, c in zip(labels, df["run_id"], clash, strict=True)]


def rank_marks(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """'best' / 'second' per cell where fewer is better (ties share a mark), '' elsewhere."""
    marks = pd.DataFrame("", index=df.index, columns=list(columns))
    for col in columns:
        values = sorted(df[col].dropna().unique())
        if values:
            marks.loc[df[col] == values[0], col] = "best"
        if len(values) > 1:
            marks.loc[df[col] == values[1], col] = "second"
    return marks


def shares(table: pd.DataFrame, *, slice_name: str = "all") -> pd.DataFrame:
    """Long frame: run, code, n, share of the run's labels (n / n_total)."""
    part = table[table["slice"] == slice_name]
    codes = codes_of(table)
    if part.empty:
        return pd.DataFrame(columns=["run_id", "run", "code", "n", "share"])
    part = part.assign(run=run_labels(part))
    long = part.melt(id_vars=["run_id", "run", "n_total"], value_vars=codes, var_name="code", value_name="n")
    long["share"] = np.where(long["n_total"] > 0, long["n"] / long["n_total"].clip(lower=1), 0.0)
    return long.drop(columns="n_total")


def error_diff(table: pd.DataFrame, run_a: str, run_b: str) -> pd.DataFrame:
    """Per code: count in run A and B, change and % change, and the level that drives most of the change."""
    codes = codes_of(table)
    a = table[table["run_id"] == run_a].set_index("slice")
    b = table[table["run_id"] == run_b].set_index("slice")
    if "all" not in a.index or "all" not in b.index:
        raise ValueError(f"both runs must be in the table: {run_a!r}, {run_b!r}")
    levels = sorted(s for s in set(a.index) | set(b.index) if s.startswith("level="))
    rows = []
    for code in [*codes, "n_errors", "n_total", "n_failed"]:
        n_a, n_b = int(a.at["all", code]), int(b.at["all", code])
        change = n_b - n_a
        by_level = {lv: int(b[code].get(lv, 0)) - int(a[code].get(lv, 0)) for lv in levels}
        driver = None
        if change and by_level:
            lv, delta = max(by_level.items(), key=lambda kv: kv[1] * np.sign(change))
            driver = lv.split("=", 1)[1] if delta * change > 0 else None
        rows.append(
            {
                "code": code,
                "n_a": n_a,
                "n_b": n_b,
                "change": change,
                "pct_change": (100.0 * change / n_a) if n_a else (np.nan if change == 0 else np.inf),
                "mostly_on": driver,
            }
        )
    return pd.DataFrame(rows)
