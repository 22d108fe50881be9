"""The drilldown's pieces: one attempt's header (task, answers, outcome, judge), its reference panel (expected vs
actual actions, findings, reviews) and its step timeline drawn as a transcript, each role styled apart.

Everything from a log is drawn as plain text (st.text, st.code, dataframes): Markdown is only ever our own words
(labels and badges), so a hostile log cannot render links, images or HTML.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from analytics import formatting as fmt
from analytics import rules
from analytics import trajectory as tr
from ui import review
from ui.common import cached, long_text, plain
from ui.tables import Col, show_table

SIDE_PX = 300  # the drilldown's side column (2 of 5) at a 1280 px window

PAGE_SIZES = (10, 25, 50, 100)
PAGE_SIZE = 25  # steps per page until the reader picks another
FOLD_LINES = 12  # arguments (JSON) longer than this many lines are folded
OP_BADGE = {"matched": ":green-badge[matched]", "extra": ":orange-badge[extra]", "missing": ":red-badge[missing]"}
# step kind -> (chat role, avatar): people, the agent's own words, its tool calls and what tools returned
ROLES = {
    "user": ("user", ":material/person:"),
    "human": ("user", ":material/person:"),
    "system": ("system", ":material/settings:"),
    "tool_call": ("tool call", ":material/build:"),
    "tool_result": ("tool", ":material/output:"),
    "tool": ("tool", ":material/output:"),
    "error": ("error", ":material/error:"),
}
AGENT = ("assistant", ":material/smart_toy:")


def role_of(kind: str | None) -> tuple[str, str]:
    """(role, avatar) of a step kind; every kind not named is the agent speaking (model, message, final, ...)."""
    return ROLES.get(str(kind or "").lower(), AGENT)


def mark(passed: Any) -> str:
    """✓ passed, ✗ failed, · not scored."""
    marks: dict[bool | None, str] = {True: "✓", False: "✗"}
    return marks.get(None if pd.isna(passed) else bool(passed), "·")


def _passed(values: pd.Series) -> pd.Series:
    """``passed`` as nullable booleans, whatever the frame holds (bools, 0/1, None, NaN)."""
    if values.dtype == bool:
        return values.astype("boolean")
    return pd.Series(pd.array([None if pd.isna(v) else bool(v) for v in values], dtype="boolean"), index=values.index)


def task_marks(attempts: pd.DataFrame) -> dict[str, str]:
    """Per task of a run, in the run's order: ✓ every sample passed, ✗ none did, ◐ some did, · not scored.

    Vectorised: a run of 20,000 attempts is marked in milliseconds (a loop over groups took 0.4 s).
    """
    passed = _passed(attempts["passed"])
    frame = pd.DataFrame(
        {"task_id": attempts["task_id"].astype(str), "n": passed.notna(), "k": passed.fillna(False).astype(bool)}
    )
    agg = frame.groupby("task_id", sort=False)[["n", "k"]].sum()
    marks = np.select([agg["n"] == 0, agg["k"] == agg["n"], agg["k"] == 0], ["·", "✓", "✗"], "◐")
    return dict(zip(agg.index.astype(str), marks.tolist(), strict=True))


TASK_OPTIONS = 500  # a run's task picker lists at most this many tasks at once


def task_window(tasks: list[str], current: str | None, find: str = "", *, size: int = TASK_OPTIONS) -> list[str]:
    """The tasks a picker lists: those whose id contains ``find`` (any case), at most ``size`` of them around
    ``current`` when it is among them (else the first ones)."""
    needle = find.strip().lower()
    matches = [t for t in tasks if needle in t.lower()] if needle else tasks
    if len(matches) <= size:
        return list(matches)
    at = matches.index(current) if current in matches else 0
    start = min(max(0, at - size // 2), len(matches) - size)
    return matches[start : start + size]


def failed_neighbours(
    attempts: pd.DataFrame, task_id: str, sample: int
) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The failed attempts (task, sample) just before and just after the current one, in the run's order (the
    first failed one when the current attempt is not in the run)."""
    tasks = attempts["task_id"].astype(str).to_numpy()
    samples = attempts["sample"].astype(int).to_numpy()
    passed = _passed(attempts["passed"])
    failed = np.flatnonzero((passed == False).fillna(False).to_numpy(dtype=bool))  # noqa: E712 -- elementwise
    found = np.flatnonzero((tasks == str(task_id)) & (samples == int(sample)))
    here = int(found[0]) if len(found) else -1
    before, after = failed[failed < here], failed[failed > here]
    pick = lambda i: (str(tasks[i]), int(samples[i]))  # noqa: E731
    return (pick(before[-1]) if len(before) else None), (pick(after[0]) if len(after) else None)


