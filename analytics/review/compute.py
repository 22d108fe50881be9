"""review, computed: Cohen's kappa with its bootstrap interval, confusion counts, per-code precision and recall,
the human consensus, agreement of every rater with the humans, Fleiss' kappa, and the judge's figures corrected by
the calibration sample (pure: frames in, frames and dataclasses out)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

QUEUES = ("failed", "disagreements", "calibration")
MIN_REVIEWS = 10  # below this many reviewed attempts an agreement or a corrected figure is not reported
CALIBRATION_SEED = 0  # the sample the corrected judge figures use


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Cohen's kappa of two raters' labels (any hashable categories); NaN when chance agreement is 1 or n = 0."""
    x, y = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    if len(x) != len(y):
        raise ValueError("the two raters labelled different numbers of items")
    if len(x) == 0:
        return float("nan")
    cats = sorted(set(x) | set(y), key=str)
    po = float(np.mean(x == y))
    pe = sum(float(np.mean(x == c)) * float(np.mean(y == c)) for c in cats)
    return float("nan") if pe >= 1.0 else (po - pe) / (1.0 - pe)


def _binary_kappas(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kappa of each row of two boolean matrices (rows = bootstrap resamples)."""
    po = (x == y).mean(axis=1)
    px, py = x.mean(axis=1), y.mean(axis=1)
    pe = px * py + (1 - px) * (1 - py)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1.0, (po - pe) / (1.0 - pe), np.nan)


def kappa_interval(
    a: Sequence[bool], b: Sequence[bool], *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of Cohen's kappa for two binary raters (resampling items, seeded).

    Resamples where kappa is undefined (every label the same) are left out; (NaN, NaN) below 2 items.
    """
    x, y = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if len(x) < 2:
        return float("nan"), float("nan")
    idx = np.random.default_rng(seed).integers(0, len(x), size=(n_boot, len(x)))
    ks = _binary_kappas(x[idx], y[idx])
    ks = ks[np.isfinite(ks)]
    if ks.size == 0:
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(ks, [tail, 100 - tail])
    return float(lo), float(hi)


def confusion(rater: Sequence[bool], human: Sequence[bool]) -> dict[str, int]:
    """Counts of (rater, human) verdict pairs: ``tp`` both correct, ``tn`` both incorrect, ``fp`` the rater says
    correct where the human says incorrect, ``fn`` the reverse."""
    r, h = np.asarray(rater, dtype=bool), np.asarray(human, dtype=bool)
    return {
        "tp": int((r & h).sum()),
        "tn": int((~r & ~h).sum()),
        "fp": int((r & ~h).sum()),
        "fn": int((~r & h).sum()),
    }


CODE_COLUMNS = ["code", "tp", "fp", "fn", "precision", "recall", "agreement", "kappa", "kappa_lo", "kappa_hi", "n"]


def code_scores(
    rater: Sequence[set[str]], human: Sequence[set[str]], *, n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Per code: TP, FP, FN, precision and recall of the rater's code sets against the humans' (same items), and
    the agreement on the code's presence with Cohen's kappa and its bootstrap interval."""
    codes = sorted(set().union(*rater, *human)) if len(rater) else []
    rows = []
    for code in codes:
        r = np.array([code in x for x in rater], dtype=bool)
        h = np.array([code in x for x in human], dtype=bool)
        tp, fp, fn = int((r & h).sum()), int((r & ~h).sum()), int((~r & h).sum())
        lo, hi = kappa_interval(r.tolist(), h.tolist(), n_boot=n_boot, seed=seed)
        rows.append(
            {
                "code": code,
                "tp": tp,
                "fp": fp,
                "fn": fn,
                "precision": tp / (tp + fp) if tp + fp else float("nan"),
                "recall": tp / (tp + fn) if tp + fn else float("nan"),
                "agreement": float(np.mean(r == h)),
                "kappa": cohen_kappa(r.tolist(), h.tolist()),
                "kappa_lo": lo,
                "kappa_hi": hi,
                "n": len(rater),
            }
        )
    return pd.DataFrame(rows, columns=CODE_COLUMNS)


def human_consensus(reviews: pd.DataFrame) -> pd.DataFrame:
    """Per attempt: the majority verdict (None on a tie), the codes at least half the reviewers gave, and n."""
    cols = ["attempt_id", "run_id", "task_id", "sample", "human_correct", "human_codes", "n_reviewers"]
    if reviews.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, g in reviews.groupby(["attempt_id", "run_id", "task_id", "sample"], sort=True):
        n = len(g)
        n_correct = int(g["is_correct"].sum())
        verdict = None if 2 * n_correct == n else bool(2 * n_correct > n)
        counts: dict[str, int] = {}
        for codes in g["codes"]:
            for c in set(codes):
                counts[c] = counts.get(c, 0) + 1
        rows.append((*key, verdict, {c for c, k in counts.items() if 2 * k >= n}, n))
    return pd.DataFrame(rows, columns=cols)


@dataclass(frozen=True)
class Agreement:
    """How far each rater agrees with the humans, and the attempts where they disagree."""

    verdicts: pd.DataFrame  # rater, n, agreement, kappa, kappa_lo, kappa_hi, tp, tn, fp, fn
    codes: pd.DataFrame  # rater, code, tp, fp, fn, precision, recall, n
    reviewers: pd.DataFrame  # reviewer_a, reviewer_b, n, agreement, kappa, kappa_lo, kappa_hi
    disagreements: pd.DataFrame  # rater, run_id, task_id, sample, rater_correct, human_correct, ...
    n_reviewed: int
    fleiss: dict[str, float] | None = None  # kappa, kappa_lo, kappa_hi, n_attempts, n_reviewers (2+ reviewers)


@dataclass(frozen=True)
class Trust:
    """What the Errors and Review pages show of the judge's trustworthiness, from one read of the current reviews:
    the raters' agreement with the humans, the judge's corrected figures and the calibration sample (the reviewed
    prefix of the calibration queue, empty without a review; ``gap`` the attempt that stops it)."""

    agreement: Agreement
    corrections: pd.DataFrame
    sample: list[int]
    gap: int | None


VERDICT_COLUMNS = ["rater", "n", "agreement", "kappa", "kappa_lo", "kappa_hi", "tp", "tn", "fp", "fn"]


def _verdict_rows(pairs: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    rows = []
    for rater, g in pairs.groupby("rater", sort=True):
        r, h = g["is_correct"].astype(bool).to_numpy(), g["human_correct"].astype(bool).to_numpy()
        lo, hi = kappa_interval(r, h, n_boot=n_boot, seed=seed)
        rows.append(
            {
                "rater": rater,
                "n": len(g),
                "agreement": float(np.mean(r == h)),
                "kappa": cohen_kappa(r.tolist(), h.tolist()),
                "kappa_lo": lo,
                "kappa_hi": hi,
                **confusion(r, h),
            }
        )
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def _reviewer_rows(reviews: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    cols = ["reviewer_a", "reviewer_b", "n", "agreement", "kappa", "kappa_lo", "kappa_hi"]
    wide = reviews.pivot_table(index="attempt_id", columns="reviewer", values="is_correct", aggfunc="first")
    rows = []
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        both = wide[[a, b]].dropna()
        if both.empty:
            continue
        x, y = both[a].astype(bool).to_numpy(), both[b].astype(bool).to_numpy()
        lo, hi = kappa_interval(x, y, n_boot=n_boot, seed=seed)
        rows.append((a, b, len(both), float(np.mean(x == y)), cohen_kappa(x.tolist(), y.tolist()), lo, hi))
    return pd.DataFrame(rows, columns=cols)


def agreement_of(
    reviews: pd.DataFrame, humans: pd.DataFrame, raters: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0
) -> Agreement:
    """``agreement`` from its loaded frames: ``current_reviews``, their ``human_consensus`` and the ``rater_labels``
    of the attempts humans reviewed."""
    pairs = raters.merge(humans, on="attempt_id")
    verdict_pairs = pairs[pairs["is_correct"].notna() & pairs["human_correct"].notna()]
    code_pairs = pairs[pairs["codes"].notna()]
    code_frames = [
        code_scores(list(g["codes"]), list(g["human_codes"]), n_boot=n_boot, seed=seed).assign(rater=rater)
        for rater, g in code_pairs.groupby("rater", sort=True)
    ]
    codes = pd.concat(code_frames, ignore_index=True) if code_frames else code_scores([], [])
    fleiss = fleiss_summary(reviews, n_boot=n_boot, seed=seed)
    dis = verdict_pairs[verdict_pairs["is_correct"].astype(bool) != verdict_pairs["human_correct"].astype(bool)]
    dis = dis.rename(columns={"is_correct": "rater_correct"})[
        ["rater", "run_id", "task_id", "sample", "attempt_id", "rater_correct", "human_correct", "n_reviewers"]
    ]
    return Agreement(
        verdicts=_verdict_rows(verdict_pairs, n_boot=n_boot, seed=seed),
        codes=codes.assign(rater=codes.get("rater", pd.Series(dtype=str)))[["rater", *CODE_COLUMNS]],
        reviewers=_reviewer_rows(reviews, n_boot=n_boot, seed=seed),
        disagreements=dis.reset_index(drop=True),
        n_reviewed=len(humans),
        fleiss=fleiss,
    )


MIN_KAPPA_N = 2  # kappa compares agreement with chance: one reviewed attempt cannot show either


def fleiss_summary(reviews: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0) -> dict[str, float] | None:
    """Fleiss' kappa of every reviewer's verdicts on the attempts two or more reviewed, with a bootstrap interval
    over those attempts (None when no attempt has two reviewers)."""
    from analytics.ppi import bootstrap_interval, fleiss_kappa

    if reviews.empty:
        return None
    g = reviews.groupby("attempt_id")["is_correct"].agg(["sum", "count"])
    g = g[g["count"] >= 2]
    if g.empty:
        return None
    table = np.column_stack([g["sum"].to_numpy(float), (g["count"] - g["sum"]).to_numpy(float)])
    lo, hi = bootstrap_interval(lambda ix: fleiss_kappa(table[ix]), len(table), n_boot=min(n_boot, 1000), seed=seed)
    return {
        "kappa": fleiss_kappa(table),
        "kappa_lo": lo,
        "kappa_hi": hi,
        "n_attempts": len(table),
        "n_reviewers": int(reviews[reviews["attempt_id"].isin(g.index)]["reviewer"].nunique()),
    }


CORRECTION_COLUMNS = [
    "quantity", "code", "judge", "estimate", "lo", "hi", "reviews_only", "reviews_only_lo", "reviews_only_hi",
    "lam", "n_reviewed", "n_attempts", "note",
]  # fmt: skip


def needs_reviews(n: int, *, minimum: int = MIN_REVIEWS) -> str:
    """What a figure waiting for reviews says instead of NaN."""
    return f"needs at least {minimum} reviews (has {n})"  # of the calibration sample, as the page says above


def corrections_of(preds: pd.DataFrame, source: str, humans: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """``judge_corrections`` from its loaded frames: ``judge_predictions`` (and the code source it names) and the
    ``human_consensus`` of the calibration sample's attempts."""
    long = preds[["attempt_id", "judge_codes"]].explode("judge_codes").dropna()
    return corrections_from(
        preds[["attempt_id", "judge_correct"]],
        pd.DataFrame({"attempt_id": long["attempt_id"].to_numpy(), "code": long["judge_codes"].to_numpy()}),
        source,
        humans,
        level=level,
    )


def corrections_from(
    verdicts: pd.DataFrame, codes: pd.DataFrame, source: str, humans: pd.DataFrame, *, level: float = 0.95
) -> pd.DataFrame:
    """``corrections_of`` with the judge's predictions as two frames: one row per attempt of the view
    (``attempt_id`` ascending, ``judge_correct`` True/False/None) and one per (``attempt_id``, ``code``) the judge
    (or the log, per ``source``) gives. Each code's per-attempt flags are one vectorised membership test over the
    view's attempts, not a Python call per attempt."""
    from analytics.ppi import ppi_mean

    humans = humans.set_index("attempt_id")
    rows = []

    def add(quantity: str, code: str | None, f: pd.Series, y: pd.Series) -> None:
        labelled = f.index.intersection(y.index)
        rest = f.index.difference(labelled)
        est = ppi_mean(y.loc[labelled].astype(float), f.loc[labelled].astype(float), f.loc[rest].astype(float),
                       level=level)  # fmt: skip
        note = needs_reviews(len(labelled)) if not np.isfinite(est.estimate) else ""
        rows.append(
            {"quantity": quantity, "code": code, "judge": est.judge, "estimate": est.estimate, "lo": est.lo,
             "hi": est.hi, "reviews_only": est.classical, "reviews_only_lo": est.classical_lo,
             "reviews_only_hi": est.classical_hi, "lam": est.lam, "n_reviewed": len(labelled),
             "n_attempts": len(f), "note": note}
        )  # fmt: skip

    judged = verdicts.dropna(subset=["judge_correct"]).set_index("attempt_id")["judge_correct"]
    human_ok = humans["human_correct"].dropna()
    if len(judged):
        add("judged pass rate", None, judged, human_ok)
    ids = verdicts["attempt_id"].to_numpy()
    found = sorted(set(codes["code"]).union(*humans["human_codes"])) if len(verdicts) else []
    for code in found:
        f = pd.Series(np.isin(ids, codes.loc[codes["code"] == code, "attempt_id"].to_numpy()), index=ids)
        f.index.name = "attempt_id"
        y = humans["human_codes"].map(lambda cs, c=code: c in cs)
        add(f"share with {code} ({source})", code, f, y)
    return pd.DataFrame(rows, columns=CORRECTION_COLUMNS)


@dataclass(frozen=True)
class JudgeTotals:
    """The view's attempts, those with a judge's verdict and those the judge calls correct (migration 009's
    ``run_judge_counts`` summed over the view's runs)."""

    n_attempts: int
    n_judged: int
    n_judged_correct: int


def corrections_from_counts(
    totals: JudgeTotals,
    code_counts: pd.DataFrame,
    labelled: pd.DataFrame,
    source: str,
    humans: pd.DataFrame,
    *,
    level: float = 0.95,
) -> pd.DataFrame:
    """``corrections_from`` with the attempts nobody reviewed given by their counts: ``totals``, ``code_counts``
    (``code``, ``n_attempts``: the view's attempts carrying each code from ``source``) and ``labelled`` (the
    reviewed attempts' ``attempt_id`` ascending, ``judge_correct``, ``judge_codes`` as sets). Every prediction is
    0 or 1, so the unlabelled ones enter PPI++ through their count and their count of ones
    (``analytics.ppi.ppi_mean_binary``); the figures equal ``corrections_from``'s up to rounding."""
    from analytics.ppi import ppi_mean_binary

    humans = humans.set_index("attempt_id")
    rows = []

    def add(quantity: str, code: str | None, f: pd.Series, y: pd.Series, n_total: int, n_true: int) -> None:
        lab = f.index.intersection(y.index)
        fl = f.loc[lab].astype(float)
        est = ppi_mean_binary(y.loc[lab].astype(float), fl, n_total - len(lab), n_true - int(fl.sum()), level=level)
        note = needs_reviews(len(lab)) if not np.isfinite(est.estimate) else ""
        rows.append(
            {"quantity": quantity, "code": code, "judge": est.judge, "estimate": est.estimate, "lo": est.lo,
             "hi": est.hi, "reviews_only": est.classical, "reviews_only_lo": est.classical_lo,
             "reviews_only_hi": est.classical_hi, "lam": est.lam, "n_reviewed": len(lab),
             "n_attempts": n_total, "note": note}
        )  # fmt: skip

    frame = labelled.set_index("attempt_id")
    judged = frame["judge_correct"].dropna()
    if totals.n_judged:
        add(
            "judged pass rate", None, judged, humans["human_correct"].dropna(), totals.n_judged, totals.n_judged_correct
        )
    per_code = dict(zip(code_counts["code"], code_counts["n_attempts"].astype(int), strict=True))
    found = sorted(set(per_code).union(*humans["human_codes"])) if totals.n_attempts else []
    for code in found:
        f = frame["judge_codes"].map(lambda cs, c=code: c in cs)
        y = humans["human_codes"].map(lambda cs, c=code: c in cs)
        add(f"share with {code} ({source})", code, f, y, totals.n_attempts, per_code.get(code, 0))
    return pd.DataFrame(rows, columns=CORRECTION_COLUMNS)
