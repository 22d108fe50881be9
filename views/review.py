"""Review: a queue of attempts to review (failed, judge-vs-label disagreements, a seeded calibration sample), the
review form, and how far the judge and the log's labels agree with the humans (Cohen's kappa with a bootstrap
interval, confusion, per-code precision and recall, reviewers against each other), disagreements one click away.
Deep link: ``review?queue=failed|disagreements|calibration``."""

import streamlit as st

from analytics import formatting as fmt
from analytics import llm
from analytics import review as rv
from analytics import trajectory as tr
from ui import review
from ui.common import (
    UrlField,
    cached,
    drilldown_url,
    empty_state,
    from_url,
    keep_in_url,
    link_params,
    plain,
)
from ui.shell import page_setup
from ui.tables import Col, show_table

filters = page_setup(
    "Review",
    "Human verdicts and error codes on attempts, stored with the reviewer and the time (never changing the log's "
    "own labels), and the judge measured against them.",
)
ss = st.session_state
if not filters.benchmark:
    empty_state("The database holds no benchmark yet. Ingest logs with `python -m ingest PATH` or on the Upload page.")
KAPPA = [
    Col("kappa", "Kappa [95% CI]", "number", lo="kappa_lo", hi="kappa_hi", digits=2, help="Cohen's kappa"),
    Col("agreement", "Agreement", "pct"),
    Col("n", "Reviews", "count"),
]
VERDICT_COLS = [
    Col("rater", "Rater"),
    *KAPPA,
    Col("tp", "Both correct", "count"),
    Col("tn", "Both incorrect", "count"),
    Col("fp", "Rater correct, human not", "count"),
    Col("fn", "Human correct, rater not", "count"),
]
CODE_COLS = [
    Col("rater", "Rater"),
    Col("code", "Code"),
    Col("precision", "Precision", "pct"),
    Col("recall", "Recall", "pct"),
    Col("n", "Reviews", "count"),
    Col("tp", "Both", "count"),
    Col("fp", "Rater only", "count"),
    Col("fn", "Human only", "count"),
]
DIS_COLS = [
    Col("rater", "Rater"),
    Col("task_id", "Task"),
    Col("sample", "Sample", "count"),
    Col("rater_correct", "Rater says correct", "flag"),
    Col("human_correct", "Humans say correct", "flag"),
    Col("open", "Open", "link", link_text="drilldown"),
    Col("n_reviewers", "Reviewers", "count"),
]


def _with_links(df):  # type: ignore[no-untyped-def]
    urls = [drilldown_url(r, t, int(s)) for r, t, s in zip(df["run_id"], df["task_id"], df["sample"], strict=True)]
    return df.assign(open=urls)


# --- agreement first: how far can the judge be trusted? --------------------------------------------------------
st.subheader("Judge and labels against human reviewers")
judged = cached(rv.trust, run_filter=filters)  # agreement, corrected figures, sample: one read of the reviews
agr, corr = judged.agreement, judged.corrections
st.info(plain(rv.trust_sentence(agr.verdicts, agr.n_reviewed)), icon=":material/balance:")
if not corr.empty:
    st.caption(
        "The judge's figures beside the same figures corrected by the human reviews of the calibration sample "
        "(prediction-powered inference, PPI++: valid 95% intervals when the reviewed attempts are the calibration "
        "queue's random sample; a review from another queue counts only inside that sample)."
    )
    sample, gap = judged.sample, judged.gap  # without a review in the view: empty, its order not computed
    st.caption(
        "Calibration sample: none yet. Review the calibration queue's attempts in order (below, queue "
        "'calibration') to correct the judge's figures."
        if len(sample) == 0
        else f"Calibration sample: the first {fmt.plural(len(sample), 'attempt')} of the calibration queue (seed 0), "
        "all reviewed."
        + (" Review the queue's next attempt to extend it." if gap is not None else " Every attempt is reviewed.")
    )
    show_table(rv.corrections_table(corr), key="rv_corrected", name="judge-corrected", download=corr, is_display=True)
if agr.fleiss is not None:
    f = agr.fleiss
    st.caption(
        plain(
            f"Reviewers among themselves: Fleiss' kappa "
            f"{rv.kappa_text(f['kappa'], f['kappa_lo'], f['kappa_hi'], int(f['n_attempts']))} over the attempts "
            f"{int(f['n_reviewers'])} reviewers reviewed at least twice."
        )
    )
