"""GEM-Bench tables from the rows ``load`` reads: quantitative (Table 2), qualitative (Table 3), cost (Table 6), the
default rater and the ratings per dimension; a response as marked text; embedding metrics computed from responses
(``compute_metrics``; ``jobs/gem_metrics.py`` stores them)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics.gem.formulas import (
    AD_PREFIX,
    DIMENSIONS,
    QUANT,
    SOURCES,
    TEXT_PREFIX,
    GemError,
    ad_mask,
    aggregate_levels,
    cost_overall,
    parse_ads,
    response_metrics,
    split_sentences,
)
from analytics.gem.load import attempts, llm_raters, metric_rows, rating_rows, run_judges, sources


def rater_label(solution: str, k: int) -> str:
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
    met = metric_rows(con, benchmark=benchmark, source=source, model=model)
    cols = list(QUANT)
    if source == "computed":  # CTR alone (from the log) is not a computed row: its "overall" would be CTR
        met = met[met["attempt_id"].isin(met.loc[met["source"] == "computed", "attempt_id"])]
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
    out.insert(2, "solution_label", [rater_label(s, k) for s, k in zip(out["solution"], out["k"], strict=True)])
    return out.sort_values(["dataset", "k", "solution"]).reset_index(drop=True)


def default_rater(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> str | None:
    """The judge named on the benchmark's runs, else the LLM rater with the most ratings."""
    runs = run_judges(con, benchmark=benchmark)
    raters = llm_raters(con, benchmark=benchmark)
    for judge in runs["judge"]:
        if judge in raters:
            return str(judge)
    return raters[0] if raters else None


def ratings(con: duckdb.DuckDBPyConnection, *, benchmark: str, rater_kind: str | None = None) -> pd.DataFrame:
    """GEM dimension scores (0-90) per attempt x rater x dimension.

    A stored ``accuracy`` rating is used as is; else two sub-dimension ratings ``accuracy/<name>`` (0/1/2 or
    bad/moderate/good) are aggregated with :func:`aggregate_levels`.
    """
    df = rating_rows(con, benchmark=benchmark, rater_kind=rater_kind)
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
    out.insert(2, "solution_label", [rater_label(s, k) for s, k in zip(out["solution"], out["k"], strict=True)])
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
    out.insert(2, "solution_label", [rater_label(s, k) for s, k in zip(out["solution"], out["k"], strict=True)])
    return out.sort_values(["dataset", "k", "solution"]).reset_index(drop=True)


def attempt_overall(rat: pd.DataFrame) -> pd.DataFrame:
    """attempt x rater matrix of the mean over the six dimensions."""
    return rat.groupby(["attempt_id", "rater"])["value"].mean().unstack("rater")


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
