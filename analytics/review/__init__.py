"""review: human reviews of attempts, the review queue, and how far the judge (and the log's labels) agree with
humans.

Definitions (docs/failure_analysis.md):
    * a **review** is (reviewer, verdict ``correct``/``incorrect``, error codes, note, time, source ``human``),
      stored append-only in ``reviews``; a reviewer's newest review of an attempt counts (view ``v_reviews``);
    * the **human verdict** of an attempt is the majority of its current reviews (ties count as no verdict); the
      **human codes** are the codes at least half of its reviewers gave;
    * **raters** compared with humans: ``log score`` (the log's ``passed``), ``log judge <model>`` (the log's
      ``judge.result_correct``), ``judge <model> · <prompt version>`` (Runlens' LLM judge, verdicts and codes),
      ``log labels`` and ``rules`` (codes only);
    * **Cohen's kappa** on the verdicts, with a seeded percentile bootstrap interval over attempts;
      **confusion** counts; per code **precision** = TP / (TP + FP), **recall** = TP / (TP + FN) over the
      attempts humans reviewed;
    * **inter-reviewer** kappa over pairs of reviewers who reviewed the same attempts.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import formatting as fmt
from store import query_df, run_filter_params, with_run_filter

QUEUES = ("failed", "disagreements", "calibration")
MIN_REVIEWS = 10  # below this many reviewed attempts an agreement or a corrected figure is not reported
CALIBRATION_SEED = 0  # the sample the corrected judge figures use
# The judge's predicted code of an attempt (the alphabetically first code from the judge, else from the log's
# labels, else 'none'): with the run, the stratum of the calibration sample.
PREDICTED_CODE_SQL = """
    SELECT attempt_id, coalesce(min(code) FILTER (WHERE source = 'judge'), min(code)) AS predicted_code
    FROM error_labels GROUP BY attempt_id
"""
# Stratified random order: within each (run, predicted code) stratum attempts are ranked by a seeded hash, and the
# queue goes by rank / stratum size, so any prefix of it takes each stratum in proportion to its size (every
# attempt equally likely: the reviews of a prefix are a self-weighting random sample of the attempts).
CALIBRATION_ORDER = (
    "(row_number() OVER (PARTITION BY a.run_id, coalesce(pc.predicted_code, 'none') "
    "ORDER BY hash(a.attempt_id, $seed)) - 0.5) / count(*) OVER (PARTITION BY a.run_id, "
    "coalesce(pc.predicted_code, 'none')), hash(a.attempt_id, $seed)"
)


# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------


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


def kappa_text(kappa: float, lo: float, hi: float, n: int, *, minimum: int = MIN_REVIEWS) -> str:
    """A kappa as a person reads it: value, 95% interval and n, or what is missing instead of NaN."""
    if n < minimum:
        return f"needs at least {minimum} reviews (has {n})"
    if not np.isfinite(kappa):
        return f"undefined: every verdict the same (n = {n})"
    ci = f"95% CI {lo:.2f} to {hi:.2f}" if np.isfinite(lo) else "no interval"
    return f"{kappa:.2f} ({ci}, n = {n})"


# ---------------------------------------------------------------------------------------------
# Reading reviews and the queue
# ---------------------------------------------------------------------------------------------

_FILTER_SQL = with_run_filter(" WHERE $run_filter ")


def reviews_of(con: duckdb.DuckDBPyConnection, *, attempt_id: int) -> pd.DataFrame:
    """Every review of one attempt, newest first; ``is_current`` marks each reviewer's newest."""
    return query_df(
        con,
        "SELECT r.reviewer, r.verdict, array_to_string(r.codes, ', ') AS codes, r.note, r.created_at, r.source, "
        "r.review_id IN (SELECT review_id FROM v_reviews WHERE attempt_id = $id) AS is_current "
        "FROM reviews r WHERE r.attempt_id = $id ORDER BY r.created_at DESC, r.review_id DESC",
        {"id": int(attempt_id)},
    )


