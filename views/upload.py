"""Upload: drop log files, preview what was recognised, ingest with progress; ingest history; delete a run."""

from typing import Any

import pandas as pd
import streamlit as st

import store as rdb
from analytics import formatting as fmtx
from ingest import upload_worker, uploads
from ui.common import cached, db_path, db_version, plain
from ui.index_refresh import show_index_refresh, start_index_refresh
from ui.shell import page_setup
from ui.tables import Col, show_table
from ui.upload_memory import release_uploads

PREVIEW_COLS = [
    Col("file", "File"),
    Col("creates", "Creates (run: benchmark, agent)"),
    Col("outcome", "Outcome"),
    Col("attempts", "Attempts", "count"),
    Col("runs", "Runs", "count"),
    Col("tasks", "Tasks", "count"),
    Col("steps", "Steps", "count"),
    Col("errors", "Problems", "count"),
    Col("rescores", "Re-scores (new revision)"),
    Col("retries", "Retry"),
    Col("partial", "Partial traces (attempts)", "count"),
    Col("format", "Format"),
]
CREATED_COLS = [Col("run", "Run"), Col("benchmark", "Benchmark"), Col("agent", "Agent"), Col("file", "File")]
MAX_RUN_LINKS = 12  # more runs than this: the leaderboard lists them

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
        key=f"up_files_{ss.get('up_round', 0)}",  # a new key after an ingest: the ingested files leave the box
    )
    for line in ss.pop("up_refused", ()):
        st.error(plain(line))
    c1, c2, c3, c4 = st.columns(4)
    fmt = c1.selectbox("Format", uploads.format_names(), key="up_format")
    mapping = c2.text_input("CSV mapping", key="up_mapping", placeholder="hal, swebench-verified, field=column,...")
    agent = c3.text_input("Agent (optional)", key="up_agent")
    bench = c4.text_input("Benchmark (optional)", key="up_benchmark")
    options: dict[str, Any] = {"mapping": mapping.strip(), "agent": agent.strip(), "benchmark": bench.strip()}
    if files:
        verdicts = uploads.within_upload_limits([f.size for f in files])
        if any(verdicts):  # Streamlit holds every dropped file in the server's memory: drop them all from it
            release_uploads(files)
            ss.up_refused = [f"{f.name}: {why}." for f, why in zip(files, verdicts, strict=True) if why] + [
                "The files were dropped from the server; drop them again, within these limits."
            ]
            ss.up_round = ss.get("up_round", 0) + 1
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
                    # one run in full; several are listed in their own table below (one cell would be cut off)
                    "creates": (
                        "; ".join(f"{r}: {b}, {a}" for r, b, a in p.runs)
                        if len(p.runs) < 2
                        else f"{fmtx.plural(len(p.runs), 'run')} (listed below)"
                    )
                    or None,
                    "rescores": ", ".join(p.rescores) or None,
                    # "run X: retry of run Y (benchmark)": the errored run it supersedes (store.retries)
                    "retries": "; ".join(p.retries) or None,
                    # attempts of traces without their root span: stored, and marked partial (never as whole)
                    "partial": p.n_partial,
                }
                for p in previews
            ]
        )
        st.subheader("Preview")
        show_table(table, PREVIEW_COLS, key="up_preview", name="upload-preview")
        if any(len(p.runs) > 1 for p in previews):
            st.caption("The runs these files create")
            show_table(
                pd.DataFrame(
                    [{"file": p.file, "run": r, "benchmark": b, "agent": a} for p in previews for r, b, a in p.runs]
                ),
                CREATED_COLS,
                key="up_created",
                name="upload-runs",
            )
        for p in previews:
            if p.errors:
                st.caption(plain(f"First problems in {p.file}"))
                st.code("\n".join(p.errors), language=None)
        ready = [p.file for p in previews if p.outcome == "ready"]
        if not ready:
            st.caption("No file here is ready to ingest (see the outcomes above).")
        elif st.button(f"Ingest {fmtx.plural(len(ready), 'file')}", key="up_go", type="primary"):
            bar = st.progress(0.0, text="Ingesting...")

            def on_file(i: int, r: Any) -> None:
                bar.progress((i + 1) / len(ready), text=plain(f"Ingested {r.file}"))

            try:
                results = upload_worker.ingest_uploads(
                    [(f.name, f) for f in accepted],
                    ready,
                    db=db_path(),
                    fmt=fmt,
                    on_file=on_file,
                    **options,
                )
            except rdb.RunlensError as exc:
                results = []
                st.error(plain(exc))
            bar.progress(1.0, text="Done")
            created = {p.file: (p.runs, p.retries) for p in previews}
            # kept for the next run of the page, which the rerun below starts: the sidebar's counts include the
            # new runs, and the results stay on screen with links to them (and the runs they retry)
            ss.up_done = [(r, *created.get(r.file, ((), ()))) for r in results]
            ss.up_round = ss.get("up_round", 0) + 1  # empty the upload box: what is done is listed below
            ss.up_index = start_index_refresh(results, str(db_path()))
            st.rerun()

