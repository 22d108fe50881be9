# ruff: noqa: F811  (pytest fixtures imported from the analytics tests are redefined as arguments)
"""The Failure clusters page (AppTest): it offers to embed the failures, then lists clusters with their size per
run and the member attempts with drilldown links."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.apptest import open_page
from tests.test_clusters import PER_CAUSE, failures_db  # noqa: F401  (the fixture)


def test_clusters_page_embeds_then_clusters(failures_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page("pages/clusters.py", failures_db, monkeypatch, benchmark="fb")
    assert any("no embedding yet" in i.value for i in at.info)
    at.button(key="cl_embed").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.run()  # the page reruns itself after embedding; AppTest needs the explicit run
    table = at.dataframe[0].value
    assert int(table["n_attempts"].sum()) == 4 * PER_CAUSE
    assert at.metric[0].value == str(4 * PER_CAUSE)
    members = at.dataframe[1].value
    assert len(members) == int(table["n_attempts"].iloc[0])
    assert members["open"].str.startswith("drilldown?run=v").all()
    assert len(at.get("plotly_chart")) == 1
