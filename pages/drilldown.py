"""Drilldown: one attempt -- task, answers, judge, cost -- and its step timeline aligned with the reference.

Deep links: ``drilldown?run=<run_id>&task=<task_id>&sample=<n>`` (``ui.common.drilldown_url``). Everything that
comes from a log is drawn as text (st.text / st.code / dataframes), never as Markdown or HTML.
"""

import json
import math

import pandas as pd
import streamlit as st

from analytics import rules
from analytics import trajectory as tr
from ui import review
from ui.common import cached, download_buttons, empty_state, long_text, plain, query_param, show_fig
from ui.shell import page_setup

PAGE_SIZES = (10, 25, 50, 100)
OP_BADGE = {"matched": ":green-badge[matched]", "extra": ":orange-badge[extra]", "missing": ":red-badge[missing]"}

filters = page_setup(
    "Drilldown",
    "One attempt: the task, the answers, the judge, and every step of the trajectory "
    "next to the reference trajectory. Log content is shown as plain text.",
)
ss = st.session_state
runs = cached(tr.runs_of)
if runs.empty:
    empty_state("The database holds no runs yet. Ingest logs with `python -m ingest PATH` or on the Upload page.")

# A deep link (or a click elsewhere that changed the URL) re-seeds the pickers; otherwise they keep their state.
link = (query_param("run"), query_param("task"), query_param("sample"))
if ss.get("dd_link") != link:
    ss.dd_link = link
    linked = runs[runs["run_id"] == link[0]]
    if not linked.empty:
        ss.dd_bench, ss.dd_run = linked["benchmark"].iloc[0], link[0]
        ss.dd_task = link[1]
        ss.dd_sample = int(link[2]) if (link[2] or "").isdigit() else None
        ss.dd_page = 1
    elif link[0]:
        st.warning("The linked run is not in the database; pick one below.")
hit = (*link, query_param("step"))  # a search hit (pages/search.py): its step is marked and its page shown
if ss.get("dd_hit") != hit and (hit[3] or "").isdigit():
    ss.dd_page = int(hit[3]) // (ss.get("dd_size") or 25) + 1
ss.dd_hit = hit


def _valid(key: str, options: list, fallback: object) -> None:
    if ss.get(key) not in options:
        ss[key] = fallback


def _go(run_id: str, task_id: str, sample: int) -> None:
    st.query_params.update({"run": run_id, "task": task_id, "sample": str(sample)})


benchmarks = sorted(runs["benchmark"].unique())
_valid("dd_bench", benchmarks, filters.benchmark if filters.benchmark in benchmarks else benchmarks[0])
c_bench, c_run, c_task, c_sample = st.columns([2, 4, 3, 1])
bench = c_bench.selectbox("Benchmark", benchmarks, key="dd_bench")
bench_runs = runs[runs["benchmark"] == bench]
labels = {
    r.run_id: " · ".join(
        str(x) for x in (f"{r.agent} {r.agent_version or ''}".strip(), r.eval_date, r.run_id) if not pd.isna(x)
    )
    for r in bench_runs.itertuples()
}
_valid("dd_run", list(labels), next(iter(labels)))
run_id = c_run.selectbox("Run", list(labels), key="dd_run", format_func=labels.get)
attempts = cached(tr.attempts_of, run_id=run_id)
if attempts.empty:
    empty_state("This run has no attempts.")
tasks = list(dict.fromkeys(attempts["task_id"]))
_valid("dd_task", tasks, tasks[0])
task_id = c_task.selectbox("Task", tasks, key="dd_task")
samples = [int(s) for s in attempts.loc[attempts["task_id"] == task_id, "sample"]]
_valid("dd_sample", samples, samples[0])
sample = c_sample.selectbox("Sample", samples, key="dd_sample")
wanted = {"run": run_id, "task": task_id, "sample": str(sample)}
if any(st.query_params.get(k) != v for k, v in wanted.items()):
    st.query_params.update(wanted)
ss.dd_link = (run_id, task_id, str(sample))

if st.toggle("Coverage across the runs of this benchmark (AD-Bench Figures 3 and 4)", key="dd_overview"):
    by_level = cached(
        tr.coverage_by_level,
        benchmark=bench,
        agents=filters.agents or None,
        date_from=filters.date_from,
        date_to=filters.date_to,
    )
    if by_level["coverage"].notna().any():
        fits = tr.pass_vs_coverage_fits(by_level)
        f4, f3 = st.columns(2)
        with f4:
            show_fig(tr.fig_coverage_by_level(by_level), key="dd_fig4", data=by_level, name=f"coverage-{bench}")
        with f3:
            show_fig(
                tr.fig_pass_vs_coverage(by_level, fits),
                key="dd_fig3",
                data=pd.DataFrame([f.__dict__ for f in fits]),
                name=f"pass-vs-coverage-{bench}",
            )
    else:
        st.info("The tasks of this benchmark carry no reference trajectories, so there is no coverage.")

d = cached(tr.attempt_detail, run_id=run_id, task_id=task_id, sample=sample)
if d is None:
    empty_state("No such attempt.")
