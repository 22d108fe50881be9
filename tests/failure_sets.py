"""Held-out failure sets with known causes, for the failure-cluster tests and bench/bench_clusters.py.

``failure_set(seed, n_causes, n_failures, style)`` writes native run-log records (benchmark, runs, tasks, attempts
with steps) of ``n_failures`` failed attempts (and a few passes), each failing for one of ``n_causes`` causes drawn
from ``CAUSES``, and returns them with the truth: ``(run_id, task_id, sample) -> cause``.

What makes it a fair test of "clusters that match causes":

* every cause is **worded differently every time**: several phrasings per cause, each with slots (ids, numbers,
  field names, hosts) filled at random, random prefixes ("Error:", "tool failed -"), and random case;
* transcripts carry **boilerplate shared across causes**: a planning message, an account lookup, a search on the
  task's topic (one of many topics), benign warnings in some attempts, a closing answer that says the analysis
  could not be completed in one of several wordings whatever the cause;
* causes show in different places: a tool's error, a tool's result (an empty or malformed result), the final
  answer against the reference (a wrong number, a refusal), or the attempt's status (a step budget);
* cause sizes are unequal (a seeded Dirichlet draw), agent versions and runs are mixed, so a cluster is not a run;
* two **styles** with different boilerplate and step layout: ``agent`` (tool calls and a final answer) and
  ``chat`` (assistant/tool messages, errors as exception text inside results).

Nothing here is read by the code under test: the clusters see the stored attempts only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

Slot = Callable[[np.random.Generator], str]


def _num(lo: int, hi: int) -> Slot:
    return lambda r: str(int(r.integers(lo, hi)))


def _pick(*words: str) -> Slot:
    return lambda r: words[int(r.integers(len(words)))]


def _ident(prefix: str) -> Slot:
    return lambda r: f"{prefix}{int(r.integers(10_000, 99_999))}"


SLOTS: dict[str, Slot] = {
    "n": _num(2, 120),
    "ms": _num(1000, 60000),
    "tok": _num(8000, 200000),
    "id": _ident("acct_"),
    "cid": _ident("cmp-"),
    "host": _pick("api.ads.internal", "metrics-gw.svc", "reporting.example.net", "10.2.7.14:8443", "bi-proxy"),
    "field": _pick("start_date", "account_id", "granularity", "metric", "group_by", "currency", "limit", "region"),
    "tool": _pick("get_campaign_stats", "fetch_roi", "lookup_budget", "query_dashboard", "get_ctr_report"),
    "var": _pick("df", "rows", "total", "ratio", "weekly", "resp"),
    "key": _pick("clicks", "spend", "impressions", "date", "ctr", "conversions"),
    "x": lambda r: f"{r.uniform(0.5, 40):.2f}",
    "y": lambda r: f"{r.uniform(0.5, 40):.2f}",
}


@dataclass(frozen=True)
class Cause:
    """A failure cause: where it shows, its core phrases (the words any report of it uses: "timed out",
    "timeout") and the sentences around them (``{core}`` and ``{slot}`` filled at random)."""

    name: str
    where: str  # tool_error | tool_result | answer | status
    cores: tuple[str, ...]
    frames: tuple[str, ...]


CAUSES: tuple[Cause, ...] = (
    Cause("rate limit", "tool_error",
          ("rate limit exceeded", "too many requests", "rate-limited", "request rate limit reached"),
          ("HTTP 429 {core}: retry after {n} s", "{core} for key {id}", "{core}, please slow down",
           "request rejected ({core})", "{core}; {n} calls in the last minute")),
    Cause("timeout", "tool_error",
          ("timed out", "timeout", "gateway timeout", "deadline exceeded"),
          ("upstream {core} after {n} s", "the request to {host} {core}", "{core} waiting for {host} ({ms} ms)",
           "504 {core} from {host}", "read {core} (limit {n} s)")),
    Cause("auth", "tool_error",
          ("unauthorized", "permission denied", "access token expired", "forbidden: missing scope"),
          ("401 {core}", "{core} for account {id}", "{core} (ads.read)", "authentication failed: {core}",
           "the credentials were rejected: {core}")),
    Cause("bad parameter", "tool_error",
          ("invalid parameter", "invalid argument", "validation error on field", "unsupported parameter value"),
          ("{core} {field}: expected the documented format", "{core} '{field}' = '{n}'", "{core} {field} (got {n})",
           "400 Bad Request: {core} {field}", "{core}: {field} is out of range")),
    Cause("not found", "tool_error",
          ("not found", "does not exist", "no such campaign", "unknown campaign id"),
          ("404 {core}: /v2/accounts/{id}", "campaign {cid} {core}", "{core} {cid}", "resource {cid}: {core}",
           "lookup of {cid} failed: {core}")),
    Cause("unknown tool", "tool_error",
          ("unknown tool", "no such function", "tool is not available", "undefined function"),
          ("{core} '{tool}_v2'", "{core}: {tool}_all", "called {tool}_by_day but got {core}", "{core} {tool}_summary",
           "{tool}_export: {core} in this environment")),
    Cause("context overflow", "tool_error",
          ("context length exceeded", "too many tokens", "prompt is too long", "maximum context length"),
          ("{core}: {tok} tokens > 128000", "{core} for the model's window", "{core} ({tok} tokens)",
           "input truncated, {core}", "the history does not fit: {core}")),
    Cause("code crash", "tool_error",
          ("Traceback (most recent call last)", "unhandled exception in the sandbox", "the python cell raised"),
          ("{core}: KeyError: '{key}'", "{core}: NameError: name '{var}' is not defined",
           "{core} IndexError: list index out of range", "{core}: ZeroDivisionError in {key} ratio",
           "{core}: AttributeError: 'NoneType' object has no attribute '{key}'")),
    Cause("malformed output", "tool_result",
          ("JSONDecodeError", "could not parse the JSON", "malformed JSON", "invalid JSON response"),
          ("{core}: Expecting value: line {n} column {n}", "{core} (got an HTML page: 502 Bad Gateway)",
           "{core}, body truncated at byte {ms}", "{core}: unexpected token '<'", "parser error: {core}")),
    Cause("empty data", "tool_result",
          ("no rows returned", "0 results", "empty result set", "no data available"),
          ("{core} for the selected date range", "query finished: {core}", "{core} for account {id}",
           "[] ({core})", "{core} in this period")),
    Cause("refusal", "answer",
          ("I'm sorry, but I can't help", "I am unable to assist", "I cannot provide", "I must decline"),
          ("{core} with that request.", "{core} with accessing this account's data.",
           "{core}: it may violate the usage policy.", "Sorry. {core}, this is not something I can do.")),
    Cause("wrong number", "answer",
          ("{x}%", "{x} percent", "{x} thousand"),
          ("The CTR for the period is {core}.", "Week-over-week growth was {core}.", "Total spend came to {core}.",
           "Answer: {core}", "The ROI works out to {core}.")),
    Cause("step budget", "status",
          ("maximum number of steps reached", "step budget exhausted", "iteration limit hit", "max turns exceeded"),
          ("{core} ({n}) without a final answer", "stopped: {core} after {n} tool calls", "{core}; no answer",
           "agent halted: {core} at round {n}")),
    Cause("network", "tool_error",
          ("connection refused", "connection reset by peer", "network unreachable", "could not connect"),
          ("{core} by {host}", "{core} while contacting {host}", "ECONN: {core}", "{core} ({host}:{n})",
           "socket error: {core}")),
)  # fmt: skip

TOPICS = (
    "video CTR by week", "budget pacing for Q3", "top creatives by conversions", "audience overlap of two segments",
    "cost per acquisition trend", "ROI of the spring campaign", "impression share by region", "daily spend anomaly",
    "best performing ad group", "conversion rate by device", "frequency capping effect", "brand lift survey results",
)  # fmt: skip
PREFIXES = ("", "", "Error: ", "ERROR - ", "tool failed: ", "exception: ", "failed with ")
CLOSINGS = (
    "I could not complete the analysis because a tool call failed.",
    "Unfortunately the data could not be retrieved, so I cannot give a final figure.",
    "The analysis is incomplete: one of the steps did not succeed.",
    "I was not able to finish; please try again later.",
    "Based on the available information I cannot determine the answer.",
)
PLANS = (
    "Let me first look up the user's accounts, then query the metrics.",
    "I will find the relevant accounts and then compute the requested figure.",
    "Plan: list accounts, fetch the data for the period, calculate the result.",
    "First I need the account list; after that I can pull the report.",
)
WARNINGS = ("warning: slow response ({ms} ms)", "note: results cached {n} minutes ago", "info: using default timezone")
CHAT_SYSTEMS = (
    "You are a helpful analytics assistant with access to reporting tools.",
    "Assistant for advertising analytics. Use the tools to answer precisely.",
)


def fill(template: str, rng: np.random.Generator) -> str:
    """``template`` with each ``{slot}`` filled at random (``{{`` stays a brace)."""
    out = template
    for name, slot in SLOTS.items():
        while "{" + name + "}" in out:
            out = out.replace("{" + name + "}", slot(rng), 1)
    return out.replace("{{", "{").replace("}}", "}")


def _vary(text: str, rng: np.random.Generator) -> str:
    u = rng.random()
    if u < 0.15:
        return text.lower()
    if u < 0.22:
        return text.upper()
    return text


@dataclass(frozen=True)
class FailureSet:
    """Native run-log records and the truth: each failed attempt's cause."""

    records: list[dict[str, Any]]
    truth: dict[tuple[str, str, int], str]
    causes: tuple[str, ...]
    benchmark: str

    def write(self, path: Path) -> Path:
        """The records as one native JSON Lines file."""
        path.write_text("\n".join(json.dumps(r) for r in self.records) + "\n", encoding="utf-8")
        return path


def _phrase(cause: Cause, rng: np.random.Generator) -> str:
    frame = cause.frames[int(rng.integers(len(cause.frames)))]
    core = cause.cores[int(rng.integers(len(cause.cores)))]
    return fill(frame.replace("{core}", core), rng)


def _agent_steps(cause: Cause, topic: str, rng: np.random.Generator) -> tuple[list[dict[str, Any]], str, str]:
    """Steps, final answer and status of one failed attempt in the ``agent`` style."""
    steps: list[dict[str, Any]] = [
        {"round": 1, "kind": "plan", "content": PLANS[int(rng.integers(len(PLANS)))]},
        {
            "round": 2,
            "kind": "tool_call",
            "tool": "get_user_account_list",
            "args": {"user_id": f"u{int(rng.integers(1, 900))}"},
            "result": f"{int(rng.integers(2, 400))} accounts found",
        },
        {"round": 3, "kind": "tool_call", "tool": "search", "args": {"query": topic}, "result": f"docs on {topic}"},
    ]
    if rng.random() < 0.3:
        steps.append(
            {"round": 4, "kind": "tool_call", "tool": "search", "args": {"query": topic},
             "result": fill(WARNINGS[int(rng.integers(len(WARNINGS)))], rng)}
        )  # fmt: skip
    tool = fill("{tool}", rng)
    answer = CLOSINGS[int(rng.integers(len(CLOSINGS)))]
    status = "completed"
    text = _vary(_phrase(cause, rng), rng)
    if cause.where == "tool_error":
        prefix = PREFIXES[int(rng.integers(len(PREFIXES)))]
        steps.append({"round": 5, "kind": "tool_call", "tool": tool, "args": {"topic": topic}, "error": prefix + text})
        status = "tool_failure" if rng.random() < 0.5 else "completed"
    elif cause.where == "tool_result":
        steps.append({"round": 5, "kind": "tool_call", "tool": tool, "args": {"topic": topic}, "result": text})
    elif cause.where == "answer":
        answer = text
    else:  # status: the run stopped the agent
        for i in range(int(rng.integers(2, 5))):
            steps.append(
                {"round": 5 + i, "kind": "tool_call", "tool": tool, "args": {"page": i}, "result": f"page {i} of data"}
            )
        answer = text
        status = "timeout"
    steps.append({"round": 9, "kind": "final", "content": answer})
    return steps, answer, status


def _chat_steps(cause: Cause, topic: str, rng: np.random.Generator) -> tuple[list[dict[str, Any]], str, str]:
    """Steps, final answer and status of one failed attempt in the ``chat`` style (messages; exceptions in text)."""
    steps: list[dict[str, Any]] = [
        {"kind": "message", "content": "system: " + CHAT_SYSTEMS[int(rng.integers(len(CHAT_SYSTEMS)))]},
        {"kind": "message", "content": f"user: Please report the {topic}."},
        {"kind": "message", "content": "assistant: Sure, I will query the reporting tools for that."},
    ]
    tool = fill("{tool}", rng)
    answer = "assistant: " + CLOSINGS[int(rng.integers(len(CLOSINGS)))]
    status = "completed"
    text = _vary(_phrase(cause, rng), rng)
    if cause.where == "tool_error":
        steps.append({"kind": "tool_call", "tool": tool, "args": {"q": topic}, "result": f"Exception raised: {text}"})
        status = "crashed" if rng.random() < 0.4 else "completed"
    elif cause.where == "tool_result":
        steps.append({"kind": "tool_call", "tool": tool, "args": {"q": topic}, "result": text})
    elif cause.where == "answer":
        answer = text
    else:
        answer = text
        status = "timeout"
    steps.append({"kind": "final", "content": answer})
    return steps, answer, status


def failure_set(
    *, seed: int, n_causes: int, n_failures: int, style: str = "agent", n_passes: int = 10, benchmark: str = "held"
) -> FailureSet:
    """A seeded held-out set (see the module docstring)."""
    rng = np.random.default_rng(seed)
    chosen = [CAUSES[i] for i in rng.choice(len(CAUSES), n_causes, replace=False)]
    shares = rng.dirichlet(np.full(n_causes, 2.0))
    which = rng.choice(n_causes, n_failures, p=shares)
    build = _agent_steps if style == "agent" else _chat_steps
    runs = [("v1", "1"), ("v2", "2"), ("v3", "3")]
    records: list[dict[str, Any]] = [{"record": "benchmark", "benchmark": benchmark, "scoring": "binary"}]
    records += [
        {"record": "run", "run_id": f"{benchmark}-{r}", "benchmark": benchmark, "agent": "Agent", "agent_version": v}
        for r, v in runs
    ]
    truth: dict[tuple[str, str, int], str] = {}
    n_tasks = max(20, n_failures // 3)
    for t in range(n_tasks):
        topic = TOPICS[t % len(TOPICS)]
        ref = fill("{y}", rng) + "%"
        records.append(
            {"record": "task", "benchmark": benchmark, "task_id": f"T{t:05d}", "query": f"What is the {topic}?",
             "reference_answer": ref}
        )  # fmt: skip
    for i, c in enumerate(which):
        cause = chosen[int(c)]
        task = int(rng.integers(n_tasks))
        run = f"{benchmark}-{runs[int(rng.integers(len(runs)))][0]}"
        steps, answer, status = build(cause, TOPICS[task % len(TOPICS)], rng)
        key = (run, f"T{task:05d}", i)
        truth[key] = cause.name
        records.append(
            {"record": "attempt", "run_id": run, "task_id": key[1], "sample": i, "score": 0.0, "passed": False,
             "answer": answer, "status": status, "steps": steps}
        )  # fmt: skip
    for j in range(n_passes):
        records.append(
            {"record": "attempt", "run_id": f"{benchmark}-v1", "task_id": "T00000", "sample": n_failures + j,
             "score": 1.0, "passed": True, "answer": "12.5%", "steps": []}
        )  # fmt: skip
    return FailureSet(records=records, truth=truth, causes=tuple(c.name for c in chosen), benchmark=benchmark)


def documents(*, seed: int, n_causes: int, n: int) -> tuple[list[str], list[str]]:
    """``n`` failure documents as ``analytics.clusters.failure_documents`` writes them (no transcript, no store:
    for timing the embedding and the clustering at a million failures; run-specific tokens cut as it cuts them)
    and their causes."""
    from analytics.clusters.documents import strip_run_specific

    rng = np.random.default_rng(seed)
    chosen = [CAUSES[i] for i in rng.choice(len(CAUSES), n_causes, replace=False)]
    which = rng.choice(n_causes, n, p=rng.dirichlet(np.full(n_causes, 2.0)))
    texts, truth = [], []
    for c in which:
        cause = chosen[int(c)]
        text = _vary(_phrase(cause, rng), rng)
        if cause.where in ("tool_error", "tool_result"):
            doc = f"failed: {text}"
        elif cause.where == "answer":
            doc = f"final answer: {text} (a different number than the reference)"
        else:
            doc = f"final answer: {text} | status timeout"
        texts.append(" | ".join(strip_run_specific(part) for part in doc.split(" | ")))
        truth.append(cause.name)
    return texts, truth
