"""review, loaded: reviews, the review queue, the calibration sample, the raters' labels and the judge's
predictions from the store (the only module of the feature that queries); ``agreement`` and ``judge_corrections``
load their frames here and compute with ``compute``."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pandas as pd

from analytics.review.compute import (
    CALIBRATION_SEED,
    QUEUES,
    Agreement,
    JudgeTotals,
    Trust,
    agreement_of,
    corrections_from_counts,
    human_consensus,
)
from store import ALL_RUNS, RunFilter, query_df, with_run_filter

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
_FILTER_SQL = with_run_filter(" WHERE $run_filter ")


def reviews_of(con: duckdb.DuckDBPyConnection, *, attempt_id: int) -> pd.DataFrame:
    """Every review of one attempt, newest first; ``is_current`` marks each reviewer's newest (``v_reviews``' rule,
    on the attempt's own rows: one scan of the reviews, not two)."""
    return query_df(
        con,
        "SELECT r.reviewer, r.verdict, array_to_string(r.codes, ', ') AS codes, r.note, r.created_at, r.source, "
        "row_number() OVER (PARTITION BY r.reviewer ORDER BY r.created_at DESC, r.review_id DESC) = 1 AS is_current "
        "FROM reviews r WHERE r.attempt_id = $id ORDER BY r.created_at DESC, r.review_id DESC",
        {"id": int(attempt_id)},
    )


