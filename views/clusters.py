"""Failure clusters: failed attempts grouped by what went wrong (docs/failure_analysis.md), each named by its key
phrases (and an LLM's line when a judge endpoint is configured), with representative attempts, its share per run
and version and its trend, its error codes and its attempts (each opening the drilldown). Missing embeddings are
computed on the first visit, in the background and in a process of its own (documents, vectors and the clustering,
stored: migration 010; jobs/clusters_worker.py), with progress; later visits read the stored clustering until the
failures change. Deep link: ``clusters?cl_run=<run_id>``."""

import time
from dataclasses import replace

import streamlit as st

from analytics import clusters as cl
from analytics import llm
from analytics import trajectory as tr
from jobs.clusters_worker import worker_request
from jobs.failures import label_clusters
from store import RunFilter
from ui import background
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
from ui.tables import CHAR_PX, PAD_PX, Col, guess, show_table

MEMBERS_SHOWN = 2000
NAME_PX = 420  # the key phrases' (and the LLM label's) column: three phrases of two or three words read whole
NAME_CHARS = int((NAME_PX - PAD_PX) / CHAR_PX) - 2  # a longer name is cut at a word (whole in the downloads)

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
try:  # the stored clustering of the failures as they are now (computed once, by the job below)
    clusters = cached(
        cl.stored_clusters,
        benchmark=filters.benchmark,
        run_id=run_id,
        label_model=cfg.model if cfg else None,
        with_members=False,  # one cluster's members are read when it is picked
    )
except cl.ClusterError as exc:
    empty_state(plain(f"{exc}."))
if clusters is None:
    # what is missing is computed in a process of its own (documents, vectors, the clustering; DuckDB's memory and
    # the process's bounded there: jobs/clusters_worker.py), one job per store, benchmark and run: every visitor
    # meanwhile sees that job, and the clusters show once they are stored
    key = f"clusters|{db_path()}|{filters.benchmark}|{run_id}"
    job = background.get(key)
    if job is not None and job.is_done and job.error is None:  # it finished, and the failures changed since
        background.forget(key)
        job = None
    if job is not None and job.error is not None:
        st.error(f"Computing the clusters failed: {plain(job.error)}")
        if st.button("Try again", key="cl_retry"):
            background.forget(key)
            st.rerun()
        st.stop()
    request = worker_request(db_path(), benchmark=str(filters.benchmark), run_id=run_id)
    if job is None and not background.is_enabled():
        st.info(
            "The clusters of these failures are not computed yet (RUNLENS_AUTO_FIT=0: nothing starts by itself). "
            "Computing them builds each failure's document, embeds the new ones on this machine (thousands a "
            "second) and clusters them; the result is kept until the failures change."
        )
        if not st.button("Compute the clusters", key="cl_compute", type="primary"):
            st.stop()
        job = background.start_process(key, "jobs.clusters_worker", request)
        bar = st.progress(0.0, text="Computing the clusters...")
        while not job.is_done:  # the job's process computes; this session shows its progress until it ends
            bar.progress(job.fraction, text=plain(job.message))
            time.sleep(0.5)
        st.rerun()
    job = job or background.start_process(key, "jobs.clusters_worker", request)
    st.info(
        "The clusters of these failures are not computed yet: computing them now, in the background (the page "
        "fills itself when they are stored; later visits read them at once)."
    )

    @st.fragment(run_every=1.0)
    def wait_for_clusters() -> None:
        current = background.get(key)
        if current is None or current.is_done:
            st.rerun(scope="app")
        st.progress(current.fraction, text=plain(current.message))

    wait_for_clusters()
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
names = [h for h in ("Key phrases", "LLM label") if h in table.columns]
show_table(
    table.assign(**{h: table[h].map(lambda t: cl.cut_at_word(str(t), NAME_CHARS)) for h in names}),
    [replace(guess(h, table[h], is_display=True), label=h, max_px=NAME_PX if h in names else None) for h in table],
    key="cl_table",
    name=f"clusters-{filters.benchmark}",
    download=table,
    is_display=True,
)
long = cl.by_run_frame(clusters.summary)
show_fig(cl.fig_clusters_by_run(long), key="cl_fig", data=long, name="clusters-by-run")

labels = {int(r.cluster_id): f"{int(r.cluster_id)}: {r.label} ({r.n_attempts:,})" for r in summary.itertuples()}
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
shown = cached(
    cl.stored_members,
    benchmark=filters.benchmark,
    run_id=run_id,
    cluster_id=int(cid),
    limit=MEMBERS_SHOWN,
    key=clusters.key,  # the clustering shown (its key is not computed again: a pass over every failure)
)  # a cluster of 100,000 attempts: its first rows (read, cached and drawn at once), the rest in the stored table
shown = shown.assign(codes=shown["codes"].map(", ".join))
if int(picked["n_attempts"]) > len(shown):
    st.caption(
        f"Its first {len(shown):,} of {int(picked['n_attempts']):,} attempts, by run, task and sample (also in the "
        "downloads); `python -m analytics clusters --json` lists every member."
    )
shown = shown.assign(
    open=[
        drilldown_url(r, t, int(s)) for r, t, s in zip(shown["run_id"], shown["task_id"], shown["sample"], strict=True)
    ],
)
show_table(
    shown,
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
    download=shown.drop(columns="open"),
)
