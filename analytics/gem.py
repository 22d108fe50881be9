"""GEM-Bench response metrics, judge agreement and cost (Tables 2, 3, 4, 6; section 4.2; Appendix C.1).

Pure: the formulas take sentence embeddings (numpy arrays) and ad masks; the table builders take a DuckDB
connection and return DataFrames. Embedding (and its cache) lives in ``analytics.embeddings``; this module
never loads a model. See docs/gem.md for the data conventions (task ``category`` = dataset, run ``agent`` =
solution, attempt field ``ads``, run fields ``gem_role`` and ``ads_per_response``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from scipy.stats import spearmanr

from store import RunlensError, query_df

DIMENSIONS = ("accuracy", "naturalness", "personality", "trust", "notice", "click")
QUANT = {
    "RF": "response_flow",
    "RC": "response_coherence",
    "AF": "ad_flow",
    "AC": "ad_coherence",
    "IR": "injection",
    "CTR": "click",
}
EMBEDDING_METRICS = ("response_flow", "response_coherence", "ad_flow", "ad_coherence", "injection")
LEVELS = {"bad": 0, "moderate": 1, "good": 2}
SOURCES = ("log", "computed")
AD_PREFIX = ">> AD | "
TEXT_PREFIX = "        "


class GemError(RunlensError):
    """GEM-Bench data missing or inconsistent."""


# ---------------------------------------------------------------------------------------------
# Formulas (Appendix C.1) on embeddings
# ---------------------------------------------------------------------------------------------

_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str | None) -> list[str]:
    """Sentences of a response: split after . ! ? followed by space and an upper-case letter or digit.

    Dots inside URLs or numbers never split (no space follows them); blank lines split too.
    """
    if not text:
        return []
    out: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.)\s)", text):
        out.extend(s.strip() for s in _SPLIT.split(block.strip()) if s.strip())
    return out


def parse_ads(value: Any) -> list[dict[str, str]]:
    """The ads stored with an attempt: ``ads`` list or single ``ad`` object (``name``/``url``/``text``)."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return []
    return [
        {k: str(v) for k, v in ad.items() if k in ("name", "url", "text") and v} for ad in value if isinstance(ad, dict)
    ]


def ad_mask(sentences: Sequence[str], ads: Sequence[dict[str, str]]) -> np.ndarray:
    """True for each sentence that carries an ad: its URL (or URL without scheme), its name, or its text."""
    keys: list[str] = []
    for ad in ads:
        url = ad.get("url", "").strip().lower()
        if url:
            keys.append(url)
            bare = re.sub(r"^https?://(www\.)?", "", url).rstrip("/")
            if len(bare) > 4:
                keys.append(bare)
        if len(ad.get("name", "").strip()) > 2:
            keys.append(ad["name"].strip().lower())
    texts = {ad["text"].strip().lower() for ad in ads if ad.get("text")}
    mask = [
        any(k in s.lower() for k in keys) or any(s.strip().lower() in t for t in texts if len(s) > 20)
        for s in sentences
    ]
    return np.array(mask, dtype=bool)


def _unit(emb: np.ndarray) -> np.ndarray:
    emb = np.asarray(emb, dtype=float)
    norms = np.linalg.norm(emb, axis=-1, keepdims=True)
    return emb / np.where(norms == 0, 1.0, norms)


def response_flow(emb: np.ndarray) -> float:
    """f(r): mean cosine similarity of consecutive sentences (NaN with fewer than two)."""
    u = _unit(emb)
    if len(u) < 2:
        return math.nan
    return float(np.mean(np.sum(u[:-1] * u[1:], axis=1)))


def response_coherence(emb: np.ndarray) -> float:
    """c(r): mean cosine similarity of each sentence to the mean sentence embedding."""
    if len(emb) < 2:
        return math.nan
    u = _unit(emb)
    centre = _unit(np.asarray(emb, dtype=float).mean(axis=0))
    return float(np.mean(u @ centre))