def review_queue(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    queue: str,
    reviewer: str | None = None,
    n: int = 50,
    seed: int = 0,
) -> pd.DataFrame:
    """Attempts to review, those ``reviewer`` has not reviewed yet first.

    Args:
        con: a read connection.
        run_filter: only attempts of the runs it keeps.
        queue: ``failed`` (the log says failed), ``disagreements`` (a judge's verdict differs from the log's
            ``passed``, or a Runlens judge's codes differ from the log's labels), or ``calibration`` (a seeded
            random sample of every attempt, stratified by run and predicted code: ``CALIBRATION_ORDER``; its
            reviews estimate the truth, so agreement and the corrected judge figures are measured on it).
        reviewer: whose reviews move an attempt to the back of the queue.
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
    # The failed queue's order is the run's (run, task, sample) after the attempts this reviewer has reviewed go
    # last: its first n are among the first n + (this reviewer's reviews) failed attempts in that order, or among
    # those reviews. Only these candidates are joined with the judges' verdicts and labels, not every attempt.
    params = run_filter.params() | {"reviewer": reviewer or "", "n": int(n)}
    in_range = ""  # the candidates' attempt-id range as constants, when known without a read
    if queue == "failed":
        params["cand"] = _first_failed(con, run_filter, reviewer=reviewer or "", n=int(n))
        candidates = (
            "cand AS (SELECT DISTINCT unnest($cand::BIGINT[]) AS attempt_id "
            "UNION SELECT attempt_id FROM v_reviews WHERE reviewer = $reviewer), "
        )
        if not reviewer:  # no name typed: no review is this reviewer's, the candidates are the failed ones found
            params |= {"lo": min(params["cand"], default=0), "hi": max(params["cand"], default=-1)}
            in_range = "attempt_id BETWEEN $lo AND $hi AND "  # the scans skip the other runs' row groups
    else:
        candidates = "cand AS (SELECT attempt_id FROM attempts), "
    # the candidates' predicted codes only (their labels grouped, not every label of the store)
    predicted = PREDICTED_CODE_SQL.replace("FROM error_labels", "FROM error_labels SEMI JOIN cand USING (attempt_id)")
    sql = f"""
        WITH {candidates}
        lj AS (SELECT attempt_id, TRY_CAST(judge->>'result_correct' AS BOOLEAN) AS judge_correct FROM attempts
               SEMI JOIN cand USING (attempt_id) WHERE {in_range} true),
        rj AS (SELECT v.attempt_id, bool_and(TRY_CAST(v.verdict->>'result_correct' AS BOOLEAN)) AS judge_correct,
                      (SELECT list(DISTINCT e.code) FROM error_labels e WHERE e.attempt_id = v.attempt_id
                         AND e.source = 'judge') AS codes
               FROM judge_verdicts v WHERE NOT v.is_failure GROUP BY v.attempt_id),
        lb AS (SELECT attempt_id, list(DISTINCT code) AS codes FROM error_labels SEMI JOIN cand USING (attempt_id)
               WHERE {in_range} source = 'label' GROUP BY attempt_id),
        mine AS (SELECT attempt_id, count(*) AS n_reviews, bool_or(reviewer = $reviewer) AS is_reviewed_by_me
                 FROM v_reviews GROUP BY attempt_id)
        SELECT a.attempt_id, a.run_id, r.agent, a.task_id, a.sample, a.passed, lj.judge_correct AS log_judge_correct,
               rj.judge_correct AS runlens_judge_correct, array_to_string(list_sort(lb.codes), ', ') AS log_codes,
               array_to_string(list_sort(rj.codes), ', ') AS judge_codes, coalesce(m.n_reviews, 0) AS n_reviews,
               coalesce(m.is_reviewed_by_me, false) AS is_reviewed_by_me
        FROM attempts a
        SEMI JOIN cand USING (attempt_id)
        JOIN runs r USING (run_id)
        LEFT JOIN lj USING (attempt_id)
        LEFT JOIN rj USING (attempt_id)
        LEFT JOIN lb USING (attempt_id)
        LEFT JOIN mine m USING (attempt_id)
        LEFT JOIN ({predicted}) pc USING (attempt_id)
        {_FILTER_SQL} AND {in_range.replace("attempt_id", "a.attempt_id")} ({where})
        ORDER BY coalesce(m.is_reviewed_by_me, false), {order}
        LIMIT $n
    """
    if queue == "calibration":
        params["seed"] = int(seed)
    return query_df(con, sql, params)


def _first_failed(con: duckdb.DuckDBPyConnection, run_filter: RunFilter, *, reviewer: str, n: int) -> list[int]:
    """The first n + (``reviewer``'s reviewed attempts) failed attempts of the view in (run, task, sample) order,
    read run by run in run order until there are enough: each read keeps one run's rows (the scan skips the
    others' row groups), so the queue does not sort every failed attempt of the store."""
    need = n + int(
        query_df(con, "SELECT count(DISTINCT attempt_id) AS k FROM v_reviews WHERE reviewer = $reviewer",
                 {"reviewer": reviewer})["k"].iloc[0]
        if reviewer else 0  # no name typed yet: no review is this reviewer's (a review needs a name: jobs/reviews.py)
    )  # fmt: skip
    runs = query_df(con, f"SELECT r.run_id FROM runs r {_FILTER_SQL} ORDER BY r.run_id", run_filter.params())
    out: list[int] = []
    for run_id in runs["run_id"]:
        if len(out) >= need:
            break
        rows = query_df(
            con,
            "SELECT attempt_id FROM attempts WHERE run_id = $run AND passed = false ORDER BY task_id, sample LIMIT $k",
            {"run": str(run_id), "k": need - len(out)},
        )
        out += [int(i) for i in rows["attempt_id"]]
    return out


def current_reviews(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
) -> pd.DataFrame:
    """Each reviewer's newest review of each attempt the filters keep, with the attempt's run, task and sample.
    The attempts are read within the reviewed ids' range (constants the scan skips row groups by; none when nothing
    is reviewed), not joined whole with the reviews."""
    lo, hi = _id_range(con, "SELECT min(attempt_id) AS lo, max(attempt_id) AS hi FROM v_reviews")
    return query_df(
        con,
        "SELECT v.attempt_id, a.run_id, a.task_id, a.sample, v.reviewer, v.verdict = 'correct' AS is_correct, "
        "coalesce(v.codes, []) AS codes, v.note, v.created_at "
        f"FROM v_reviews v JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id) {_FILTER_SQL} "
        "AND a.attempt_id BETWEEN $lo AND $hi ORDER BY v.attempt_id, v.reviewer",
        run_filter.params() | {"lo": lo, "hi": hi},
    )


def _id_range(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object] | None = None) -> tuple[int, int]:
    """``(lo, hi)`` of a query giving ``lo`` and ``hi`` attempt ids; ``(0, -1)`` (an empty range) when it gives
    none."""
    row = query_df(con, sql, params or {}).iloc[0]
    if pd.isna(row["lo"]):
        return 0, -1
    return int(row["lo"]), int(row["hi"])


