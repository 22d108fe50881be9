"""Failure clusters: failed attempts grouped by what went wrong (docs/failure_analysis.md), each named by its key
phrases (and an LLM's line when a judge endpoint is configured), with representative attempts, its share per run
and version and its trend, its error codes and its attempts (each opening the drilldown). Missing embeddings are
computed in the background on the first visit, with progress. Deep link: ``clusters?cl_run=<run_id>``."""

import streamlit as st

from analytics import clusters as cl
from analytics import llm
from analytics import trajectory as tr
from jobs.failures import embed_failures, label_clusters
from store import RunFilter
from ui import background
from ui.common import (
    UrlField,
    cached,
    db_path,
    db_version,
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
    "Each failed attempt's document (the error that ended it, else its answer against the reference; ids, numbers "
    "and boilerplate cut) embedded by a static model distilled from all-MiniLM-L6-v2, clustered with the number of "
    "clusters chosen from the data (a tree cut where groups stop being similar), named by key phrases (class TF-IDF).",
    unused=("agents", "dates"),
)
if not filters.benchmark:
    empty_state("The database holds no benchmark yet. Ingest logs with `python -m ingest PATH` or on the Upload page.")
runs = cached(tr.runs_of, run_filter=RunFilter(benchmark=filters.benchmark))
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
    if not background.is_enabled():
        st.info(
            "Some failed attempts have no embedding yet (RUNLENS_AUTO_FIT=0: nothing starts by itself). Embedding "
            "runs on this machine, thousands of failures a second; `python -m analytics clusters --benchmark NAME` "
            "does the same."
        )
        if st.button("Embed the failed attempts", key="cl_embed", type="primary"):
            with st.spinner("Embedding failed attempts..."):
                n = embed_failures(db_path(), benchmark=filters.benchmark, run_id=run_id)
            st.success(f"{n} texts embedded.")
            st.rerun()
        st.stop()
    # the first visit embeds what is missing in the background (once per store, benchmark, run and data version);
    # every visitor meanwhile sees the same job, and the clusters show as soon as the vectors are stored
    key = f"cluster-embed|{db_path()}|{filters.benchmark}|{run_id}|{db_version()}"
    job = background.start(key, embed_failures, db_path(), benchmark=filters.benchmark, run_id=run_id)
    st.info("Some failed attempts have no embedding yet: embedding them now, in the background.")
    if job.error is not None:
        st.error(f"Embedding failed: {plain(job.error)}")
        if st.button("Try again", key="cl_retry"):
            background.forget(key)
            st.rerun()
        st.stop()

    @st.fragment(run_every=1.0)
    def wait_for_vectors() -> None:
        current = background.get(key)
        if current is None or current.is_done:
            st.rerun(scope="app")
        st.progress(current.fraction, text=current.message)

    wait_for_vectors()
    st.stop()
if cfg is None:
    st.caption(
        "Clusters are named by their key phrases. With an OpenAI-compatible judge configured (OPENAI_BASE_URL, "
        "RUNLENS_JUDGE_MODEL) each cluster also gets a short LLM label from its phrases and representative "
        "attempts, cached in the database so a cluster is never labelled twice."
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
cid = st.selectbox("Cluster", list(labels), format_func=labels.__getitem__, key="cl_pick")
picked = summary[summary["cluster_id"] == cid].iloc[0]
if picked["trend"]:
    st.caption(plain(f"Over agent versions: {picked['trend']}."))
st.caption("Representative attempts (nearest the cluster's centre):")
for rep, doc in zip(picked["representatives"], picked["examples"], strict=True):
    st.markdown(
        f"[{plain(rep['run_id'])} · {plain(rep['task_id'])} · sample {int(rep['sample'])}]"
        f"({drilldown_url(rep['run_id'], rep['task_id'], int(rep['sample']))})"
    )
    st.text(doc)
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
