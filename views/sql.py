"""SQL explorer: ad-hoc read-only SQL through the sandbox, schema browser, examples, charts, full downloads."""

from urllib.parse import quote, urlencode

import streamlit as st

from analytics import formatting as fmt
from analytics import llm
from analytics import sql_console as sb
from ui.budget_cache import shared_sql_cache
from ui.common import (
    UrlField,
    cached,
    db_path,
    db_version,
    download_buttons,
    drop_from_url,
    from_url,
    keep_in_url,
    plain,
    query_param,
    set_url,
    show_fig,
    url_params,
)
from ui.shell import page_setup
from ui.tables import Col, show_table, user_columns

LIMITS = sb.SandboxLimits()
PAGE_SIZE = 100
CHART_PARAMS = ("x", "y", "colour", "kind")
ss = st.session_state
filters = page_setup(
    "SQL",
    f"One read-only statement per run, stopped after {LIMITS.timeout_s:g} s or {LIMITS.memory_limit}; "
    f"the first {LIMITS.max_rows:,} rows are shown, downloads hold the full result. "
    "Ctrl+Enter runs the editor.",
    unused=("benchmark", "agents", "dates"),
)
gallery = {e.title: e for e in sb.examples()}
if not filters.benchmark:  # the schema and the examples still help; say why every result is empty
    st.info(
        "The database holds no runs yet, so queries return empty tables. Ingest logs with "
        "`python -m ingest PATH` or on the Upload page."
    )


def _run(sql: str, version: str, path: str, run_n: int) -> sb.SqlOutcome:
    # run_n changes on every Run click, so a click always runs; reruns (paging, charts) reuse the result,
    # held in a cache bounded in bytes (ui/budget_cache.py), not only in entries
    with st.spinner("Running the query in the sandbox..."):
        key = (sql, version, path, run_n)
        return shared_sql_cache().get_or_compute(key, lambda: sb.try_query(sql, db=path, limits=LIMITS))


def _share_link(sql: str) -> None:
    """The link that reopens this query (and its chart settings): absolute when the browser's address is known."""
    params = {"q": sql} | {k: v for k, v in url_params().items() if k in CHART_PARAMS}
    base = (st.context.url or "").split("?")[0] or "sql"  # AppTest and old clients give no address
    st.caption("Shareable link (opens this query, run, with its chart settings):")
    st.code(f"{base}?{urlencode(params, quote_via=quote)}", language=None, wrap_lines=True)


def _load(sql: str, *, run: bool) -> None:
    """Put SQL into the editor (a callback: widgets cannot change after they are drawn)."""
    ss.sql_editor = sql
    if run:
        ss.sql_current = sql
        ss.sql_run_n = ss.get("sql_run_n", 0) + 1


ss.setdefault("sql_history", [])
if "sql_current" not in ss:  # first visit: a shared link (?q=...) opens with its query, already run
    ss.sql_current = query_param("q")
if "sql_editor" not in ss:  # widget state is dropped while another page is shown
    ss.sql_editor = ss.sql_current or (next(iter(gallery.values())).sql if gallery else "FROM v_runs")

schema_objects, schema_columns = cached(sb.schema_objects), cached(sb.schema_columns)
st.subheader("Examples")
choice = st.selectbox("Example queries (queries/*.sql)", list(gallery), key="sql_example")
if choice:
    st.caption(gallery[choice].description)
    st.button(
        "Load and run",
        key="sql_load_example",
        on_click=_load,
        args=(gallery[choice].sql,),
        kwargs={"run": True},
        icon=":material/play_arrow:",
    )

if llm.llm_config() is None:
    st.caption(
        "Ask in English is off: no OpenAI-compatible endpoint is configured "
        "(set OPENAI_BASE_URL and RUNLENS_JUDGE_MODEL)."
    )
else:
    with st.expander("Ask in English", icon=":material/chat:"):
        question = st.text_input("Question", key="sql_question", placeholder="Which agent is cheapest per passed task?")
        if st.button("Write SQL", key="sql_ask") and question:
            try:
                ss.sql_proposed = sb.ask_sql(
                    question, schema=sb.schema_text(schema_objects, schema_columns), gallery=list(gallery.values())
                )
            except llm.LLMError as exc:
                st.error(plain(f"The model could not be reached: {exc}"))
        if ss.get("sql_proposed"):
            st.caption("Proposed SQL (review it; it runs only when you click, inside the same sandbox):")
            st.code(ss.sql_proposed, language="sql")
            st.button(
                "Run this SQL", key="sql_run_proposed", on_click=_load, args=(ss.sql_proposed,), kwargs={"run": True}
            )

editor, schema = st.columns([2, 1])  # the schema box is wide enough for a column's name and its whole type
with editor.form("sql_form"):
    st.text_area("SQL", key="sql_editor", height=220)
    if st.form_submit_button("Run", key="sql_run", type="primary", shortcut="Ctrl+Enter", icon=":material/play_arrow:"):
        ss.sql_current = ss.sql_editor
        ss.sql_run_n = ss.get("sql_run_n", 0) + 1
with schema.container(height=330, border=True):  # beside the editor, where a name is looked up while typing
    names = list(schema_objects["name"])
    first = names.index("v_runs") if "v_runs" in names else 0  # the view most questions start from
    obj = st.selectbox("Schema: columns of", names, index=first, key="sql_schema_obj")
    columns = schema_columns[schema_columns["name"] == obj][["column", "type"]]
    show_table(
        columns,
        # the box is about 235 px at 1280: a type (VARCHAR[], TIMESTAMP) whole, a name of up to 20 characters
        [Col("column", "Column", max_px=145), Col("type", "Type", max_px=80)],
        key="sql_schema_cols",
        name=f"columns-{obj}",
        budget_px=225,
        is_downloadable=False,
    )