def rater_labels(con: duckdb.DuckDBPyConnection, attempt_ids: Sequence[int]) -> pd.DataFrame:
    """Every machine or log rater's verdict and codes on ``attempt_ids``: one row per (attempt, rater), by attempt
    and rater.

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
    # in one order whatever order the union's parts come back in: the kappa intervals resample these rows
    return df[cols].sort_values(["attempt_id", "rater"], kind="stable", ignore_index=True)


def agreement(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> Agreement:
    """Every rater (log score, log judge, Runlens judge per model and prompt version, log labels, rules) against
    the human consensus on the reviewed attempts the filters keep; and reviewers against each other."""
    reviews = current_reviews(con, run_filter)
    humans = human_consensus(reviews)
    raters = rater_labels(con, humans["attempt_id"].tolist())
    return agreement_of(reviews, humans, raters, n_boot=n_boot, seed=seed)


def calibration_sample(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
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
        run_filter.params() | {"seed": int(seed)},
    )
    reviewed = rows["is_reviewed"].to_numpy(dtype=bool)
    stop = int(np.argmin(reviewed)) if not reviewed.all() else len(rows)
    first_gap = int(rows["attempt_id"].iloc[stop]) if stop < len(rows) else None
    return [int(i) for i in rows["attempt_id"].iloc[:stop]], first_gap


def judge_predictions(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
) -> tuple[pd.DataFrame, str]:
    """Per attempt the filters keep: the judge's verdict (a Runlens judge's ``result_correct``, else the log's
    judge; None without either) and its codes (the Runlens judge's labels; when no attempt has one, the log's
    labels), and the name of the code source used (``judge`` or ``label``). Reads every attempt: the reference
    ``judge_corrections`` is checked against (tests/test_review.py)."""
    params = run_filter.params()
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


def judge_corrections(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    level: float = 0.95,
) -> pd.DataFrame:
    """The judge's figures (its pass rate, the share of attempts with each code) beside the same figures corrected
    by the human reviews of the calibration sample (PPI++, ``analytics.ppi.ppi_mean``) with their interval, and
    the reviews-only estimate; ``note`` says when there are too few reviews. Shares are fractions (0..1).

    The same figures as ``corrections_of(*judge_predictions(...), ...)``, read from the per-run counts the writer
    keeps (``run_judge_counts``, ``run_label_codes``: migration 009) and the judge's verdict and codes of the
    reviewed attempts alone: the attempts nobody reviewed enter only through their counts, whatever their number.
    The calibration sample is ordered only when some attempt of the view has a review."""
    humans = human_consensus(current_reviews(con, run_filter))
    sample = calibration_sample(con, run_filter)[0] if len(humans) else []
    return _corrections(con, run_filter, humans, sample, level=level)


def _corrections(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter, humans: pd.DataFrame, sample: list[int], *, level: float
) -> pd.DataFrame:
    """``judge_corrections`` from the human consensus of the view's reviews and its calibration sample."""
    counts = _label_counts(con, run_filter)
    source = code_source(counts)
    humans = humans[humans["attempt_id"].isin(sample)] if len(humans) else humans
    return corrections_from_counts(
        _judge_totals(con, run_filter),
        counts[counts["source"] == source],
        judged_attempts(con, humans["attempt_id"].tolist(), source=source),
        source,
        humans,
        level=level,
    )


