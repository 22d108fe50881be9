"""Write real Inspect logs with inspect-ai itself (mockllm, offline) and what Inspect reads back from them.

Run with the interpreter of the test-only virtualenv (``.venv-inspect``, requirements-inspect.txt):
``python tests/inspect_real/generate.py OUT_DIR``. Writes, per task and format, the log Inspect wrote, and
``reference.json``: for every log, what ``read_eval_log`` and ``inspect_ai.analysis`` (``evals_df``,
``samples_df``, ``events_df``) say about it. The Runlens test (tests/test_inspect_real.py) ingests the logs
and compares. Nothing here imports Runlens: the reference is Inspect's alone.

Every mock output carries its token usage: without it the mock model tries to download tokenizer data.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd
from inspect_ai import Task, eval
from inspect_ai.analysis import EventColumn, EventInfo, evals_df, events_df, samples_df
from inspect_ai.dataset import Sample
from inspect_ai.log import convert_eval_logs, read_eval_log
from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import choice, includes, model_graded_qa
from inspect_ai.solver import generate, multiple_choice, use_tools
from inspect_ai.tool import ToolCall, tool

MOCK = "mockllm/model"


def usage(n_in: int, n_out: int) -> ModelUsage:
    return ModelUsage(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out)


def text(content: str, n_in: int, n_out: int) -> ModelOutput:
    out = ModelOutput.from_content(MOCK, content)
    out.usage = usage(n_in, n_out)
    return out


def calls(*pairs: tuple[str, dict[str, Any]], n_in: int = 50, n_out: int = 9) -> ModelOutput:
    """One assistant turn calling several tools at once (parallel tool calls)."""
    tool_calls = [
        ToolCall(id=f"call_{i}_{name}", function=name, arguments=args) for i, (name, args) in enumerate(pairs)
    ]
    message = ChatMessageAssistant(content="", tool_calls=tool_calls, model=MOCK, source="generate")
    return ModelOutput(
        model=MOCK,
        choices=[ChatCompletionChoice(message=message, stop_reason="tool_calls")],
        usage=usage(n_in, n_out),
    )


@tool
def add():  # noqa: ANN201 - inspect's tool decorator reads the inner function's annotations
    async def execute(x: int, y: int) -> int:
        """Add two numbers.

        Args:
            x: first number.
            y: second number.
        """
        return x + y

    return execute


@tool
def mul():  # noqa: ANN201
    async def execute(x: int, y: int) -> int:
        """Multiply two numbers.

        Args:
            x: first number.
            y: second number.
        """
        return x * y

    return execute


@tool
def broken():  # noqa: ANN201
    async def execute(x: int) -> int:
        """A tool that fails (not a ToolError: the sample errors).

        Args:
            x: anything.
        """
        raise RuntimeError(f"broken tool called with {x}")

    return execute


def mc_task() -> tuple[Task, list[ModelOutput]]:
    """Multiple choice, three questions, epochs=3: the mock answers A, B, A, ... in turn."""
    dataset = [
        Sample(id=f"q{i}", input=f"Question {i}?", choices=["red", "green", "blue"], target="A") for i in range(3)
    ]
    outputs = [text(f"ANSWER: {'AB'[k % 2]}", 30 + k, 3) for k in range(9)]
    return Task(name="mc", dataset=dataset, solver=multiple_choice(), scorer=choice()), outputs


def agent_task() -> tuple[Task, list[ModelOutput]]:
    """Tools with parallel tool calls, then a final answer."""
    dataset = [Sample(id=f"a{i}", input=f"Compute ({i}+2)*3", target=str((i + 2) * 3)) for i in range(2)]
    outputs: list[ModelOutput] = []
    for i in range(2):
        outputs += [
            calls(("add", {"x": i, "y": 2}), ("mul", {"x": 2, "y": 3}), n_in=40 + i, n_out=11),
            calls(("mul", {"x": i + 2, "y": 3}), n_in=60 + i, n_out=7),
            text(f"The answer is {(i + 2) * 3}", 80 + i, 6),
        ]
    return Task(name="agent", dataset=dataset, solver=[use_tools(add(), mul()), generate()], scorer=includes()), outputs


def graded_task() -> tuple[Task, list[ModelOutput], Any]:
    """A model-graded task: the grader (another mock model) answers GRADE: C / GRADE: I."""
    dataset = [Sample(id=f"g{i}", input=f"Name colour {i}", target="blue") for i in range(2)]
    outputs = [text("Blue.", 20, 2), text("Red.", 21, 2)]
    grader = get_model(
        "mockllm/grader", custom_outputs=[text("GRADE: C", 400, 5), text("GRADE: I", 401, 5)], memoize=False
    )
    task = Task(name="graded", dataset=dataset, solver=generate(), scorer=model_graded_qa(model=grader))
    return task, outputs, grader


def limits_task() -> tuple[Task, list[ModelOutput]]:
    """fail_on_error=False with a message_limit: one sample answers, one errors, one loops into the limit."""
    dataset = [Sample(id=f"l{i}", input=f"Task {i}", target="done") for i in range(3)]
    outputs = [text("done", 10, 2), calls(("broken", {"x": 1}), n_in=12, n_out=4)]
    outputs += [calls(("add", {"x": k, "y": 1}), n_in=14 + k, n_out=4) for k in range(10)]
    solver = [use_tools(add(), broken()), generate()]
    return Task(name="limits", dataset=dataset, solver=solver, scorer=includes(), message_limit=6), outputs


def run_all(out: Path) -> list[Path]:
    """Every task in both formats; samples one at a time so scripted outputs meet their samples in order."""
    written: list[Path] = []
    for fmt in ("eval", "json"):
        for name in ("mc", "agent", "graded", "limits"):
            built: tuple[Any, ...] = globals()[f"{name}_task"]()
            task, outputs = built[0], built[1]
            model = get_model(MOCK, custom_outputs=outputs, memoize=False)
            logs = eval(
                task,
                model=model,
                log_dir=str(out / name),
                log_format=fmt,
                display="none",
                epochs=3 if name == "mc" else 1,
                max_samples=1,
                fail_on_error=name != "limits",
            )
            written.append(Path(logs[0].location))
    return written


def _clean(value: Any) -> Any:
    """JSON-ready: NaN and missing become None."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def reference(path: Path) -> dict[str, Any]:
    """What Inspect itself reads from one log."""
    log = read_eval_log(str(path))
    ev = evals_df(str(path)).iloc[0]
    sdf = samples_df(str(path))
    # only tool events, and only the columns compared (the default columns trip on span events in 0.3.285, and
    # events_df raises on a log with no event left after the filter, so such a log gets an empty frame)
    tools = pd.DataFrame({"sample_id": [], "function": [], "order": []})
    if any(e.event == "tool" for s in log.samples or [] for e in s.events):
        tools = events_df(
            str(path),
            columns=EventInfo + [EventColumn("function", path="function")],
            filter=lambda e: e.event == "tool",
        )
    samples = []
    for s in log.samples or []:
        row = sdf[(sdf["id"].astype(str) == str(s.id)) & (sdf["epoch"] == s.epoch)].iloc[0]
        mine = tools[tools["sample_id"] == row["sample_id"]].sort_values("order")
        samples.append(
            {
                "id": str(s.id),
                "epoch": s.epoch,
                "scores": {k: _clean(v.value) for k, v in (s.scores or {}).items()},
                "error": s.error.message if s.error else None,
                "limit": {"type": s.limit.type, "limit": s.limit.limit} if s.limit else None,
                "model_usage": {m: [u.input_tokens, u.output_tokens] for m, u in s.model_usage.items()},
                "tools": [str(f) for f in mine["function"]],
                "sdf_error": _clean(row.get("error")),
                "sdf_limit": _clean(row.get("limit")),
            }
        )
    return {
        "path": str(path),
        "eval_id": log.eval.eval_id,
        "task": log.eval.task,
        "status": log.status,
        "total_samples": int(_clean(ev["total_samples"])),
        "completed_samples": int(_clean(ev["completed_samples"])),
        "headline": _clean(ev.get("score_headline_value")),
        "samples": samples,
    }


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    written = run_all(out)
    refs = [reference(p) for p in written]
    (out / "reference.json").write_text(json.dumps(refs, indent=1))
    # `inspect log convert`: each .eval log again as .json, the same eval in the other layout
    for path in written:
        if path.suffix == ".eval":
            convert_eval_logs(str(path), "json", str(out / "converted"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
