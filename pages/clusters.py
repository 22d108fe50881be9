"""Failure clusters: failed attempts grouped by what their transcripts say (pinned sentence model, agglomerative
clustering), each named by its distinctive terms, with its size per run, its error codes and its attempts (each
opening the drilldown). Deep link: ``clusters?cl_run=<run_id>``."""

import streamlit as st

from analytics import clusters as cl
from analytics import llm
from analytics import trajectory as tr
from jobs.failures import embed_failures, label_clusters
from ui.common import (
    UrlField,
    cached,
    db_path,
    drilldown_url,
    empty_state,
    from_url,
    keep_in_url,
    plain,
    show_fig,
)
from ui.shell import page_setup
from ui.tables import Col, show_table

filters = page_setup(
    "Failure clusters",
    "Failed attempts embedded (final answer, last steps, tool errors) with all-MiniLM-L6-v2, clustered by "
    "cosine distance (average linkage, cut at 0.3) and named by their most distinctive terms (class TF-IDF).",
    unused=("agents", "dates"),
)
if not filters.benchmark:
    empty_state("The database holds no benchmark yet. Ingest logs with `python -m ingest PATH` or on the Upload page.")
runs = cached(tr.runs_of, benchmark=filters.benchmark)
options = ["(all runs)", *runs["run_id"]]
RUN = UrlField("cl_run", "cl_run", options[0], choices=options)
from_url([RUN])
if st.session_state.get("cl_run") not in options:  # a run deleted since, or another benchmark's
    st.session_state["cl_run"] = options[0]
run_pick = st.selectbox("Run", options, key="cl_run")
keep_in_url([RUN])
run_id = None if run_pick == "(all runs)" else run_pick
cfg = llm.llm_config()
try:
    clusters = cached(
        cl.failure_clusters, benchmark=filters.benchmark, run_id=run_id, label_model=cfg.model if cfg else None
    )
except cl.ClusterError as exc:
    empty_state(plain(f"{exc}."))
if clusters is None:
    st.info(
        "Some failed attempts have no embedding yet. Embedding runs on this machine (about 5-20 failures a second "
        "on two cores); `python -m analytics clusters --benchmark NAME` does the same."
    )
    if st.button("Embed the failed attempts", key="cl_embed", type="primary"):
        with st.spinner("Embedding failed attempts..."):
            n = embed_failures(db_path(), benchmark=filters.benchmark, run_id=run_id)
        st.success(f"{n} texts embedded.")
        st.rerun()
    st.stop()
if cfg is None:
    st.caption(
        "Clusters are named by their distinctive terms. With an OpenAI-compatible judge configured (OPENAI_BASE_URL, "
        "RUNLENS_JUDGE_MODEL) each cluster also gets a one-line LLM label from its terms and a few example texts, "
        "cached in the database so a cluster is never labelled twice."
    )
unlabelled = cfg is not None and bool(clusters.summary.query("cluster_id >= 0")["llm_label"].isna().any())
if unlabelled and st.button("Label the clusters with the LLM", key="cl_label"):
    with st.spinner("Asking the LLM for one line per cluster..."):
        n = label_clusters(db_path(), clusters, cfg=cfg)
    st.success(f"{n} clusters labelled.")
    st.rerun()

summary = clusters.summary
st.metric("Failed attempts", f"{clusters.n_failures:,}")
table = cl.display_table(summary)
show_table(table, key="cl_table", name=f"clusters-{filters.benchmark}", is_display=True)
long = cl.by_run_frame(clusters.summary)
show_fig(cl.fig_clusters_by_run(long), key="cl_fig", data=long, name="clusters-by-run")

labels = {int(r.cluster_id): f"{int(r.cluster_id)}: {r.label} ({r.n_attempts})" for r in summary.itertuples()}
cid = st.selectbox("Cluster", list(labels), format_func=labels.get, key="cl_pick")
members = clusters.members[clusters.members["cluster_id"] == cid]
members = members.assign(
    codes=members["codes"].map(", ".join),
    open=[
        drilldown_url(r, t, int(s))
        for r, t, s in zip(members["run_id"], members["task_id"], members["sample"], strict=True)
    ],
)
show_table(
    members,
    [
        Col("agent_version", "Agent version"),
        Col("task_id", "Task"),
        Col("sample", "Sample", "count"),
        Col("codes", "Codes"),
        Col("open", "Open", "link", link_text="drilldown"),
        Col("run_id", "Run", is_default=False),
    ],
    key="cl_members",
    name=f"cluster-{cid}",
    download=members.drop(columns="open"),
)
