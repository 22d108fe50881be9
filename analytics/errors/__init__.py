"""errors: error-type distributions per run (AD-Bench Table 3), shares, co-occurrence and run-to-run diffs.

Definitions (docs/errors_and_judge.md):
    * only failed attempts (``passed = false``) count; a code counts once per attempt, whichever sources
      (log ``label``, ``rule``, ``judge``) report it and at however many steps;
    * ``counts[code]``: failed attempts carrying the code;
    * ``n_errors``: TE + PE + DE + CE + HAL + LC (Table 3's #Error); ``n_total``: every code on failed attempts
      (#Total); ``n_failed``: failed attempts; ``errors_per_failed = n_total / n_failed``;
    * slices: ``all``, ``level=<L>``, ``category=<C>``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import formatting as fmt
from analytics import stats
from analytics.sqlfiles import load_sql
from store import query_df, query_rows, run_filter_params

ADBENCH_CODES = ("TE", "PE", "DE", "CE", "HAL", "LC")
KNOWN_CODES = (*ADBENCH_CODES, "TOOL", "NO_TOOL", "REDUNDANT")
SOURCES = ("label", "rule", "judge")
# one colour per code, kept across charts, no two alike (Okabe-Ito's colour-blind-safe set, then distinct extras)
CODE_COLORS = {
    "TE": "#0072B2",
    "PE": "#E69F00",
    "DE": "#009E73",
    "CE": "#CC79A7",
    "HAL": "#D55E00",
    "LC": "#56B4E9",
    "TOOL": "#999999",
    "NO_TOOL": "#000000",
    "REDUNDANT": "#F0E442",
}
OTHER_COLORS = ("#8c564b", "#7f3c8d", "#11a579", "#3969ac", "#f2b701", "#e73f74", "#80ba5a", "#e68310")
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


def _sources(sources: Sequence[str] | str | None) -> list[str] | None:
    """Allow-listed sources (None = all)."""
    if sources is None or sources == ():
        return None
    chosen = [sources] if isinstance(sources, str) else list(sources)
    bad = [s for s in chosen if s not in SOURCES]
    if bad:
        raise ValueError(f"unknown label source(s) {bad}; choose from {', '.join(SOURCES)}")
    return chosen


def error_cells(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    sources: Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """Failed attempts per (run, level, category, code), aggregated in DuckDB."""
    return query_df(
        con,
        load_sql("error_cells"),
        run_filter_params(benchmark, agents, date_from, date_to) | {"sources": _sources(sources)},
    )


def failed_cells(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
) -> pd.DataFrame:
    """Attempts and failed attempts per (run, level, category), with the run's agent and date."""
    return query_df(con, load_sql("error_failed"), run_filter_params(benchmark, agents, date_from, date_to))


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


