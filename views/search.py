"""Search: find words, phrases or RE2 regular expressions in the transcripts the sidebar filters keep (answers,
step contents, tool arguments, tool results, errors); every hit opens the drilldown at its step.
Deep link: ``search?q=<query>&mode=phrase|words|regex``. Snippets are log text: shown as plain text only."""

import streamlit as st

from analytics import search as sr
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
    "Search",
    "Phrase (case-insensitive, every character literal), whole words in any order, or an RE2 regular expression, "
    "across answers, step contents, tool arguments and results (long results included). The match is shown "
    "between ⟦ and ⟧.",
)
ss = st.session_state
if not filters.benchmark:
    empty_state("The database holds no benchmark yet. Ingest logs with `python -m ingest PATH` or on the Upload page.")
# shareable: the query and the mode come from the URL on a first visit and after Back/Forward
URL_FIELDS = [UrlField("se_q", "q", ""), UrlField("se_mode", "mode", "phrase", choices=sr.MODES)]
from_url(URL_FIELDS)
ss["se_q"] = (ss.get("se_q") or "")[: sr.MAX_QUERY_CHARS]
left, right = st.columns([2, 1])  # the three match modes fit beside the box at 1280 px
query = left.text_input("Search the transcripts", key="se_q", max_chars=sr.MAX_QUERY_CHARS)
mode = right.segmented_control("Match", sr.MODES, key="se_mode") or "phrase"
keep_in_url(URL_FIELDS)
if not query.strip():
    empty_state(
        f"Type a phrase to search the transcripts of **{plain(filters.benchmark)}** (the sidebar filters apply)."
    )
try:
    result = cached(sr.search, run_filter=filters, query=query, mode=mode, limit=500)
except sr.SearchError as exc:
    st.error(plain(str(exc)))
    st.stop()

c1, c2, c3 = st.columns(3)
# a search through the index stops once its page is full: its counts are then "at least", with an estimate
at_least = "" if result.is_count_exact else "≥ "
c1.metric("Attempts with a hit", f"{at_least}{result.n_attempts:,}")
c2.metric("Hits (attempt × step)", f"{at_least}{result.n_hits:,}")
c3.metric("Listed", f"{len(result.hits):,}")
st.caption(sr.how_searched(result))
if result.hits.empty:
    empty_state("No transcript matches. Try fewer words, the words mode, or widen the sidebar filters.")
hits = result.hits.assign(
    match=[
        sr.marked(s, a, n)
        for s, a, n in zip(result.hits["snippet"], result.hits["match_start"], result.hits["match_len"], strict=True)
    ],
    open=[
        drilldown_url(r, t, int(s), step=None if str(p) == "<NA>" else int(p))
        for r, t, s, p in zip(
            result.hits["run_id"], result.hits["task_id"], result.hits["sample"], result.hits["step"], strict=True
        )
    ],
)
show_table(
    hits,
    [
        Col("task_id", "Task"),
        Col("sample", "Sample", "count"),
        Col("step", "Step", "count"),
        Col("field", "Where"),
        Col("passed", "Passed", "flag"),
        Col("open", "Open", "link", link_text="drilldown"),
        Col("match", "Match"),
        Col("run_id", "Run", is_default=False),
    ],
    key="se_hits",
    name=f"search-{filters.benchmark}",
    download=hits.drop(columns=["open"]),
)

labels = {
    i: f"{r.run_id} · {r.task_id} · sample {int(r.sample)} · "
    + ("answer" if str(r.step) == "<NA>" else f"step {int(r.step)} {r.field}")
    for i, r in enumerate(hits.itertuples())
}
pick = st.selectbox("Hit", list(labels), format_func=labels.__getitem__, key="se_pick")
chosen = hits.iloc[int(pick or 0)]
st.text(chosen["match"])
params = {"run": chosen["run_id"], "task": chosen["task_id"], "sample": str(int(chosen["sample"]))}
if str(chosen["step"]) != "<NA>":
    params["step"] = str(int(chosen["step"]))
st.page_link(
    "views/drilldown.py",
    label="Open this hit in the drilldown",
    icon=":material/open_in_new:",
    query_params=link_params(params),
)