done = ss.get("up_done") or []
new_runs: dict[str, tuple[str, str]] = {}  # run id -> (benchmark, agent), each run once however many files made it
notes: list[str] = []
for r, runs, retries in done:
    name = plain(r.file)
    if r.outcome == "ingested":
        partial = (
            f"; {fmtx.plural(r.n_partial, 'attempt')} stored as partial traces (no root span; marked partial)"
            if r.n_partial
            else ""
        )
        retried = plain(f"; {'; '.join(retries)}") if retries else ""  # "run X: retry of run Y (benchmark)"
        st.success(
            f"{name}: {fmtx.plural(r.n_runs, 'run')}, {fmtx.plural(r.n_attempts, 'attempt')}, "
            f"{fmtx.plural(r.n_steps, 'step')} in {r.seconds:.1f} s{partial}{retried}"
        )
        new_runs.update({run_id: (bench, agent) for run_id, bench, agent in runs})
    elif r.outcome == "duplicate":
        st.info(f"{name}: already ingested; nothing added")  # name is plain() already
    else:
        st.error(f"{name}: rejected; nothing written")
        st.code(r.error, language=None)
    notes += [f"{r.file}: {w}" for w in r.warnings]
if new_runs:
    left, right = st.columns(2)
    for run_id, (bench, agent) in list(new_runs.items())[:MAX_RUN_LINKS]:
        left.page_link(  # the run's own benchmark: the sidebar (and the demo banner) follow the run
            "views/drilldown.py",
            label=plain(f"Open run {run_id} ({agent})"),
            icon=":material/manage_search:",
            query_params={"run": run_id, "benchmark": bench},
        )
    if len(new_runs) > MAX_RUN_LINKS:
        left.caption(f"and {fmtx.plural(len(new_runs) - MAX_RUN_LINKS, 'more run')}: see the leaderboard.")
    for bench in dict.fromkeys(b for b, _ in new_runs.values()):
        right.page_link(
            "views/leaderboard.py",
            label=plain(f"Leaderboard of {bench}"),
            icon=":material/leaderboard:",
            query_params={"benchmark": bench},
        )
if done:
    show_index_refresh(ss.get("up_index"))
if notes:  # e.g. Inspect samples not scored yet: one line, the list on demand
    st.warning(
        plain(f"{fmtx.plural(len(notes), 'note')} from reading the files, e.g. {notes[0]}"), icon=":material/info:"
    )
    with st.expander(f"All {fmtx.plural(len(notes), 'note')}"):
        st.text("\n".join(notes))

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
    table = uploads.history_table(history)
    # what came in, when and how it went first; the folder (a server's temporary upload folder) and hash on demand
    later = [c for c in ("Folder", "Hash") if c in table.columns]
    table = table[[c for c in table.columns if c not in later] + later]
    show_table(table, key="up_history", name="ingest-history", download=history, is_display=True)
if not failed.empty:
    st.caption("Rejected uploads")
    show_table(failed, key="up_failed", name="rejected-uploads")

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
        f"{plain(row['benchmark'])} · {plain(row['agent'])} · {fmtx.plural(row['n_attempts'], 'attempt')}. Its attempts, steps, "
        "labels, metrics, ratings, judge verdicts and the long texts no other run names are removed in one "
        "transaction; the deletion is recorded in the audit log."
    )
    sure = st.checkbox(f"Yes, delete run {plain(run_id)}", key="up_del_confirm")
    if st.button("Delete run", key="up_del_go", disabled=not sure):
        try:
            done = rdb.delete_run(run_id, db=db_path(), actor="upload page")
        except rdb.RunlensError as exc:
            st.error(plain(exc))
        else:
            st.success(
                f"Deleted {plain(done.run_id)}: {done.n_attempts:,} attempts, {done.n_steps:,} steps, "
                f"{fmtx.plural(done.n_texts, 'long text')}."
            )
if not gone.empty:
    st.caption("Deletions (audit log)")
    show_table(gone, key="up_deleted", name="run-deletions")
