"""OpenAI chat-message trajectories (tau-bench's historical format) -> native v1 records.

The file is a JSON list; each item is one trial of one task::

    {"task_id": 3, "trial": 0, "reward": 1.0,
     "info": {"task": {"instruction": "...", "actions": [{"name": "book_reservation", "kwargs": {...}}]},
              "reward_info": {...}, "user_cost": 0.0035},
     "traj": [{"role": "system"|"user"|"assistant"|"tool", "content": ..., "tool_calls": [...]}, ...]}

``messages`` is accepted in place of ``traj``. Items become attempts (trial = sample) with steps; the
expected actions become the task's reference trajectory. Locations are JSON paths (``file:$[12].traj``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.errors import ProblemCollector
from ingest.jsonline import load_json

DOMAINS = ("airline", "retail")
ERROR_PREFIX = re.compile(r"^\s*(error|exception|traceback)\b", re.IGNORECASE)


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (logs omit or null out optional parts)."""
    return value if isinstance(value, dict) else {}


def _seq(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def detect_openai_messages(path: Path, head: bytes) -> bool:
    """A JSON array whose items carry ``task_id``, a reward and a ``traj``/``messages`` list."""
    text = head.lstrip()
    if not text.startswith(b"["):
        return False
    return (
        b'"task_id"' in text
        and b'"reward"' in text
        and (b'"traj"' in text or b'"messages"' in text)
        and b'"role"' in text
    )


def names_from_path(path: Path, options: dict[str, Any]) -> tuple[str, str, str]:
    """``(benchmark, agent, run_id)``: options win; else ``<agent>-<domain>.json`` gives tau-bench names."""
    stem = path.stem
    agent, domain = stem, None
    for dom in DOMAINS:
        if stem.endswith(f"-{dom}") or stem.endswith(f"_{dom}"):
            agent, domain = stem[: -len(dom) - 1], dom
    benchmark = options.get("benchmark") or (f"tau-bench-{domain}" if domain else "openai-messages")
    agent = options.get("agent") or agent
    run_id = options.get("run_id") or f"{benchmark}-{agent}"
    return str(benchmark), str(agent), str(run_id)


def parse_openai_messages(
    path: Path, data: bytes, problems: ProblemCollector, progress: Any = None, **options: Any
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield benchmark, task, run and attempt records for a tau-bench style trajectory file.

    Args:
        path: the file (its name gives agent and domain unless options say otherwise).
        data: its bytes.
        problems: where problems are reported.
        progress: optional tqdm-like bar.
        **options: ``agent``, ``benchmark``, ``run_id`` override the names taken from the file name.
    """
    doc = load_json(path, data, problems)
    if doc is None:
        return
    if not isinstance(doc, list):
        problems.add(f"{path}:$", "-", "expected a JSON array of trajectory records")
        return
    benchmark, agent, run_id = names_from_path(path, options)
    rewards = [item.get("reward") for item in doc if isinstance(item, dict)]
    binary = all(r in (0, 1, 0.0, 1.0, True, False) for r in rewards)
    yield (
        f"{path}:$",
        {
            "record": "benchmark",
            "benchmark": benchmark,
            "scoring": "binary" if binary else "continuous",
            "description": "OpenAI chat-message trajectories (tau-bench format)",
        },
    )
    yield (
        f"{path}:$",
        {
            "record": "run",
            "run_id": run_id,
            "benchmark": benchmark,
            "agent": agent,
            "kind": "llm",
            "source_file": path.name,
        },
    )
    for i, item in enumerate(doc):
        loc = f"{path}:$[{i}]"
        if not isinstance(item, dict):
            problems.add(loc, "-", "expected an object with task_id, trial, reward and traj")
            continue
        yield from _item(loc, item, benchmark, run_id, problems)
    if progress is not None:
        progress.update(len(data))


def _item(
    loc: str, item: dict[str, Any], benchmark: str, run_id: str, problems: ProblemCollector
) -> Iterator[tuple[str, dict[str, Any]]]:
    task_id = item.get("task_id")
    if task_id is None:
        problems.add(loc, "task_id", "missing required field")
        return
    info = _obj(item.get("info"))
    task = _obj(info.get("task"))
    actions = _seq(task.get("actions"))
    yield (
        loc,
        {
            "record": "task",
            "benchmark": benchmark,
            "task_id": str(task_id),
            "query": task.get("instruction"),
            "reference_trajectory": [str(a.get("name")) for a in actions if isinstance(a, dict)],
            "reference_actions": actions or None,
            "user_id": task.get("user_id"),
            "reference_outputs": task.get("outputs") or None,
        },
    )
    messages = item.get("traj", item.get("messages"))
    key = "traj" if "traj" in item else "messages"
    if not isinstance(messages, list):
        problems.add(f"{loc}.{key}", "-", "expected a list of chat messages")
        return
    steps, answer = messages_to_steps(messages, f"{loc}.{key}", problems)
    reward = item.get("reward")
    attempt: dict[str, Any] = {
        "record": "attempt",
        "run_id": run_id,
        "task_id": str(task_id),
        "sample": item.get("trial", 0),
        "score": reward,
        "answer": answer,
        "steps": steps,
        "status": "completed",
    }
    metrics = {}
    if isinstance(info.get("user_cost"), (int, float)):
        metrics["user_cost_usd"] = info["user_cost"]
    reward_info = _obj(info.get("reward_info"))
    for name, value in (reward_info.get("info") or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            metrics[name] = value
    if metrics:
        attempt["metrics"] = metrics
    yield loc, attempt


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw  # models do emit invalid JSON arguments; keep them as text
    return raw


def _text(content: Any) -> str | None:
    """Message content as text (lists of content parts are joined)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        return "\n".join(p for p in parts if p)
    return json.dumps(content, ensure_ascii=False)


def messages_to_steps(
    messages: list[Any], loc: str, problems: ProblemCollector
) -> tuple[list[dict[str, Any]], str | None]:
    """Chat messages -> native steps (user turns, assistant messages, tool calls with results); final answer.

    Tool results are matched to calls by ``tool_call_id`` (the earliest unanswered call with that id,
    since some logs reuse ids), else by tool name.
    """
    steps: list[dict[str, Any]] = []
    pending: list[int] = []
    rnd = 0
    last_text_ix: int | None = None
    for j, msg in enumerate(messages):
        if not isinstance(msg, dict):
            problems.add(f"{loc}[{j}]", "-", "expected a message object")
            continue
        role = msg.get("role")
        content = _text(msg.get("content"))
        if role == "system":
            continue
        if role == "assistant":
            rnd += 1
            if content:
                steps.append({"round": rnd, "kind": "message", "content": content})
                last_text_ix = len(steps) - 1
            for call in msg.get("tool_calls") or []:
                fn = call.get("function") if isinstance(call, dict) else None
                if not isinstance(fn, dict) or not fn.get("name"):
                    problems.add(f"{loc}[{j}].tool_calls", "-", "tool call without function.name")
                    continue
                steps.append(
                    {
                        "round": rnd,
                        "kind": "tool_call",
                        "tool": str(fn["name"]),
                        "args": _args(fn.get("arguments")),
                        "call_id": call.get("id"),
                    }
                )
                pending.append(len(steps) - 1)
        elif role == "tool":
            target = _match(steps, pending, msg.get("tool_call_id"), msg.get("name"))
            if target is None:
                steps.append({"round": rnd, "kind": "tool_result", "tool": msg.get("name"), "result": content})
                continue
            steps[target]["result"] = content if content is not None else ""
            if content and ERROR_PREFIX.match(content):
                steps[target]["error"] = content[:500]
        elif role in ("user", "human"):
            steps.append({"round": rnd, "kind": "user", "content": content})
        else:
            steps.append({"round": rnd, "kind": str(role or "message"), "content": content})
    answer = None
    if last_text_ix is not None and last_text_ix == max(i for i, s in enumerate(steps) if s["kind"] != "user"):
        steps[last_text_ix]["kind"] = "final"
    if last_text_ix is not None:
        answer = steps[last_text_ix]["content"]
    return steps, answer


def _match(steps: list[dict[str, Any]], pending: list[int], call_id: Any, name: Any) -> int | None:
    for pos, ix in enumerate(pending):
        if call_id is not None and steps[ix].get("call_id") == call_id:
            return pending.pop(pos)
    for pos, ix in enumerate(pending):
        if name is not None and steps[ix].get("tool") == name:
            return pending.pop(pos)
    return None
