"""The cost of a model call from its model name and token counts, for traces that carry none.

Two sources, in this order: the mapping's ``prices`` (USD per million input and output tokens, per model name, as
the team pays them), then the pinned offline catalog of the ``genai-prices`` package (requirements.txt pins the
version; its data ships inside the package and is never updated at run time). A price found says where it came
from (``cost_source``); a model neither knows gets no cost, and the attempt's cost is left empty rather than
summed without it. docs/formats.md, "Cost".
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.metadata
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

CATALOG_PACKAGE = "genai-prices"


@dataclass(frozen=True)
class Price:
    """The cost of one call and where its price came from (``mapping`` or ``genai-prices <version>``)."""

    usd: float
    source: str
    model: str  # the catalog's model id (or the mapping's name)
    provider: str | None = None


@functools.cache
def catalog_name() -> str:
    """``genai-prices <installed version>``: what a computed cost names as its source."""
    try:
        return f"{CATALOG_PACKAGE} {importlib.metadata.version(CATALOG_PACKAGE)}"
    except importlib.metadata.PackageNotFoundError:
        return CATALOG_PACKAGE


def price_call(
    model: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    *,
    overrides: tuple[tuple[str, float, float], ...] = (),
    provider: str | None = None,
    when_ns: int | None = None,
) -> Price | None:
    """The cost of one call, or None when the model is unnamed, no tokens are known, or no price is found.

    Args:
        model: the model name the span gives (``llm.model_name``, ``gen_ai.response.model`` ...).
        input_tokens, output_tokens: the call's token counts (a missing one counts as 0 when the other is known).
        overrides: the mapping's ``(model, USD per million input, USD per million output)``; exact name, any case.
        provider: the provider the span names (``gen_ai.provider.name``, ``llm.provider``), a hint for the catalog.
        when_ns: the call's start (Unix ns): the catalog's price at that date (prices change over time).
    """
    if not model or (input_tokens is None and output_tokens is None):
        return None
    n_in, n_out = input_tokens or 0, output_tokens or 0
    for name, per_in, per_out in overrides:
        if name.lower() == model.lower():
            return Price((n_in * per_in + n_out * per_out) / 1e6, "mapping", name)
    return _catalog_price(model, n_in, n_out, provider, when_ns)


def _catalog_price(model: str, n_in: int, n_out: int, provider: str | None, when_ns: int | None) -> Price | None:
    from genai_prices import Usage, calc_price  # its data loads on first use (about 0.5 s)

    when = dt.datetime.fromtimestamp(when_ns / 1e9, dt.UTC) if when_ns and when_ns > 0 else None
    for hint in dict.fromkeys((_provider_id(provider), None)):
        try:
            found: Any = calc_price(
                Usage(input_tokens=n_in, output_tokens=n_out),
                model_ref=model,
                provider_id=hint,
                genai_request_timestamp=when,
            )
        except LookupError:
            continue
        total = found.total_price
        usd = float(total) if isinstance(total, Decimal | int | float) else None
        if usd is None:
            return None
        return Price(usd, catalog_name(), str(found.model.id), str(found.provider.id))
    return None


def _provider_id(provider: str | None) -> str | None:
    """The catalog's provider id for what a span names (``openai``, ``anthropic`` ...; ``gcp.gemini`` -> ``google``)."""
    if not provider:
        return None
    text = str(provider).strip().lower()
    return {"gcp.gemini": "google", "gcp.vertex_ai": "google-vertex", "aws.bedrock": "aws"}.get(text, text)