def error_table(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    sources: Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """One row per (run, slice): a column per code, n_errors, n_total, n_failed, errors_per_failed, shares.

    Every AD-Bench code gets a column (0 when absent); other codes get one when some failed attempt has them.
    """
    runs = failed_cells(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to)
    if runs.empty:
        return pd.DataFrame()
    meta_cols = ["run_id", "benchmark", "agent", "agent_version", "kind", "eval_date"]
    meta = runs[meta_cols].drop_duplicates("run_id")
    base = _slice_frames(runs.drop(columns=meta_cols[1:]), ["run_id"])
    cells = error_cells(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to, sources=sources)
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


def report(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    sources: Sequence[str] | str | None = None,
) -> dict[str, Any]:
    """The JSON report of issue 5: ``{"rows": [{run_id, agent, slice, counts, n_errors, n_total, n_failed}]}``."""
    df = error_table(con, benchmark=benchmark, date_from=date_from, date_to=date_to, sources=sources)
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
    return {"benchmark": benchmark, "sources": _sources(sources) or list(SOURCES), "rows": rows}


# ---------------------------------------------------------------------------------------------
# Views: Table 3, shares, co-occurrence, diff, attempts behind a cell
# ---------------------------------------------------------------------------------------------


def run_label(row: pd.Series | dict[str, Any]) -> str:
    """``agent`` or ``agent version`` when the version adds something to the name."""
    return fmt.run_label(row["agent"], row.get("agent_version"))


def run_labels(df: pd.DataFrame) -> list[str]:
    """Shortest unambiguous label per row: agent, else agent + version, else + run id."""
    agents = df["agent"].astype(str)
    if not agents.duplicated(keep=False).any():
        return agents.tolist()
    labels = pd.Series([run_label(r) for _, r in df.iterrows()], index=df.index)
    clash = labels.duplicated(keep=False)
    return [f"{lab} ({rid})" if c else lab for lab, rid, c in zip(labels, df["run_id"], clash, strict=True)]


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


def style_table3(df: pd.DataFrame) -> Any:
    """A pandas Styler: best in bold, second best underlined (AD-Bench's convention)."""
    cols = list(TABLE3_COLUMNS.values())
    marks = rank_marks(df, cols)
    css = marks.replace({"best": "font-weight: bold", "second": "text-decoration: underline"})
    return df.style.apply(lambda _: css.reindex(columns=df.columns).fillna(""), axis=None)


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


def fig_error_shares(long: pd.DataFrame, *, title: str = "Share of error labels per run"):  # -> go.Figure
    """Stacked horizontal bars of code shares per run; ``custom_data`` = (run_id, code)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    others = iter(OTHER_COLORS * 8)
    for code in code_order(list(long["code"].unique())):
        part = long[long["code"] == code]
        fig.add_trace(
            go.Bar(
                y=part["run"],
                x=100 * part["share"],
                name=code,
                orientation="h",
                marker={"color": CODE_COLORS.get(code) or next(others)},
                customdata=np.stack([part["run_id"], part["code"], part["n"]], axis=1),
                hovertemplate="%{y}<br>%{customdata[1]}: %{customdata[2]} attempts (%{x:.1f}%)<extra></extra>",
            )
        )
    n_runs = long["run_id"].nunique()
    fig.update_layout(
        barmode="stack",
        title=title,
        xaxis_title="share of labels on failed attempts (%)",
        height=140 + 30 * n_runs,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def cooccurrence(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    sources: Sequence[str] | str | None = None,
    run_ids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Failed attempts carrying both codes, summed over the chosen runs: code_a, code_b, n."""
    df = query_df(
        con,
        load_sql("error_cooccurrence"),
        run_filter_params(benchmark, agents, date_from, date_to)
        | {"sources": _sources(sources), "run_ids": list(run_ids) if run_ids else None},
    )
    if df.empty:
        return pd.DataFrame(columns=["code_a", "code_b", "n"])
    return df.groupby(["code_a", "code_b"], as_index=False)["n"].sum()


def fig_cooccurrence(df: pd.DataFrame, *, title: str = "Codes within the same failed attempt"):  # -> go.Figure
    """Heatmap of code pairs (diagonal: attempts with the code); ``custom_data`` = (code_a, code_b)."""
    import plotly.graph_objects as go

    codes = code_order(list(set(df["code_a"]) | set(df["code_b"])))
    matrix = (
        df.pivot_table(index="code_a", columns="code_b", values="n", aggfunc="sum")
        .reindex(index=codes, columns=codes)
        .fillna(0)
        .astype(int)
    )
    custom = np.array([[[a, b] for b in codes] for a in codes], dtype=object)
    fig = go.Figure(
        go.Heatmap(
            z=matrix.to_numpy(),
            x=codes,
            y=codes,
            customdata=custom,
            colorscale="Blues",
            text=matrix.to_numpy(),
            texttemplate="%{text}",
            hovertemplate="%{y} with %{x}: %{z} failed attempts<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        height=220 + 30 * len(codes),
        yaxis_autorange="reversed",
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return fig


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


def diff_sentences(diff: pd.DataFrame, label_a: str, label_b: str, *, min_pct: float = 10.0) -> list[str]:
    """Readable lines, biggest relative changes first: 'parameter errors -40% from v3 to v4, mostly on L3'."""
    out = []
    part = diff[diff["code"].isin(CODE_NAMES.keys()) | ~diff["code"].str.startswith("n_")]
    part = part[part["change"] != 0].assign(mag=lambda d: d["pct_change"].abs()).sort_values("mag", ascending=False)
    for r in part.itertuples(index=False):
        if np.isfinite(r.pct_change) and abs(r.pct_change) < min_pct:
            continue
        name = f"{CODE_NAMES.get(r.code, r.code)} errors ({r.code})"
        pct = f"{r.pct_change:+.0f}%" if np.isfinite(r.pct_change) else f"new ({r.n_b})"
        where = f", mostly on {r.mostly_on}" if r.mostly_on else ""
        out.append(f"{name} {pct} from {label_a} to {label_b} ({r.n_a} -> {r.n_b}){where}")
    return out


def error_attempts(
    con: duckdb.DuckDBPyConnection,
    *,
    run_id: str,
    code: str | None = None,
    code_b: str | None = None,
    slice_name: str = "all",
    sources: Sequence[str] | str | None = None,
    limit: int = 500,
) -> pd.DataFrame:
    """The failed attempts behind a bar or cell: run, task, sample, level, category, all their codes."""
    level = slice_name.split("=", 1)[1] if slice_name.startswith("level=") else None
    category = slice_name.split("=", 1)[1] if slice_name.startswith("category=") else None
    return query_df(
        con,
        load_sql("error_attempts"),
        {
            "run_id": run_id,
            "code": code,
            "code_b": code_b,
            "level": level,
            "category": category,
            "sources": _sources(sources),
            "limit": int(limit),
        },
    )


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def rule_counts(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int]]:
    """(code, findings) of the stored rule findings, by code."""
    return [
        (str(c), int(n))
        for c, n in query_rows(
            con, "SELECT code, count(*) FROM error_labels WHERE source = 'rule' GROUP BY code ORDER BY code"
        )
    ]


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