def _blocks(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of each run of consecutive ad sentences."""
    out, start = [], None
    for i, is_ad in enumerate(list(mask) + [False]):
        if is_ad and start is None:
            start = i
        elif not is_ad and start is not None:
            out.append((start, i - 1))
            start = None
    return out


def ad_flow(emb: np.ndarray, mask: np.ndarray) -> float:
    """exp(-|sim(s_i, s_d) - sim(s_d, s_{i+1})|) averaged over ads with a sentence on both sides.

    A run of consecutive ad sentences is one ad: its first sentence meets s_i, its last meets s_{i+1}.
    An ad that opens or closes the response has no flow on one side and is left out (NaN when none is left).
    """
    u = _unit(emb)
    vals = [
        math.exp(-abs(float(u[a - 1] @ u[a]) - float(u[b] @ u[b + 1])))
        for a, b in _blocks(np.asarray(mask, dtype=bool))
        if a > 0 and b < len(u) - 1
    ]
    return float(np.mean(vals)) if vals else math.nan


def ad_coherence(emb: np.ndarray, mask: np.ndarray) -> float:
    """Mean cosine similarity of each ad sentence to the mean embedding of the non-ad sentences."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any() or mask.all():
        return math.nan
    u = _unit(emb)
    centre = _unit(np.asarray(emb, dtype=float)[~mask].mean(axis=0))
    return float(np.mean(u[mask] @ centre))


def response_metrics(emb: np.ndarray, mask: np.ndarray) -> dict[str, float]:
    """All embedding metrics of one response (values in [-1, 1]; injection 0/1)."""
    mask = np.asarray(mask, dtype=bool)
    return {
        "response_flow": response_flow(emb),
        "response_coherence": response_coherence(emb),
        "ad_flow": ad_flow(emb, mask),
        "ad_coherence": ad_coherence(emb, mask),
        "injection": float(mask.any()),
    }


def aggregate_levels(first: int | str, second: int | str) -> int:
    """The 0/30/60/90 rubric of section 3.2 from two bad/moderate/good ratings (or 0/1/2).

    0: both bad; 30: bad + moderate; 60: both moderate or bad + good; 90: both good. The paper leaves
    moderate + good unspecified; it scores 60 here (90 needs both dimensions good).
    """
    a, b = (LEVELS[v.lower()] if isinstance(v, str) else int(v) for v in (first, second))
    if not {a, b} <= {0, 1, 2}:
        raise GemError(f"levels must be bad/moderate/good or 0/1/2, got {first!r}, {second!r}")
    return 90 if a == b == 2 else {0: 0, 1: 30, 2: 60, 3: 60}[a + b]


def cost_overall(ittft: float, ottft: float) -> float:
    """Table 6 aggregate: 0.5 x ITTFT + OTTFT (input tokens cost half an output token)."""
    return 0.5 * ittft + ottft


# ---------------------------------------------------------------------------------------------
# Reading the database
# ---------------------------------------------------------------------------------------------

ATTEMPTS_SQL = """
SELECT a.attempt_id, a.run_id, r.agent AS solution, coalesce(t.category, 'all') AS dataset, a.task_id, a.sample,
       coalesce(TRY_CAST(json_extract_string(r.extra, '$.ads_per_response') AS INTEGER), 1) AS k,
       coalesce(json_extract_string(r.extra, '$.gem_role'), '') = 'baseline' AS is_baseline,
       a.input_tokens, a.output_tokens
FROM attempts a JOIN runs r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
WHERE r.benchmark = ?
"""
GEM_BENCH_SQL = """
SELECT DISTINCT r.benchmark FROM attempt_metrics m JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
WHERE m.name IN ('response_flow', 'response_coherence', 'ad_flow', 'ad_coherence', 'injection')
UNION
SELECT DISTINCT r.benchmark FROM ratings g JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
WHERE split_part(g.dimension, '/', 1) IN ('accuracy', 'naturalness', 'personality', 'trust', 'notice')
UNION
SELECT benchmark FROM benchmarks WHERE json_extract_string(extra, '$.gem') = 'true'
ORDER BY 1
"""


def gem_benchmarks(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Benchmarks holding GEM-style data (response metrics, GEM judge dimensions, or ``"gem": true``)."""
    return [str(b) for b in query_df(con, GEM_BENCH_SQL)["benchmark"]]


def attempts(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """One row per attempt with its dataset, solution, k (ads per response), baseline flag and tokens."""
    return query_df(con, ATTEMPTS_SQL, [benchmark])


def _label(solution: str, k: int) -> str:
    return solution if int(k) == 1 else f"{solution} (k={int(k)})"


KEYS = ["dataset", "solution", "k"]


def quantitative(
    con: duckdb.DuckDBPyConnection, *, benchmark: str, source: str = "log", model: str | None = None
) -> pd.DataFrame:
    """Table 2: mean RF, RC, AF, AC, IR, CTR (x 100) and their overall per dataset x solution x k.

    ``source='computed'`` reads the embedding metrics of ``python -m analytics gem-metrics`` (``model``: one
    embedding model, else the one with most stored values); CTR is not an embedding metric, so it always comes
    from the log. AF/AC average over responses that carry an ad; overall = mean of the available metrics.
    """
    if source not in SOURCES:
        raise GemError(f"source must be one of {SOURCES}, got {source!r}")
    if source == "computed" and model is None:  # one model at a time: the one with most stored values
        models = sources(con, benchmark=benchmark)
        models = models[models["source"] == "computed"].sort_values("n", ascending=False)
        model = str(models["model"].iloc[0]) if not models.empty else None
    att = attempts(con, benchmark=benchmark)
    met = query_df(
        con,
        """
        SELECT m.attempt_id, m.name, m.value, m.source, m.model FROM attempt_metrics m
        JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
        WHERE r.benchmark = ? AND m.name IN ('response_flow', 'response_coherence', 'ad_flow', 'ad_coherence',
                                             'injection', 'click')
          AND (m.source = ? OR (m.name = 'click' AND m.source = 'log')) AND (? IS NULL OR m.model = ?
               OR m.source = 'log')""",
        [benchmark, source, model, model],
    )
    cols = list(QUANT)
    if met.empty or att.empty:
        return pd.DataFrame(columns=KEYS + ["solution_label", "n"] + cols + ["overall"])
    met = met.drop_duplicates(["attempt_id", "name"], keep="last")
    wide = met.pivot(index="attempt_id", columns="name", values="value").reset_index()
    df = att[~att["is_baseline"]].merge(wide, on="attempt_id", how="inner")
    for name in QUANT.values():
        if name not in df:
            df[name] = np.nan
    out = df.groupby(KEYS, as_index=False).agg(n=("attempt_id", "count"), **{c: (QUANT[c], "mean") for c in cols})
    out[cols] = out[cols] * 100
    out["overall"] = out[cols].mean(axis=1, skipna=True)
    out.insert(2, "solution_label", [_label(s, k) for s, k in zip(out["solution"], out["k"], strict=True)])
    return out.sort_values(["dataset", "k", "solution"]).reset_index(drop=True)


def default_rater(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> str | None:
    """The judge named on the benchmark's runs, else the LLM rater with the most ratings."""
    runs = query_df(
        con,
        "SELECT judge, count(*) AS n FROM runs WHERE benchmark = ? AND judge IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1",
        [benchmark],
    )
    raters = llm_raters(con, benchmark=benchmark)
    for judge in runs["judge"]:
        if judge in raters:
            return str(judge)
    return raters[0] if raters else None


def llm_raters(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> list[str]:
    """LLM raters of the benchmark, most ratings first."""
    df = query_df(
        con,
        """SELECT g.rater, count(*) AS n FROM ratings g JOIN attempts a USING (attempt_id)
                          JOIN runs r USING (run_id) WHERE r.benchmark = ? AND g.rater_kind = 'llm'
                          GROUP BY 1 ORDER BY 2 DESC, 1""",
        [benchmark],
    )
    return [str(r) for r in df["rater"]]


def ratings(con: duckdb.DuckDBPyConnection, *, benchmark: str, rater_kind: str | None = None) -> pd.DataFrame:
    """GEM dimension scores (0-90) per attempt x rater x dimension.

    A stored ``accuracy`` rating is used as is; else two sub-dimension ratings ``accuracy/<name>`` (0/1/2 or
    bad/moderate/good) are aggregated with :func:`aggregate_levels`.
    """
    df = query_df(
        con,
        """SELECT g.attempt_id, g.rater, g.rater_kind, g.dimension, g.value FROM ratings g
                          JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
                          WHERE r.benchmark = ? AND (? IS NULL OR g.rater_kind = ?)""",
        [benchmark, rater_kind, rater_kind],
    )
    df["dim"] = df["dimension"].str.split("/").str[0]
    df = df[df["dim"].isin(DIMENSIONS)]
    direct = df[df["dimension"] == df["dim"]][["attempt_id", "rater", "rater_kind", "dim", "value"]]
    subs = df[df["dimension"] != df["dim"]]
    if not subs.empty:
        keys = ["attempt_id", "rater", "rater_kind", "dim"]
        subs = subs.sort_values([*keys, "dimension"])
        grouped = subs.groupby(keys)["value"]
        agg = grouped.agg(["first", "last", "count"]).reset_index()
        agg = agg[agg["count"] == 2]
        agg["value"] = [float(aggregate_levels(int(a), int(b))) for a, b in zip(agg["first"], agg["last"], strict=True)]
        agg = agg[keys + ["value"]]
        agg = agg.merge(
            direct[["attempt_id", "rater", "dim"]], how="left", indicator=True, on=["attempt_id", "rater", "dim"]
        )
        direct = pd.concat([direct, agg[agg["_merge"] == "left_only"].drop(columns="_merge")], ignore_index=True)
    return direct.rename(columns={"dim": "dimension"}).reset_index(drop=True)


def qualitative(con: duckdb.DuckDBPyConnection, *, benchmark: str, rater: str | None = None) -> pd.DataFrame:
    """Table 3: mean judge score per dimension and their overall per dataset x solution x k (one rater)."""
    rater = rater or default_rater(con, benchmark=benchmark)
    return qualitative_from(attempts(con, benchmark=benchmark), ratings(con, benchmark=benchmark), rater=rater)


def qualitative_from(att: pd.DataFrame, rat: pd.DataFrame, *, rater: str | None) -> pd.DataFrame:
    """:func:`qualitative` on frames from :func:`attempts` and :func:`ratings`."""
    cols = list(DIMENSIONS)
    empty = pd.DataFrame(columns=KEYS + ["solution_label", "n"] + cols + ["overall"])
    rat = rat[rat["rater"] == rater]
    if rater is None or rat.empty:
        return empty
    wide = rat.pivot_table(index="attempt_id", columns="dimension", values="value", aggfunc="mean").reset_index()
    df = att[~att["is_baseline"]].merge(wide, on="attempt_id")
    for dim in cols:
        if dim not in df:
            df[dim] = np.nan
    out = df.groupby(KEYS, as_index=False).agg(n=("attempt_id", "count"), **{c: (c, "mean") for c in cols})
    out["overall"] = out[cols].mean(axis=1, skipna=True)
    out.insert(2, "solution_label", [_label(s, k) for s, k in zip(out["solution"], out["k"], strict=True)])
    return out.sort_values(["dataset", "k", "solution"]).reset_index(drop=True)


def cost(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Table 6: ITTFT / OTTFT (extra input / output tokens before the response) and 0.5 x ITTFT + OTTFT.

    Extra tokens are the attempt's tokens minus those of the ad-free baseline run (run field
    ``gem_role: "baseline"``) on the same task and sample (else the task's baseline mean). Without a
    baseline run the attempt's tokens count as extra in full (``baseline`` column says which).
    """
    att = attempts(con, benchmark=benchmark)
    base = att[att["is_baseline"]]
    df = att[~att["is_baseline"]].copy()
    if df.empty:
        return pd.DataFrame(columns=KEYS + ["solution_label", "n", "ittft", "ottft", "overall", "baseline"])
    exact = base.groupby(["task_id", "sample"])[["input_tokens", "output_tokens"]].mean()
    by_task = base.groupby("task_id")[["input_tokens", "output_tokens"]].mean()
    for col, short in (("input_tokens", "in"), ("output_tokens", "out")):
        ref = df.set_index(["task_id", "sample"]).index.map(exact[col].to_dict()) if not base.empty else None
        ref = pd.Series(ref, index=df.index, dtype=float) if ref is not None else pd.Series(np.nan, index=df.index)
        ref = ref.fillna(df["task_id"].map(by_task[col]) if not base.empty else np.nan)
        df[f"base_{short}"] = ref
        df[f"extra_{short}"] = df[col] - ref.fillna(0.0)
    out = df.groupby(KEYS, as_index=False).agg(
        n=("attempt_id", "count"),
        ittft=("extra_in", "mean"),
        ottft=("extra_out", "mean"),
        has_base=("base_in", lambda s: bool(s.notna().all())),
    )
    out["overall"] = cost_overall(out["ittft"], out["ottft"])
    out["baseline"] = np.where(out.pop("has_base"), "ad-free run", "none (all tokens counted)")
    out.insert(2, "solution_label", [_label(s, k) for s, k in zip(out["solution"], out["k"], strict=True)])
    return out.sort_values(["dataset", "k", "solution"]).reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# Agreement: judges (Table 4), people (section 4.2)
# ---------------------------------------------------------------------------------------------


def _attempt_overall(rat: pd.DataFrame) -> pd.DataFrame:
    """attempt x rater matrix of the mean over the six dimensions."""
    return rat.groupby(["attempt_id", "rater"])["value"].mean().unstack("rater")


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
    per_attempt = _attempt_overall(rat)
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
    return float(spearmanr(a, b).statistic)


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


# ---------------------------------------------------------------------------------------------
# Everything the page shows, and the JSON report
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GemView:
    """Tables of one GEM benchmark (quantitative from ``source``, qualitative from ``rater``)."""

    benchmark: str
    source: str
    rater: str | None
    raters: tuple[str, ...]
    sources: tuple[str, ...]  # metric sources present ('log', 'computed')
    models: tuple[str, ...]  # embedding models of computed metrics
    quantitative: pd.DataFrame
    qualitative: pd.DataFrame
    cost: pd.DataFrame
    judges: pd.DataFrame
    agreement: pd.DataFrame
    human: HumanAgreement | None
    human_llm: pd.DataFrame


def sources(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Metric sources and models present for the embedding metrics of ``benchmark``."""
    return query_df(
        con,
        """SELECT m.source, coalesce(m.model, '') AS model, count(*) AS n FROM attempt_metrics m
                            JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
                            WHERE r.benchmark = ? AND m.name = 'response_flow' GROUP BY ALL ORDER BY 1, 2""",
        [benchmark],
    )


def view(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    source: str = "log",
    rater: str | None = None,
    model: str | None = None,
) -> GemView:
    """Every table of the GEM page for one benchmark."""
    src = sources(con, benchmark=benchmark)
    rater = rater or default_rater(con, benchmark=benchmark)
    att, rat = attempts(con, benchmark=benchmark), ratings(con, benchmark=benchmark)
    return GemView(
        benchmark,
        source,
        rater,
        tuple(llm_raters(con, benchmark=benchmark)),
        tuple(dict.fromkeys(src["source"])),
        tuple(m for m in src.loc[src["source"] == "computed", "model"]),
        quantitative(con, benchmark=benchmark, source=source, model=model),
        qualitative_from(att, rat, rater=rater),
        cost(con, benchmark=benchmark),
        judges_from(att, rat),
        agreement_from(att, rat),
        human_from(rat, judge=rater),
        human_vs_llm_from(att, rat, judge=rater),
    )


def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 2)


def report(
    con: duckdb.DuckDBPyConnection, *, benchmark: str, source: str = "log", rater: str | None = None
) -> dict[str, Any]:
    """The ``python -m analytics gem --json`` shape: one row per dataset x solution (scores 0-100)."""
    v = view(con, benchmark=benchmark, source=source, rater=rater)
    frames = {"quantitative": v.quantitative, "qualitative": v.qualitative, "cost": v.cost}
    keys = sorted(
        {(r.dataset, r.solution, int(r.k)) for f in frames.values() for r in f.itertuples()},
        key=lambda t: (t[2], t[0], t[1]),
    )

    def pick(df: pd.DataFrame, key: tuple[str, str, int], cols: dict[str, str]) -> dict[str, float | None] | None:
        hit = df[(df["dataset"] == key[0]) & (df["solution"] == key[1]) & (df["k"] == key[2])]
        return None if hit.empty else {out: _num(hit.iloc[0][col]) for out, col in cols.items()}

    rows = []
    for key in keys:
        rows.append(
            {
                "benchmark": benchmark,
                "dataset": key[0],
                "solution": _label(key[1], key[2]),
                "k": key[2],
                "qualitative": pick(v.qualitative, key, {d: d for d in DIMENSIONS} | {"overall": "overall"}),
                "quantitative": pick(v.quantitative, key, {c: c for c in QUANT} | {"overall": "overall"}),
                "cost": pick(v.cost, key, {"ittft": "ittft", "ottft": "ottft", "overall": "overall"}),
            }
        )
    return {"benchmark": benchmark, "source": source, "rater": v.rater, "rows": rows}


# ---------------------------------------------------------------------------------------------
# Responses (viewer) and computing embedding metrics
# ---------------------------------------------------------------------------------------------

RESPONSES_SQL = """
SELECT a.attempt_id, a.run_id, r.agent AS solution, coalesce(t.category, 'all') AS dataset, a.task_id, a.sample,
       coalesce(TRY_CAST(json_extract_string(r.extra, '$.ads_per_response') AS INTEGER), 1) AS k,
       t.query, a.answer, coalesce(json_extract(a.extra, '$.ads'), json_extract(a.extra, '$.ad'))::VARCHAR AS ads
FROM attempts a JOIN runs r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
WHERE r.benchmark = ? AND (? IS NULL OR coalesce(t.category, 'all') = ?) AND (? IS NULL OR r.agent = ?)
ORDER BY a.task_id, a.sample, a.run_id
"""


def responses(
    con: duckdb.DuckDBPyConnection, *, benchmark: str, dataset: str | None = None, solution: str | None = None
) -> pd.DataFrame:
    """Attempts with their query, response text and ads (JSON text)."""
    return query_df(con, RESPONSES_SQL, [benchmark, dataset, dataset, solution, solution])


def sentences_frame(answer: str | None, ads: Any) -> pd.DataFrame:
    """One row per sentence with ``is_ad`` (for the viewer: text, never rendered markup)."""
    sents = split_sentences(answer)
    mask = ad_mask(sents, parse_ads(ads))
    return pd.DataFrame({"n": range(1, len(sents) + 1), "is_ad": mask, "sentence": sents})


def marked_text(answer: str | None, ads: Any) -> str:
    """The response as plain text, one sentence a line, ad sentences prefixed with ``>> AD | ``."""
    df = sentences_frame(answer, ads)
    return "\n".join((AD_PREFIX if ad else TEXT_PREFIX) + s for ad, s in zip(df["is_ad"], df["sentence"], strict=True))


def compute_metrics(
    rows: pd.DataFrame,
    embed: Callable[[list[str]], np.ndarray],
    *,
    progress: Callable[[int, int], None] | None = None,
    chunk: int = 256,
) -> pd.DataFrame:
    """Embedding metrics for each response of ``rows`` (columns attempt_id, answer, ads).

    ``embed`` maps sentences to vectors (cached and batched by the caller); responses are embedded in
    chunks so ``progress(done, total)`` can report. Returns long rows (attempt_id, name, value), NaNs dropped.
    """
    out: list[tuple[int, str, float]] = []
    total = len(rows)
    for start in range(0, total, chunk):
        part = rows.iloc[start : start + chunk]
        split = [split_sentences(a) for a in part["answer"]]
        flat = [s for sents in split for s in sents]
        vecs = embed(flat) if flat else np.zeros((0, 1))
        pos = 0
        for (attempt_id, ads), sents in zip(part[["attempt_id", "ads"]].itertuples(index=False), split, strict=True):
            emb = vecs[pos : pos + len(sents)]
            pos += len(sents)
            if not sents:
                continue
            for name, value in response_metrics(emb, ad_mask(sents, parse_ads(ads))).items():
                if not math.isnan(value):
                    out.append((int(attempt_id), name, float(value)))
        if progress is not None:
            progress(min(start + chunk, total), total)
    return pd.DataFrame(out, columns=["attempt_id", "name", "value"])


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------


def quality_cost(v: GemView) -> pd.DataFrame:
    """Per dataset x solution (k = 1): qualitative and quantitative overall against the cost overall."""
    keys = ["dataset", "solution", "k"]
    q = v.qualitative[keys + ["overall"]].rename(columns={"overall": "qualitative"})
    n = v.quantitative[keys + ["overall"]].rename(columns={"overall": "quantitative"})
    c = v.cost[keys + ["overall", "ittft", "ottft"]].rename(columns={"overall": "cost"})
    df = c.merge(q, on=keys, how="left").merge(n, on=keys, how="left")
    return df[df["k"] == 1].reset_index(drop=True)


def fig_quality_cost(df: pd.DataFrame, *, quality: str = "qualitative") -> go.Figure:
    """Quality (0-100) against cost (0.5 x ITTFT + OTTFT tokens), one marker per solution, one symbol per dataset."""
    fig = go.Figure()
    symbols = ["circle", "square", "diamond", "triangle-up", "x", "star"]
    for i, (dataset, part) in enumerate(df.groupby("dataset", sort=True)):
        fig.add_trace(
            go.Scatter(
                x=part["cost"],
                y=part[quality],
                mode="markers+text",
                name=str(dataset),
                text=part["solution"],
                textposition="top center",
                marker={"size": 12, "symbol": symbols[i % len(symbols)]},
                customdata=np.stack([part["dataset"], part["solution"]], axis=1),
                hovertemplate="%{customdata[1]} on %{customdata[0]}<br>cost %{x:.0f} tokens<br>"
                + quality
                + " %{y:.2f}<extra></extra>",
            )
        )
    fig.update_layout(
        xaxis_title="cost: 0.5 x ITTFT + OTTFT (extra tokens)",
        yaxis_title=f"{quality} overall (0-100)",
        legend_title="dataset",
        margin={"t": 40},
    )
    return fig


def density(v: GemView) -> pd.DataFrame:
    """Scores by k (ads per response) for solutions run with several k on a dataset (Figure 3)."""
    q = v.qualitative
    multi = q.groupby(["dataset", "solution"])["k"].nunique()
    multi = multi[multi > 1].reset_index()[["dataset", "solution"]]
    if multi.empty:
        return pd.DataFrame(columns=["dataset", "solution", "k", *DIMENSIONS, "overall"])
    df = q.merge(multi, on=["dataset", "solution"])
    return df[["dataset", "solution", "k", *DIMENSIONS, "overall"]].sort_values(["dataset", "solution", "k"])


def fig_density(df: pd.DataFrame) -> go.Figure:
    """One line per judge dimension against k."""
    fig = go.Figure()
    for dim in (*DIMENSIONS, "overall"):
        fig.add_trace(
            go.Scatter(
                x=df["k"],
                y=df[dim],
                mode="lines+markers",
                name=dim,
                customdata=np.stack([df["dataset"], df["solution"]], axis=1),
                line={"width": 4 if dim == "overall" else 2},
            )
        )
    title = ", ".join(sorted({f"{s} on {d}" for d, s in zip(df["dataset"], df["solution"], strict=True)}))
    fig.update_layout(
        title=f"Quality-density trade-off: {title}",
        xaxis_title="k (ads per response)",
        yaxis_title="judge score (0-100)",
        xaxis={"dtick": 1},
        margin={"t": 50},
    )
    return fig


def fig_human_llm(df: pd.DataFrame) -> go.Figure:
    """Figure 4: people and the judge per dimension and solution (grouped bars)."""
    fig = go.Figure()
    for solution, part in df.groupby("solution", sort=True):
        for who in ("human", "llm"):
            fig.add_trace(
                go.Bar(
                    x=part["dimension"],
                    y=part[who],
                    name=f"{solution} ({who})",
                    customdata=part[["solution"]].to_numpy(),
                )
            )
    fig.update_layout(barmode="group", yaxis_title="mean score (0-90)", margin={"t": 30})
    return fig


DEFINITIONS_MD = """
- **RF** response flow: mean cosine similarity of consecutive sentences. **RC** response coherence: mean
  similarity of each sentence to the mean sentence embedding. **AF** ad flow: exp(-|sim(s_i, s_d) - sim(s_d,
  s_i+1)|) around each ad. **AC** ad coherence: similarity of ad sentences to the mean of the non-ad sentences.
  **IR** injection rate: share of responses with an ad. **CTR**: share of ad responses clicked (from the log).
  All x 100; AF/AC over responses with an ad; overall = mean of the available metrics.
- Judge dimensions score 0/30/60/90 from two bad/moderate/good ratings; overall = mean of the six.
- **ITTFT / OTTFT**: extra input / output tokens before the first token of the final response, against the
  ad-free baseline run; overall = 0.5 x ITTFT + OTTFT.
- See docs/gem.md for the data conventions.
"""


# ---------------------------------------------------------------------------------------------
# CLI: python -m analytics gem
# ---------------------------------------------------------------------------------------------


def chosen_benchmarks(con: duckdb.DuckDBPyConnection, benchmark: str | None) -> list[str]:
    """``[benchmark]`` when it holds GEM-style data, every GEM benchmark when None; GemError otherwise."""
    found = gem_benchmarks(con)
    if benchmark and benchmark not in found:
        raise GemError(
            f"benchmark {benchmark!r} holds no GEM-style data (GEM benchmarks: {', '.join(found) or 'none'})"
        )
    names = [benchmark] if benchmark else found
    if not names:
        raise GemError("no GEM-style data in the database (see docs/gem.md)")
    return names


def text_report(rep: dict[str, Any]) -> str:
    """Tables 2, 3 and 6 of one benchmark as text: qualitative, quantitative and cost overall per solution."""
    lines = [
        f"== {rep['benchmark']} (quantitative: {rep['source']}, judge: {rep['rater']})",
        f"  {'dataset':<10} {'solution':<14} {'qual':>6} {'quant':>6} {'ITTFT':>8} {'OTTFT':>8} {'cost':>8}",
    ]
    for r in rep["rows"]:
        q, n, c = r["qualitative"] or {}, r["quantitative"] or {}, r["cost"] or {}
        vals = [q.get("overall"), n.get("overall"), c.get("ittft"), c.get("ottft"), c.get("overall")]
        cells = " ".join(f"{'-' if v is None else f'{v:.2f}':>{w}}" for v, w in zip(vals, (6, 6, 8, 8, 8), strict=True))
        lines.append(f"  {r['dataset']:<10} {r['solution']:<14} {cells}")
    return "\n".join(lines)
