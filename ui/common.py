"""Shared page helpers: setup, global filters (kept in the URL), cached analytics calls, downloads, charts.

Every page starts with ``ui.shell.page_setup()`` and reads data only through ``cached(fn, **kwargs)``, which
opens a short-lived read-only connection to the published snapshot and caches the result keyed by the
database version, so new data invalidates it (see store/backends/file.py for the concurrency design).
"""

from __future__ import annotations

import datetime as dt
import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import pandas as pd
import streamlit as st

import store as rdb
from analytics import csvsafe
from analytics.plaintext import md_plain, plotly_unplain

if TYPE_CHECKING:  # Plotly is imported by the pages that draw (about 0.5 s), not by the app's shell at start-up
    import plotly.graph_objects as go

# THE helper for any text from a log that goes into Markdown (labels, captions, info boxes, subheaders,
# buttons): shown literally, never as a link, an image or formatting. Charts are escaped in show_fig.
plain = md_plain


Filters = rdb.RunFilter  # the sidebar's filters are the store's one run filter, passed whole to analytics


def db_path() -> str:
    """The database path (``RUNLENS_DB`` or the default)."""
    return str(rdb.resolve_db_path())


PINNED_KEY = "_rl_pinned_version"
SNAPSHOT_PREFIX = "snapshot:"


def db_version() -> str:
    """The data version this page run reads (pinned by ``pin_version`` when the run starts; part of every cache
    key). A team store's is its snapshot id: every query of one page run reads that one snapshot."""
    return st.session_state.get(PINNED_KEY) or rdb.db_version(db_path())


def pin_version() -> str | None:
    """Pin this page run to the store's current version, or to the link's ``?as_of=`` snapshot on a team store.

    Returns a sentence for the page when the link pins the past (or asks for time travel the store lacks).
    """
    path = db_path()
    as_of = query_param("as_of")
    notice = None
    store = rdb.open(path)
    version = store.version()
    if as_of and store.supports_as_of:
        try:
            snapshot, at = store.resolve_as_of(as_of)
        except rdb.RunlensError as exc:
            notice = f"The link's as_of could not be used ({exc}); showing the latest data."
        else:
            version = f"{SNAPSHOT_PREFIX}{snapshot}"
            notice = f"Pinned to snapshot {snapshot} (committed {at:%Y-%m-%d %H:%M} UTC) by the link's as_of."
    elif as_of:
        notice = "The link asks for a past state (as_of), but this store is a single file without time travel."
    st.session_state[PINNED_KEY] = version
    return notice


def store_caption() -> str | None:
    """Which team store and snapshot this page run reads (None for a DuckDB file: the usual case says nothing)."""
    where = rdb.open(db_path()).caption()
    snapshot = _as_of(str(st.session_state.get(PINNED_KEY) or ""))
    return where if where is None or snapshot is None else f"{where} · snapshot {snapshot}"


def _as_of(version: str) -> int | None:
    return int(version[len(SNAPSHOT_PREFIX) :]) if version.startswith(SNAPSHOT_PREFIX) else None


@st.cache_data(show_spinner=False, max_entries=512)
def _cached_call(
    key: str, version: str, path: str, kwargs: tuple[tuple[str, Any], ...], _fn: Callable[..., Any]
) -> Any:
    # the cache key is the function's qualified name (``key``), the data version, the path and the arguments;
    # ``_fn`` itself is called, not looked up by name, so a reader (or a tool) follows the page's call into it.
    # A team store is read at the pinned snapshot, so one page run never mixes two states of the data.
    with rdb.reader(path, as_of=_as_of(version)) as con:
        return _fn(con, **dict(kwargs))


def write(fn: Callable[..., Any], /, *, store: str | None = None, **kwargs: Any) -> Any:
    """Call ``fn(con, **kwargs)`` in one writer session of the store (derived data a page asked for, e.g. an IRT
    fit); the published snapshot shows it on the next rerun. Pages never open connections themselves.

    ``store`` names the store when the call runs outside the page's run (a background job); default: this one.
    """
    with rdb.writer(store or db_path()) as con:
        return fn(con, **kwargs)