def review_queue(
    con: duckdb.DuckDBPyConnection,
    *,
    queue: str,
    reviewer: str | None = None,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    n: int = 50,
    seed: int = 0,
) -> pd.DataFrame:
    """Attempts to review, those ``reviewer`` has not reviewed yet first.

    Args:
        con: a read connection.
        queue: ``failed`` (the log says failed), ``disagreements`` (a judge's verdict differs from the log's
            ``passed``, or a Runlens judge's codes differ from the log's labels), or ``calibration`` (a seeded
            random sample of every attempt, stratified by run and predicted code: ``CALIBRATION_ORDER``; its
            reviews estimate the truth, so agreement and the corrected judge figures are measured on it).
        reviewer: whose reviews move an attempt to the back of the queue.
        benchmark: only this benchmark (the other filters likewise).
        agents: only these agents.
        date_from: only runs evaluated on or after this date.
        date_to: only runs evaluated on or before this date.
        n: at most this many attempts.
        seed: the calibration sample's seed (the same seed gives the same sample).
    """
    if queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}; choose from {', '.join(QUEUES)}")
    where = {
        "failed": "a.passed = false",
        "disagreements": "(lj.judge_correct IS DISTINCT FROM a.passed AND lj.judge_correct IS NOT NULL) "
        "OR (rj.judge_correct IS NOT NULL AND rj.judge_correct IS DISTINCT FROM a.passed) "
        "OR (rj.codes IS NOT NULL AND list_sort(rj.codes) IS DISTINCT FROM list_sort(coalesce(lb.codes, [])))",
        "calibration": "true",
    }[queue]
    order = CALIBRATION_ORDER if queue == "calibration" else "a.run_id, a.task_id, a.sample"
    sql = f"""
        WITH lj AS (SELECT attempt_id, TRY_CAST(judge->>'result_correct' AS BOOLEAN) AS judge_correct FROM attempts),
        rj AS (SELECT v.attempt_id, bool_and(TRY_CAST(v.verdict->>'result_correct' AS BOOLEAN)) AS judge_correct,
                      (SELECT list(DISTINCT e.code) FROM error_labels e WHERE e.attempt_id = v.attempt_id
                         AND e.source = 'judge') AS codes
               FROM judge_verdicts v WHERE NOT v.is_failure GROUP BY v.attempt_id),
        lb AS (SELECT attempt_id, list(DISTINCT code) AS codes FROM error_labels WHERE source = 'label'
               GROUP BY attempt_id),
        mine AS (SELECT attempt_id, count(*) AS n_reviews, bool_or(reviewer = $reviewer) AS is_reviewed_by_me
                 FROM v_reviews GROUP BY attempt_id)
        SELECT a.attempt_id, a.run_id, r.agent, a.task_id, a.sample, a.passed, lj.judge_correct AS log_judge_correct,
               rj.judge_correct AS runlens_judge_correct, array_to_string(list_sort(lb.codes), ', ') AS log_codes,
               array_to_string(list_sort(rj.codes), ', ') AS judge_codes, coalesce(m.n_reviews, 0) AS n_reviews,
               coalesce(m.is_reviewed_by_me, false) AS is_reviewed_by_me
        FROM attempts a
        JOIN runs r USING (run_id)
        LEFT JOIN lj USING (attempt_id)
        LEFT JOIN rj USING (attempt_id)
        LEFT JOIN lb USING (attempt_id)
        LEFT JOIN mine m USING (attempt_id)
        LEFT JOIN ({PREDICTED_CODE_SQL}) pc USING (attempt_id)
        {_FILTER_SQL} AND ({where})
        ORDER BY coalesce(m.is_reviewed_by_me, false), {order}
        LIMIT $n
    """
    params = run_filter_params(benchmark, agents, date_from, date_to) | {"reviewer": reviewer or "", "n": int(n)}
    if queue == "calibration":
        params["seed"] = int(seed)
    return query_df(con, sql, params)


# ---------------------------------------------------------------------------------------------
# Humans against the judge, the log's labels and each other
# ---------------------------------------------------------------------------------------------


def current_reviews(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
) -> pd.DataFrame:
    """Each reviewer's newest review of each attempt the filters keep, with the attempt's run, task and sample."""
    return query_df(
        con,
        "SELECT v.attempt_id, a.run_id, a.task_id, a.sample, v.reviewer, v.verdict = 'correct' AS is_correct, "
        "coalesce(v.codes, []) AS codes, v.note, v.created_at "
        f"FROM v_reviews v JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id) {_FILTER_SQL} "
        "ORDER BY v.attempt_id, v.reviewer",
        run_filter_params(benchmark, agents, date_from, date_to),
    )


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


