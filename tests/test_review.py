"""Human reviews (writes through the one writer, append-only, exported), the review queue, and the judge checked
against humans: Cohen's kappa against a hand computation and scikit-learn, the bootstrap interval, confusion
counts, per-code precision and recall, and inter-reviewer agreement."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from analytics import ppi
from analytics import review as rv
from jobs.reviews import MAX_NOTE_CHARS, Review, ReviewError, record_review, record_reviews
from store import RunFilter, query_df, reader, writer

N = 40


def _verdicts() -> tuple[list[bool], list[bool], list[bool]]:
    """(log passed, log judge's result_correct, human A's verdict) for N attempts, from a fixed seed."""
    rng = np.random.default_rng(7)
    human = rng.random(N) < 0.4
    judge = np.where(rng.random(N) < 0.8, human, ~human)  # the judge agrees with A on about 80 %
    passed = np.where(rng.random(N) < 0.9, human, ~human)
    return passed.tolist(), judge.tolist(), human.tolist()


@pytest.fixture(scope="module")
def review_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """N attempts of one run whose log carries a judge; human A reviewed all, B the first 20 (5 differently)."""
    from ingest.pipeline import ingest_paths

    folder = tmp_path_factory.mktemp("review")
    passed, judge, human = _verdicts()
    lines = [
        {"record": "benchmark", "benchmark": "rb", "scoring": "binary"},
        {"record": "run", "run_id": "run-1", "benchmark": "rb", "agent": "A", "judge": "judge-x"},
    ]
    for i in range(N):
        lines.append({"record": "task", "benchmark": "rb", "task_id": f"T{i:02d}"})
        lines.append(
            {
                "record": "attempt",
                "run_id": "run-1",
                "task_id": f"T{i:02d}",
                "sample": 0,
                "score": 1.0 if passed[i] else 0.0,
                "errors": [] if passed[i] else (["PE"] if i % 2 else ["HAL"]),
                "judge": {"result_correct": judge[i]},
                "steps": [{"round": 1, "kind": "final", "content": "done"}],
            }
        )
    path = folder / "run.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    db = folder / "r.duckdb"
    assert [r.outcome for r in ingest_paths([path], db=db)] == ["ingested"]
    ids = _ids(db)
    t0 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    reviews: list[tuple[int, str, str, list[str]]] = []
    for i in range(N):
        codes = [] if human[i] else (["PE"] if i % 4 == 1 else ["HAL"])
        reviews.append((ids[i], "A", "correct" if human[i] else "incorrect", codes))
    for i in range(20):
        flip = i < 5
        reviews.append((ids[i], "B", "correct" if human[i] != flip else "incorrect", []))
    # in one writer session, published once instead of once a review
    record_reviews(db, [Review(a, reviewer, verdict, codes) for a, reviewer, verdict, codes in reviews], now=t0)
    return db


def _ids(db: Path) -> list[int]:
    with reader(db) as con:
        rows = con.execute("SELECT attempt_id FROM attempts ORDER BY task_id").fetchall()
    return [int(r[0]) for r in rows]


def test_kappa_matches_a_hand_computation_and_sklearn() -> None:
    a = [1, 1, 0, 0, 1, 0, 1, 1, 0, 1]
    b = [1, 0, 0, 0, 1, 1, 1, 1, 0, 1]
    # by hand: po = 8/10; P(a=1) = .6, P(b=1) = .6 -> pe = .36 + .16 = .52; kappa = (.8 - .52) / .48
    assert rv.cohen_kappa(a, b) == pytest.approx((0.8 - 0.52) / 0.48)
    assert rv.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    rng = np.random.default_rng(3)
    x, y = rng.integers(0, 3, 200).tolist(), rng.integers(0, 3, 200).tolist()
    assert rv.cohen_kappa(x, y) == pytest.approx(cohen_kappa_score(x, y))
    assert np.isnan(rv.cohen_kappa([1, 1], [1, 1]))


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(1)
    a = rng.random(300) < 0.5
    b = np.where(rng.random(300) < 0.85, a, ~a)
    lo, hi = rv.kappa_interval(a, b, seed=5)
    assert (lo, hi) == rv.kappa_interval(a, b, seed=5)
    k = rv.cohen_kappa(a.tolist(), b.tolist())
    assert lo < k < hi and 0.05 < hi - lo < 0.4
    # a binary-specific fast path: each resample's kappa equals the general formula on that resample
    idx = np.random.default_rng(0).integers(0, 300, size=(3, 300))
    fast = rv._binary_kappas(a[idx], b[idx])
    assert fast == pytest.approx([cohen_kappa_score(a[i], b[i]) for i in idx])


def test_code_scores_by_hand() -> None:
    got = rv.code_scores([{"PE"}, {"PE", "HAL"}, set(), {"HAL"}], [{"PE"}, {"HAL"}, {"PE"}, {"HAL"}])
    pe = got.set_index("code").loc["PE"]
    assert (pe.tp, pe.fp, pe.fn) == (1, 1, 1) and pe.precision == 0.5 and pe.recall == 0.5
    hal = got.set_index("code").loc["HAL"]
    assert (hal.tp, hal.fp, hal.fn, hal.precision, hal.recall) == (2, 0, 0, 1.0, 1.0)


def _copy(db: Path, tmp_path: Path) -> Path:
    """A private copy (with its snapshot) for a test that writes."""
    target = tmp_path / db.name
    for suffix in ("", ".read"):
        shutil.copyfile(str(db) + suffix, str(target) + suffix)
    return target


def test_reviews_append_and_never_touch_the_log_labels(review_db: Path, tmp_path: Path) -> None:
    review_db = _copy(review_db, tmp_path)
    with reader(review_db) as con:
        before = con.execute("SELECT count(*), count_if(passed) FROM attempts").fetchall()
        labels = con.execute("SELECT count(*) FROM error_labels").fetchall()
    first = _ids(review_db)[0]
    rid = record_review(review_db, attempt_id=first, reviewer="  C  ", verdict="incorrect", codes=["pe", " TE "])
    rid2 = record_review(review_db, attempt_id=first, reviewer="C", verdict="correct", note="changed my mind")
    assert rid2 == rid + 1
    with reader(review_db) as con:
        assert con.execute("SELECT count(*), count_if(passed) FROM attempts").fetchall() == before
        assert con.execute("SELECT count(*) FROM error_labels").fetchall() == labels
        hist = rv.reviews_of(con, attempt_id=first)
        rows = con.execute("SELECT reviewer, codes, source FROM reviews WHERE review_id = ?", [rid]).fetchall()
    assert rows == [("C", ["PE", "TE"], "human")]
    mine = hist[hist["reviewer"] == "C"]
    assert list(mine["verdict"]) == ["correct", "incorrect"] and list(mine["is_current"]) == [True, False]
    assert mine["note"].iloc[0] == "changed my mind"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reviewer": " ", "verdict": "correct"}, "reviewer"),
        ({"reviewer": "A", "verdict": "maybe"}, "verdict"),
        ({"reviewer": "A", "verdict": "correct", "codes": ["P E"]}, "codes"),
        ({"reviewer": "A", "verdict": "correct", "note": "x" * (MAX_NOTE_CHARS + 1)}, "note"),
    ],
)
def test_bad_reviews_are_refused(review_db: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(ReviewError, match=message):
        record_review(review_db, attempt_id=_ids(review_db)[0], **kwargs)


def test_review_of_a_missing_attempt_is_refused(tmp_db: Path) -> None:
    with pytest.raises(ReviewError, match="no attempt"):
        record_review(tmp_db, attempt_id=12345, reviewer="A", verdict="correct")


def test_reviews_in_one_session_are_all_or_none(review_db: Path) -> None:
    """``record_reviews``: a batch with a bad review or an attempt the store does not hold writes none of them; a
    good one writes each, in order, as ``record_review`` would."""
    first, second = _ids(review_db)[:2]

    def n_reviews() -> int:
        with reader(review_db) as con:
            return int(query_df(con, "SELECT count(*) AS n FROM reviews")["n"].iloc[0])

    before = n_reviews()
    with pytest.raises(ReviewError, match="no attempt with id 12345"):
        record_reviews(review_db, [Review(first, "A", "correct"), Review(12345, "A", "correct")])
    with pytest.raises(ReviewError, match="verdict"):
        record_reviews(review_db, [Review(first, "A", "correct"), Review(second, "A", "maybe")])
    assert n_reviews() == before
    ids = record_reviews(review_db, [Review(first, " A ", "incorrect", ["pe"]), Review(second, "B", "correct")])
    assert len(ids) == 2 and ids[1] == ids[0] + 1 and n_reviews() == before + 2
    with reader(review_db) as con:
        got = query_df(con, "SELECT attempt_id, reviewer, verdict, codes FROM reviews WHERE review_id = ?", [ids[0]])
    assert got.iloc[0]["reviewer"] == "A" and list(got.iloc[0]["codes"]) == ["PE"]
    assert record_reviews(review_db, []) == []


def test_agreement_against_sklearn(review_db: Path) -> None:
    passed, judge, human = _verdicts()
    with reader(review_db) as con:
        agr = rv.agreement(con, RunFilter(benchmark="rb"), n_boot=500, seed=0)
    rows = agr.verdicts.set_index("rater")
    # the human consensus: A alone on 20..39; A and B on 0..19, where the 5 flips are ties (no verdict)
    keep = [i for i in range(N) if i >= 5]
    want_human = [human[i] for i in keep]
    lj = rows.loc["log judge judge-x"]
    assert lj.n == len(keep)
    assert lj.kappa == pytest.approx(cohen_kappa_score([judge[i] for i in keep], want_human))
    assert lj.kappa_lo < lj.kappa < lj.kappa_hi
    assert lj.tp + lj.tn + lj.fp + lj.fn == lj.n
    assert lj.fp == sum(judge[i] and not human[i] for i in keep)
    ls = rows.loc["log score"]
    assert ls.kappa == pytest.approx(cohen_kappa_score([passed[i] for i in keep], want_human))
    dis = agr.disagreements[agr.disagreements["rater"] == "log judge judge-x"]
    assert len(dis) == lj.fp + lj.fn and set(dis["run_id"]) <= {"run-1"}
    pair = agr.reviewers.iloc[0]
    assert (pair.reviewer_a, pair.reviewer_b, pair.n, pair.agreement) == ("A", "B", 20, 0.75)
    codes = agr.codes[agr.codes["rater"] == "log labels"].set_index("code")
    assert set(codes.index) >= {"PE", "HAL"} and codes["n"].iloc[0] == agr.n_reviewed
    assert "log judge judge-x: kappa" in rv.trust_sentence(agr.verdicts, agr.n_reviewed)


def test_queue_kinds(review_db: Path) -> None:
    with reader(review_db) as con:
        failed = rv.review_queue(con, RunFilter(benchmark="rb"), queue="failed", reviewer="nobody", n=100)
        cal1 = rv.review_queue(con, RunFilter(benchmark="rb"), queue="calibration", n=10, seed=1)
        cal2 = rv.review_queue(con, RunFilter(benchmark="rb"), queue="calibration", n=10, seed=1)
        cal3 = rv.review_queue(con, RunFilter(benchmark="rb"), queue="calibration", n=10, seed=2)
        dis = rv.review_queue(con, RunFilter(benchmark="rb"), queue="disagreements", n=100)
        mine = rv.review_queue(con, RunFilter(benchmark="rb"), queue="failed", reviewer="A", n=100)
    passed, judge, _ = _verdicts()
    assert len(failed) == N - sum(passed) and not failed["passed"].any()
    assert list(cal1["attempt_id"]) == list(cal2["attempt_id"]) != list(cal3["attempt_id"])
    assert len(dis) == sum(p != j for p, j in zip(passed, judge, strict=True))
    assert mine["is_reviewed_by_me"].all()  # A reviewed everything: nothing unreviewed goes first


def test_reviews_are_exported(review_db: Path, tmp_path: Path) -> None:
    from store.export_parquet import export_parquet

    marker = export_parquet(review_db, tmp_path / "out")
    assert marker["tables"]["reviews"]["rows"] >= N + 20
    df = pd.read_parquet(tmp_path / "out" / "reviews")
    assert set(df["source"]) == {"human"} and {"reviewer", "verdict", "codes", "created_at"} <= set(df.columns)


def test_queue_table_and_raters_line_read_without_raw_values() -> None:
    items = pd.DataFrame(
        {
            "run_id": ["r"],
            "agent": [None],
            "task_id": ["t"],
            "sample": [0],
            "passed": [False],
            "log_judge_correct": [False],
            "runlens_judge_correct": [pd.NA],
            "log_codes": ["PE, TOOL"],
            "judge_codes": [None],
            "n_reviews": [0],
            "is_reviewed_by_me": [False],
        }
    )
    table = rv.queue_table(items)
    assert table.iloc[0][["Passed", "Log judge", "Runlens judge", "Agent"]].tolist() == ["✗", "incorrect", "–", "–"]
    line = rv.raters_line(items.iloc[0])
    assert line == "passed ✗ · log codes PE, TOOL · log judge incorrect · Runlens judge –"
    assert not any(raw in line for raw in ("False", "None", "<NA>", "nan"))


def test_calibration_queue_takes_each_stratum_in_proportion(review_db: Path) -> None:
    passed, _, _ = _verdicts()
    with reader(review_db) as con:
        first = rv.review_queue(con, RunFilter(benchmark="rb"), queue="calibration", n=20, seed=3)
        labels = con.execute(
            "SELECT attempt_id, min(code) FROM error_labels WHERE source = 'label' GROUP BY attempt_id"
        ).fetchall()
    code = dict(labels)
    strata = pd.Series([code.get(int(a), "none") for a in first["attempt_id"]]).value_counts()
    n_pass = sum(passed)
    want = {"none": n_pass / N * 20, "PE": (N - n_pass) / 2 / N * 20, "HAL": (N - n_pass) / 2 / N * 20}
    for stratum, expected in want.items():
        assert abs(int(strata.get(stratum, 0)) - expected) <= 1.5, (strata, want)  # proportional allocation


def test_fleiss_kappa_of_the_reviewers(review_db: Path) -> None:
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    _, _, human = _verdicts()
    with reader(review_db) as con:
        agr = rv.agreement(con, RunFilter(benchmark="rb"), n_boot=200, seed=0)
    b = [human[i] != (i < 5) for i in range(20)]  # B differs from A on the first five
    table, _ = aggregate_raters(np.array([[human[i], b[i]] for i in range(20)], dtype=int))
    assert agr.fleiss is not None and agr.fleiss["n_attempts"] == 20 and agr.fleiss["n_reviewers"] == 2
    assert agr.fleiss["kappa"] == pytest.approx(fleiss_kappa(table, method="fleiss"))
    assert agr.fleiss["kappa_lo"] <= agr.fleiss["kappa"] <= agr.fleiss["kappa_hi"]
    per_code = agr.codes[agr.codes["rater"] == "log labels"].set_index("code")
    assert {"agreement", "kappa", "kappa_lo", "kappa_hi"} <= set(per_code.columns)
    assert per_code.loc["PE", "kappa_lo"] <= per_code.loc["PE", "kappa"] <= per_code.loc["PE", "kappa_hi"]


def test_kappa_text_says_what_is_missing_instead_of_nan() -> None:
    assert rv.kappa_text(float("nan"), float("nan"), float("nan"), 1) == "needs at least 10 reviews (has 1)"
    assert rv.kappa_text(float("nan"), float("nan"), float("nan"), 12).startswith("undefined")
    assert rv.kappa_text(0.5, 0.2, 0.7, 30) == "0.50 (95% CI 0.20 to 0.70, n = 30)"
    assert "nan" not in rv.trust_sentence(
        pd.DataFrame([{"rater": "judge m", "kappa": float("nan"), "kappa_lo": float("nan"),
                       "kappa_hi": float("nan"), "n": 1}]), 1
    )  # fmt: skip


def test_judge_figures_corrected_by_the_calibration_sample(review_db: Path, tmp_path: Path) -> None:
    passed, judge, human = _verdicts()
    with reader(review_db) as con:
        corr = rv.judge_corrections(con, RunFilter(benchmark="rb")).set_index("quantity")
        sample, gap = rv.calibration_sample(con, RunFilter(benchmark="rb"))
    assert len(sample) == N and gap is None  # A reviewed every attempt: the whole queue is the sample
    rate = corr.loc["judged pass rate"]
    assert rate["judge"] == pytest.approx(np.mean(judge))  # the log's judge, at its word
    keep = [i for i in range(N) if i >= 5]  # ties between A and B have no human verdict
    ties = [i for i in range(5)]  # judged, not labelled: the unlabelled part of PPI
    want = ppi.ppi_mean([human[i] for i in keep], [judge[i] for i in keep], [judge[i] for i in ties])
    assert rate["n_reviewed"] == len(keep) and rate["estimate"] == pytest.approx(want.estimate)
    assert rate["lo"] < rate["estimate"] < rate["hi"]
    # a fresh store with three reviews: no figure, and the page says how many reviews it needs
    fresh = _copy(review_db, tmp_path)
    with writer(fresh) as con:
        con.execute("DELETE FROM reviews WHERE attempt_id NOT IN (SELECT attempt_id FROM reviews LIMIT 3)")
    with reader(fresh) as con:
        few = rv.judge_corrections(con, RunFilter(benchmark="rb")).set_index("quantity").loc["judged pass rate"]
    assert np.isnan(few["estimate"]) and few["note"].startswith("needs at least 10 reviews")
    shown = rv.corrections_table(corr.reset_index())
    assert shown["Judge says"].iloc[0].endswith("%") and "nan" not in shown.to_string()


def test_judge_corrections_equal_the_figures_from_a_list_of_codes_per_attempt(review_db: Path) -> None:
    """judge_corrections reads a verdict per attempt and a row per (attempt, code) (issue 33): the same figures as
    the former path, ``corrections_of`` over ``judge_predictions`` with the calibration sample's reviews."""
    flt = RunFilter(benchmark="rb")
    with reader(review_db) as con:
        new = rv.judge_corrections(con, flt)
        preds, source = rv.judge_predictions(con, flt)
        sample, _ = rv.calibration_sample(con, flt)
        humans = rv.human_consensus(rv.current_reviews(con, flt))
    old = rv.corrections_of(preds, source, humans[humans["attempt_id"].isin(sample)])
    assert len(new) > 1 and new["n_reviewed"].max() >= 10  # corrected figures, not only notes
    pd.testing.assert_frame_equal(new, old)


