"""What the database holds: options for the global filters, counts, the demo flag."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb
import pandas as pd

from store import RunlensError, query_df, query_rows, run_filter_params, with_run_filter


@dataclass(frozen=True)
class Catalog:
    """Benchmarks, their agents and the span of evaluation dates."""

    benchmarks: tuple[str, ...]
    agents: dict[str, tuple[str, ...]]
    date_min: dt.date | None
    date_max: dt.date | None
    n_runs: int
    n_attempts: int
    is_demo: bool  # any demo run in the database
    demo_agents: frozenset[tuple[str, str]] = frozenset()  # (benchmark, agent) pairs with a demo run
    newest_first: tuple[str, ...] = ()  # benchmarks by their newest run (evaluation date), then runs, then name

    def shows_demo(self, benchmark: str | None, agents: tuple[str, ...] | list[str] = ()) -> bool:
        """True when the view of ``benchmark`` (and ``agents``, all when empty) holds demo runs."""
        return any(b == benchmark and (not agents or a in agents) for b, a in self.demo_agents)


def catalog(con: duckdb.DuckDBPyConnection) -> Catalog:
    """Filter options and headline counts."""
    df = query_df(
        con,
        "SELECT benchmark, agent, min(eval_date) AS d0, max(eval_date) AS d1, count(*) AS n, "
        "bool_or(is_demo) AS demo FROM runs GROUP BY ALL ORDER BY benchmark, agent",
    )
    n_attempts = int(query_rows(con, "SELECT count(*) FROM attempts")[0][0])
    agents = {b: tuple(g["agent"]) for b, g in df.groupby("benchmark", sort=True)}
    d0 = df["d0"].dropna()
    d1 = df["d1"].dropna()
    return Catalog(
        benchmarks=tuple(agents),
        agents=agents,
        date_min=pd_date(d0.min()) if not d0.empty else None,
        date_max=pd_date(d1.max()) if not d1.empty else None,
        n_runs=int(df["n"].sum()) if not df.empty else 0,
        n_attempts=n_attempts,
        is_demo=bool(df["demo"].any()) if not df.empty else False,
        demo_agents=frozenset(
            (str(b), str(a)) for b, a, d in zip(df["benchmark"], df["agent"], df["demo"], strict=True) if d
        ),
        newest_first=_newest_first(df),
    )


def _newest_first(df: pd.DataFrame) -> tuple[str, ...]:
    """Benchmarks with the most recent runs first (undated runs count as oldest), then the most runs, then name."""
    if df.empty:
        return ()
    by = df.groupby("benchmark", sort=True).agg(newest=("d1", "max"), n=("n", "sum")).reset_index()
    by["newest"] = pd.to_datetime(by["newest"]).fillna(pd.Timestamp.min)
    by = by.sort_values(["newest", "n", "benchmark"], ascending=[False, False, True])
    return tuple(str(b) for b in by["benchmark"])


def filtered_counts(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None,
    agents: list[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
) -> tuple[int, int]:
    """(runs, attempts) in the view the sidebar's filters select (the sidebar's counts)."""
    sql = with_run_filter(
        "SELECT count(DISTINCT r.run_id), count(a.run_id) FROM runs r LEFT JOIN attempts a USING (run_id) "
        "WHERE $run_filter"
    )
    n_runs, n_attempts = query_rows(con, sql, run_filter_params(benchmark, agents, date_from, date_to))[0]
    return int(n_runs), int(n_attempts)


def default_benchmark(con: duckdb.DuckDBPyConnection) -> str | None:
    """The benchmark a report shows when none is named: the one with the most runs (ties by name), for every
    report alike (IRT, TMF); None for an empty database."""
    rows = query_rows(con, "SELECT benchmark FROM runs GROUP BY benchmark ORDER BY count(*) DESC, benchmark LIMIT 1")
    return rows[0][0] if rows else None


def benchmark_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every declared benchmark, by name (those without runs included)."""
    return [r[0] for r in query_rows(con, "SELECT benchmark FROM benchmarks ORDER BY benchmark")]


def require_benchmark(con: duckdb.DuckDBPyConnection, benchmark: str) -> str:
    """``benchmark`` when the database declares it, else a RunlensError naming the ones it has."""
    names = benchmark_names(con)
    if benchmark not in names:
        have = ", ".join(names) or "none"
        raise RunlensError(f"no benchmark named {benchmark!r} (the database has: {have})")
    return benchmark


def pd_date(value: object) -> dt.date:
    """A pandas/NumPy timestamp or date as a ``datetime.date``."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    import pandas as pd

    return pd.Timestamp(value).date()  # type: ignore[arg-type]