def rater_labels(con: duckdb.DuckDBPyConnection, attempt_ids: Sequence[int]) -> pd.DataFrame:
    """Every machine or log rater's verdict and codes on ``attempt_ids``: one row per (attempt, rater).

    ``is_correct`` is None for a rater that gives codes only; ``codes`` is None for one that gives a verdict only.
    """
    cols = ["attempt_id", "rater", "is_correct", "codes"]
    if not attempt_ids:
        return pd.DataFrame(columns=cols)
    df = query_df(
        con,
        """
        WITH ids AS (SELECT unnest($ids::BIGINT[]) AS attempt_id)
        SELECT a.attempt_id, 'log score' AS rater, a.passed AS is_correct, NULL::VARCHAR[] AS codes
        FROM attempts a SEMI JOIN ids USING (attempt_id) WHERE a.passed IS NOT NULL
        UNION ALL
        SELECT a.attempt_id, 'log judge ' || coalesce(r.judge, '(unnamed)'),
               TRY_CAST(a.judge->>'result_correct' AS BOOLEAN), NULL
        FROM attempts a JOIN runs r USING (run_id) SEMI JOIN ids USING (attempt_id)
        WHERE TRY_CAST(a.judge->>'result_correct' AS BOOLEAN) IS NOT NULL
        UNION ALL
        SELECT v.attempt_id, 'judge ' || v.model || ' · ' || v.prompt_version,
               TRY_CAST(v.verdict->>'result_correct' AS BOOLEAN),
               coalesce((SELECT list(DISTINCT e.code) FROM error_labels e WHERE e.attempt_id = v.attempt_id
                         AND e.source = 'judge' AND e.model = v.model AND e.prompt_version = v.prompt_version), [])
        FROM judge_verdicts v SEMI JOIN ids USING (attempt_id) WHERE NOT v.is_failure
        UNION ALL
        SELECT i.attempt_id, CASE s.source WHEN 'label' THEN 'log labels' ELSE 'rules' END, NULL,
               coalesce((SELECT list(DISTINCT e.code) FROM error_labels e
                         WHERE e.attempt_id = i.attempt_id AND e.source = s.source), [])
        FROM ids i CROSS JOIN (VALUES ('label'), ('rule')) s(source)
        """,
        {"ids": [int(i) for i in attempt_ids]},
    )
    df["codes"] = [set(c) if isinstance(c, (list, np.ndarray)) else None for c in df["codes"]]
    return df[cols]


@dataclass(frozen=True)
class Agreement:
    """How far each rater agrees with the humans, and the attempts where they disagree."""

    verdicts: pd.DataFrame  # rater, n, agreement, kappa, kappa_lo, kappa_hi, tp, tn, fp, fn
    codes: pd.DataFrame  # rater, code, tp, fp, fn, precision, recall, n
    reviewers: pd.DataFrame  # reviewer_a, reviewer_b, n, agreement, kappa, kappa_lo, kappa_hi
    disagreements: pd.DataFrame  # rater, run_id, task_id, sample, rater_correct, human_correct, ...
    n_reviewed: int
    fleiss: dict[str, float] | None = None  # kappa, kappa_lo, kappa_hi, n_attempts, n_reviewers (2+ reviewers)


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