@pytest.mark.parametrize("benchmark", ["rb", "nothing-here"])
def test_trust_equals_agreement_corrections_and_sample(review_db: Path, tmp_path: Path, benchmark: str) -> None:
    """``trust`` (what the Errors and Review pages read first, the current reviews once) gives what the three former
    calls give, with reviews, on a view without any, and on a store where few attempts are reviewed."""
    fresh = _copy(review_db, tmp_path)
    with writer(fresh) as con:
        con.execute("DELETE FROM reviews WHERE attempt_id NOT IN (SELECT attempt_id FROM reviews LIMIT 12)")
    for db in (review_db, fresh):
        flt = RunFilter(benchmark=benchmark)
        with reader(db) as con:
            got = rv.trust(con, flt)
            agr = rv.agreement(con, flt)
            corr = rv.judge_corrections(con, flt)
            sample, gap = rv.calibration_sample(con, flt) if agr.n_reviewed else ([], None)
        assert (got.sample, got.gap) == (sample, gap)
        pd.testing.assert_frame_equal(got.corrections, corr)
        assert got.agreement.n_reviewed == agr.n_reviewed and got.agreement.fleiss == agr.fleiss
        for name in ("verdicts", "codes", "reviewers", "disagreements"):
            pd.testing.assert_frame_equal(getattr(got.agreement, name), getattr(agr, name))
        if benchmark == "rb":
            assert agr.n_reviewed > 0 and len(corr) > 1


