"""Agreement: between LLM judges (Table 4) and between people and judges (section 4.2), with Spearman correlations."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import stats
from analytics.gem.load import attempts
from analytics.gem.tables import attempt_overall, default_rater, ratings


def judges_table(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Table 4: qualitative overall per dataset x solution (k = 1) for every LLM judge (one column each)."""
    return judges_from(attempts(con, benchmark=benchmark), ratings(con, benchmark=benchmark))


def judges_from(att: pd.DataFrame, rat: pd.DataFrame) -> pd.DataFrame:
    """:func:`judges_table` on frames."""
    rat = rat[rat["rater_kind"] == "llm"]
    att = att[~att["is_baseline"] & (att["k"] == 1)]
    if rat.empty or att.empty:
        return pd.DataFrame(columns=["dataset", "solution"])
    cell = rat.merge(att[["attempt_id", "dataset", "solution"]], on="attempt_id")
    dims = cell.groupby(["dataset", "solution", "rater", "dimension"])["value"].mean()
    overall = dims.groupby(["dataset", "solution", "rater"]).mean().unstack("rater")
    return overall.reset_index().rename_axis(columns=None)


def judge_agreement(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Spearman between every pair of LLM judges: over the attempts both rated (attempt overall score) and
    over the dataset x solution cells of Table 4."""
    return agreement_from(attempts(con, benchmark=benchmark), ratings(con, benchmark=benchmark))


def agreement_from(att: pd.DataFrame, rat: pd.DataFrame) -> pd.DataFrame:
    """:func:`judge_agreement` on frames."""
    rat = rat[rat["rater_kind"] == "llm"]
    rows: list[dict[str, Any]] = []
    if rat.empty:
        return pd.DataFrame(
            columns=["judge_a", "judge_b", "n_attempts", "spearman_attempts", "n_cells", "spearman_cells"]
        )
    per_attempt = attempt_overall(rat)
    cells = judges_from(att, rat).set_index(["dataset", "solution"])
    judges = list(per_attempt.columns)
    for i, a in enumerate(judges):
        for b in judges[i + 1 :]:
            both = per_attempt[[a, b]].dropna()
            cb = cells[[a, b]].dropna() if a in cells and b in cells else pd.DataFrame()
            rows.append(
                {
                    "judge_a": a,
                    "judge_b": b,
                    "n_attempts": len(both),
                    "spearman_attempts": _spearman(both[a], both[b]),
                    "n_cells": len(cb),
                    "spearman_cells": _spearman(cb[a], cb[b]) if len(cb) else math.nan,
                }
            )
    return pd.DataFrame(rows)


def _spearman(x: Sequence[float] | np.ndarray | pd.Series, y: Sequence[float] | np.ndarray | pd.Series) -> float:
    """Spearman's rho; NaN with fewer than three pairs or a constant side."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan
    return float(stats.scipy_stats().spearmanr(a, b).statistic)  # scipy.stats on first use (0.6-1.2 s)


@dataclass(frozen=True)
class HumanAgreement:
    """Section 4.2: split-half reliability of people and their correlation with an LLM judge."""

    split_half: float  # mean Spearman over random halves of the raters (rho_hh)
    split_half_sd: float
    human_llm: float  # Spearman of human item means vs the judge (rho_hl)
    judge: str | None
    n_items: int  # (attempt, dimension) cells with human ratings
    n_raters: int
    n_ratings: int
    n_splits: int


def human_agreement(
    con: duckdb.DuckDBPyConnection, *, benchmark: str, judge: str | None = None, n_splits: int = 100, seed: int = 0
) -> HumanAgreement | None:
    """Split-half reliability over ``n_splits`` seeded random halves of the human raters, and the Spearman
    correlation of human item means with ``judge`` (default: the benchmark's judge). An item is one
    (attempt, dimension); None when fewer than two human raters exist."""
    judge = judge or default_rater(con, benchmark=benchmark)
    return human_from(ratings(con, benchmark=benchmark), judge=judge, n_splits=n_splits, seed=seed)


def human_from(rat: pd.DataFrame, *, judge: str | None, n_splits: int = 100, seed: int = 0) -> HumanAgreement | None:
    """:func:`human_agreement` on a frame from :func:`ratings`."""
    hum = rat[rat["rater_kind"] == "human"]
    if hum["rater"].nunique() < 2:
        return None
    mat = hum.pivot_table(index="rater", columns=["attempt_id", "dimension"], values="value", aggfunc="mean")
    values = mat.to_numpy(dtype=float)
    seen = ~np.isnan(values)
    filled = np.nan_to_num(values)
    rng = np.random.default_rng(seed)
    rhos = []
    for _ in range(n_splits):
        half = rng.permutation(len(values)) < len(values) // 2
        means = []
        for part in (half, ~half):
            cnt = seen[part].sum(axis=0)
            means.append(np.where(cnt > 0, filled[part].sum(axis=0) / np.maximum(cnt, 1), np.nan))
        ok = ~np.isnan(means[0]) & ~np.isnan(means[1])
        rhos.append(_spearman(means[0][ok], means[1][ok]))
    item_mean = pd.Series(np.nanmean(values, axis=0), index=mat.columns)
    llm = rat[rat["rater"] == judge].set_index(["attempt_id", "dimension"])["value"]
    both = pd.concat([item_mean.rename("human"), llm.rename("llm")], axis=1, join="inner").dropna()
    rhos_arr = np.array([r for r in rhos if not math.isnan(r)])
    return HumanAgreement(
        float(rhos_arr.mean()) if len(rhos_arr) else math.nan,
        float(rhos_arr.std()) if len(rhos_arr) else math.nan,
        _spearman(both["human"], both["llm"]) if len(both) else math.nan,
        judge,
        int(seen.any(axis=0).sum()),
        int(len(values)),
        int(len(hum)),
        n_splits,
    )


def human_vs_llm(con: duckdb.DuckDBPyConnection, *, benchmark: str, judge: str | None = None) -> pd.DataFrame:
    """Figure 4: mean score per solution x dimension from people and from the judge, on the study's attempts."""
    judge = judge or default_rater(con, benchmark=benchmark)
    return human_vs_llm_from(attempts(con, benchmark=benchmark), ratings(con, benchmark=benchmark), judge=judge)


def human_vs_llm_from(att: pd.DataFrame, rat: pd.DataFrame, *, judge: str | None) -> pd.DataFrame:
    """:func:`human_vs_llm` on frames."""
    hum = rat[rat["rater_kind"] == "human"]
    if hum.empty:
        return pd.DataFrame(columns=["solution", "dimension", "human", "llm"])
    att = att[["attempt_id", "solution"]]
    llm = rat[(rat["rater"] == judge) & rat["attempt_id"].isin(hum["attempt_id"])]
    h = hum.merge(att, on="attempt_id").groupby(["solution", "dimension"])["value"].mean().rename("human")
    j = llm.merge(att, on="attempt_id").groupby(["solution", "dimension"])["value"].mean().rename("llm")
    return pd.concat([h, j], axis=1).reset_index()
