"""What the database holds, as the sidebar uses it: the benchmarks, their agents, the span of evaluation dates, the
demo flag and the order benchmarks are offered in. Pure: the per-(benchmark, agent) frame in, a ``Catalog`` out."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd


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
    runs_of: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (benchmark, agent) -> its runs

    def run_count(self, benchmark: str | None, agents: Sequence[str] = ()) -> int:
        """The runs of ``benchmark`` (every benchmark when None) by ``agents`` (all when empty): the count
        ``filtered_run_count`` reads for a filter without dates, from the catalog's own rows (no statement)."""
        picked = set(agents)
        return sum(
            n
            for (b, a), n in self.runs_of.items()
            if (benchmark is None or b == benchmark) and (not picked or a in picked)
        )

    def shows_demo(self, benchmark: str | None, agents: tuple[str, ...] | list[str] = ()) -> bool:
        """True when the view of ``benchmark`` (and ``agents``, all when empty) holds demo runs."""
        return any(b == benchmark and (not agents or a in agents) for b, a in self.demo_agents)


def catalog_from(df: pd.DataFrame, n_attempts: int) -> Catalog:
    """The ``Catalog`` of the per-(benchmark, agent) rows (``d0``/``d1`` first and last evaluation date, ``n`` runs,
    ``demo`` any demo run) and the number of attempts."""
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
        newest_first=newest_first(df),
        runs_of={(b, a): int(n) for b, a, n in zip(df["benchmark"], df["agent"], df["n"], strict=True)},
    )


def newest_first(df: pd.DataFrame) -> tuple[str, ...]:
    """Benchmarks with the most recent runs first (undated runs count as oldest), then the most runs, then name."""
    if df.empty:
        return ()
    by = df.groupby("benchmark", sort=True).agg(newest=("d1", "max"), n=("n", "sum")).reset_index()
    by["newest"] = pd.to_datetime(by["newest"]).fillna(pd.Timestamp.min)
    by = by.sort_values(["newest", "n", "benchmark"], ascending=[False, False, True])
    return tuple(str(b) for b in by["benchmark"])


def pd_date(value: object) -> dt.date:
    """A pandas/NumPy timestamp or date as a ``datetime.date``."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return pd.Timestamp(value).date()  # type: ignore[arg-type]
