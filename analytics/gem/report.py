"""Everything the GEM page shows at once (GemView), the JSON report, the text report and the definitions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import duckdb
import pandas as pd

from analytics import formatting as fmt
from analytics.gem.agreement import HumanAgreement, agreement_from, human_from, human_vs_llm_from, judges_from
from analytics.gem.formulas import DIMENSIONS, QUANT
from analytics.gem.load import attempts, llm_raters, sources
from analytics.gem.tables import cost, default_rater, qualitative_from, quantitative, rater_label, ratings


@dataclass(frozen=True)
class GemView:
    """Tables of one GEM benchmark (quantitative from ``source``, qualitative from ``rater``)."""

    benchmark: str
    source: str
    rater: str | None
    raters: tuple[str, ...]
    sources: tuple[str, ...]  # metric sources present ('log', 'computed')
    models: tuple[str, ...]  # embedding models of computed metrics
    quantitative: pd.DataFrame
    qualitative: pd.DataFrame
    cost: pd.DataFrame
    judges: pd.DataFrame
    agreement: pd.DataFrame
    human: HumanAgreement | None
    human_llm: pd.DataFrame


def view(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    source: str = "log",
    rater: str | None = None,
    model: str | None = None,
) -> GemView:
    """Every table of the GEM page for one benchmark."""
    src = sources(con, benchmark=benchmark)
    rater = rater or default_rater(con, benchmark=benchmark)
    att, rat = attempts(con, benchmark=benchmark), ratings(con, benchmark=benchmark)
    return GemView(
        benchmark,
        source,
        rater,
        tuple(llm_raters(con, benchmark=benchmark)),
        tuple(dict.fromkeys(src["source"])),
        tuple(m for m in src.loc[src["source"] == "computed", "model"]),
        quantitative(con, benchmark=benchmark, source=source, model=model),
        qualitative_from(att, rat, rater=rater),
        cost(con, benchmark=benchmark),
        judges_from(att, rat),
        agreement_from(att, rat),
        human_from(rat, judge=rater),
        human_vs_llm_from(att, rat, judge=rater),
    )


def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 2)


def report(
    con: duckdb.DuckDBPyConnection, *, benchmark: str, source: str = "log", rater: str | None = None
) -> dict[str, Any]:
    """The ``python -m analytics gem --json`` shape: one row per dataset x solution (scores 0-100)."""
    v = view(con, benchmark=benchmark, source=source, rater=rater)
    frames = {"quantitative": v.quantitative, "qualitative": v.qualitative, "cost": v.cost}
    keys = sorted(
        {(r.dataset, r.solution, int(r.k)) for f in frames.values() for r in f.itertuples()},
        key=lambda t: (t[2], t[0], t[1]),
    )

    def pick(df: pd.DataFrame, key: tuple[str, str, int], cols: dict[str, str]) -> dict[str, float | None] | None:
        hit = df[(df["dataset"] == key[0]) & (df["solution"] == key[1]) & (df["k"] == key[2])]
        return None if hit.empty else {out: _num(hit.iloc[0][col]) for out, col in cols.items()}

    rows = []
    for key in keys:
        rows.append(
            {
                "benchmark": benchmark,
                "dataset": key[0],
                "solution": rater_label(key[1], key[2]),
                "k": key[2],
                "qualitative": pick(v.qualitative, key, {d: d for d in DIMENSIONS} | {"overall": "overall"}),
                "quantitative": pick(v.quantitative, key, {c: c for c in QUANT} | {"overall": "overall"}),
                "cost": pick(v.cost, key, {"ittft": "ittft", "ottft": "ottft", "overall": "overall"}),
            }
        )
    return {"benchmark": benchmark, "source": source, "rater": v.rater, "rows": rows}


DEFINITIONS_MD = """
- **RF** response flow: mean cosine similarity of consecutive sentences. **RC** response coherence: mean
  similarity of each sentence to the mean sentence embedding. **AF** ad flow: exp(-|sim(s_i, s_d) - sim(s_d,
  s_i+1)|) around each ad. **AC** ad coherence: similarity of ad sentences to the mean of the non-ad sentences.
  **IR** injection rate: share of responses with an ad. **CTR**: share of ad responses clicked (from the log).
  All x 100; AF/AC over responses with an ad; overall = mean of the available metrics.
- Judge dimensions score 0/30/60/90 from two bad/moderate/good ratings; overall = mean of the six.
- **ITTFT / OTTFT**: extra input / output tokens before the first token of the final response, against the
  ad-free baseline run; overall = 0.5 x ITTFT + OTTFT.
- See docs/gem.md for the data conventions.
"""


COLUMN_HELP = {
    "RF": "response flow: mean cosine similarity of consecutive sentences (x 100)",
    "RC": "response coherence: mean similarity of each sentence to the mean sentence embedding (x 100)",
    "AF": "ad flow: how smoothly the text flows into and out of each ad (x 100; responses with an ad)",
    "AC": "ad coherence: similarity of ad sentences to the rest of the response (x 100; responses with an ad)",
    "IR": "injection rate: share of responses with an ad (x 100)",
    "CTR": "click-through rate: share of ad responses clicked, from the log (x 100; – where the log has none)",
    "ITTFT": "extra input tokens before the first token of the final response, against the ad-free baseline",
    "OTTFT": "extra output tokens before the first token of the final response, against the ad-free baseline",
    "Overall": "the mean of the metrics available in the row (cost table: 0.5 x ITTFT + OTTFT)",
    "k": "samples per prompt the row summarises",
    "n": "responses in the row",
    "Baseline": "the run the extra tokens are counted against",
}
# the frames' column names as the page shows them (the rest are capitalised: accuracy -> Accuracy)
DISPLAY_NAMES = {"solution_label": "Solution", "ittft": "ITTFT", "ottft": "OTTFT", "k": "k", "n": "n"}


def display_table(df: pd.DataFrame) -> pd.DataFrame:
    """A GEM table as people read it: numbers to two decimals, ``–`` where a metric is missing (never ``None``),
    column names as on the page (``Solution``, ``ITTFT``, ``Accuracy``; ``COLUMN_HELP`` explains them)."""
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]) or out[col].map(lambda v: isinstance(v, float) or v is None).all():
            out[col] = out[col].map(
                lambda v: fmt.MISSING if fmt.text(v) == fmt.MISSING else f"{float(v):.2f}".rstrip("0").rstrip(".")
            )
    out = out.fillna(fmt.MISSING)
    names = {c: DISPLAY_NAMES.get(c, c if c.isupper() else c[:1].upper() + c[1:]) for c in map(str, out.columns)}
    return out.rename(columns=names)


def text_report(rep: dict[str, Any]) -> str:
    """Tables 2, 3 and 6 of one benchmark as text: qualitative, quantitative and cost overall per solution."""
    lines = [
        f"== {rep['benchmark']} (quantitative: {rep['source']}, judge: {rep['rater']})",
        f"  {'dataset':<10} {'solution':<14} {'qual':>6} {'quant':>6} {'ITTFT':>8} {'OTTFT':>8} {'cost':>8}",
    ]
    for r in rep["rows"]:
        q, n, c = r["qualitative"] or {}, r["quantitative"] or {}, r["cost"] or {}
        vals = [q.get("overall"), n.get("overall"), c.get("ittft"), c.get("ottft"), c.get("overall")]
        cells = " ".join(f"{'-' if v is None else f'{v:.2f}':>{w}}" for v, w in zip(vals, (6, 6, 8, 8, 8), strict=True))
        lines.append(f"  {r['dataset']:<10} {r['solution']:<14} {cells}")
    return "\n".join(lines)
