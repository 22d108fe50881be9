"""Upload: drop log files, preview what was recognised, ingest with progress; ingest history; delete a run."""

import pandas as pd
import streamlit as st

import store as rdb
from ingest import upload_worker, uploads
from ui.common import cached, db_path, db_version, download_buttons, plain
from ui.shell import page_setup
from ui.upload_memory import release_uploads

page_setup(
    "Upload",
    "Validate first, then one transaction per file; identical content is never added twice. "
    "Formats: native JSONL, Inspect AI (.json/.eval), OpenAI-message trajectories, long and wide "
    "CSV (see docs/formats.md).",
    unused=("benchmark", "agents", "dates"),
)
read_only = uploads.is_read_only()
ss = st.session_state

if read_only:
    st.info("Uploading and deleting are switched off on this deployment (RUNLENS_READ_ONLY=1).")
else:
    limit_mb = uploads.upload_limit_mb()
    files = st.file_uploader(
        f"Log files (up to {limit_mb} MB each, {uploads.upload_total_mb()} MB at once; drop a results CSV together "
        "with its companion files)",
        accept_multiple_files=True,
        key=f"up_files_{ss.get('up_files_n', 0)}",  # a new key empties the uploader (see below)
    )
    for line in ss.pop("up_refused", ()):
        st.error(plain(line))
    c1, c2, c3, c4 = st.columns(4)
    fmt = c1.selectbox("Format", uploads.format_names(), key="up_format")
    mapping = c2.text_input("CSV mapping", key="up_mapping", placeholder="hal, swebench-verified, field=column,...")
    agent = c3.text_input("Agent (optional)", key="up_agent")
    bench = c4.text_input("Benchmark (optional)", key="up_benchmark")
    options = {"mapping": mapping.strip(), "agent": agent.strip(), "benchmark": bench.strip()}
    if files:
        verdicts = uploads.within_upload_limits([f.size for f in files])
        if any(verdicts):  # Streamlit holds every dropped file in the server's memory: drop them all from it
            release_uploads(files)
            ss.up_refused = [f"{f.name}: {why}." for f, why in zip(files, verdicts, strict=True) if why] + [
                "The files were dropped from the server; drop them again, within these limits."
            ]
            ss.up_files_n = ss.get("up_files_n", 0) + 1
            st.rerun()
        accepted = list(files)
        # checked in a worker with ingest's limits, once per set of files and options (not on every rerun)
        preview_key = (tuple(f.file_id for f in accepted), fmt, tuple(options.items()), db_version())
        if ss.get("up_preview_key") != preview_key:
            try:
                with st.spinner("Checking the files..."):
                    ss.up_previews = upload_worker.preview_uploads(
                        [(f.name, f) for f in accepted], db=db_path(), fmt=fmt, **options
                    )
            except rdb.RunlensError as exc:
                ss.up_previews = []
                st.error(plain(exc))
            ss.up_preview_key = preview_key
        previews = ss.up_previews
        table = pd.DataFrame(
            [
                {
                    "file": p.file,
                    "format": p.format,
                    "outcome": p.outcome,
                    "runs": p.n_runs,
                    "tasks": p.n_tasks,
                    "attempts": p.n_attempts,
                    "steps": p.n_steps,
                    "errors": p.n_errors,
                    "creates (run: benchmark, agent)": "; ".join(f"{r}: {b}, {a}" for r, b, a in p.runs) or "–",
                    "re-scores (new revision)": ", ".join(p.rescores) or "–",
                }
                for p in previews
            ]
        )
        st.subheader("Preview")
        st.dataframe(table, hide_index=True, key="up_preview", width="stretch")
        download_buttons(table, "upload-preview", key="up_preview_dl")
        for p in previews:
            if p.errors:
                st.caption(plain(f"First problems in {p.file}"))
                st.code("\n".join(p.errors), language=None)
        ready = [p.file for p in previews if p.outcome == "ready"]
        if st.button(f"Ingest {len(ready)} file(s)", key="up_go", disabled=not ready, type="primary"):
            bar = st.progress(0.0, text="Ingesting...")
            try:
                results = upload_worker.ingest_uploads(
                    [(f.name, f) for f in accepted],
                    ready,
                    db=db_path(),
                    fmt=fmt,
                    on_file=lambda i, r: bar.progress((i + 1) / len(ready), text=plain(f"Ingested {r.file}")),
                    **options,
                )
            except rdb.RunlensError as exc:
                results = []
                st.error(plain(exc))
            bar.progress(1.0, text="Done")
            created = {p.file: p.runs for p in previews}
            # kept for the next run of the page, which the rerun below starts: the sidebar's counts include the
            # new runs, and the results stay on screen with links to them
            ss.up_done = [(r, created.get(r.file, ())) for r in results]
            st.rerun()