def agreement(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> Agreement:
    """Every rater (log score, log judge, Runlens judge per model and prompt version, log labels, rules) against
    the human consensus on the reviewed attempts the filters keep; and reviewers against each other."""
    reviews = current_reviews(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to)
    humans = human_consensus(reviews)
    raters = rater_labels(con, humans["attempt_id"].tolist())
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


# ---------------------------------------------------------------------------------------------
# The calibration sample, and judge figures corrected by it (prediction-powered inference)
# ---------------------------------------------------------------------------------------------


def calibration_sample(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    seed: int = CALIBRATION_SEED,
) -> tuple[list[int], int | None]:
    """The reviewed random sample: the longest prefix of the calibration queue's order (seed ``seed``) in which
    every attempt has a review, and the first attempt that stops it (None when every attempt is reviewed).

    A prefix of a random order is a random sample; reviews given from the other queues (failed ones,
    disagreements) are not, and count only where they fall inside the prefix."""
    rows = query_df(
        con,
        f"""
        SELECT a.attempt_id, a.attempt_id IN (SELECT attempt_id FROM v_reviews) AS is_reviewed
        FROM attempts a JOIN runs r USING (run_id)
        LEFT JOIN ({PREDICTED_CODE_SQL}) pc USING (attempt_id)
        {_FILTER_SQL}
        ORDER BY {CALIBRATION_ORDER}
        """,
        run_filter_params(benchmark, agents, date_from, date_to) | {"seed": int(seed)},
    )
    reviewed = rows["is_reviewed"].to_numpy(dtype=bool)
    stop = int(np.argmin(reviewed)) if not reviewed.all() else len(rows)
    first_gap = int(rows["attempt_id"].iloc[stop]) if stop < len(rows) else None
    return [int(i) for i in rows["attempt_id"].iloc[:stop]], first_gap


def judge_predictions(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
) -> tuple[pd.DataFrame, str]:
    """Per attempt the filters keep: the judge's verdict (a Runlens judge's ``result_correct``, else the log's
    judge; None without either) and its codes (the Runlens judge's labels; when no attempt has one, the log's
    labels), and the name of the code source used (``judge`` or ``label``)."""
    params = run_filter_params(benchmark, agents, date_from, date_to)
    has_judge = query_df(
        con,
        f"SELECT count(*) AS n FROM error_labels e JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id) "
        f"{_FILTER_SQL} AND e.source = 'judge'",
        params,
    )["n"].iloc[0]
    source = "judge" if int(has_judge) > 0 else "label"
    df = query_df(
        con,
        f"""
        WITH rj AS (SELECT attempt_id, bool_and(TRY_CAST(verdict->>'result_correct' AS BOOLEAN)) AS ok
                    FROM judge_verdicts WHERE NOT is_failure GROUP BY attempt_id),
        codes AS (SELECT attempt_id, list(DISTINCT code) AS codes FROM error_labels WHERE source = $source
                  GROUP BY attempt_id)
        SELECT a.attempt_id, a.run_id,
               coalesce(rj.ok, TRY_CAST(a.judge->>'result_correct' AS BOOLEAN)) AS judge_correct,
               coalesce(c.codes, []) AS judge_codes
        FROM attempts a JOIN runs r USING (run_id)
        LEFT JOIN rj USING (attempt_id) LEFT JOIN codes c USING (attempt_id)
        {_FILTER_SQL}
        ORDER BY a.attempt_id
        """,
        params | {"source": source},
    )
    df["judge_codes"] = [set(c) if isinstance(c, (list, np.ndarray)) else set() for c in df["judge_codes"]]
    return df, source


CORRECTION_COLUMNS = [
    "quantity", "code", "judge", "estimate", "lo", "hi", "reviews_only", "reviews_only_lo", "reviews_only_hi",
    "lam", "n_reviewed", "n_attempts", "note",
]  # fmt: skip


def needs_reviews(n: int, *, minimum: int = MIN_REVIEWS) -> str:
    """What a figure waiting for reviews says instead of NaN."""
    return f"needs at least {minimum} reviews (has {n})"  # of the calibration sample, as the page says above


def judge_corrections(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """The judge's figures (its pass rate, the share of attempts with each code) beside the same figures corrected
    by the human reviews of the calibration sample (PPI++, ``analytics.ppi.ppi_mean``) with their interval, and
    the reviews-only estimate; ``note`` says when there are too few reviews. Shares are fractions (0..1)."""
    from analytics.ppi import ppi_mean

    kw: dict[str, Any] = {"benchmark": benchmark, "agents": agents, "date_from": date_from, "date_to": date_to}
    preds, source = judge_predictions(con, **kw)
    sample, _ = calibration_sample(con, **kw)
    humans = human_consensus(current_reviews(con, **kw))
    humans = humans[humans["attempt_id"].isin(sample)].set_index("attempt_id")
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

    verdicts = preds.dropna(subset=["judge_correct"]).set_index("attempt_id")["judge_correct"]
    human_ok = humans["human_correct"].dropna()
    if len(verdicts):
        add("judged pass rate", None, verdicts, human_ok)
    codes = sorted(set().union(*preds["judge_codes"], *humans["human_codes"])) if len(preds) else []
    pred_codes = preds.set_index("attempt_id")["judge_codes"]
    for code in codes:
        f = pred_codes.map(lambda cs, c=code: c in cs)
        y = humans["human_codes"].map(lambda cs, c=code: c in cs)
        add(f"share with {code} ({source})", code, f, y)
    return pd.DataFrame(rows, columns=CORRECTION_COLUMNS)


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
