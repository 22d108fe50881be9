"""Inspect's token usage read as Inspect counts it, per provider and version, and priced when the log has no cost.

Inspect's ``ModelUsage.input_tokens`` has meant two things. Since inspect-ai 0.3.184 (its #3341, "Normalize
handling of cached tokens") it is the input charged at the full rate: the parts read from and written to the
prompt cache (``input_tokens_cache_read`` / ``input_tokens_cache_write``) are left out, for every provider (Google
since 0.3.208). Before, Anthropic and Bedrock left them out while OpenAI (chat, responses, o1), Grok and Google
counted the cache read inside ``input_tokens``. ``total_tokens`` is the provider's own total in every version (all
of the input, cached parts included, plus the output), so a call that has it says which it used; without it the
log's inspect-ai version (``eval.packages``) and the call's provider decide.

Runlens counts a call's input whole, the cached part included (``ingest.cost.Tokens``, as the OTLP reader does), and
prices it as Inspect's own ``compute_model_cost`` does: uncached input at the input price, cache reads and writes at
theirs. A call whose log carries Inspect's ``total_cost`` (a model with cost data: ``--model-cost-config``) keeps
Inspect's figure; any other call is priced from the catalog (``ingest.cost``) by its model and provider.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from typing import Any

from ingest.cost import Tokens, price_call

NORMALISED = (0, 3, 184)  # input_tokens excludes the cached parts for every provider but Google
GOOGLE_NORMALISED = (0, 3, 208)
EXCLUSIVE_BEFORE = frozenset({"anthropic", "bedrock"})  # providers that left the cache out before 0.3.184
GOOGLE = frozenset({"google", "vertex"})
INSPECT_SOURCE = "inspect"  # the cost Inspect wrote itself (``total_cost``)


class BadCount(ValueError):
    """A token count that is not a whole number; ``args[0]`` is its JSON path below the sample."""


def count(value: Any, where: str) -> int | None:
    """A token count: an int, an integral float, or digits in a string (``"74"``); None when absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise BadCount(where)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise BadCount(where)


def inspect_version(header: Any) -> tuple[int, ...] | None:
    """The inspect-ai version that wrote a log (``eval.packages.inspect_ai``, ``0.3.285``), or None."""
    ev = header.get("eval") if isinstance(header, dict) else None
    packages = ev.get("packages") if isinstance(ev, dict) else None
    text = packages.get("inspect_ai") if isinstance(packages, dict) else None
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", text) if isinstance(text, str) else None
    return tuple(int(x) for x in found.groups()) if found else None


def provider_of(model: Any) -> str | None:
    """The provider part of an Inspect model name (``openai/gpt-4o`` -> ``openai``)."""
    return model.split("/", 1)[0].lower() if isinstance(model, str) and "/" in model else None


def call_tokens(usage: dict[str, Any], where: str, provider: str | None, version: tuple[int, ...] | None) -> Tokens:
    """One call's (or one model's summed) usage as ``Tokens``: ``input`` with its cached parts included.

    Raises:
        BadCount: a count is not a whole number.
    """
    inp = count(usage.get("input_tokens"), f"{where}.input_tokens")
    out = count(usage.get("output_tokens"), f"{where}.output_tokens")
    read = count(usage.get("input_tokens_cache_read"), f"{where}.input_tokens_cache_read")
    write = count(usage.get("input_tokens_cache_write"), f"{where}.input_tokens_cache_write")
    total = count(usage.get("total_tokens"), f"{where}.total_tokens")
    cached = (read or 0) + (write or 0)
    if inp is not None and cached and _excludes_cached(inp, out or 0, cached, total, provider, version):
        inp += cached
    return Tokens(inp, out, read, write)


def _excludes_cached(
    inp: int, out: int, cached: int, total: int | None, provider: str | None, version: tuple[int, ...] | None
) -> bool:
    """Whether ``input_tokens`` left the cached parts out (see the module's docstring)."""
    if inp < cached:
        return True  # it cannot hold them
    if total is not None:
        if total == inp + cached + out:
            return True
        if total == inp + out:
            return False
    if version is None or version >= GOOGLE_NORMALISED:
        return True
    if version >= NORMALISED:
        return provider not in GOOGLE
    return provider in EXCLUSIVE_BEFORE


def call_cost(usage: dict[str, Any], tokens: Tokens, model: Any, served: Any, when: Any) -> tuple[float, str] | None:
    """``(USD, source)`` for one call: Inspect's own ``total_cost``, else the catalog's price of the model that
    served it (``served``: the output's model id, else the name after the provider), else None."""
    own = usage.get("total_cost")
    if isinstance(own, int | float) and not isinstance(own, bool):
        return float(own), INSPECT_SOURCE
    provider = provider_of(model)
    names = [served] if isinstance(served, str) and served else []
    if isinstance(model, str) and model:
        names.append(model.split("/")[-1])
    for name in dict.fromkeys(names):
        price = _catalog(name, tokens, provider, _when_ns(when))
        if price is not None:
            return price
    return None


@functools.lru_cache(maxsize=4096)
def _catalog(name: str, tokens: Tokens, provider: str | None, when_ns: int | None) -> tuple[float, str] | None:
    """``price_call`` remembered: a call is priced for its step and again for the attempt's sum."""
    price = price_call(name, tokens, provider=provider, when_ns=when_ns)
    return None if price is None else (price.usd, price.source)


def _when_ns(when: Any) -> int | None:
    """An ISO timestamp (a model event's ``timestamp``) as Unix ns, or None."""
    if not isinstance(when, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(when)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1e9)


def usage_totals(calls: list[tuple[Tokens, tuple[float, str] | None, str]]) -> dict[str, Any]:
    """An attempt's tokens and cost over its calls (``(tokens, cost or None, model name)``): the cost only when every
    call with tokens has one, else ``cost_missing`` names the models without a price; a cost with a computed part
    names its sources (``cost_source``: source -> calls), which marks it computed."""
    out: dict[str, Any] = {}
    for key, values in (
        ("input_tokens", [t.input for t, _, _ in calls]),
        ("output_tokens", [t.output for t, _, _ in calls]),
    ):
        known = [n for n in values if n is not None]
        if known:
            out[key] = sum(known)
    unpriced = [name for t, cost, name in calls if cost is None and (t.input or t.output)]
    if unpriced:
        out["cost_missing"] = {
            "models": sorted(set(unpriced)),
            "steps": len(unpriced),
            "reason": "no total_cost in the log and no price in the catalog (Inspect's --model-cost-config prices it)",
        }
        return out
    priced = [cost for _, cost, _ in calls if cost is not None]
    if not priced:
        return out
    out["cost_usd"] = sum(usd for usd, _ in priced)
    sources: dict[str, int] = {}
    for _, source in priced:
        sources[source] = sources.get(source, 0) + 1
    if set(sources) != {INSPECT_SOURCE}:
        out["cost_source"] = sources
    return out