def trust(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Trust:
    """``agreement``, ``judge_corrections`` and ``calibration_sample`` of one view (what the Errors and Review pages
    show first) from one read of its current reviews and, when some attempt is reviewed, one ordering of the
    calibration sample: the same values as the three calls (tests/test_review.py), which read the reviews twice
    and ordered the sample twice."""
    reviews = current_reviews(con, run_filter)
    humans = human_consensus(reviews)
    agr = agreement_of(reviews, humans, rater_labels(con, humans["attempt_id"].tolist()), n_boot=n_boot, seed=seed)
    sample, gap = calibration_sample(con, run_filter) if len(humans) else ([], None)
    return Trust(agr, _corrections(con, run_filter, humans, sample, level=level), sample, gap)


def code_source(label_counts: pd.DataFrame) -> str:
    """The code source of the judge's figures: ``judge`` when some attempt of the view has a Runlens judge's
    label, else ``label`` (the log's labels)."""
    return "judge" if (label_counts["source"] == "judge").any() else "label"


def _label_counts(con: duckdb.DuckDBPyConnection, run_filter: RunFilter) -> pd.DataFrame:
    """Per label source and code: the view's attempts carrying it (``run_label_codes`` summed over the runs)."""
    return query_df(
        con,
        f"SELECT c.source, c.code, sum(c.n_attempts)::BIGINT AS n_attempts FROM run_label_codes c "
        f"JOIN runs r USING (run_id) {_FILTER_SQL} GROUP BY c.source, c.code ORDER BY c.source, c.code",
        run_filter.params(),
    )


def _judge_totals(con: duckdb.DuckDBPyConnection, run_filter: RunFilter) -> JudgeTotals:
    """The view's attempts, those with a judge's verdict and those judged correct (``run_judge_counts``)."""
    row = query_df(
        con,
        f"SELECT coalesce(sum(j.n_attempts), 0)::BIGINT AS n_attempts, coalesce(sum(j.n_judged), 0)::BIGINT AS "
        f"n_judged, coalesce(sum(j.n_judged_correct), 0)::BIGINT AS n_judged_correct FROM run_judge_counts j "
        f"JOIN runs r USING (run_id) {_FILTER_SQL}",
        run_filter.params(),
    ).iloc[0]
    return JudgeTotals(int(row["n_attempts"]), int(row["n_judged"]), int(row["n_judged_correct"]))


def judged_attempts(con: duckdb.DuckDBPyConnection, attempt_ids: Sequence[int], *, source: str) -> pd.DataFrame:
    """The judge's verdict (``judge_correct``: a Runlens judge's, else the log's judge's; None without either) and
    codes from ``source`` (a set) of the given attempts, by ``attempt_id`` ascending."""
    cols = ["attempt_id", "judge_correct", "judge_codes"]
    if not attempt_ids:
        return pd.DataFrame({"attempt_id": pd.Series(dtype="int64"), "judge_correct": pd.Series(dtype=object),
                             "judge_codes": pd.Series(dtype=object)})  # fmt: skip
    df = query_df(
        con,
        """
        WITH ids AS (SELECT DISTINCT unnest($ids::BIGINT[]) AS attempt_id),
        rj AS (SELECT attempt_id, bool_and(TRY_CAST(verdict->>'result_correct' AS BOOLEAN)) AS ok
               FROM judge_verdicts SEMI JOIN ids USING (attempt_id) WHERE NOT is_failure GROUP BY attempt_id),
        codes AS (SELECT attempt_id, list(DISTINCT code) AS codes FROM error_labels SEMI JOIN ids USING (attempt_id)
                  WHERE source = $source GROUP BY attempt_id)
        SELECT a.attempt_id, coalesce(rj.ok, TRY_CAST(a.judge->>'result_correct' AS BOOLEAN)) AS judge_correct,
               coalesce(c.codes, []) AS judge_codes
        FROM attempts a SEMI JOIN ids USING (attempt_id)
        LEFT JOIN rj USING (attempt_id) LEFT JOIN codes c USING (attempt_id)
        ORDER BY a.attempt_id
        """,
        {"ids": [int(i) for i in attempt_ids], "source": source},
    )
    df["judge_codes"] = [set(c) if isinstance(c, (list, np.ndarray)) else set() for c in df["judge_codes"]]
    return df[cols]