def cached(fn: Callable[..., Any], **kwargs: Any) -> Any:
    """Call ``fn(con, **kwargs)`` on a read-only connection, cached until the data changes."""
    return _cached_call(f"{fn.__module__}.{fn.__qualname__}", db_version(), db_path(), _frozen(kwargs), fn)


@st.cache_data(show_spinner=False, max_entries=64)  # an entry per rate tried (a TMF overview: 30 kB on the demo)
def _cached_then(
    key: str,
    version: str,
    path: str,
    kwargs: tuple[tuple[str, Any], ...],
    then_key: str,
    then_kwargs: tuple[tuple[str, Any], ...],
    _fn: Callable[..., Any],
    _then: Callable[..., Any],
    _fn_result: Any = None,
) -> Any:
    base = _cached_call(key, version, path, kwargs, _fn) if _fn_result is None else _fn_result
    return _then(base, **dict(then_kwargs))


def cached_then(
    fn: Callable[..., Any],
    then: Callable[..., Any],
    then_kwargs: Mapping[str, Any],
    *,
    fn_result: Any = None,
    **kwargs: Any,
) -> Any:
    """``then(cached(fn, **kwargs), **then_kwargs)``, itself cached: when only ``then_kwargs`` change (a new TMF
    hourly rate), ``fn``'s cached result is finished again and ``fn`` is not called. ``fn_result``: this page
    run's ``cached(fn, **kwargs)`` when the caller holds it (the run is pinned to one data version), finished as
    it is instead of another copy out of the cache (a large result's unpickling)."""
    frozen = _frozen(kwargs)
    return _cached_then(
        f"{fn.__module__}.{fn.__qualname__}",
        db_version(),
        db_path(),
        frozen,
        f"{then.__module__}.{then.__qualname__}",
        _frozen(then_kwargs),
        fn,
        then,
        fn_result,
    )


def _frozen(kwargs: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kwargs.items()))


def query_param(name: str, default: str | None = None) -> str | None:
    """One query parameter, or the default."""
    value = st.query_params.get(name)
    return value if value not in (None, "") else default


# The page's URL is read and written only through ui/ (pages never touch st.query_params: tests/test_layers.py).
# Each call below that changes the URL is one change of the browser's address, so one history entry.


def url_params() -> dict[str, str]:
    """Every parameter of the page's URL, in the URL's order (the last value of a repeated one)."""
    return st.query_params.to_dict()


def set_url(values: Mapping[str, str], *, if_changed: bool = False, replace: Sequence[str] = ()) -> None:
    """Put ``values`` into the URL in one change; with ``if_changed``, only when one of them differs from it.
    ``replace`` names parameters the change also takes out when ``values`` lacks them (still one change)."""
    if if_changed and all(st.query_params.get(k) == v for k, v in values.items()):
        return
    if replace:
        now = st.query_params.to_dict()
        after = {**{k: v for k, v in now.items() if k not in replace}, **values}
        if after != now:
            st.query_params.from_dict(after)
        return
    st.query_params.update(values)


def pop_url(*params: str) -> None:
    """Take parameters out of the URL (each one present is one change); widget state is left alone (see
    ``drop_from_url`` for parameters a ``UrlField`` keeps)."""
    for name in params:
        st.query_params.pop(name, None)


@dataclass(frozen=True)
class UrlField:
    """A widget whose value a link carries: its session-state key, its URL parameter, its default, and what the
    link may ask for (one of ``choices``, a number within ``bounds``, a flag when the default is a bool, free
    text when it is a string)."""

    key: str
    param: str
    default: Any
    choices: Sequence[Any] | None = None
    bounds: tuple[float, float] | None = None


URL_WRITTEN = "_url_written"  # session key: each parameter's text as keep_in_url last wrote it (None: left out)


