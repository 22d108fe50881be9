"""Drilldown: one attempt -- task, answers, judge, cost -- and its transcript aligned with the reference.

Deep links: ``drilldown?run=<run_id>&task=<task_id>&sample=<n>`` (``ui.common.drilldown_url``); ``&step=<n>``
marks a search hit. The run list follows the sidebar's filters (a linked run is shown even outside them). Everything
that comes from a log is drawn as text (ui/transcript.py), never as Markdown or HTML.
"""

import dataclasses

import pandas as pd
import streamlit as st

from analytics import formatting as fmt
from analytics import trajectory as tr
from analytics.runs import run_label
from ui import transcript
from ui.common import cached, empty_state, plain, query_param, set_url, show_fig
from ui.shell import page_setup

filters = page_setup(
    "Drilldown",
    "One attempt: the task, the answers, the judge, and its transcript next to the reference trajectory. "
    "Runs follow the sidebar's filters. Log content is shown as plain text.",
)
ss = st.session_state
link = (query_param("run"), query_param("task"), query_param("sample"))
runs = cached(tr.runs_of, run_filter=filters, include=link[0])
if runs.empty:
    empty_state(
        "No run matches the sidebar's filters. Change them, or ingest logs with `python -m ingest PATH` "
        "or on the Upload page."
    )

# A deep link (or a click elsewhere that changed the URL) re-seeds the pickers; otherwise they keep their state.
# So does a return to this page (Forward, or Back from another page): Streamlit dropped the pickers' state while
# the other page ran, and the URL holds this page's view.
if ss.get("dd_link") != link or "dd_run" not in ss:
    ss.dd_link = link
    if link == (None, None, None):  # Back to a view without an attempt in its URL: the first attempt again
        for key in ("dd_run", "dd_task", "dd_sample"):
            ss.pop(key, None)
    if link[0] in set(runs["run_id"]):
        ss.dd_run, ss.dd_task = link[0], link[1]
        ss.dd_sample = int(asked) if (asked := link[2] or "").isdigit() else None
        ss.dd_page = 1
    elif link[0]:
        st.warning("The linked run is not in the database; pick one below.")
hit = (*link, query_param("step"))  # a search hit (views/search.py): its step is marked and its page shown
if ss.get("dd_hit") != hit and (hit_step := hit[3] or "").isdigit():
    ss.dd_page = int(hit_step) // (ss.get("dd_size") or 25) + 1
ss.dd_hit = hit


def keep_valid(key: str, options: list, fallback: object) -> None:
    """A picker's remembered value, or ``fallback`` when it is no longer an option."""
    if ss.get(key) not in options:
        ss[key] = fallback


def open_attempt(run_id: str, task_id: str, sample: int) -> None:
    set_url({"run": run_id, "task": task_id, "sample": str(sample)})


labels = {  # the one run-label rule (agent, version when it adds something, date), then the run id and benchmark
    r.run_id: " · ".join([run_label(r.agent, r.agent_version, r.eval_date), str(r.run_id), fmt.text(r.benchmark)])
    + (" (outside the sidebar's filters)" if r.is_filtered_out else "")
    for r in runs.itertuples()
}
keep_valid("dd_run", list(labels), next(iter(labels)))
c_run, c_task, c_sample = st.columns([5, 3, 1])
run_id = c_run.selectbox("Run", list(labels), key="dd_run", format_func=labels.__getitem__)
bench = str(runs.loc[runs["run_id"] == run_id, "benchmark"].iloc[0])
marks = cached(tr.task_marks_of, run_id=run_id)  # one row per task (kept at ingest), not the run's attempts
if not marks:
    empty_state("This run has no attempts.")
if link[0] == run_id and link[1] is not None and link[1] not in marks:  # a stale or hand-edited link: say so
    st.info(
        plain(f"The link's task {link[1]!r} is not in run {run_id}; showing its first task."),
        icon=":material/link_off:",
    )
keep_valid("dd_task", list(marks), next(iter(marks)))
# A run of many tasks (66,667 at 10M attempts) is not one list: a search box, and the tasks around the current one
find = (
    c_task.text_input("Find a task", key="dd_find", placeholder=f"{len(marks):,} tasks: part of an id")
    if len(marks) > transcript.TASK_OPTIONS
    else ""
)
shown_tasks = transcript.task_window(list(marks), ss.dd_task, find)
if not shown_tasks:
    c_task.caption(plain(f"No task of this run contains {find!r}."))
    shown_tasks = transcript.task_window(list(marks), ss.dd_task, "")
keep_valid("dd_task", shown_tasks, shown_tasks[0])
task_id = c_task.selectbox(
    "Task (✓ passed, ✗ failed, ◐ some samples)", shown_tasks, key="dd_task", format_func=lambda t: f"{marks[t]} {t}"
)
if len(shown_tasks) < len(marks):
    c_task.caption(f"{len(shown_tasks):,} of {len(marks):,} tasks listed; search for the others.")
details = cached(tr.task_attempts, run_id=run_id, task_id=task_id)  # every sample of the task, one statement
if not details:
    empty_state("This task has no attempts in this run.")
