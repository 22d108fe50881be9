"""The OpenAI-compatible client: configuration from the environment, one chat call with retries.

Shared by the LLM judge (analytics/judge.py) and natural-language-to-SQL on the SQL page. Any server that
speaks the chat-completions protocol works (OpenAI, vLLM, Ollama, llama.cpp); nothing here talks to the
network until ``chat`` is called, so pages can ask ``llm_config()`` whether a judge is available for free.

Environment:
    OPENAI_BASE_URL        endpoint, e.g. ``http://127.0.0.1:8000/v1`` (required to enable the features)
    OPENAI_API_KEY         key (local servers accept any non-empty value; ``none`` is used when unset)
    RUNLENS_JUDGE_MODEL    model name sent to the server (required)
    RUNLENS_JUDGE_TIMEOUT_S, RUNLENS_JUDGE_RETRIES, RUNLENS_JUDGE_CONCURRENCY, RUNLENS_JUDGE_BACKOFF_S
    RUNLENS_JUDGE_PRICE_INPUT_PER_MTOK, RUNLENS_JUDGE_PRICE_OUTPUT_PER_MTOK   (USD, for cost_usd)
    RUNLENS_DISABLE_JUDGE_NETWORK=1   only loopback endpoints count as configured (the test suite sets it)
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from store import RunlensError

ENABLE_HELP = (
    "The LLM judge is off: no OpenAI-compatible endpoint is configured. To enable it, set "
    "OPENAI_BASE_URL (e.g. http://127.0.0.1:8000/v1 for vLLM or http://127.0.0.1:11434/v1 for Ollama), "
    "OPENAI_API_KEY and RUNLENS_JUDGE_MODEL, then run "
    "`python -m analytics judge --benchmark NAME --failed-only`. The judge adds AD-Bench Stage-1 error labels "
    "(source = judge), xbench 1-5 scores and GEM-Bench 0/30/60/90 ratings; every other view works without it."
)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class LLMError(RunlensError):
    """A chat call failed for good (after retries), or the endpoint is not configured."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind  # timeout, rate_limit, server, connection, client, config


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call the model."""

    base_url: str
    api_key: str
    model: str
    timeout_s: float = 60.0
    max_retries: int = 4
    concurrency: int = 4
    backoff_s: float = 1.0
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float | None:
        """Cost of a call at the configured prices (None when prices are unknown)."""
        if self.price_input_per_mtok is None or self.price_output_per_mtok is None:
            return None
        return (input_tokens * self.price_input_per_mtok + output_tokens * self.price_output_per_mtok) / 1e6


@dataclass(frozen=True)
class ChatResult:
    """Text of the first choice and the token usage the server reported."""

    text: str
    input_tokens: int
    output_tokens: int


def _float(env: Mapping[str, str], name: str, default: float | None) -> float | None:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise LLMError(f"{name}={raw!r} is not a number", kind="config") from exc


def llm_config(env: Mapping[str, str] | None = None) -> LLMConfig | None:
    """The configuration from the environment, or None when no endpoint is configured."""
    env = os.environ if env is None else env
    base_url = (env.get("OPENAI_BASE_URL") or "").strip()
    model = (env.get("RUNLENS_JUDGE_MODEL") or "").strip()
    if not base_url or not model:
        return None
    if env.get("RUNLENS_DISABLE_JUDGE_NETWORK") == "1" and urlparse(base_url).hostname not in LOOPBACK_HOSTS:
        return None  # tests must never reach a real server
    return LLMConfig(
        base_url=base_url,
        api_key=(env.get("OPENAI_API_KEY") or "none"),
        model=model,
        timeout_s=_float(env, "RUNLENS_JUDGE_TIMEOUT_S", 60.0) or 60.0,
        max_retries=int(_float(env, "RUNLENS_JUDGE_RETRIES", 4) or 0),
        concurrency=max(1, int(_float(env, "RUNLENS_JUDGE_CONCURRENCY", 4) or 1)),
        backoff_s=_float(env, "RUNLENS_JUDGE_BACKOFF_S", 1.0) or 0.0,
        price_input_per_mtok=_float(env, "RUNLENS_JUDGE_PRICE_INPUT_PER_MTOK", None),
        price_output_per_mtok=_float(env, "RUNLENS_JUDGE_PRICE_OUTPUT_PER_MTOK", None),
    )


def require_config(env: Mapping[str, str] | None = None) -> LLMConfig:
    """The configuration, or an LLMError that says how to enable the features."""
    cfg = llm_config(env)
    if cfg is None:
        raise LLMError(ENABLE_HELP, kind="config")
    return cfg


def make_client(cfg: LLMConfig) -> Any:
    """An ``openai.OpenAI`` client for ``cfg``; retries are ours (see ``chat``), so the client's are off."""
    import openai

    return openai.OpenAI(base_url=cfg.base_url, api_key=cfg.api_key, timeout=cfg.timeout_s, max_retries=0)


def _classify(exc: BaseException) -> tuple[str, bool, float | None]:
    """(kind, is_retryable, retry_after_s) of an exception raised by the openai client."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout", True, None
    if isinstance(exc, openai.APIConnectionError):
        return "connection", True, None
    if isinstance(exc, openai.APIStatusError):
        retry_after = None
        with contextlib.suppress(TypeError, ValueError):
            retry_after = float(exc.response.headers.get("retry-after", ""))
        if exc.status_code == 429:
            return "rate_limit", True, retry_after
        if exc.status_code >= 500:
            return "server", True, retry_after
        return "client", False, None
    return "client", False, None


def chat(
    client: Any,
    cfg: LLMConfig,
    messages: Sequence[Mapping[str, str]],
    *,
    rng: random.Random | None = None,
    max_tokens: int = 1024,
) -> ChatResult:
    """One chat completion at temperature 0, retried with exponential backoff on 429, 5xx and timeouts.

    Raises:
        LLMError: after the last retry, or at once on a non-retryable error (400, 401, ...).
    """
    import openai

    rng = rng or random.Random(0)
    for attempt in range(cfg.max_retries + 1):
        try:
            resp = client.chat.completions.create(
                model=cfg.model, messages=list(messages), temperature=0, max_tokens=max_tokens, timeout=cfg.timeout_s
            )
            text = (resp.choices[0].message.content or "") if resp.choices else ""
            usage = getattr(resp, "usage", None)
            return ChatResult(
                text=text,
                input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            )
        except openai.OpenAIError as exc:
            kind, retryable, retry_after = _classify(exc)
            if not retryable or attempt == cfg.max_retries:
                raise LLMError(f"{kind}: {exc}", kind=kind) from exc
            # Full jitter keeps concurrent workers from retrying in lock-step; Retry-After wins when given.
            delay = retry_after if retry_after is not None else cfg.backoff_s * (2**attempt) * rng.uniform(0.5, 1.0)
            time.sleep(min(delay, 60.0))
    raise LLMError("unreachable", kind="client")  # pragma: no cover
