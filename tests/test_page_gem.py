"""AppTest of the GEM-Bench page: Tables 2/3/6 with real numbers, agreement, density, response viewer, empty state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from analytics import gem
from analytics.plaintext import md_plain
from data.demo import gembench
from ingest.pipeline import ingest_paths
from jobs import gem_metrics
from store import writer
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def gem_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gempage")
    results = ingest_paths(gembench.generate(out), db=out / "gem.duckdb", fmt="native", is_demo=True)
    assert [r.outcome for r in results] == ["ingested"]
    return out / "gem.duckdb"


def _numbers(df: pd.DataFrame) -> pd.DataFrame:
    """A displayed GEM table (numbers as text with thousands separators, – where missing) read back as numbers;
    no cell shows None."""
    assert not df.astype(str).isin(["None", "nan"]).any().any(), df
    out = df.copy()
    for col in out.columns:
        parsed = pd.to_numeric(out[col].replace("–", None).astype(str).str.replace(",", ""), errors="coerce")
        if parsed.notna().sum() == out[col].ne("–").sum():
            out[col] = parsed
    return out


def open_gem(db: Path, monkeypatch: pytest.MonkeyPatch, benchmark: str | None = None) -> AppTest:
    monkeypatch.setenv("RUNLENS_DB", str(db))
    monkeypatch.setenv("RUNLENS_SKIP_DEMO", "1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    if benchmark:
        at.query_params["benchmark"] = benchmark
    at.run()
    at.switch_page("views/gem.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_tables_agreement_and_viewer(gem_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_gem(gem_db, monkeypatch, "gem-bench")
    subheaders = [s.value for s in at.subheader]
    assert any(s.startswith("Table 2") for s in subheaders) and any(s.startswith("Table 6") for s in subheaders)
    tables = [_numbers(d.value) for d in at.dataframe]
    t2 = next(t for t in tables if "RF" in t.columns)
    t3 = next(t for t in tables if "Naturalness" in t.columns and "n" in t.columns)
    t6 = next(t for t in tables if "ITTFT" in t.columns)
    row2 = t2[(t2["Dataset"] == "MT-Human") & (t2["Solution"] == "Ad-Chat")].iloc[0]
    assert abs(row2["RF"] - 82.06) <= 0.5 and abs(row2["IR"] - 66.0) <= 0.5
    row3 = t3[(t3["Dataset"] == "CA-Prod") & (t3["Solution"] == "GIR-P")].iloc[0]
    assert abs(row3["Overall"] - 58.41) <= 0.5
    row6 = t6[(t6["Dataset"] == "CA-Prod") & (t6["Solution"] == "Ad-Chat")].iloc[0]
    assert abs(row6["Overall"] - 1673.43) <= 0.5
    t4 = next(t for t in tables if "kimi-k2" in t.columns)
    assert len(t4) == 12
    labels = {m.label: m.value for m in at.metric}
    assert float(labels["Human split-half ρ_hh"]) > 0.7 and labels["Human ratings"] == "3,140"
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any("density" in (s["layout"].get("title", {}).get("text") or "") for s in specs)
    code = at.code[0].value
    assert gem.AD_PREFIX in code and "<" not in code.split(gem.AD_PREFIX)[0][:1]
    sentences = next(t for t in tables if "Ad" in t.columns and "Sentence" in t.columns)
    assert set(sentences["Ad"]) == {"✓", "✗"}


def test_viewer_follows_the_selection(gem_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_gem(gem_db, monkeypatch, "gem-bench")
    at.selectbox(key="gem_view_dataset").set_value("CA-Prod")
    at.selectbox(key="gem_view_solution").set_value("Ad-Chat").run()
    assert not at.exception
    assert any(t.value.startswith("Query: ") for t in at.text)
    assert "visit their website" in at.code[0].value


def test_computed_source_without_metrics_warns(gem_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_gem(gem_db, monkeypatch, "gem-bench")
    at.segmented_control(key="gem_source").set_value("computed").run()
    assert not at.exception
    assert any("gem-metrics" in w.value for w in at.warning)


def test_computed_source_shows_recomputed_metrics(
    gem_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "gem.duckdb"
    for suffix in ("", ".read"):
        shutil.copyfile(str(gem_db) + suffix, str(db) + suffix)

    def fake(texts: list[str]) -> np.ndarray:  # ads point one way, everything else another
        return np.array([[0.0, 1.0] if "http" in t else [1.0, 0.0] for t in texts])

    with writer(db) as con:
        assert gem_metrics.compute_gem_metrics(con, benchmark="gem-bench", encode=fake, model="fake-model") > 0
    at = open_gem(db, monkeypatch, "gem-bench")
    at.segmented_control(key="gem_source").set_value("computed").run()
    assert not at.exception and any(md_plain("fake-model") in c.value for c in at.caption)  # log text escaped
    t2 = _numbers(next(d.value for d in at.dataframe if "RF" in d.value.columns))
    ad_llm = t2[t2["Solution"] != "Ad-Chat"]  # one ad sentence, with its URL: AC 0 and AF 100 exactly
    assert len(ad_llm) == 9 and (ad_llm["AC"] == 0).all() and (ad_llm["AF"] == 100).all()


def test_empty_state_without_gem_data(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_gem(fixture_db, monkeypatch, "mini-bench")
    assert any("No GEM-style data" in i.value for i in at.info)


def test_undefined_agreement_says_why_never_nan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two people rated one response: their split-half and their agreement with the judge are undefined, so the
    page shows a dash and the reason, never "nan"; the judges' pair with too few items reads a dash too."""
    text = "Paris has many museums. Book with Acme Tours at https://acme.example/ today. Go early."
    recs = [
        {"record": "benchmark", "benchmark": "g", "scoring": "continuous"},
        {"record": "task", "benchmark": "g", "task_id": "t1", "category": "D1", "query": "q1"},
        {"record": "run", "run_id": "s1", "benchmark": "g", "agent": "S1", "judge": "j1"},
        {
            "record": "attempt",
            "run_id": "s1",
            "task_id": "t1",
            "score": 0.5,
            "answer": text,
            "ads": [{"name": "Acme Tours", "url": "https://acme.example/"}],
            "metrics": {"response_flow": 0.8, "injection": 1},
        },
    ]
    for rater, kind, value in (("j1", "llm", 90), ("j2", "llm", 60), ("h0", "human", 30), ("h1", "human", 60)):
        recs.append(
            {"record": "rating", "run_id": "s1", "task_id": "t1", "rater": rater, "rater_kind": kind}
            | {"dimension": "accuracy", "value": value}
        )
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    db = tmp_path / "g.duckdb"
    assert [r.outcome for r in ingest_paths([path], db=db)] == ["ingested"]
    at = open_gem(db, monkeypatch, "g")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Human split-half ρ_hh"] == "–" and metrics["Human vs j1 ρ_hl"] == "–"
    assert any("ρ_hh and ρ_hl: undefined here; Spearman needs at least three items" in c.value for c in at.caption)
    shown = " ".join([c.value for c in at.caption] + [str(m.value) for m in at.metric])
    assert "nan" not in shown and "None" not in shown
    agreement = next(d.value for d in at.dataframe if "ρ over attempts" in d.value.columns)
    assert agreement["ρ over attempts"].tolist() == ["–"] and agreement["Attempts both rated"].tolist() == ["1"]
