"""review, reported: kappas and agreement as sentences, the queue and the corrected figures as people read
them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analytics import formatting as fmt
from analytics.review.compute import MIN_REVIEWS


def kappa_text(kappa: float, lo: float, hi: float, n: int, *, minimum: int = MIN_REVIEWS) -> str:
    """A kappa as a person reads it: value, 95% interval and n, or what is missing instead of NaN."""
    if n < minimum:
        return f"needs at least {minimum} reviews (has {n})"
    if not np.isfinite(kappa):
        return f"undefined: every verdict the same (n = {n})"
    ci = f"95% CI {lo:.2f} to {hi:.2f}" if np.isfinite(lo) else "no interval"
    return f"{kappa:.2f} ({ci}, n = {n})"


def trust_sentence(verdicts: pd.DataFrame, n_reviewed: int) -> str:
    """One plain sentence on how far the judges can be trusted (for the Errors page), from ``agreement``."""
    judges = verdicts[verdicts["rater"].str.contains("judge")] if not verdicts.empty else verdicts
    if n_reviewed == 0:
        return (
            "No attempt has a human review yet, so nobody has checked the judge: read its labels as unverified. "
            "Review a calibration sample on the Review page to measure it."
        )
    if judges.empty:
        return f"{fmt.plural(n_reviewed, 'attempt')} reviewed by humans, but no judge verdict covers them yet."
    parts = []
    for r in judges.itertuples():
        said = kappa_text(r.kappa, r.kappa_lo, r.kappa_hi, int(r.n))
        band = f" — {_kappa_band(r.kappa)}" if int(r.n) >= MIN_REVIEWS and np.isfinite(r.kappa) else ""
        parts.append(f"{r.rater}: kappa {said}{band}")
    return "Judge agreement with human reviewers on the verdict: " + "; ".join(parts) + "."


def _kappa_band(kappa: float) -> str:
    """Landis & Koch's bands, the usual reading of kappa."""
    if not np.isfinite(kappa):
        return "undefined (every verdict the same)"
    for bound, name in ((0.8, "almost perfect"), (0.6, "substantial"), (0.4, "moderate"), (0.2, "fair"), (0, "slight")):
        if kappa > bound:
            return name
    return "no better than chance"


def _verdict(value: Any) -> str:
    return fmt.MISSING if fmt.text(value) == fmt.MISSING else "correct" if bool(value) else "incorrect"


def _passed(value: Any) -> str:
    return fmt.MISSING if fmt.text(value) == fmt.MISSING else "✓" if bool(value) else "✗"


def raters_line(item: Mapping[str, Any]) -> str:
    """What the log and the judges say of one queue item, in one line: ``passed ✗ · log codes PE, TOOL · log judge
    incorrect · Runlens judge –``."""
    return (
        f"passed {_passed(item.get('passed'))} · log codes {fmt.text(item.get('log_codes'))} · "
        f"log judge {_verdict(item.get('log_judge_correct'))} · Runlens judge {_verdict(item.get('runlens_judge_correct'))}"
    )


def queue_table(items: pd.DataFrame) -> pd.DataFrame:
    """``review_queue`` as people read it: who, which task, the outcome, what each rater said (``–`` where a rater
    said nothing), how many reviews; the raw frame stays the download."""
    text = fmt.text
    return pd.DataFrame(
        {
            "Run": items["run_id"].astype(str),
            "Agent": items["agent"].map(text),
            "Task": items["task_id"].astype(str),
            "Sample": items["sample"].astype(int),
            "Passed": items["passed"].map(_passed),
            "Log judge": items["log_judge_correct"].map(_verdict),
            "Runlens judge": items["runlens_judge_correct"].map(_verdict),
            "Log codes": items["log_codes"].map(text),
            "Judge codes": items["judge_codes"].map(text),
            "Reviews": items["n_reviews"].astype(int),
            "Reviewed by you": items["is_reviewed_by_me"].map(lambda v: "yes" if bool(v) else ""),
        }
    )


def corrections_table(corr: pd.DataFrame) -> pd.DataFrame:
    """``judge_corrections`` as people read it: percentages, the interval as text, the note where no estimate."""

    def pct(v: float) -> str:
        return fmt.MISSING if not np.isfinite(v) else f"{100 * v:.1f}%"

    def interval(lo: float, hi: float) -> str:
        return fmt.MISSING if not np.isfinite(lo) else f"{100 * max(lo, 0):.1f}% to {100 * min(hi, 1):.1f}%"

    return pd.DataFrame(
        {
            "Figure": corr["quantity"],
            "Judge says": corr["judge"].map(pct),
            "Corrected by reviews": [note or pct(e) for e, note in zip(corr["estimate"], corr["note"], strict=True)],
            "95% interval": [interval(lo, hi) for lo, hi in zip(corr["lo"], corr["hi"], strict=True)],
            "Reviews only": [
                f"{pct(v)} ({interval(lo, hi)})" if np.isfinite(lo) else fmt.MISSING
                for v, lo, hi in zip(
                    corr["reviews_only"], corr["reviews_only_lo"], corr["reviews_only_hi"], strict=True
                )
            ],
            "Reviewed (calibration sample)": corr["n_reviewed"].astype(int),
            "Attempts": corr["n_attempts"].astype(int),
        }
    )
