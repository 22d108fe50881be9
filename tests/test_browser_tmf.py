"""The Tech-Market-Fit page in a real browser: it renders, and its PNG / SVG / HTML exports are real files."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from analytics import export, tmf
from ingest.pipeline import ingest_paths
from store import RunFilter, reader
from tests.browser_support import MENU, chromium_page, screenshot, settle, streamlit_server
from tests.conftest import ARTIFACTS
from tests.test_browser_pages import url_param
from tests.test_incomplete_runs import RUNS, _log

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a cold Chromium + kaleido take minutes under load


def colour_shares(png: bytes) -> dict[str, float]:
    """Share of pixels that are frontier blue, human orange, and value green (the intersection fill)."""
    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    n = r.size
    return {
        "blue": float(((b > r + 90) & (b > g + 40)).sum() / n),
        "orange": float(((r > 180) & (g < 120) & (b < 60)).sum() / n),
        "green": float(((g > r + 40) & (g > b + 30)).sum() / n),
        "white": float(((r > 245) & (g > 245) & (b > 245)).sum() / n),
    }


def download(page: object, label: str, target: Path, *, timeout_ms: int = 180_000) -> bytes:
    with page.expect_download(timeout=timeout_ms) as info:  # type: ignore[attr-defined]
        page.get_by_role("button", name=label).click(timeout=timeout_ms)  # type: ignore[attr-defined]
    info.value.save_as(str(target))
    return target.read_bytes()


def test_tmf_page_and_exports_in_chromium(demo_app: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    url = demo_app  # the app over the demo, shared with the other tests that only read it (conftest)
    with chromium_page(height=1100) as page:
        # Open the app first, then follow the sidebar link, as a user does (a cold deep link is what the
        # leaderboard and drilldown browser tests open).
        page.goto(url + "/?benchmark=ad-bench", wait_until="domcontentloaded")
        page.wait_for_selector('[data-testid="stMetricValue"]', timeout=120_000)
        link = page.locator(f"{MENU} a", has_text="Tech-Market-Fit")
        link.wait_for(timeout=60_000)
        link.click()
        page.wait_for_selector("text=TMF stage", timeout=120_000)
        page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=120_000)
        page.wait_for_selector('[data-testid="stMetricValue"]', timeout=60_000)
        settle(page)
        metrics = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
        assert re.match(r"Stage [123]", metrics[0]), metrics
        assert any(re.search(r"\$\d", m) for m in metrics), metrics
        body = page.locator("body").inner_text()
        assert "Traceback" not in body and "Optimal supply curve" in body
        shot = screenshot(page, "tmf-page")
        assert shot.stat().st_size > 50_000

        page.get_by_text("Export for slides").scroll_into_view_if_needed()
        png = download(page, "Chart PNG", ARTIFACTS / "tmf-chart.png")
        svg = download(page, "Chart SVG", ARTIFACTS / "tmf-chart.svg")
        html = download(page, "Page HTML", ARTIFACTS / "tmf-page.html", timeout_ms=60_000)

    img = Image.open(io.BytesIO(png))
    # 1200 x (620 + the 160-px footer with the assumptions and the demo caveat) at scale 2
    assert img.format == "PNG" and img.size == (2400, 1560)
    shares = colour_shares(png)
    assert shares["blue"] > 0.002, shares  # frontier step and frontier points
    assert shares["orange"] > 0.0002, shares  # the human star
    assert shares["green"] > 0.01, shares  # the intersection (value) fill
    assert 0.2 < shares["white"] < 0.95, shares
    assert svg.lstrip().startswith(b"<svg") and b"Optimal supply curve" in svg
    assert b"Assumptions: human performance" in svg and b"DEMO DATA" in svg  # printed on the chart itself
    text = html.decode("utf-8")
    assert text.startswith("<!DOCTYPE html>") and "Tech-Market-Fit: ad-bench" in text and "Plotly" in text
    assert "Assumptions: human performance" in text and "not real" in text


def test_export_module_renders_the_fixture_chart(fixture_db: Path) -> None:
    with reader(fixture_db) as con:
        result = tmf.analyse(tmf.load(con, RunFilter(benchmark="mini-bench")))
    images = export.fig_to_images(tmf.fig_tmf(result), width=900, height=600, scale=1)
    (ARTIFACTS / "tmf-fixture.png").parent.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "tmf-fixture.png").write_bytes(images["png"])
    assert Image.open(io.BytesIO(images["png"])).size == (900, 600)
    assert colour_shares(images["png"])["green"] > 0.01
    assert b"Human" in images["svg"]
    with pytest.raises(export.ExportError):
        export.fig_to_images(tmf.fig_tmf(result), formats=["gif"])


# the run ids each Plotly chart of the page draws (its traces' data, as the browser holds it)
CHART_DATA_JS = """() => JSON.stringify([...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
  .map(e => e.data || []))"""


def test_tmf_incomplete_run_off_then_on_in_chromium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run cut short (m-cut, cancelled: tests/test_incomplete_runs.py's runs) is no point of the chart and the
    caption names it; "Include incomplete runs" ticked, it is drawn and the caption says so."""
    monkeypatch.setenv("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    monkeypatch.setenv("RUNLENS_SKIP_DEMO", "1")
    db = tmp_path / "cut.duckdb"
    assert [r.outcome for r in ingest_paths([_log(tmp_path, r) for r in RUNS], db=db)] == ["ingested"] * len(RUNS)
    with streamlit_server(db, env={"RUNLENS_AUTO_FIT": "0"}) as url, chromium_page(height=1100) as page:
        page.goto(url + "/tmf?benchmark=cut", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Tech-Market-Fit", exact=True).first.wait_for(timeout=180_000)
        page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=120_000)
        text = settle(page)
        charts = page.evaluate(CHART_DATA_JS)
        screenshot(page, "tmf-incomplete-off")
        assert "1 incomplete run not shown, as on the Leaderboard: m-cut (cancelled)" in text, text[:3000]
        assert "m-full" in charts and "m-cut" not in charts  # the complete runs are points, the cut one is not
        page.get_by_text("Change the assumptions").first.click()
        box = page.get_by_text("Include incomplete runs", exact=True).first
        box.wait_for(state="visible")
        settle(page)  # the expander opened (a click while it unfolded was once lost: the box stayed unticked)
        box.click()
        text = settle(page)
        charts = page.evaluate(CHART_DATA_JS)
        screenshot(page, "tmf-incomplete-on")
        assert url_param(page, "include_incomplete") == "1", page.url  # the view is in its link
        assert "1 incomplete run shown as points, as asked: m-cut (cancelled)" in text, text[:3000]
        assert "m-cut" in charts and "m-full" in charts
        assert not page.locator('[data-testid="stException"]').count()