def _num(value: Any, fmt: str) -> str:
    return "–" if value is None else format(value, fmt)


def attempt_header(d: dict[str, Any]) -> None:
    """The task, the reference and final answers, the outcome metrics, the error and the grader's usage."""
    attempt_id = int(d["attempt_id"])
    st.subheader("Task")
    st.text(d.get("query") or "(the log gives no query text)")
    m = st.columns(4)
    m[0].metric("Level", plain(d.get("level") or "–", max_chars=80))
    m[1].metric("Category", plain(d.get("category") or "–", max_chars=80))
    m[2].metric("Human minutes", _num(d.get("human_minutes"), "g"))
    m[3].metric("Steps / tool calls", f"{d['n_steps']} / {d['n_tool_calls']}")
    left, right = st.columns(2)
    left.caption("Reference answer")
    with left:
        long_text(d.get("reference_answer") or "–", key="dd_ref", name=f"reference-{attempt_id}")
    right.caption("Agent's final answer")
    with right:
        long_text(d.get("answer") or "–", key="dd_answer", name=f"answer-{attempt_id}")
    outcome = st.columns(3) + st.columns(3)
    outcome[0].metric("Score", _num(d.get("score"), ".3g"))
    yes_no: dict[bool | None, str] = {True: "yes", False: "no"}
    outcome[1].metric("Passed", yes_no.get(d.get("passed"), "–"))
    status = str(d.get("status")) + (f": {d['limit_text']}" if d.get("limit_text") else "")
    outcome[2].metric("Status", plain(status, max_chars=80))
    no_tokens = d.get("input_tokens") is None and d.get("output_tokens") is None
    tokens = "–" if no_tokens else f"{d.get('input_tokens') or 0:,} / {d.get('output_tokens') or 0:,}"
    outcome[3].metric("Tokens in / out", tokens)
    outcome[4].metric("Cost", fmt.usd(d.get("cost_usd")))  # dollars as every table writes them
    outcome[5].metric("Latency (s)", _num(d.get("latency_s"), ".1f"))
    if d.get("error_text"):
        st.text(f"Error: {d['error_text']}")
    if d.get("grading"):
        g = d["grading"]
        st.caption(
            f"Grader (not counted in the agent's steps, tokens or cost): "
            f"{fmt.plural(len(g.get('model_calls') or []), 'model call')}, "
            f"{g.get('input_tokens') or 0:,} / {g.get('output_tokens') or 0:,} tokens in / out"
        )


def judge_section(d: dict[str, Any], *, name: str) -> None:
    """The log's own judge verdict (from the attempt's row), and Runlens' stored LLM-judge verdicts, read when their
    panel is opened."""
    if d.get("judge"):
        with st.expander("Judge verdict and rationale", expanded=True):
            st.caption("From the log")
            st.text(str(d["judge"].get("brief_reason") or d["judge"].get("rationale") or ""))
            st.json(d["judge"], expanded=False)
    with st.expander("Runlens LLM judge verdicts", key="dd_verdicts_open", on_change="rerun") as box:
        if box.open:
            verdicts = cached(tr.judge_verdicts_of, attempt_id=int(d["attempt_id"]))
            if verdicts.empty:
                st.caption("No stored verdict for this attempt (`python -m analytics judge` adds them).")
            else:
                st.caption("Runlens LLM judge (python -m analytics judge), newest first")
                show_table(verdicts, key="dd_verdicts", name=f"verdicts-{name}")


