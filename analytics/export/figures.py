"""Figure export: PNG and SVG through kaleido (which drives a headless Chromium), standalone HTML for slides.

Kaleido 1.x finds its browser through choreographer, which honours the ``BROWSER_PATH`` environment variable;
when it is unset and Debian's ``/usr/bin/chromium`` exists we point it there. One browser session renders all
requested formats of a figure (a cold start costs seconds, so callers render only on demand).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import html
import os
from collections.abc import Sequence
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio

from store import RunlensError

DEBIAN_CHROMIUM = Path("/usr/bin/chromium")
IMAGE_FORMATS = ("png", "svg")
RENDER_TIMEOUT_S = 120.0


class ExportError(RunlensError):
    """A figure could not be rendered (no browser, timeout, kaleido failure)."""


def configure_browser() -> str | None:
    """Set ``BROWSER_PATH`` to Debian's Chromium when unset; return the browser path kaleido will use."""
    if not os.environ.get("BROWSER_PATH") and DEBIAN_CHROMIUM.exists():
        os.environ["BROWSER_PATH"] = str(DEBIAN_CHROMIUM)
    return os.environ.get("BROWSER_PATH")


async def _render(fig: dict, formats: Sequence[str], width: int, height: int, scale: float) -> list[bytes]:
    import kaleido

    async with kaleido.Kaleido(n=1, timeout=RENDER_TIMEOUT_S) as k:
        return [
            await k.calc_fig(fig, opts={"format": f, "width": width, "height": height, "scale": scale}) for f in formats
        ]


def fig_to_images(
    fig: go.Figure, *, formats: Sequence[str] = IMAGE_FORMATS, width: int = 1200, height: int = 700, scale: float = 2.0
) -> dict[str, bytes]:
    """Render ``fig`` to each format (``png``, ``svg``) in one browser session.

    Runs the event loop in a worker thread so it never collides with a caller's loop (Streamlit has one).

    Raises:
        ExportError: no browser, an unknown format, or a rendering failure.
    """
    bad = [f for f in formats if f not in IMAGE_FORMATS]
    if bad:
        raise ExportError(f"unknown image format(s) {bad}: expected {IMAGE_FORMATS}")
    configure_browser()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(asyncio.run, _render(fig.to_dict(), list(formats), width, height, scale))
        try:
            images = future.result(timeout=RENDER_TIMEOUT_S + 30)
        except Exception as exc:  # kaleido/choreographer raise many types; one project error for pages
            raise ExportError(f"rendering failed: {type(exc).__name__}: {exc}") from exc
    return dict(zip(formats, images, strict=True))


def page_html(title: str, blocks: Sequence[tuple[str, str | go.Figure]], *, note: str = "") -> str:
    """A standalone HTML page (plotly.js inlined once, works offline) of headings with text or a figure.

    Args:
        title: page title and top heading.
        blocks: ``(heading, text or figure)`` in order; text is escaped, never interpreted as HTML.
        note: a small print line under the title (data source, date).
    """
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if note:
        parts.append(f"<p class='note'>{html.escape(note)}</p>")
    first = True
    for heading, body in blocks:
        if heading:
            parts.append(f"<h2>{html.escape(heading)}</h2>")
        if isinstance(body, go.Figure):
            parts.append(pio.to_html(body, full_html=False, include_plotlyjs=first, config={"displaylogo": False}))
            first = False
        else:
            parts.append("".join(f"<p>{html.escape(line)}</p>" for line in str(body).split("\n") if line))
    style = (
        "body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1200px;margin:2em auto;"
        "color:#212529}h1{font-size:1.8em}h2{font-size:1.2em;margin-top:1.6em}.note{color:#6c757d}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body>{''.join(parts)}</body></html>"
    )