def restore_from_url(fields: Sequence[UrlField]) -> list[str]:
    """Seed each widget from the link on the page's first run, and again whenever the URL no longer holds what
    ``keep_in_url`` last wrote there (the browser's Back or Forward put an earlier view's URL back, so that view is
    restored). Return a notice for every value the link asks for that cannot be used (an unknown choice is dropped,
    a number out of range is clamped), never an error."""
    ss, notices = st.session_state, []
    written = ss.setdefault(URL_WRITTEN, {})
    for f in fields:
        raw = query_param(f.param)
        if f.key in ss:
            if f.param not in written or raw == written[f.param]:
                continue
            written.pop(f.param)
            if raw is None:  # Back to a view that had the default
                ss[f.key] = f.default
                continue
        elif raw is None:
            continue
        if f.choices is not None:
            match = next((c for c in f.choices if str(c) == raw), None)
            if match is None:
                notices.append(
                    f"The link's {f.param} {raw!r} is not one of {', '.join(map(str, f.choices))}; using {f.default}."
                )
            else:
                ss[f.key] = match
        elif isinstance(f.default, bool):
            ss[f.key] = raw.lower() in ("1", "true", "yes", "on")
        elif isinstance(f.default, str):  # free text (a search query): the widget bounds its length
            ss[f.key] = raw
        else:
            try:
                value = float(raw)
            except ValueError:
                notices.append(f"The link's {f.param} {raw!r} is not a number; using {f.default:g}.")
                continue
            lo, hi = f.bounds or (-math.inf, math.inf)
            if not lo <= value <= hi:  # NaN included
                value = min(max(value if math.isfinite(value) else f.default, lo), hi)
                notices.append(f"The link's {f.param} {raw} is outside {lo:g}–{hi:g}; using {value:g}.")
            ss[f.key] = value
    return notices


def from_url(fields: Sequence[UrlField]) -> None:
    """``restore_from_url`` for a page's widgets, each notice shown (plain text), and every widget not set by the
    link starting at its field's default (so the widgets are drawn without a second default of their own)."""
    for notice in restore_from_url(fields):
        st.info(plain(notice), icon=":material/link_off:")
    for f in fields:
        st.session_state.setdefault(f.key, f.default)
        if f.choices is not None and st.session_state[f.key] is None:  # a segmented control clicked off
            st.session_state[f.key] = f.default


def drop_from_url(*params: str) -> None:
    """Take parameters out of the URL because the page moved on (not because of Back): the widgets keep their
    values, and ``keep_in_url`` writes them again where they still apply."""
    written = st.session_state.setdefault(URL_WRITTEN, {})
    for name in params:
        st.query_params.pop(name, None)
        written.pop(name, None)


def keep_in_url(fields: Sequence[UrlField]) -> None:
    """Write each widget's current value into the URL (defaults left out, so a plain link stays short)."""
    written = st.session_state.setdefault(URL_WRITTEN, {})
    for f in fields:
        value = st.session_state.get(f.key, f.default)
        if value == f.default:
            st.query_params.pop(f.param, None)
            written[f.param] = None
            continue
        text = (
            ("1" if value else "0")
            if isinstance(value, bool)
            else f"{value:g}"
            if isinstance(value, float)
            else str(value)
        )
        if st.query_params.get(f.param) != text:
            st.query_params[f.param] = text
        written[f.param] = text


def current_filters() -> Filters:
    """The filters the sidebar holds now."""
    ss = st.session_state
    agents = tuple(ss.get("flt_agents") or ())
    dates: tuple[dt.date, ...] = ss.get("flt_dates") or ()
    date_from = dates[0] if len(dates) > 0 else None
    date_to = dates[1] if len(dates) > 1 else None
    return rdb.RunFilter(ss.get("flt_benchmark") or None, tuple(agents), date_from, date_to)


def empty_state(message: str) -> NoReturn:
    """Explain why there is nothing to show, and stop the page."""
    st.info(message)
    st.stop()


def download_buttons(df: pd.DataFrame, name: str, *, key: str) -> None:
    """CSV and Parquet downloads of a table, encoded only when clicked; a click does not rerun the page."""
    left, right = st.columns(2)
    left.download_button(
        "CSV",
        lambda: csvsafe.csv_bytes(df),  # formula prefixes neutralised (OWASP); Parquet keeps raw values
        f"{name}.csv",
        "text/csv",
        key=f"{key}_csv",
        icon=":material/download:",
        on_click="ignore",
    )
    right.download_button(
        "Parquet",
        lambda: parquet_bytes(df),
        f"{name}.parquet",
        "application/octet-stream",
        key=f"{key}_parquet",
        icon=":material/download:",
        on_click="ignore",
    )


