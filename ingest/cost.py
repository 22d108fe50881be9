"""The cost of a model call from its model name and token counts, for traces that carry none.

Two sources, in this order: the mapping's ``prices`` (USD per million input and output tokens, per model name, as
the team pays them), then the pinned offline catalog of the ``genai-prices`` package (requirements.txt pins the
version; its data ships inside the package and is never updated at run time). A price found says where it came
from (``cost_source``); a model neither knows gets no cost, and the attempt's cost is left empty rather than
summed without it. docs/formats.md, "Cost".

Cached input is priced as cached: the tokens read from and written to the provider's prompt cache are part of the
call's input (as the GenAI conventions and OpenInference count it) but cost what the catalog (or the mapping) says
for them, often a tenth of the input price. Reasoning tokens are part of the output and priced as output.
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
class ModelPrice:
    """A mapping's price for one model name, USD per million tokens; a cache price left out is the input price."""

    model: str
    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None


@dataclass(frozen=True)
class Tokens:
    """One call's tokens. ``input`` counts all of its input, the cached part included; ``cache_read`` and
    ``cache_write`` are the parts of it read from and written to the prompt cache (None: not reported)."""

    input: int | None
    output: int | None
    cache_read: int | None = None
    cache_write: int | None = None

    @classmethod
    def reported(cls, input: int | None, output: int | None, cache_read: int | None, cache_write: int | None) -> Tokens:
        """The counts as a producer reports them. An input smaller than its cached parts was counted without them
        (Anthropic's own API does: ``input_tokens`` beside ``cache_read_input_tokens``), so they are added to it."""
        cached = (cache_read or 0) + (cache_write or 0)
        if input is not None and cached > input:
            input += cached
        return cls(input, output, cache_read, cache_write)


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
    tokens: Tokens,
    *,
    overrides: tuple[ModelPrice, ...] = (),
    provider: str | None = None,
    when_ns: int | None = None,
) -> Price | None:
    """The cost of one call, or None when the model is unnamed, no tokens are known, or no price is found.

    Args:
        model: the model name the span gives (``llm.model_name``, ``gen_ai.response.model`` ...).
        tokens: the call's token counts (a missing input or output counts as 0 when the other is known).
        overrides: the mapping's prices; exact name, any case.
        provider: the provider the span names (``gen_ai.provider.name``, ``llm.provider``), a hint for the catalog.
        when_ns: the call's start (Unix ns): the catalog's price at that date (prices change over time).
    """
    if not model or (tokens.input is None and tokens.output is None):
        return None
    for price in overrides:
        if price.model.lower() == model.lower():
            return Price(_mapping_usd(price, tokens), "mapping", price.model)
    return _catalog_price(model, tokens, provider, when_ns)


def _mapping_usd(price: ModelPrice, tokens: Tokens) -> float:
    read, write = tokens.cache_read or 0, tokens.cache_write or 0
    uncached = max((tokens.input or 0) - read - write, 0)
    per_read = price.input_per_mtok if price.cache_read_per_mtok is None else price.cache_read_per_mtok
    per_write = price.input_per_mtok if price.cache_write_per_mtok is None else price.cache_write_per_mtok
    usd = uncached * price.input_per_mtok + read * per_read + write * per_write
    return (usd + (tokens.output or 0) * price.output_per_mtok) / 1e6


def _catalog_price(model: str, tokens: Tokens, provider: str | None, when_ns: int | None) -> Price | None:
    from genai_prices import Usage, calc_price  # its data loads on first use (about 0.5 s)

    when = dt.datetime.fromtimestamp(when_ns / 1e9, dt.UTC) if when_ns and when_ns > 0 else None
    usage = Usage(
        input_tokens=tokens.input or 0,
        output_tokens=tokens.output or 0,
        cache_read_tokens=tokens.cache_read or None,
        cache_write_tokens=tokens.cache_write or None,
    )
    for hint in dict.fromkeys((_provider_id(provider), None)):
        try:
            found: Any = calc_price(
                usage,
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