attempt_id = int(d["attempt_id"])

# --- the task and the outcome -------------------------------------------------------------------------------
st.subheader("Task")
st.text(d.get("query") or "(the log gives no query text)")
m = st.columns(4)
m[0].metric("Level", plain(d.get("level") or "–", max_chars=80))
m[1].metric("Category", plain(d.get("category") or "–", max_chars=80))
m[2].metric("Human minutes", "–" if d.get("human_minutes") is None else f"{d['human_minutes']:g}")
m[3].metric("Steps / tool calls", f"{d['n_steps']} / {d['n_tool_calls']}")
left, right = st.columns(2)
left.caption("Reference answer")
with left:
    long_text(d.get("reference_answer") or "–", key="dd_ref", name=f"reference-{attempt_id}")
right.caption("Agent's final answer")
with right:
    long_text(d.get("answer") or "–", key="dd_answer", name=f"answer-{attempt_id}")  # cut, with the whole a click away
m = st.columns(3) + st.columns(3)
m[0].metric("Score", "–" if d.get("score") is None else f"{d['score']:.3g}")
m[1].metric("Passed", {True: "yes", False: "no"}.get(d.get("passed"), "–"))
m[2].metric(
    "Status", plain(str(d.get("status")) + (f": {d['limit_text']}" if d.get("limit_text") else ""), max_chars=80)
)
m[3].metric(
    "Tokens in / out",
    "–"
    if d.get("input_tokens") is None and d.get("output_tokens") is None
    else f"{d.get('input_tokens') or 0:,} / {d.get('output_tokens') or 0:,}",
)
m[4].metric("Cost (USD)", "–" if d.get("cost_usd") is None else f"{d['cost_usd']:.4f}")
m[5].metric("Latency (s)", "–" if d.get("latency_s") is None else f"{d['latency_s']:.1f}")
if d.get("error_text"):
    st.text(f"Error: {d['error_text']}")  # log text: plain text, never markup
if d.get("grading"):
    g = d["grading"]
    st.caption(
        f"Grader (not counted in the agent's steps, tokens or cost): {len(g.get('model_calls') or [])} model "
        f"call(s), {g.get('input_tokens') or 0:,} / {g.get('output_tokens') or 0:,} tokens in / out"
    )
verdicts = cached(tr.judge_verdicts_of, attempt_id=attempt_id)
if d.get("judge") or not verdicts.empty:
    with st.expander("Judge verdict and rationale", expanded=True):
        if d.get("judge"):
            st.caption("From the log")
            st.text(str(d["judge"].get("brief_reason") or d["judge"].get("rationale") or ""))
            st.json(d["judge"], expanded=False)
        if not verdicts.empty:
            st.caption("Runlens LLM judge (python -m analytics judge), newest first")
            st.dataframe(verdicts, hide_index=True, key="dd_verdicts", width="stretch")
            download_buttons(verdicts, f"verdicts-{run_id}-{task_id}-{sample}", key="dd_verdicts_dl")

# --- neighbours: other samples, same task elsewhere ---------------------------------------------------------------
nav_left, nav_right = st.columns(2)
with nav_left:
    st.caption("Other samples of this task in this run")
    rows = attempts[attempts["task_id"] == task_id]
    cols = st.columns(max(len(rows), 1))
    for col, r in zip(cols, rows.itertuples(), strict=False):
        mark = {True: "✓", False: "✗"}.get(r.passed, "·")
        col.button(
            f"{int(r.sample)} {mark}",
            key=f"dd_s_{int(r.sample)}",
            disabled=int(r.sample) == sample,
            on_click=_go,
            args=(run_id, task_id, int(r.sample)),
        )
with nav_right:
    others = cached(tr.runs_with_task, benchmark=bench, task_id=task_id)
    others = others[others["run_id"] != run_id]
    if others.empty:
        st.caption("No other run attempted this task.")
    else:
        olabels = {
            r.run_id: f"{r.agent} {r.agent_version or ''} · {r.run_id} · pass {r.pass_rate:.0%}"
            for r in others.itertuples()
        }
        other = st.selectbox("Same task in another run", list(olabels), format_func=olabels.get, key="dd_other")
        st.button("Open", key="dd_open_other", on_click=_go, args=(other, task_id, 0))

