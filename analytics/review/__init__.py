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

Modules by role: ``compute`` (the statistics, pure), ``load`` (the only queries; ``agreement`` and
``judge_corrections`` load and compute) and ``report`` (sentences and tables people read). This package re-exports
their public names: ``from analytics import review``.
"""

from __future__ import annotations

from analytics.review.compute import (
    CALIBRATION_SEED,
    CODE_COLUMNS,
    CORRECTION_COLUMNS,
    MIN_KAPPA_N,
    MIN_REVIEWS,
    QUEUES,
    VERDICT_COLUMNS,
    Agreement,
    JudgeTotals,
    Trust,
    agreement_of,
    code_scores,
    cohen_kappa,
    confusion,
    corrections_from,
    corrections_from_counts,
    corrections_of,
    fleiss_summary,
    human_consensus,
    kappa_interval,
    needs_reviews,
)
from analytics.review.compute import (
    _binary_kappas as _binary_kappas,
)
from analytics.review.load import (
    CALIBRATION_ORDER,
    PREDICTED_CODE_SQL,
    agreement,
    calibration_sample,
    code_source,
    current_reviews,
    judge_corrections,
    judge_predictions,
    judged_attempts,
    rater_labels,
    review_queue,
    reviews_of,
    trust,
)
from analytics.review.report import (
    corrections_table,
    kappa_text,
    queue_table,
    raters_line,
    trust_sentence,
)

__all__ = [
    "Agreement",
    "JudgeTotals",
    "Trust",
    "CALIBRATION_ORDER",
    "CALIBRATION_SEED",
    "CODE_COLUMNS",
    "CORRECTION_COLUMNS",
    "MIN_KAPPA_N",
    "MIN_REVIEWS",
    "PREDICTED_CODE_SQL",
    "QUEUES",
    "VERDICT_COLUMNS",
    "agreement",
    "agreement_of",
    "calibration_sample",
    "code_scores",
    "cohen_kappa",
    "confusion",
    "code_source",
    "corrections_from",
    "corrections_from_counts",
    "corrections_of",
    "corrections_table",
    "current_reviews",
    "fleiss_summary",
    "human_consensus",
    "judge_corrections",
    "judge_predictions",
    "judged_attempts",
    "kappa_interval",
    "kappa_text",
    "needs_reviews",
    "queue_table",
    "rater_labels",
    "raters_line",
    "review_queue",
    "reviews_of",
    "trust",
    "trust_sentence",
]