for r, runs in ss.get("up_done") or []:
    name = plain(r.file)
    if r.outcome == "ingested":
        st.success(f"{name}: {r.n_runs} runs, {r.n_attempts} attempts, {r.n_steps} steps in {r.seconds:.1f} s")
        left, right = st.columns(2)
        for run_id, _, agent in runs:
            left.page_link(
                "pages/drilldown.py",
                label=plain(f"Open run {run_id} ({agent})"),
                icon=":material/manage_search:",
                query_params={"run": run_id},
            )
        for benchmark in dict.fromkeys(b for _, b, _ in runs):
            right.page_link(
                "pages/leaderboard.py",
                label=plain(f"Leaderboard of {benchmark}"),
                icon=":material/leaderboard:",
                query_params={"benchmark": benchmark},
            )
    elif r.outcome == "duplicate":
        st.info(f"{name}: already ingested; nothing added")  # name is plain() already
    else:
        st.error(f"{name}: rejected; nothing written")
        st.code(r.error, language=None)
    for warning in r.warnings:  # e.g. an Inspect log not scored yet: `inspect score` scores it
        st.warning(plain(warning), icon=":material/info:")

st.subheader("Ingest history")
history = cached(uploads.ingest_history)
failed = uploads.failed_uploads(db_path())
st.caption(
    "Files the database holds (and files released by deleting their runs). Rejected uploads write nothing "
    "to the database; they are listed below from the sidecar file beside it."
)
if history.empty:
    st.info("No file has been ingested into this database yet.")
else:
    st.dataframe(uploads.history_table(history), hide_index=True, key="up_history", width="stretch")
    download_buttons(history, "ingest-history", key="up_history_dl")
if not failed.empty:
    st.caption("Rejected uploads")
    st.dataframe(failed, hide_index=True, key="up_failed", width="stretch")
    download_buttons(failed, "rejected-uploads", key="up_failed_dl")

st.subheader("Delete a run")
runs = cached(uploads.run_list)
gone = cached(uploads.deletions)
if read_only:
    st.caption("Deleting is switched off on this deployment.")
elif runs.empty:
    st.info("The database holds no run to delete.")
else:
    run_id = st.selectbox("Run", runs["run_id"].tolist(), key="up_del_run")
    row = runs[runs["run_id"] == run_id].iloc[0]
    st.caption(
        f"{plain(row['benchmark'])} · {plain(row['agent'])} · {int(row['n_attempts'])} attempts. Its attempts, steps, "
        "labels, metrics, ratings and judge verdicts are removed in one transaction; the deletion is "
        "recorded in the audit log."
    )
    sure = st.checkbox(f"Yes, delete run {plain(run_id)}", key="up_del_confirm")
    if st.button("Delete run", key="up_del_go", disabled=not sure):
        try:
            done = rdb.delete_run(run_id, db=db_path(), actor="upload page")
        except rdb.RunlensError as exc:
            st.error(plain(exc))
        else:
            st.success(f"Deleted {plain(done.run_id)}: {done.n_attempts} attempts, {done.n_steps} steps.")
if not gone.empty:
    st.caption("Deletions (audit log)")
    st.dataframe(gone, hide_index=True, key="up_deleted", width="stretch")
    download_buttons(gone, "run-deletions", key="up_deleted_dl")