FORMER_REVIEWS_OF = (
    "SELECT r.reviewer, r.verdict, array_to_string(r.codes, ', ') AS codes, r.note, r.created_at, r.source, "
    "r.review_id IN (SELECT review_id FROM v_reviews WHERE attempt_id = $id) AS is_current "
    "FROM reviews r WHERE r.attempt_id = $id ORDER BY r.created_at DESC, r.review_id DESC"
)


def test_reviews_of_marks_the_current_reviews_as_the_view_does(review_db: Path, tmp_path: Path) -> None:
    """One scan of the attempt's reviews marks each reviewer's newest as ``v_reviews`` does, with a reviewer who
    changed their mind and reviews written in the same second."""
    db = _copy(review_db, tmp_path)
    target = _ids(db)[0]
    for verdict in ("correct", "incorrect", "correct"):
        record_review(db, attempt_id=target, reviewer="C", verdict=verdict, codes=[], note=None)
    with writer(db) as con:  # two reviews of one reviewer at the same time: the higher id counts
        con.execute("UPDATE reviews SET created_at = TIMESTAMP '2026-01-01 00:00:00' WHERE reviewer = 'C'")
    with reader(db) as con:
        ids = [target, *_ids(db)[1:6], -1]
        n_current = 0
        for attempt_id in ids:
            got = rv.reviews_of(con, attempt_id=attempt_id)
            pd.testing.assert_frame_equal(got, query_df(con, FORMER_REVIEWS_OF, {"id": attempt_id}))
            n_current += int(got["is_current"].sum())
        assert len(rv.reviews_of(con, attempt_id=target)) >= 3 and n_current > 0


def test_agreement_is_the_same_on_every_call(review_db: Path) -> None:
    """The kappa intervals resample the raters' rows: they come back in one order (the union of the raters' reads
    had none, so two calls could give two intervals)."""
    flt = RunFilter(benchmark="rb")
    with reader(review_db) as con:
        first = rv.agreement(con, flt)
        labels = rv.rater_labels(con, first.disagreements["attempt_id"].drop_duplicates().tolist() or [0])
        for _ in range(4):
            again = rv.agreement(con, flt)
            pd.testing.assert_frame_equal(again.verdicts, first.verdicts)
            pd.testing.assert_frame_equal(again.codes, first.codes)
    assert list(labels[["attempt_id", "rater"]].itertuples(index=False)) == sorted(
        labels[["attempt_id", "rater"]].itertuples(index=False)
    )
