"""GEM-Bench formulas (Appendix C.1) on hand-made embeddings, the 0/30/60/90 rubric, ad sentences, agreement."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from analytics import gem
from cli import main
from ingest.pipeline import ingest_paths
from jobs import gem_metrics
from store import reader, writer

E = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # cos(e0,e1)=0, cos(e1,e2)=cos(e0,e2)=1/sqrt2


def test_response_flow_is_mean_of_consecutive_cosines() -> None:
    assert gem.response_flow(E) == pytest.approx((0.0 + 1 / math.sqrt(2)) / 2)
    assert gem.response_flow(E * np.array([[3.0], [0.5], [7.0]])) == pytest.approx(gem.response_flow(E))
    assert math.isnan(gem.response_flow(E[:1]))


def test_response_coherence_uses_mean_embedding() -> None:
    centre = E.mean(axis=0) / np.linalg.norm(E.mean(axis=0))
    units = E / np.linalg.norm(E, axis=1, keepdims=True)
    assert gem.response_coherence(E) == pytest.approx(float(np.mean(units @ centre)))
    same = np.tile([[0.3, 0.4]], (4, 1))
    assert gem.response_coherence(same) == pytest.approx(1.0)


def test_ad_flow_is_exp_of_imbalance_around_the_ad() -> None:
    emb = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    mask = np.array([False, True, False])
    left = 1 / math.sqrt(2)  # sim(s_i, s_d)
    right = 0.0  # sim(s_d, s_{i+1})
    assert gem.ad_flow(emb, mask) == pytest.approx(math.exp(-abs(left - right)))
    assert gem.ad_flow(np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]), mask) == pytest.approx(1.0)
    # an ad that closes the response has no right-hand flow: left out
    assert math.isnan(gem.ad_flow(emb, np.array([False, False, True])))
    # two consecutive ad sentences are one ad: first meets s_i, last meets s_{i+1}
    emb4 = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    assert gem.ad_flow(emb4, np.array([False, True, True, False])) == pytest.approx(1.0)


def test_ad_coherence_against_mean_of_non_ad_sentences() -> None:
    emb = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert gem.ad_coherence(emb, np.array([False, False, True])) == pytest.approx(0.0)
    assert gem.ad_coherence(emb, np.array([False, True, False])) == pytest.approx(1 / math.sqrt(2))
    assert math.isnan(gem.ad_coherence(emb, np.array([False, False, False])))
    metrics = gem.response_metrics(emb, np.array([False, False, True]))
    assert metrics["injection"] == 1.0 and metrics["response_flow"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("a", "b", "score"),
    [
        ("bad", "bad", 0),
        ("bad", "moderate", 30),
        ("moderate", "bad", 30),
        ("moderate", "moderate", 60),
        ("bad", "good", 60),
        ("good", "bad", 60),
        ("good", "good", 90),
        (2, 2, 90),
        (1, 2, 60),
        (0, 1, 30),
    ],
)
def test_rubric(a: object, b: object, score: int) -> None:
    assert gem.aggregate_levels(a, b) == score


def test_rubric_rejects_unknown_levels() -> None:
    with pytest.raises(gem.GemError):
        gem.aggregate_levels(3, 0)


def test_cost_overall() -> None:
    assert gem.cost_overall(686.03, 523.80) == pytest.approx(866.815)


def test_sentences_and_ad_mask() -> None:
    text = (
        "Take tram 13 from the station. The trip takes 10 minutes. For planning, check out "
        "[Citymapper](https://citymapper.com/), which shows departures. Also check the schedule."
    )
    sents = gem.split_sentences(text)
    assert len(sents) == 4 and sents[2].startswith("For planning")
    mask = gem.ad_mask(sents, gem.parse_ads(json.dumps([{"name": "Citymapper", "url": "https://citymapper.com/"}])))
    assert mask.tolist() == [False, False, True, False]
    assert gem.ad_mask(sents, [{"url": "https://www.citymapper.com"}]).tolist() == [False, False, True, False]
    assert not gem.ad_mask(sents, []).any()
    marked = gem.marked_text(text, {"name": "Citymapper"}).splitlines()
    assert marked[2].startswith(gem.AD_PREFIX) and not marked[0].startswith(gem.AD_PREFIX)


def _rec(**kw: object) -> str:
    return json.dumps(kw)


@pytest.fixture
def small_db(tmp_db: Path, tmp_path: Path) -> Path:
    """Two solutions x two tasks, a baseline, two judges, four people."""
    lines = [
        _rec(record="benchmark", benchmark="g", scoring="continuous"),
        _rec(record="task", benchmark="g", task_id="t1", category="D1", query="q1"),
        _rec(record="task", benchmark="g", task_id="t2", category="D1", query="q2"),
        _rec(record="run", run_id="base", benchmark="g", agent="plain", gem_role="baseline"),
        _rec(record="run", run_id="s1", benchmark="g", agent="S1", judge="j1"),
        _rec(record="run", run_id="s2", benchmark="g", agent="S2", judge="j1"),
    ]
    text = "Paris has many museums. The Louvre is the largest. Book with Acme Tours at https://acme.example/ today. Go early."
    for t, (bi, bo) in (("t1", (10, 100)), ("t2", (20, 200))):
        lines.append(_rec(record="attempt", run_id="base", task_id=t, score=0.5, input_tokens=bi, output_tokens=bo))
    tokens = {"s1": (110, 150), "s2": (40, 260)}
    for run, (i, o) in tokens.items():
        for t, m in (("t1", 0.8), ("t2", 0.6)):
            lines.append(
                _rec(
                    record="attempt",
                    run_id=run,
                    task_id=t,
                    score=0.5,
                    answer=text,
                    input_tokens=i,
                    output_tokens=o,
                    ads=[{"name": "Acme Tours", "url": "https://acme.example/"}],
                    metrics={"response_flow": m, "injection": 1, "click": 1 if t == "t1" else 0},
                )
            )
    scores = {("s1", "t1"): 90, ("s1", "t2"): 60, ("s2", "t1"): 30, ("s2", "t2"): 0}
    for (run, t), v in scores.items():
        for dim in gem.DIMENSIONS:
            lines.append(
                _rec(record="rating", run_id=run, task_id=t, rater="j1", rater_kind="llm", dimension=dim, value=v)
            )
            lines.append(
                _rec(
                    record="rating",
                    run_id=run,
                    task_id=t,
                    rater="j2",
                    rater_kind="llm",
                    dimension=dim,
                    value=v / 2 + 10,
                )
            )
        for h in range(4):
            lines.append(
                _rec(
                    record="rating",
                    run_id=run,
                    task_id=t,
                    rater=f"h{h}",
                    rater_kind="human",
                    dimension="accuracy",
                    value=v if h % 2 else max(0, v - 30),
                )
            )
    # sub-dimension levels only (no aggregated rating) for judge j3 on one attempt
    lines.append(_rec(record="rating", run_id="s1", task_id="t1", rater="j3", dimension="trust/credibility", value=2))
    lines.append(_rec(record="rating", run_id="s1", task_id="t1", rater="j3", dimension="trust/bias", value=0))
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert [r.outcome for r in ingest_paths([path], db=tmp_db)] == ["ingested"]
    return tmp_db


def test_tables_on_small_db(small_db: Path) -> None:
    with reader(small_db) as con:
        assert gem.gem_benchmarks(con) == ["g"]
        quant = gem.quantitative(con, benchmark="g").set_index("solution")
        assert quant.loc["S1", "RF"] == pytest.approx(70.0) and quant.loc["S1", "CTR"] == pytest.approx(50.0)
        assert quant.loc["S1", "overall"] == pytest.approx((70 + 100 + 50) / 3)
        qual = gem.qualitative(con, benchmark="g").set_index("solution")
        assert qual.loc["S1", "accuracy"] == pytest.approx(75.0) and qual.loc["S2", "overall"] == pytest.approx(15.0)
        cost = gem.cost(con, benchmark="g").set_index("solution")
        assert cost.loc["S1", "ittft"] == pytest.approx(110 - 15) and cost.loc["S2", "ottft"] == pytest.approx(
            260 - 150
        )
        assert cost.loc["S1", "overall"] == pytest.approx(0.5 * 95 + 0)
        rat = gem.ratings(con, benchmark="g")
        assert rat[(rat["rater"] == "j3")]["value"].tolist() == [60.0]
        agree = gem.judge_agreement(con, benchmark="g")
        row = agree[(agree["judge_a"] == "j1") & (agree["judge_b"] == "j2")].iloc[0]
        assert row["n_attempts"] == 4 and row["spearman_attempts"] == pytest.approx(1.0)
        human = gem.human_agreement(con, benchmark="g", n_splits=20, seed=1)
        assert human is not None and human.n_raters == 4 and human.n_items == 4
        assert human.human_llm == pytest.approx(1.0) and 0.5 < human.split_half <= 1.0


def test_computed_mode_with_nothing_computed_is_empty_not_ctr_alone(small_db: Path) -> None:
    with reader(small_db) as con:
        assert not gem.quantitative(con, benchmark="g").empty  # the log's values, CTR among them
        assert gem.quantitative(con, benchmark="g", source="computed").empty


def test_compute_and_store_with_a_fake_embedder(small_db: Path) -> None:
    def fake(texts: list[str]) -> np.ndarray:
        # an ad sentence points elsewhere than the rest: a known geometry
        return np.array([[0.0, 1.0] if "acme" in t.lower() else [1.0, 0.0] for t in texts])

    with writer(small_db) as con:
        n = gem_metrics.compute_gem_metrics(con, benchmark="g", encode=fake, model="fake")
        again = gem_metrics.compute_gem_metrics(
            con, benchmark="g", encode=lambda t: pytest.fail("cache miss"), model="fake"
        )
        cached = con.execute("SELECT count(*) FROM embeddings WHERE model = 'fake'").fetchall()[0][0]
    assert n == again > 0 and cached == 4  # four distinct sentences, embedded once
    with reader(small_db) as con:
        quant = gem.quantitative(con, benchmark="g", source="computed", model="fake").set_index("solution")
    assert quant.loc["S1", "IR"] == pytest.approx(100.0)
    # sentences: [1,0] [1,0] ad [0,1] [1,0]
    assert quant.loc["S1", "RF"] == pytest.approx(100 / 3) and quant.loc["S1", "AF"] == pytest.approx(100.0)
    assert quant.loc["S1", "AC"] == pytest.approx(0.0) and quant.loc["S1", "CTR"] == pytest.approx(50.0)
    centre = np.array([0.75, 0.25]) / np.linalg.norm([0.75, 0.25])
    assert quant.loc["S1", "RC"] == pytest.approx(100 * (3 * centre[0] + centre[1]) / 4)


def test_cli_json_shape(small_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gem", "--db", str(small_db), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["solution"] for r in rows} == {"S1", "S2"}
    row = rows[0]
    assert set(row["qualitative"]) == {*gem.DIMENSIONS, "overall"}
    assert set(row["quantitative"]) == {"RF", "RC", "AF", "AC", "IR", "CTR", "overall"}
    assert set(row["cost"]) == {"ittft", "ottft", "overall"} and row["dataset"] == "D1"


def test_empty_database_has_no_gem_data(tmp_db: Path) -> None:
    with writer(tmp_db) as con:
        assert gem.gem_benchmarks(con) == []
        assert gem.quantitative(con, benchmark="nope").empty and gem.cost(con, benchmark="nope").empty
    empty = gem.sentences_frame(None, None)
    assert empty.empty and list(empty.columns) == ["n", "is_ad", "sentence"]


def test_sentences_frame_marks_the_ad_sentences() -> None:
    answer = "Paris is the capital. Book at https://www.example-hotels.com today! The Seine runs through it."
    ads = '[{"name": "Example Hotels", "url": "https://www.example-hotels.com"}]'
    frame = gem.sentences_frame(answer, ads)
    assert list(frame["n"]) == [1, 2, 3]
    assert list(frame["is_ad"]) == [False, True, False]
    assert frame.loc[1, "sentence"] == "Book at https://www.example-hotels.com today!"
    assert gem.marked_text(answer, ads).splitlines()[1].startswith(gem.AD_PREFIX)


def test_solutions_of_one_cost_and_quality_are_named_apart() -> None:
    """GIR-P and GIR-R of one dataset at nearly one point wrote their names over each other ("GIR-RGIR-P"): every
    name drawn now fits the plot and overlaps no other name (boxes from the figure's own text and positions)."""
    import pandas as pd

    from analytics import figures as placing
    from analytics.gem import figures as gem_figures

    df = pd.DataFrame(
        {
            "dataset": ["CA", "CA", "CA", "LM"],
            "solution": ["GIR-P", "GIR-R", "GI-R", "GIR-R"],
            "cost": [953.0, 968.0, 109.0, 1106.0],
            "qualitative": [58.5, 58.4, 54.5, float("nan")],
        }
    )
    fig = gem.fig_quality_cost(df)
    width, height = gem_figures.QUALITY_COST_PLOT_PX
    xs = placing.axis_fraction(df["cost"]) * width
    ys = placing.axis_fraction(df["qualitative"]) * height
    at = {(d, sol): (x, y) for d, sol, x, y in zip(df["dataset"], df["solution"], xs, ys, strict=True)}
    boxes = []
    for trace in fig.data:
        for text, pos, solution in zip(trace.text, trace.textposition, trace.customdata[:, 1], strict=True):
            if not text:
                continue
            x, y = at[(trace.name, solution)]
            box = placing.label_box(x, y, text, pos)
            boxes.append(box)
            assert box[0] >= 0 and box[2] <= width and box[1] >= 0 and box[3] <= height, (text, pos)
    assert len(boxes) == 3  # the three with a quality; none without
    assert not any(placing._overlaps(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