with st.expander("All tables and views", icon=":material/schema:"):
    # a view's rows are counted only on request: the count runs the view over the whole store
    if st.toggle("Count the views' rows too (runs each view)", key="sql_count_views"):
        schema_objects = cached(sb.schema_objects, count_views=True)
    show_table(
        schema_objects,
        [
            Col("name", "Name"),
            Col("kind", "Kind"),
            Col("n_rows", "Rows", "count"),
            Col("n_columns", "Columns", "count"),
            Col("description", "Description"),
        ],
        key="sql_schema",
        name="schema-objects",
    )
    download_buttons(columns, f"columns-{obj}", key="sql_schema_cols_dl")
sql = (ss.get("sql_current") or "").strip()
if not sql:
    st.stop()
if query_param("q") != sql:  # another query: the last one's chart settings do not apply to it
    drop_from_url(*CHART_PARAMS)
    set_url({"q": sql})
outcome = _run(sql, db_version(), db_path(), ss.get("sql_run_n", 0))
if not ss.sql_history or ss.sql_history[-1]["sql"] != sql:
    rows = outcome.result.n_rows if outcome.result else None
    ss.sql_history.append({"sql": sql, "rows": rows, "error": outcome.error_kind})
editor.caption("The query that ran:")
editor.code(sql, language="sql", wrap_lines=True)  # highlighted; the editor above is a plain text box

if outcome.result is None:
    head = {
        "refused": "Refused",
        "timeout": "Stopped (time limit)",
        "memory": "Stopped (memory limit)",
        "permission": "Refused by the engine",
    }.get(outcome.error_kind or "", "DuckDB error")
    st.error(f"{head}" + (f" at line {outcome.line}" if outcome.line else "") + ":")
    st.code(outcome.error or "", language=None)
    _share_link(sql)
    st.stop()

res = outcome.result
count = f"{res.n_rows:,}" if res.is_count_exact else f"at least {res.n_rows:,}"
st.caption(
    f"{count} row{'' if res.n_rows == 1 else 's'} · {len(res.df.columns)} column{'' if len(res.df.columns) == 1 else 's'}"
    f" · {res.elapsed_s:.2f} s" + (f" · showing the first {len(res.df):,}" if res.is_truncated else "")
)
n_pages = max(1, -(-len(res.df) // PAGE_SIZE))
page = st.pagination(n_pages, key="sql_page") if n_pages > 1 else 1
shown = res.df.iloc[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
# the user's own columns under their own names, NULL as a dash; the downloads below hold the raw values
show_table(shown, user_columns(shown), key="sql_result", name="query", is_downloadable=False)
left, right = st.columns(2)
left.download_button(
    "CSV (full result)",
    lambda: sb.export_result(sql, "csv", db=db_path(), limits=LIMITS),
    "query.csv",
    "text/csv",
    key="sql_dl_csv",
    icon=":material/download:",
    on_click="ignore",
)
right.download_button(
    "Parquet (full result)",
    lambda: sb.export_result(sql, "parquet", db=db_path(), limits=LIMITS),
    "query.parquet",
    "application/octet-stream",
    key="sql_dl_parquet",
    icon=":material/download:",
    on_click="ignore",
)

chart_fields: list[UrlField] = []
if len(res.df.columns) >= 2 and not res.df.empty:
    cols = [str(c) for c in res.df.columns]
    numeric = [str(c) for c in res.df.select_dtypes("number").columns] or cols
    chart_fields = [
        UrlField("sql_chart_x", "x", cols[0], choices=cols),
        UrlField("sql_chart_y", "y", numeric[-1], choices=numeric),
        UrlField("sql_chart_color", "colour", "", choices=["", *cols]),
        UrlField("sql_chart_kind", "kind", sb.CHART_KINDS[0], choices=sb.CHART_KINDS),
    ]
    for f in chart_fields:  # a new query's columns: a choice kept from the last result may no longer exist
        if f.key in ss and ss[f.key] not in (f.choices or ()):
            del ss[f.key]
    from_url(chart_fields)
    with st.expander("Chart this", icon=":material/bar_chart:", expanded=bool(query_param("x"))):
        c1, c2, c3, c4 = st.columns(4)
        x = c1.selectbox("x", cols, key="sql_chart_x")
        y = c2.selectbox("y", numeric, key="sql_chart_y")
        color = c3.selectbox("colour", ["", *cols], key="sql_chart_color", format_func=lambda c: c or "(none)")
        kind = c4.selectbox("kind", sb.CHART_KINDS, key="sql_chart_kind")
        chart_cols = list(dict.fromkeys(c for c in (x, y, color) if c))
        show_fig(
            sb.fig_result(res.df, x=x, y=y, color=color or None, kind=kind),
            key="sql_chart",
            data=res.df[chart_cols],
            name="query-chart",
        )
    keep_in_url(chart_fields)
_share_link(sql)

with st.expander(f"Query history ({len(ss.sql_history)})", icon=":material/history:"):
    for i, item in enumerate(reversed(ss.sql_history)):
        status = item["error"] or fmt.plural(item["rows"], "row")
        st.button(
            plain(f"{status}: {item['sql'][:90]}"),  # a shared sql?q= link must not put Markdown here
            key=f"sql_hist_{i}",
            on_click=_load,
            args=(item["sql"],),
            kwargs={"run": True},
        )
