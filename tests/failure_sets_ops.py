"""A second, independent generator of failure sets with known causes, for the cluster tests and
bench/bench_cluster_quality.py: nothing here is shared with tests/failure_sets.py (its vocabulary, templates, step
layout and noise are its own), so a method tuned on one is tested on the other.

``failure_set(seed, n_causes, n_failures, style)`` returns native run-log records and the truth, like
``tests.failure_sets.failure_set``. The causes follow the error taxonomy of the AD-Bench paper (section 3.3:
trajectory errors such as premature termination, parameter errors such as date ranges and account filters,
dependency errors, calculation and code errors, hallucination, long context) plus the failures of the sandbox an
analytics agent runs code in (missing modules, memory, permissions, a schema that changed, an unavailable backend).

How a cause shows is itself varied:

* in a tool's ``error`` (a Python exception line, an HTTP status, a backend message), in a tool's result, in the
  attempt's status, or only in the trajectory (no tool called, the reference tools skipped, the same call repeated);
* each cause has several cores ("ZeroDivisionError", "division by zero") inside several frames with slots (column
  names, file paths, dates, ids, sizes, durations), random case;
* noise that is not the cause: in some attempts an earlier, recovered transient error ("retrying after a
  transient error"), extra look-ups, a cause-independent closing sentence;
* two styles: ``trace`` (typed tool calls) and ``notebook`` (a ``python`` tool whose output carries the traceback).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.failure_sets import FailureSet

Slot = Callable[[np.random.Generator], str]


def _choice(*words: str) -> Slot:
    return lambda r: words[int(r.integers(len(words)))]


SLOTS: dict[str, Slot] = {
    "date": lambda r: f"2025-{int(r.integers(1, 13)):02d}-{int(r.integers(1, 29)):02d}",
    "days": lambda r: str(int(r.integers(30, 800))),
    "col": _choice("cost_micros", "adgroup_id", "ctr_7d", "conv_value", "impr", "bid_floor", "placement"),
    "file": _choice("/tmp/report.csv", "/data/exports/adgroups.parquet", "/mnt/shared/q3.xlsx", "./out/ctr.json"),
    "mod": _choice("pandas", "pyarrow", "statsmodels", "openpyxl", "polars"),
    "adv": lambda r: f"ADV-{int(r.integers(100, 999))}-{int(r.integers(1000, 9999))}",
    "gb": lambda r: f"{r.uniform(1.5, 16):.1f}",
    "sec": lambda r: str(int(r.integers(2, 900))),
    "step": lambda r: str(int(r.integers(2, 14))),
    "v": lambda r: f"{r.uniform(1, 900):.1f}",
    "pct": lambda r: f"{r.uniform(0.2, 35):.2f}",
    "line": lambda r: str(int(r.integers(3, 240))),
    "svc": _choice("reporting-api", "dmp-gateway", "insight-svc", "bidstore"),
}


@dataclass(frozen=True)
class OpsCause:
    """A cause: where it shows, its cores and the frames around them (``{core}`` and slots filled at random)."""

    name: str
    where: str  # error | result | answer | no_tool | skipped | repeated | status
    cores: tuple[str, ...]
    frames: tuple[str, ...]


CAUSES: tuple[OpsCause, ...] = (
    OpsCause("date range", "error",
             ("start_date is after end_date", "date range outside the retention window",
              "invalid date format, expected YYYY-MM-DD", "end date lies in the future"),
             ("{core} (start={date}, end={date})", "request for {date}..{date}: {core}",
              "{core}; data is kept {days} days", "ValueError: {core}")),
    OpsCause("account filter", "error",
             ("advertiser does not own this account", "account filter matched no advertiser",
              "the account belongs to a different advertiser", "advertiser id mismatch"),
             ("{core}: {adv}", "filter advertiser={adv}: {core}", "{core} (requested {adv})",
              "403 {core}")),
    OpsCause("division by zero", "error",
             ("ZeroDivisionError: division by zero", "float division by zero", "divide by zero encountered"),
             ("line {line}: {core}", "{core} while computing {col} ratio", "RuntimeWarning promoted: {core}",
              "cell {step} raised {core}")),
    OpsCause("type mismatch", "error",
             ("TypeError: unsupported operand type(s) for +: 'int' and 'str'",
              "could not convert string to float", "TypeError: '<' not supported between instances"),
             ("line {line}: {core}", "{core} in column {col}", "cell {step} raised {core}",
              "{core} (value {v})")),
    OpsCause("lost variable", "error",
             ("NameError: name is not defined", "the output of an earlier step was not kept",
              "reference to a variable from a previous cell that no longer exists"),
             ("{core}: '{col}_list'", "step {step}: {core}", "{core} (expected {col} from step {step})",
              "cell {step} raised {core}")),
    OpsCause("missing module", "error",
             ("ModuleNotFoundError: No module named", "ImportError: cannot import name",
              "package is not installed in the sandbox"),
             ("{core} '{mod}'", "{core} {mod}", "import {mod} failed: {core}", "cell {step} raised {core} '{mod}'")),
    OpsCause("out of memory", "error",
             ("MemoryError", "killed: out of memory", "the kernel died after exceeding its memory limit",
              "cannot allocate memory"),
             ("{core} ({gb} GB requested)", "{core} while loading {file}", "cell {step}: {core}",
              "process {core} at {gb} GB")),
    OpsCause("sandbox permission", "error",
             ("PermissionError: [Errno 13] Permission denied", "read-only file system",
              "operation not permitted in the sandbox"),
             ("{core}: '{file}'", "writing {file}: {core}", "{core} ({file})", "cell {step} raised {core}")),
    OpsCause("schema changed", "result",
             ("column not found in the response", "unknown field in the response schema",
              "expected a list of rows but got an object"),
             ("{core}: '{col}'", "{col}: {core}", "response parse failed, {core}", "{core} (api version {step})")),
    OpsCause("backend unavailable", "error",
             ("503 Service Unavailable", "the backend is under maintenance", "server overloaded, try later",
              "502 Bad Gateway"),
             ("{svc}: {core}", "{core} from {svc} after {sec} s", "{core} ({svc})", "call to {svc} failed: {core}")),
    OpsCause("answer without data", "no_tool",
             ("industry benchmarks suggest", "typically campaigns like this see", "from general experience"),
             ("{core} a CTR of about {pct}%.", "Based on what is common, {core} {pct}% growth.",
              "Without looking it up: {core} a cost of {v} per conversion.")),
    OpsCause("stopped early", "skipped",
             ("next I will pull the daily data", "I will now query the ad group report",
              "the following step is to compute the ratio", "let me fetch the breakdown next"),
             ("Plan noted; {core}.", "OK, {core} and then report back.", "{core}.",
              "Understood. {core} for the period.")),
    OpsCause("retry loop", "repeated",
             ("still waiting for the report to be generated", "report status: pending",
              "job queued, poll again later"),
             ("{core} (job {adv})", "{core}; elapsed {sec} s", "poll {step}: {core}")),
    OpsCause("context overflow", "status",
             ("conversation exceeded the context window", "history truncated beyond the token limit",
              "input too long for the model"),
             ("{core} after {step} tool calls", "run aborted: {core}", "{core} ({v}k tokens)")),
)  # fmt: skip

REFERENCE = ["list_accounts", "ad_report", "daily_breakdown", "python"]
TOPICS = (
    "weekly CPA of the retargeting line items", "share of spend on mobile placements", "ROAS of the holiday push",
    "CTR drop after the creative refresh", "conversion lag by channel", "budget left in the Q4 insertion order",
    "frequency of the prospecting audience", "cost per lead by region", "viewability of video placements",
)  # fmt: skip
CLOSINGS = (
    "Summary: the requested metric could not be produced.",
    "I have stopped here; the figure is not available.",
    "Result unavailable due to the issue above.",
    "Sorry, the computation did not finish.",
)
TRANSIENT = ("retrying after a transient error (attempt 1)", "warning: cache miss, data fetched again")


def fill(template: str, rng: np.random.Generator) -> str:
    """``template`` with each ``{slot}`` filled at random."""
    out = template
    for name, slot in SLOTS.items():
        while "{" + name + "}" in out:
            out = out.replace("{" + name + "}", slot(rng), 1)
    return out


def _phrase(cause: OpsCause, rng: np.random.Generator) -> str:
    frame = cause.frames[int(rng.integers(len(cause.frames)))]
    core = cause.cores[int(rng.integers(len(cause.cores)))]
    text = fill(frame.replace("{core}", core), rng)
    u = rng.random()
    return text.upper() if u < 0.08 else text.lower() if u < 0.2 else text


def _steps(cause: OpsCause, topic: str, style: str, rng: np.random.Generator) -> tuple[list[dict[str, Any]], str, str]:
    """Steps, final answer and status of one failed attempt."""
    text = _phrase(cause, rng)
    steps: list[dict[str, Any]] = []
    if cause.where != "no_tool":
        steps.append({"kind": "tool_call", "tool": "list_accounts", "args": {"advertiser": fill("{adv}", rng)},
                      "result": f"{int(rng.integers(1, 60))} accounts"})  # fmt: skip
        if rng.random() < 0.12:  # an earlier failure the agent recovered from: not the cause
            steps.append({"kind": "tool_call", "tool": "ad_report", "args": {"topic": topic},
                          "error": TRANSIENT[int(rng.integers(len(TRANSIENT)))]})  # fmt: skip
        steps.append({"kind": "tool_call", "tool": "ad_report", "args": {"topic": topic, "n": int(rng.integers(9))},
                      "result": f"report with {int(rng.integers(5, 900))} rows"})  # fmt: skip
    answer = CLOSINGS[int(rng.integers(len(CLOSINGS)))]
    status = "completed"
    tool = "python" if style == "notebook" else "daily_breakdown"
    args = {"code": f"df = load('{fill('{file}', rng)}')"} if style == "notebook" else {"since": fill("{date}", rng)}
    if cause.where == "error":
        if style == "notebook":  # the traceback is the cell's output
            steps.append({"kind": "tool_call", "tool": tool, "args": args,
                          "result": f"Traceback (most recent call last):\n  File \"<cell>\", line 1\n{text}"})  # fmt: skip
        else:
            steps.append({"kind": "tool_call", "tool": tool, "args": args, "error": text})
    elif cause.where == "result":
        steps.append({"kind": "tool_call", "tool": tool, "args": args, "result": f"error: {text}"})
    elif cause.where in ("no_tool", "skipped"):
        answer = text
    elif cause.where == "repeated":
        for _ in range(int(rng.integers(3, 6))):
            steps.append({"kind": "tool_call", "tool": "daily_breakdown", "args": {"job": "same"}, "result": text})
        status = "timeout"
    else:
        steps.append({"kind": "tool_call", "tool": tool, "args": args, "result": "ok"})
        answer = text
        status = "crashed"
    if cause.where != "skipped" and cause.where != "no_tool":
        steps.append({"kind": "tool_call", "tool": "calculator", "args": {"expr": "x"}, "result": "done"})
    steps.append({"kind": "final", "content": answer})
    for i, s in enumerate(steps):
        s["round"] = i + 1
    return steps, answer, status


def failure_set(
    *, seed: int, n_causes: int, n_failures: int, style: str = "trace", n_passes: int = 10, benchmark: str = "ops"
) -> FailureSet:
    """A seeded set (see the module docstring); ``style``: ``trace`` or ``notebook``."""
    rng = np.random.default_rng(seed)
    chosen = [CAUSES[i] for i in rng.choice(len(CAUSES), n_causes, replace=False)]
    which = rng.choice(n_causes, n_failures, p=rng.dirichlet(np.full(n_causes, 1.5)))
    versions = ["2.0", "2.1", "3.0", "3.1"]
    records: list[dict[str, Any]] = [{"record": "benchmark", "benchmark": benchmark, "scoring": "binary"}]
    records += [
        {"record": "run", "run_id": f"{benchmark}-r{j}", "benchmark": benchmark, "agent": "OpsAgent",
         "agent_version": v}
        for j, v in enumerate(versions)
    ]  # fmt: skip
    n_tasks = max(15, n_failures // 4)
    for t in range(n_tasks):
        records.append(
            {"record": "task", "benchmark": benchmark, "task_id": f"q{t:05d}",
             "query": f"Report the {TOPICS[t % len(TOPICS)]}.", "reference_answer": fill("{pct}", rng) + "%",
             "reference_trajectory": REFERENCE}
        )  # fmt: skip
    truth: dict[tuple[str, str, int], str] = {}
    for i, c in enumerate(which):
        cause = chosen[int(c)]
        task = int(rng.integers(n_tasks))
        run = f"{benchmark}-r{int(rng.integers(len(versions)))}"
        steps, answer, status = _steps(cause, TOPICS[task % len(TOPICS)], style, rng)
        key = (run, f"q{task:05d}", i)
        truth[key] = cause.name
        records.append(
            {"record": "attempt", "run_id": run, "task_id": key[1], "sample": i, "score": 0.0, "passed": False,
             "answer": answer, "status": status, "steps": steps}
        )  # fmt: skip
    for j in range(n_passes):
        records.append(
            {"record": "attempt", "run_id": f"{benchmark}-r0", "task_id": "q00000", "sample": n_failures + j,
             "score": 1.0, "passed": True, "answer": "4.2%", "steps": []}
        )  # fmt: skip
    return FailureSet(records=records, truth=truth, causes=tuple(c.name for c in chosen), benchmark=benchmark)
