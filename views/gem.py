"""GEM-Bench: ad-injected responses. Tables 2, 3, 6, quality vs cost, judge agreement, ad density, response viewer."""

import pandas as pd
import streamlit as st

from analytics import formatting as fmt
from analytics import gem
from ui.common import (
    UrlField,
    cached,
    empty_state,
    from_url,
    keep_in_url,
    plain,
    query_param,
    show_fig,
)
from ui.shell import page_setup
from ui.tables import Col, show_table

filters = page_setup(
    "GEM-Bench",
    "GEM-Bench (ad-injected response generation): embedding metrics of each response, six LLM-judge dimensions "
    "(0/30/60/90), agreement between judges and with people, and the extra tokens each solution spends.",
    unused=("agents", "dates"),
)
benches = cached(gem.gem_benchmarks)
if not benches:
    empty_state(
        "No GEM-style data yet: no responses with GEM metrics or GEM judge ratings. Ingest runs whose "
        "attempts carry `ads` and `metrics` (see docs/gem.md), or load the demo dataset."
    )
default = filters.benchmark if filters.benchmark in benches else (query_param("gem_benchmark") or benches[0])
bench = st.selectbox(
    "GEM benchmark", benches, index=benches.index(default) if default in benches else 0, key="gem_bench"
)
if bench != filters.benchmark:
    st.caption(f"The sidebar's benchmark has no GEM data; showing **{plain(bench)}**.")

c1, c2 = st.columns(2)
SOURCE = UrlField("gem_source", "metrics", "log", choices=list(gem.SOURCES))
from_url([SOURCE])
source = (
    c1.segmented_control(
        "Quantitative metrics",
        list(gem.SOURCES),
        key="gem_source",
        help="log: the values that came with the run (published numbers for the demo); "
        "computed: recomputed from the response text by `python -m analytics gem-metrics`",
    )
    or "log"
)
keep_in_url([SOURCE])
raters = cached(gem.llm_raters, benchmark=bench)
rater = c2.selectbox("Judge", raters or ["(none)"], key="gem_rater")
v = cached(gem.view, benchmark=bench, source=source, rater=rater if raters else None)
if source == "computed" and v.models:
    st.caption(f"Computed metrics from the embedding model **{plain(v.models[0])}** (CTR always comes from the log).")
if source == "computed" and "computed" not in v.sources:
    st.warning(
        "No computed metrics are stored yet: run `python -m analytics gem-metrics` (embeds every response "
        "with all-MiniLM-L6-v2, offline). Table 2 stays empty until then (CTR alone is not shown as a score); "
        "**log** shows the values that came with the run."
    )

datasets = sorted(set(v.cost["dataset"]) | set(v.qualitative["dataset"]) | set(v.quantitative["dataset"]))
solutions = sorted(set(v.cost["solution"]) | set(v.qualitative["solution"]) | set(v.quantitative["solution"]))
f1, f2 = st.columns(2)
pick_d = f1.multiselect("Datasets", datasets, default=datasets, key="gem_datasets")
pick_s = f2.multiselect("Solutions", solutions, default=solutions, key="gem_solutions")


def _sel(df, *, k1: bool = True):
    df = df[df["dataset"].isin(pick_d) & df["solution"].isin(pick_s)]
    return (df[df["k"] == 1] if k1 else df).drop(columns=["solution"])


def _cols(df: pd.DataFrame, *, as_named: tuple[str, ...] = ()) -> list[Col]:
    """A GEM table's columns under the page's names (``Solution``, ``ITTFT``; ``as_named`` kept as they are, such
    as judges' names), metrics to two decimals, counts whole, each with its meaning as the header's tooltip."""
    names = dict(zip(df.columns, gem.display_table(df.head(0)).columns, strict=True))
    cols = []
    for name in df.columns:
        label = str(name) if name in as_named else str(names[name])
        values = df[name]
        if pd.api.types.is_integer_dtype(values) or label in ("k", "n"):
            kind = "count"
        elif pd.api.types.is_float_dtype(values):
            kind = "number"
        else:
            kind = "text"
        cols.append(Col(str(name), label, kind, digits=2, help=gem.COLUMN_HELP.get(label)))
    return cols


for title, df, key in (
    (f"Table 2 · quantitative ({source}, x 100)", v.quantitative, "gem_t2"),
    (f"Table 3 · qualitative (judge {v.rater})", v.qualitative, "gem_t3"),
    ("Table 6 · cost (extra tokens; overall = 0.5 x ITTFT + OTTFT)", v.cost, "gem_t6"),
):
    st.subheader(plain(title))
    table = _sel(df)
    if table.empty:
        st.caption("No data for this selection.")
        continue
    show_table(table, _cols(table), key=key, name=f"{bench}-{key}")