# --- alignment with the reference and rule findings ---------------------------------------------------------------
align = cached(tr.alignment_frame, attempt_id=attempt_id, reference=tuple(d.get("reference_trajectory") or ()))
findings = cached(rules.attempt_findings, attempt_id=attempt_id)
step_op = dict(zip(align["step"].dropna().astype(int), align.loc[align["step"].notna(), "op"], strict=True))
diverge = align[align["is_first_divergence"]]
timeline, side = st.columns([3, 2])
with side:
    st.subheader("Against the reference")
    if not d.get("reference_trajectory"):
        st.info("The task has no reference trajectory.")
    else:
        covered = (align["op"] != "missing").all()
        st.markdown(
            f"Coverage: **{'covered' if covered else 'not covered'}** · "
            f"{(align['op'] == 'matched').sum()} matched · {(align['op'] == 'missing').sum()} missing · "
            f"{(align['op'] == 'extra').sum()} extra"
        )
        show = align.assign(divergence=align["is_first_divergence"].map({True: "◀ first divergence", False: ""}))
        show = show[["ref_index", "ref_tool", "op", "step", "tool", "divergence"]]
        st.dataframe(
            show.style.apply(lambda r: [f"color: {tr.OP_COLOURS[r['op']]}"] * len(r), axis=1),
            hide_index=True,
            key="dd_align",
            width="stretch",
        )
        download_buttons(show, f"alignment-{run_id}-{task_id}-{sample}", key="dd_align_dl")
    st.subheader("Findings")
    if findings.empty:
        st.caption("No error labels or rule findings.")
    else:
        st.dataframe(findings, hide_index=True, key="dd_findings", width="stretch")
        download_buttons(findings, f"findings-{run_id}-{task_id}-{sample}", key="dd_findings_dl")
    st.subheader("Human reviews")  # beside the log's labels, rule findings and judge verdicts above
    review.reviews_table(attempt_id, key="dd_reviews")
    # open after a save, so the confirmation drawn inside is seen (the rerun would collapse it)
    with st.expander("Review this attempt", expanded="dd_review_flash" in st.session_state):
        review.review_form(attempt_id, key="dd_review")


def _jump(page: int) -> None:
    ss.dd_page = page


def _step(raw: pd.Series, marks: pd.DataFrame) -> None:
    """One step of the timeline: header, arguments, content, result (folded when long), findings."""
    row = {k: (None if pd.isna(v) else v) for k, v in raw.items()}
    with st.container(border=True):
        if ss.dd_hit[:3] == (run_id, task_id, str(sample)) and ss.dd_hit[3] == str(int(row["step"])):
            st.markdown(":blue-badge[:material/search: search hit]")
        head, meta, badge = st.columns([1, 4, 2])
        head.markdown(f"**Step {int(row['step'])}**")
        tokens = (
            ""
            if row["input_tokens"] is None and row["output_tokens"] is None
            else f" · {row['input_tokens'] or 0:,.0f}/{row['output_tokens'] or 0:,.0f} tokens"
        )
        latency = "" if row["latency_s"] is None else f" · {row['latency_s']:.2f} s"
        rnd = "–" if row["round"] is None else int(row["round"])
        meta.text(f"round {rnd} · {row['kind']} · {row['tool'] or ''}{tokens}{latency}")
        op = step_op.get(int(row["step"]))
        if op:
            badge.markdown(
                OP_BADGE[op]
                + (
                    " :violet-badge[first divergence]"
                    if not diverge.empty
                    and pd.notna(diverge["step"].iloc[0])
                    and diverge["step"].iloc[0] == row["step"]
                    else ""
                )
            )
        if row["args"] is not None:
            st.code(json.dumps(json.loads(row["args"]), indent=2, ensure_ascii=False), language="json")
        if row["content"]:
            st.text(row["content"])
        if row["result_preview"] is not None:
            _result(row)
        if row["error"]:
            st.text(f"error: {row['error']}")
        for f in marks.itertuples():
            st.text(f"⚠ {f.code} ({f.source}): {f.detail or ''}")


def _result(row: dict) -> None:
    n_chars = int(row["result_chars"] or 0)
    if n_chars <= tr.PREVIEW_CHARS:
        st.text(row["result_preview"])
        return
    st.text(row["result_preview"] + " …")
    if st.toggle(f"Whole result ({n_chars:,} characters)", key=f"dd_full_{attempt_id}_{int(row['step'])}"):
        full = cached(tr.step_result, attempt_id=attempt_id, step=int(row["step"])) or ""
        st.text(full)
        st.download_button(
            "Download result",
            full.encode("utf-8"),
            f"result-step-{int(row['step'])}.txt",
            "text/plain",
            key=f"dd_dl_{attempt_id}_{int(row['step'])}",
            on_click="ignore",
        )


@st.fragment
def _timeline() -> None:
    st.subheader("Step timeline")
    if not d["n_steps"]:
        st.info("This attempt recorded no steps.")
        return
    size = st.segmented_control("Steps per page", PAGE_SIZES, default=25, key="dd_size") or 25
    n_pages = max(1, math.ceil(d["n_steps"] / size))
    if ss.get("dd_page", 1) > n_pages:
        ss.dd_page = 1
    page = st.number_input(f"Page (of {n_pages})", 1, n_pages, key="dd_page")
    if not diverge.empty and pd.notna(diverge["step"].iloc[0]):
        first = int(diverge["step"].iloc[0])
        st.button(
            f"Go to the first divergence (step {first})", key="dd_jump", on_click=_jump, args=(first // size + 1,)
        )
    steps = cached(tr.steps_page, attempt_id=attempt_id, offset=(int(page) - 1) * size, limit=size)
    for _, row in steps.iterrows():
        _step(row, findings[findings["step"] == row["step"]] if not findings.empty else findings)


with timeline:
    _timeline()