def expected_actions(actions: list[dict[str, Any]], calls: pd.DataFrame, *, name: str) -> None:
    """The log's expected actions (tau-bench's ``actions``), each with whether the agent made that exact call
    (same tool, same arguments) and the steps where it called that tool at all."""
    st.subheader("Expected vs actual actions")
    exact: dict[tuple[str, str | None], list[int]] = {}
    by_tool: dict[str, list[int]] = {}
    for step, tool, args in zip(calls["step"], calls["tool"], calls["args"], strict=True):
        exact.setdefault((str(tool), tr.canonical_json(args)), []).append(int(step))
        by_tool.setdefault(str(tool), []).append(int(step))
    rows: list[dict[str, Any]] = []
    for i, action in enumerate(actions):
        tool, args = str(action.get("name")), tr.canonical_json(action.get("kwargs", action.get("arguments")))
        same = exact.get((tool, args), [])
        rows.append(
            {
                "#": i + 1,
                "expected action": tool,
                "made exactly": "✓ step " + ", ".join(map(str, same)) if same else "✗ no",
                "steps calling this tool": ", ".join(map(str, by_tool.get(tool, []))) or "never called",
                "expected arguments": args or "",
            }
        )
    table = pd.DataFrame(rows)
    n_made = sum(1 for r in rows if r["made exactly"].startswith("✓"))
    st.caption(
        f"{n_made} of {len(actions)} expected actions made exactly (same tool, same arguments); the agent made "
        f"{len(calls)} tool calls in all (the transcript shows each)."
    )
    show_table(table, key="dd_actions", name=f"actions-{name}", budget_px=SIDE_PX, is_display=True)


def reference_panel(d: dict[str, Any], align: pd.DataFrame, *, name: str) -> None:
    """Coverage of the reference trajectory and the alignment table."""
    st.subheader("Against the reference")
    if not d.get("reference_trajectory"):
        st.info("The task has no reference trajectory.")
    else:
        covered = (align["op"] != "missing").all()
        counts = align["op"].value_counts()
        st.markdown(
            f"Coverage: **{'covered' if covered else 'not covered'}** · {counts.get('matched', 0)} matched · "
            f"{counts.get('missing', 0)} missing · {counts.get('extra', 0)} extra"
        )
        show = align.assign(divergence=align["is_first_divergence"].map({True: "◀ first divergence", False: ""}))
        show = show[["ref_index", "ref_tool", "op", "step", "tool", "divergence"]]
        show_table(  # as text: a dash where a side has no step (never None), counts without decimals
            show,
            [  # what matched first; the rest one click away in the side column
                Col("op", "Match"),
                Col("ref_tool", "Reference tool", max_px=110),
                Col("tool", "Agent tool", max_px=110),
                Col("step", "Agent step", "count"),
                Col("ref_index", "Reference #", "count"),
                Col("divergence", "First divergence"),
            ],
            key="dd_align",
            name=f"alignment-{name}",
            budget_px=SIDE_PX,
        )


NO_FINDINGS = pd.DataFrame({"code": [], "source": [], "step": [], "detail": []})


def findings_panel(attempt_id: int, *, name: str) -> pd.DataFrame:
    """The attempt's error labels and rule findings, read when the panel is opened (the rules run over every step);
    returns them (none while closed) so the transcript marks them on their steps."""
    with st.expander("Findings: error labels and rule findings", key="dd_findings_open", on_change="rerun") as box:
        if not box.open:
            return NO_FINDINGS
        findings = cached(rules.attempt_findings, attempt_id=attempt_id)
        if findings.empty:
            st.caption("No error labels or rule findings.")
        else:
            show_table(findings, key="dd_findings", name=f"findings-{name}", budget_px=SIDE_PX)
            st.caption("Marked on their steps in the transcript.")
        return findings


def reviews_panel(attempt_id: int) -> None:
    """The attempt's human reviews (read when opened) and the review form."""
    with st.expander("Human reviews", key="dd_reviews_open", on_change="rerun") as box:
        if box.open:  # beside the log's labels, rule findings and judge verdicts above
            review.reviews_table(attempt_id, key="dd_reviews")
    # open after a save, so the confirmation drawn inside is seen (the rerun would collapse it)
    with st.expander("Review this attempt", expanded="dd_review_flash" in st.session_state):
        review.review_form(attempt_id, key="dd_review")


@dataclass(frozen=True)
class Timeline:
    """What the step timeline of one attempt needs besides its steps."""

    attempt_id: int
    n_steps: int
    findings: pd.DataFrame
    step_op: dict[int, str]  # step -> matched / extra (alignment with the reference)
    first_divergence: int | None
    hit_step: int | None  # a search hit's step, marked


