"""export: figures to PNG and SVG (kaleido) and standalone HTML pages for slides. All of it is figure work, so it
lives in ``figures`` (the only kind of module that imports Plotly); this package re-exports its public names."""

from __future__ import annotations

from analytics.export.figures import (
    DEBIAN_CHROMIUM,
    IMAGE_FORMATS,
    RENDER_TIMEOUT_S,
    ExportError,
    configure_browser,
    fig_to_images,
    page_html,
)

__all__ = [
    "DEBIAN_CHROMIUM",
    "IMAGE_FORMATS",
    "RENDER_TIMEOUT_S",
    "ExportError",
    "configure_browser",
    "fig_to_images",
    "page_html",
]
