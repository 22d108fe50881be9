"""Spans -> steps: LLM spans are model turns (priced from model and tokens when the span carries no cost), tool
and retriever spans are tool calls; the evaluations the spans carry are collected on the way."""

from __future__ import annotations

from typing import Any

from ingest.cost import Tokens, price_call
from ingest.otlp.mapping import TraceMapping
from ingest.otlp_conventions import (
    STEP_KINDS,
    Evaluation,
    evaluations,
    llm_step,
    span_class,
    tool_step,
)
from ingest.otlp_decode import Span

PROVIDER_KEYS = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")


def _steps_and_evaluations(spans: list[Span], mapping: TraceMapping) -> tuple[list[dict[str, Any]], list[Evaluation]]:
    steps: list[dict[str, Any]] = []
    evals: list[Evaluation] = []
    rnd = 0
    for span in spans:
        cls = span_class(span)
        evals.extend(evaluations(span, cls))
        if cls == "llm":
            rnd += 1
            step = llm_step(span, keep_input=rnd == 1)
            if step.get("cost_usd") is None:  # neither convention carries one: priced from model and tokens
                tokens = Tokens.reported(
                    step.get("input_tokens"),
                    step.get("output_tokens"),
                    step.get("cache_read_tokens"),
                    step.get("cache_write_tokens"),
                )
                price = price_call(
                    step.get("model"),
                    tokens,
                    overrides=mapping.prices,
                    provider=next((str(span.attrs[k]) for k in PROVIDER_KEYS if span.attrs.get(k)), None),
                    when_ns=span.start_ns,
                )
                if price is not None:
                    step["cost_usd"], step["cost_source"] = price.usd, price.source
        elif cls in STEP_KINDS:
            step = tool_step(span, cls)
        else:
            continue  # agent, chain, evaluator and other spans: kept whole in the attempt's extra (other_spans)
        step["round"] = max(rnd, 1)
        steps.append(step)
    last_llm = max((i for i, s in enumerate(steps) if s["kind"] == "model"), default=None)
    if last_llm is not None and last_llm == len(steps) - 1 and "tool_calls" not in steps[last_llm]:
        steps[last_llm]["kind"] = "final"  # the last model turn, calling no tool, is the answer
    evals.sort(key=lambda e: e.time_ns)
    return steps, evals
