"""LLM labels of failure clusters: asked once per cluster content through the fake OpenAI server, stored through
the writer, reused on a second run (no second request), and never asked without a configured endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analytics import clusters as cl
from analytics import llm
from jobs.failures import label_clusters
from store import reader, writer
from tests.fake_openai_server import FakeOpenAI


def _clusters() -> cl.Clusters:
    texts = [f"error HTTP 504 upstream timeout {i}" for i in range(4)] + [
        f"division by zero in ratio {i}" for i in range(4)
    ]
    failures = pd.DataFrame(
        {
            "attempt_id": range(8),
            "run_id": ["r"] * 8,
            "task_id": [f"t{i}" for i in range(8)],
            "sample": [0] * 8,
            "agent_version": ["1"] * 8,
            "codes": [["TOOL"]] * 4 + [["CE"]] * 4,
            "text": texts,
        }
    )
    vectors = np.array([[1.0, 0.0]] * 4 + [[0.0, 1.0]] * 4, dtype=np.float32)
    return cl.build_clusters(failures, vectors, model="fake", min_size=2)


@pytest.fixture()
def server() -> Iterator[FakeOpenAI]:
    srv = FakeOpenAI([("Cluster label request", [("reply", '"Upstream tool timeouts"\nextra line')])])
    srv.start()
    yield srv
    srv.stop()


def _cfg(srv: FakeOpenAI) -> llm.LLMConfig:
    return llm.LLMConfig(base_url=srv.base_url, api_key="x", model="fake-model", max_retries=0, timeout_s=10)


def test_labels_are_stored_once_and_reused(server: FakeOpenAI, tmp_path: Path) -> None:
    db = tmp_path / "l.duckdb"
    with writer(db):
        pass
    clusters = _clusters()
    n_clusters = int((clusters.summary["cluster_id"] >= 0).sum())
    assert n_clusters == 2
    assert label_clusters(db, clusters, cfg=_cfg(server)) == n_clusters
    assert len(server.requests) == n_clusters
    user = server.requests[0]["messages"][1]["content"]
    assert "Key phrases:" in user and "<<<" in user  # key phrases and fenced representative documents
    with reader(db) as con:
        labelled = cl.apply_llm_labels(con, clusters, model="fake-model")
        rows = con.execute("SELECT model, prompt_version, label FROM cluster_labels").fetchall()
    assert set(labelled.summary.query("cluster_id >= 0")["llm_label"]) == {"Upstream tool timeouts"}
    assert rows[0][:2] == ("fake-model", cl.LABEL_PROMPT_VERSION) and len(rows) == n_clusters
    # a second run (same clusters, same model, same prompt version) makes no call
    assert label_clusters(db, _clusters(), cfg=_cfg(server)) == 0
    assert len(server.requests) == n_clusters
    # another model is another cache entry
    with reader(db) as con:
        other = cl.apply_llm_labels(con, clusters, model="other-model")
    assert other.summary["llm_label"].isna().all()


def test_a_changed_cluster_gets_a_new_key() -> None:
    a = _clusters().summary["content_key"].tolist()
    assert cl.content_key(["x"], ["b", "a"]) == cl.content_key(["x"], ["a", "b"])  # member order does not matter
    assert cl.content_key(["x"], ["a", "b"]) != cl.content_key(["x"], ["a", "c"])
    assert len(set(a)) == len(a)


def test_no_network_without_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("RUNLENS_JUDGE_MODEL", raising=False)

    def no_client(cfg: llm.LLMConfig) -> None:
        raise AssertionError("no client may be made without configuration")

    monkeypatch.setattr(llm, "make_client", no_client)
    assert label_clusters(tmp_path / "n.duckdb", _clusters()) == 0
    assert not (tmp_path / "n.duckdb").exists()  # not even the database is opened


def test_clean_label_keeps_one_short_line() -> None:
    assert cl.clean_label('\n  "Label: Tool timeouts"  \nmore') == "Tool timeouts"
    assert len(cl.clean_label("x" * 500)) == 120


def test_a_long_name_is_cut_after_a_whole_phrase_or_word() -> None:
    name = "repeated call · session closed · skipped get_user_account_list"
    assert cl.cut_at_word(name, 80) == name
    assert cl.cut_at_word(name, 61) == "repeated call · session closed…"
    assert cl.cut_at_word("different numbers than the reference", 20) == "different numbers…"
    for most in range(len("repeated") + 1, len(name)):  # a first word longer than the limit is cut inside
        cut = cl.cut_at_word(name, most)
        assert len(cut) <= most and cut.endswith("…")
        assert name.startswith(cut[:-1]) and name[len(cut) - 1] in " ·", (most, cut)  # ends where a word ends
    long = pd.DataFrame({"cluster_id": [0], "label": [name], "run_id": ["r"], "n_attempts": [3]})
    (bar,) = cl.fig_clusters_by_run(long).data
    assert bar.name == "0: repeated call · session closed…"  # the legend: whole phrases
    assert bar.customdata[0][2] == f"0: {name}"  # the hover: the whole name


def test_no_two_names_repeat_a_phrase() -> None:
    """Three causes whose answers all differ from the reference: the comparison names the largest cluster only."""
    texts = (
        ["final answer: upstream timeout (a different number than the reference)"] * 6
        + ["final answer: budget exceeded in campaign (a different number than the reference)"] * 5
        + ["final answer: session closed early (different numbers than the reference)"] * 4
    )
    labels = [0] * 6 + [1] * 5 + [2] * 4
    phrases = cl.key_phrases(texts, labels)
    said = [p for ps in phrases.values() for p in ps]
    assert sum("number than" in p or "numbers than" in p for p in said) <= 1, phrases
    assert all(phrases[c] for c in (0, 1, 2)), phrases
    assert "budget exceeded" in phrases[1] and "session closed early" in phrases[2], phrases