st.subheader("Quality against cost")
qc = gem.quality_cost(v)
qc = qc[qc["dataset"].isin(pick_d) & qc["solution"].isin(pick_s)]
axis = (
    st.segmented_control("Quality", ["qualitative", "quantitative"], default="qualitative", key="gem_qaxis")
    or "qualitative"
)
if qc.empty or qc[axis].isna().all():
    st.caption("Needs both scores and token counts for the selection.")
else:
    show_fig(gem.fig_quality_cost(qc, quality=axis), key="gem_qc", data=qc, name=f"{bench}-quality-cost")

st.subheader("Agreement")
if not v.judges.empty:
    st.caption(
        "Table 4: qualitative overall per judge. Spearman between judges on the attempts both rated and "
        "on the dataset x solution cells."
    )
    judges = v.judges[v.judges["dataset"].isin(pick_d) & v.judges["solution"].isin(pick_s)]
    raters_shown = tuple(str(c) for c in judges.columns if c not in ("dataset", "solution"))
    show_table(judges, _cols(judges, as_named=raters_shown), key="gem_t4", name=f"{bench}-judges")
    undefined = "– where fewer than three pairs, or one judge gave every item the same score"
    show_table(
        v.agreement,
        [
            Col("judge_a", "Judge A"),
            Col("judge_b", "Judge B"),
            Col("spearman_attempts", "ρ over attempts", "number", digits=3, help=f"Spearman ({undefined})"),
            Col("n_attempts", "Attempts both rated", "count"),
            Col("spearman_cells", "ρ over cells", "number", digits=3, help=f"Spearman ({undefined})"),
            Col("n_cells", "Dataset x solution cells", "count"),
        ],
        key="gem_agree",
        name=f"{bench}-judge-agreement",
    )
if v.human is not None:
    h = v.human
    judge_name = plain(h.judge, max_chars=60) if h.judge else "the judge"
    m1, m2, m3 = st.columns(3)
    m1.metric("Human split-half ρ_hh", fmt.number(h.split_half, 2))
    m2.metric(f"Human vs {judge_name} ρ_hl", fmt.number(h.human_llm, 2))
    m3.metric("Human ratings", fmt.count(h.n_ratings))
    undefined_rhos = [
        name for name, value in (("ρ_hh", h.split_half), ("ρ_hl", h.human_llm)) if fmt.number(value) == fmt.MISSING
    ]
    st.caption(
        f"Spearman; split-half is the mean over {fmt.plural(h.n_splits, 'seeded random half', 'seeded random halves')}"
        f" of {fmt.plural(h.n_raters, 'rater')}"
        + (f" (sd {fmt.number(h.split_half_sd, 2)})" if fmt.number(h.split_half_sd) != fmt.MISSING else "")
        + f"; items are {fmt.plural(h.n_items, '(attempt, dimension) pair')}."
        + (
            f" {' and '.join(undefined_rhos)}: undefined here; Spearman needs at least three items rated by both sides, "
            "with scores that vary."
            if undefined_rhos
            else ""
        )
    )
    show_fig(gem.fig_human_llm(v.human_llm), key="gem_human", data=v.human_llm, name=f"{bench}-human-vs-llm")
elif v.judges.empty:
    st.caption("Agreement needs ratings from several raters (rating records).")

dens = gem.density(v)
if not dens.empty:
    st.subheader("Ad density (k ads per response)")
    show_fig(gem.fig_density(dens), key="gem_density", data=dens, name=f"{bench}-density")

st.subheader("Response viewer")
r1, r2 = st.columns(2)
vd = r1.selectbox("Dataset", pick_d or datasets, key="gem_view_dataset")
vs = r2.selectbox("Solution", pick_s or solutions, key="gem_view_solution")
resp = cached(gem.responses, benchmark=bench, dataset=vd, solution=vs)
if resp.empty:
    st.caption("No responses for this dataset and solution.")
else:
    labels = [f"{t} · sample {s} · k={k}" for t, s, k in zip(resp["task_id"], resp["sample"], resp["k"], strict=True)]
    pos = st.selectbox("Response", range(len(labels)), format_func=lambda i: labels[i], key="gem_view_pick")
    row = resp.iloc[int(pos)]
    st.text(f"Query: {row['query'] or '(none)'}")
    st.caption(f"Sentences marked `{gem.AD_PREFIX.strip()}` carry an ad (its URL or name, from the attempt's `ads`).")
    st.code(gem.marked_text(row["answer"], row["ads"]) or "(empty response)", language=None, wrap_lines=True)
    sents = gem.sentences_frame(row["answer"], row["ads"])
    show_table(
        sents,
        [Col("n", "#", "count"), Col("is_ad", "Ad", "flag"), Col("sentence", "Sentence")],
        key="gem_sentences",
        name=f"{bench}-response-sentences",
    )
    st.text(f"Ads: {row['ads'] or '[]'}")

with st.expander("Definitions", expanded=False):
    st.markdown(gem.DEFINITIONS_MD)