samples = list(details)
if link[:2] == (run_id, task_id) and link[2] is not None and (not link[2].isdigit() or int(link[2]) not in samples):
    st.info(
        plain(
            f"The link's sample {link[2]!r} is not one of task {task_id}'s ({', '.join(map(str, samples))}); "
            f"showing sample {samples[0]}."
        ),
        icon=":material/link_off:",
    )
keep_valid("dd_sample", samples, samples[0])
sample = c_sample.selectbox("Sample", samples, key="dd_sample")
# the attempt the URL implies: what it names, else the first run, its first task, that task's first sample
implied = (link[0] or next(iter(labels)), link[1] or next(iter(marks)), link[2] or str(samples[0]))
if (run_id, task_id, str(sample)) != implied:
    set_url({"run": run_id, "task": task_id, "sample": str(sample)}, if_changed=True)
    ss.dd_link = (run_id, task_id, str(sample))
# else the URL already says which attempt this is (a link to a run opens on its first attempt): it stays as it came,
# so a first visit is one history entry


# --- moving around: failed attempts of this run, other samples, the same task elsewhere -------------------------
def open_failed(run_id: str, task_id: str, sample: int, side: int) -> None:
    """The failed attempt before (side 0) or after (1) this one, found when the button is pressed."""
    target = cached(tr.failed_around, run_id=run_id, task_id=task_id, sample=sample)[side]
    if target is not None:
        open_attempt(run_id, *target)


# whether there is one on either side, from the task marks and this task's samples (no read)
has_before, has_after = tr.failed_on_either_side(
    marks, {s: r.get("passed") for s, r in details.items()}, task_id, sample
)
nav = st.columns([2, 2, 3, 3])
nav[0].button(
    "◀ Previous failed",
    key="dd_prev_failed",
    disabled=not has_before,
    on_click=open_failed,
    args=(run_id, task_id, sample, 0),
)
nav[1].button(
    "Next failed ▶",
    key="dd_next_failed",
    disabled=not has_after,
    on_click=open_failed,
    args=(run_id, task_id, sample, 1),
)
with nav[2]:
    st.caption("Samples of this task")
    for col, (s, r) in zip(st.columns(max(len(details), 1)), details.items(), strict=False):
        col.button(
            f"{s} {transcript.mark(r.get('passed'))}",
            key=f"dd_s_{s}",
            disabled=s == sample,
            on_click=open_attempt,
            args=(run_id, task_id, s),
        )
with nav[3].expander("Same task in another run", key="dd_other_open", on_change="rerun") as other_box:
    if other_box.open:  # read when opened
        others = cached(tr.runs_with_task, benchmark=bench, task_id=task_id)
        others = others[others["run_id"] != run_id]
        if others.empty:
            st.caption("No other run attempted this task.")
        else:
            olabels = {
                r.run_id: f"{run_label(r.agent, r.agent_version)} · {r.run_id} · pass {fmt.pct(r.pass_rate, 0)}"
                for r in others.itertuples()
            }
            other = st.selectbox("Run", list(olabels), format_func=olabels.__getitem__, key="dd_other")
            st.button("Open", key="dd_open_other", on_click=open_attempt, args=(other, task_id, 0))

if st.toggle("Coverage across the runs of this benchmark (AD-Bench Figures 3 and 4)", key="dd_overview"):
    by_level = cached(tr.coverage_by_level, run_filter=dataclasses.replace(filters, benchmark=bench))
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

d = details[sample]
attempt_id = int(d["attempt_id"])
name = f"{run_id}-{task_id}-{sample}"
transcript.attempt_header(d)
transcript.judge_section(d, name=name)  # the log's judge from the row; Runlens' verdicts read when opened

if notice := tr.partial_notice(d.get("trace_partial")):  # never shown as a whole attempt (docs/formats.md)
    st.warning(plain(notice), icon=":material/broken_image:")
# the tool calls (one statement) align the transcript with the reference: its badges, the expected actions and
# the alignment table (``alignment_frame`` computed from the same calls)
size = ss.get("dd_size") or transcript.PAGE_SIZE
if 0 < int(d["n_steps"]) <= size:  # the transcript's one page holds every step: its read gives the calls too
    calls = tr.tool_calls_in(cached(tr.steps_page, attempt_id=attempt_id, offset=0, limit=size))
else:
    calls = cached(tr.tool_calls_of, attempt_id=attempt_id)
align = tr.alignment_rows(calls, tuple(d.get("reference_trajectory") or ()))
diverge = align.loc[align["is_first_divergence"], "step"].dropna()
timeline, side = st.columns([3, 2])
with side:
    if d.get("expected_actions"):
        transcript.expected_actions(d["expected_actions"], calls, name=name)
    transcript.reference_panel(d, align, name=name)
    findings = transcript.findings_panel(attempt_id, name=name)  # read when opened; then marked on the steps too
    transcript.reviews_panel(attempt_id)
with timeline:
    transcript.timeline(
        transcript.Timeline(
            attempt_id=attempt_id,
            n_steps=int(d["n_steps"]),
            findings=findings,
            step_op={int(s): str(o) for s, o in zip(align["step"], align["op"], strict=True) if pd.notna(s)},
            first_divergence=int(diverge.iloc[0]) if not diverge.empty else None,
            hit_step=int(hit_step)
            if hit[:3] == (run_id, task_id, str(sample)) and (hit_step := hit[3] or "").isdigit()
            else None,
        )
    )