def step_result(row: dict[str, Any], attempt_id: int) -> None:
    """A tool result: whole when short, else a preview with the whole text (and a download) one toggle away."""
    n_chars = int(row["result_chars"] or 0)
    if n_chars <= tr.PREVIEW_CHARS:
        st.text(row["result_preview"])
        return
    st.text(row["result_preview"] + " …")
    step = int(row["step"])
    if st.toggle(f"Whole result ({n_chars:,} characters)", key=f"dd_full_{attempt_id}_{step}"):
        full = cached(tr.step_result, attempt_id=attempt_id, step=step) or ""
        st.text(full)
        st.download_button(
            "Download result",
            full.encode("utf-8"),
            f"result-step-{step}.txt",
            "text/plain",
            key=f"dd_dl_{attempt_id}_{step}",
            on_click="ignore",
        )


def step_arguments(args: str, *, key: str) -> None:
    """A tool call's arguments as indented JSON, folded when longer than ``FOLD_LINES`` lines."""
    text = json.dumps(json.loads(args), indent=2, ensure_ascii=False)
    n_lines = text.count("\n") + 1
    if n_lines <= FOLD_LINES:
        st.code(text, language="json")
        return
    with st.expander(f"Arguments ({n_lines} lines)", expanded=False, key=key):
        st.code(text, language="json")


def step_message(raw: pd.Series, tl: Timeline) -> None:
    """One step as a transcript message: role, header, arguments, content, result, error and its findings."""
    row: dict[Any, Any] = {k: (None if pd.isna(v) else v) for k, v in raw.items()}
    step = int(row["step"])
    role, avatar = role_of(row["kind"])
    with st.chat_message(role, avatar=avatar):
        head, meta, badge = st.columns([1, 4, 2])
        head.markdown(f"**Step {step}**")
        tokens = (
            ""
            if row["input_tokens"] is None and row["output_tokens"] is None
            else f" · {row['input_tokens'] or 0:,.0f}/{row['output_tokens'] or 0:,.0f} tokens"
        )
        latency = "" if row["latency_s"] is None else f" · {row['latency_s']:.2f} s"
        rnd = "–" if row["round"] is None else int(row["round"])
        meta.text(f"{role} · round {rnd} · {row['kind']} · {row['tool'] or ''}{tokens}{latency}")
        badges = [OP_BADGE[tl.step_op[step]]] if step in tl.step_op else []
        if step == tl.first_divergence:
            badges.append(":violet-badge[first divergence]")
        if step == tl.hit_step:
            badges.append(":blue-badge[:material/search: search hit]")
        if badges:
            badge.markdown(" ".join(badges))
        if row["args"] is not None:
            step_arguments(row["args"], key=f"dd_args_{tl.attempt_id}_{step}")
        if row["content"]:
            st.text(row["content"])
        if row["result_preview"] is not None:
            step_result(row, tl.attempt_id)
        if row["error"]:
            st.text(f"error: {row['error']}")
        marks = tl.findings[tl.findings["step"] == step] if not tl.findings.empty else tl.findings
        for f in marks.itertuples():
            st.text(f"⚠ {f.code} ({f.source}): {f.detail or ''}")


def go_to_page(page: int) -> None:
    st.session_state.dd_page = page


@st.fragment
def timeline(tl: Timeline) -> None:
    """The steps, a page at a time (a fragment: paging reruns only this part of the page)."""
    st.subheader("Transcript")
    if not tl.n_steps:
        st.info("This attempt recorded no steps.")
        return
    size = st.segmented_control("Steps per page", PAGE_SIZES, default=PAGE_SIZE, key="dd_size") or PAGE_SIZE
    n_pages = max(1, math.ceil(tl.n_steps / size))
    if st.session_state.get("dd_page", 1) > n_pages:
        st.session_state.dd_page = 1
    page = st.number_input(f"Page (of {n_pages})", 1, n_pages, key="dd_page")
    if tl.first_divergence is not None:
        st.button(
            f"Go to the first divergence (step {tl.first_divergence})",
            key="dd_jump",
            on_click=go_to_page,
            args=(tl.first_divergence // size + 1,),
        )
    steps = cached(tr.steps_page, attempt_id=tl.attempt_id, offset=(int(page) - 1) * size, limit=size)
    for _, row in steps.iterrows():
        step_message(row, tl)