def parquet_bytes(df: pd.DataFrame) -> bytes:
    """``df`` as a Parquet file in memory."""
    buf = io.BytesIO()
    _parquet_safe(df).to_parquet(buf, index=False)
    return buf.getvalue()


def _parquet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Columns of Python objects (dicts, mixed types) become JSON-ish text so Parquet accepts them."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object:
            sample = out[col].dropna()
            if not sample.empty and not all(isinstance(v, str) for v in sample.head(100)):
                out[col] = out[col].map(lambda v: None if v is None else str(v))
    return out


PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def show_fig(
    fig: go.Figure, *, key: str, data: pd.DataFrame | None = None, name: str = "chart", select: bool = False
) -> Any:
    """Draw a Plotly figure (PNG from its toolbar) with a download of its data; return the selection."""
    from analytics.figures import plain_figure

    event = st.plotly_chart(
        plain_figure(fig),  # log text in ticks, legends and hovers shows as text, never as a link
        key=key,
        config=PLOTLY_CONFIG,
        width="stretch",
        on_select="rerun" if select else "ignore",
        selection_mode="points" if select else ("points", "box", "lasso"),
    )
    if data is not None and not data.empty:
        with st.expander("Chart data", expanded=False):
            download_buttons(data, name, key=f"{key}_data")
    return event


def selected_custom_data(event: Any) -> list[Any]:
    """The ``customdata`` of the points selected in a chart (ids for drilldown)."""
    try:
        points = event.selection.points  # type: ignore[union-attr]
    except AttributeError:
        return []
    # show_fig escaped the figure's data; ids come back as the analytics code wrote them
    return [plotly_unplain(p.get("customdata")) for p in points if p.get("customdata") is not None]


def new_selection(key: str) -> list[Any]:
    """The ``customdata`` of the points selected in chart ``key`` when the selection changed since the last run
    (a click), else nothing: a selection a chart keeps must not win again over a newer click elsewhere. Readable
    before the chart is drawn in this run, so what a click picks can be shown above the chart."""
    picked = selected_custom_data(st.session_state.get(key))
    seen = st.session_state.setdefault("_selections_seen", {})
    if picked == seen.get(key):
        return []
    seen[key] = picked
    return picked


def link_params(params: dict[str, str] | None = None) -> dict[str, str]:
    """Query parameters for a link to another page of the app: ``params`` plus the sidebar's filters (the
    benchmark always), so the page opened has nothing to add to its URL (an addition would be a second history
    entry, and Back would stop on it instead of returning to this page)."""
    shown = st.session_state.get("flt_link") or {}
    return {**{k: str(v) for k, v in shown.items() if v}, **(params or {})}


def drilldown_url(
    run_id: str, task_id: str | None = None, sample: int | None = None, *, step: int | None = None
) -> str:
    """Relative link to the drilldown page for one run, or one attempt (and a step to highlight)."""
    from urllib.parse import urlencode

    params: dict[str, Any] = {"run": run_id}
    if task_id is not None:
        params["task"] = task_id
    if sample is not None:
        params["sample"] = int(sample)
    if step is not None:
        params["step"] = int(step)
    return "drilldown?" + urlencode(params)


LONG_TEXT_CHARS = 20_000


def long_text(text: str, *, key: str, name: str, max_chars: int = LONG_TEXT_CHARS) -> None:
    """Log text as plain text, cut at ``max_chars`` (a 1 MB answer would otherwise be sent to the browser whole)
    with a toggle that shows all of it and a download of the whole text."""
    if len(text) <= max_chars:
        st.text(text)
        return
    is_whole = st.toggle(f"Whole text ({len(text):,} characters)", key=f"{key}_whole")
    st.text(text if is_whole else text[:max_chars] + " …")
    st.download_button(
        "Download the whole text",
        text.encode("utf-8"),
        f"{name}.txt",
        "text/plain",
        key=f"{key}_dl",
        icon=":material/download:",
        on_click="ignore",
    )