if llm.llm_config() is None:
    st.caption(
        "No judge server is configured: the raters below are the log's own score, judge and labels. With an "
        "OpenAI-compatible server (OPENAI_BASE_URL, RUNLENS_JUDGE_MODEL) `python -m analytics judge` adds Runlens "
        "judge verdicts and codes per model and prompt version, measured here against the same reviews."
    )
if agr.n_reviewed:
    st.caption(
        f"{fmt.plural(agr.n_reviewed, 'reviewed attempt')}; kappa with a 95% bootstrap interval (2,000 resamples, "
        "seed 0); a dash where it is undefined (fewer than 2 reviews, or every verdict the same)."
    )
    show_table(agr.verdicts, VERDICT_COLS, key="rv_verdicts", name="agreement-verdicts")
    with st.expander("Error codes: precision and recall against the human codes"):
        show_table(agr.codes, CODE_COLS, key="rv_codes", name="agreement-codes")
    with st.expander("Reviewers against each other"):
        if agr.reviewers.empty:
            st.caption("No attempt has two reviewers yet.")
        else:
            pair_cols = [Col("reviewer_a", "Reviewer"), Col("reviewer_b", "Other reviewer"), *KAPPA]
            show_table(agr.reviewers, pair_cols, key="rv_pairs", name="agreement-reviewers")
    with st.expander(f"Disagreements with the humans ({len(agr.disagreements)})"):
        dis = _with_links(agr.disagreements)
        show_table(dis, DIS_COLS, key="rv_dis", name="disagreements", download=agr.disagreements)

# --- the queue and the form ------------------------------------------------------------------------------------
st.subheader("Review queue")
QUEUE_FIELD = UrlField("rv_queue", "queue", "failed", choices=rv.QUEUES)
from_url([QUEUE_FIELD])
left, right = st.columns([3, 1])
queue = left.segmented_control("Queue", rv.QUEUES, key="rv_queue") or "failed"
seed = right.number_input("Calibration seed", 0, 10_000, 0, key="rv_seed", disabled=queue != "calibration")
keep_in_url([QUEUE_FIELD])
items = cached(rv.review_queue, run_filter=filters, queue=queue, reviewer=review.reviewer(), n=50, seed=int(seed))
if items.empty:
    empty_state("Nothing in this queue for the current filters.")
shown = rv.queue_table(items).assign(Open=_with_links(items)["open"].to_numpy())
QUEUE_COLS = [
    Col("Task"),
    Col("Sample", kind="count"),
    Col("Agent"),
    Col("Passed"),
    Col("Log judge"),
    Col("Runlens judge"),
    Col("Reviews", kind="count"),
    Col("Open", kind="link", link_text="drilldown"),
    Col("Log codes"),
    Col("Judge codes"),
    Col("Reviewed by you"),
    Col("Run", is_default=False),
]
show_table(shown, QUEUE_COLS, key="rv_items", name=f"review-queue-{queue}", download=items)
labels = {
    int(r.attempt_id): f"{r.run_id} · {r.task_id} · sample {int(r.sample)}"
    + (" · reviewed" if r.is_reviewed_by_me else "")
    for r in items.itertuples()
}
attempt_id = st.selectbox("Attempt to review", list(labels), format_func=labels.__getitem__, key="rv_pick")
row = items[items["attempt_id"] == attempt_id].iloc[0]
d = cached(tr.attempt_detail, run_id=row["run_id"], task_id=row["task_id"], sample=int(row["sample"]))
st.page_link(
    "views/drilldown.py",
    label="Open the whole trajectory in the drilldown",
    icon=":material/open_in_new:",
    query_params=link_params({"run": row["run_id"], "task": row["task_id"], "sample": str(int(row["sample"]))}),
)
q, a = st.columns(2)
q.caption("Task")
q.text((d or {}).get("query") or "(the log gives no query text)")
q.caption("Reference answer")
q.text((d or {}).get("reference_answer") or "–")
a.caption("Agent's final answer")
a.text((d or {}).get("answer") or "–")
a.caption("Log / judges")
a.text(rv.raters_line(row))
review.reviews_table(int(attempt_id), key="rv_reviews")
review.review_form(int(attempt_id), key="rv_form")
