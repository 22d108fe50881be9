"""Write the Inspect variants real pipelines meet, with inspect-ai itself (mockllm, offline), and Inspect's reading.

Run with the test-only virtualenv's interpreter: ``python tests/inspect_real/variants.py OUT_DIR``. Writes:

- ``scorers/``: one task, four scorers (``includes`` C/I, a 0-10 ``rating``, a ``yesno`` scorer, a ``multi`` scorer
  with a dict value), epochs=2 reduced by mode, median and max; sample metadata, a store write, cache and reasoning
  tokens in the model usage; task args.
- ``unscored/`` (``score=False``) and ``rescored/``: the same log after ``inspect score`` (Inspect's CLI).
- ``cached/``: two samples whose model calls read 800 and wrote 900 input tokens from and to the prompt cache, in
  Inspect's own counting (``input_tokens`` without the cached parts, as its Anthropic provider and every provider
  since 0.3.184 write them); ``cached_inclusive/``: the same calls counted as its OpenAI provider did before 0.3.184
  (``input_tokens`` with the cache read inside); ``cached_priced/``: the first with the model's prices given to
  Inspect (``set_model_info``), so that Inspect writes its own ``total_cost`` of each call.
- ``interrupted/``: a ``.eval`` whose process died after two of six samples (``_journal/start.json``).
- ``evalset/``: an eval set whose second task errored once and was retried, as the folder ends up (``logs.json``,
  ``eval-set.json``, the logs), and ``errored/``: the errored log as it was before the retry replaced it.

``variants.json`` holds what ``read_eval_log`` and ``evals_df`` say about each log. Nothing here imports Runlens.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from inspect_ai import Epochs, Task, eval, eval_set, score, task
from inspect_ai.analysis import evals_df
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage, get_model
from inspect_ai.model._model_info import ModelCost, ModelInfo, set_model_info
from inspect_ai.scorer import Score, accuracy, includes, mean, scorer, value_to_float
from inspect_ai.solver import Generate, TaskState, generate, solver
from inspect_ai.util import store

MOCK = "mockllm/model"


def text(content: str, n_in: int = 10, n_out: int = 2, *, cache: int = 0, reasoning: int = 0) -> ModelOutput:
    """A mock answer with fixed ids (an eval set compares task identities across attempts) and its usage."""
    message = ChatMessageAssistant(id="m-fixed", content=content, model=MOCK, source="generate")
    out = ModelOutput(model=MOCK, choices=[ChatCompletionChoice(message=message, stop_reason="stop")])
    out.usage = ModelUsage(
        input_tokens=n_in,
        output_tokens=n_out,
        total_tokens=n_in + n_out,
        input_tokens_cache_read=cache or None,
        reasoning_tokens=reasoning or None,
    )
    return out


@scorer(metrics=[mean()])
def rating():  # noqa: ANN201 - inspect's decorators read the inner function
    """A 0-10 rating: the answer's length."""

    async def score(state: TaskState, target: Any) -> Score:
        return Score(value=float(min(len(state.output.completion), 10)), explanation="length, at most 10")

    return score


@scorer(metrics=[accuracy()])
def yesno():  # noqa: ANN201
    async def score(state: TaskState, target: Any) -> Score:
        return Score(value="yes" if "blue" in state.output.completion else "no")

    return score


@scorer(metrics={"*": [mean()]})
def multi():  # noqa: ANN201
    async def score(state: TaskState, target: Any) -> Score:
        return Score(value={"fluency": 0.5, "correct": "C" if "blue" in state.output.completion else "I"})

    return score


@scorer(metrics=[accuracy()])
def partial_credit():  # noqa: ANN201
    """C for "a", P for anything else but "b", I for "b"."""

    async def score(state: TaskState, target: Any) -> Score:
        text = state.output.completion
        return Score(value="C" if text == "a" else "I" if text == "b" else "P")

    return score


@solver
def remember():  # noqa: ANN201
    """Writes to the sample's store before generating (Inspect keeps the store in the sample)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        store().set("visited", state.sample_id)
        return await generate(state)

    return solve


@task
def scorers_task(colour: str = "blue") -> Task:
    dataset = [Sample(id=f"s{i}", input=f"Colour {i}?", target=colour, metadata={"row": i}) for i in range(3)]
    return Task(
        name="scorers",
        dataset=dataset,
        solver=remember(),
        scorer=[includes(), rating(), yesno(), multi()],
        epochs=Epochs(2, ["mode", "median", "max"]),
    )


def write_scorers(out: Path) -> Path:
    answers = ["blue", "red sky", "blue!", "navy", "light blue sky", "no"]
    outputs = [text(a, 20 + i, 3, cache=5, reasoning=2) for i, a in enumerate(answers)]
    model = get_model(MOCK, custom_outputs=outputs, memoize=False)
    logs = eval(scorers_task(colour="blue"), model=model, log_dir=str(out / "scorers"), display="none", max_samples=1)
    return Path(logs[0].location)


CACHED_MODEL = "claude-sonnet-4-20250514"  # the model that served the calls (the catalog prices it)
CACHED_PRICES = ModelCost(input=3.0, output=15.0, input_cache_read=0.3, input_cache_write=3.75)  # USD per M tokens


def cached_call(n_in: int, read: int, write: int, n_out: int, *, inclusive: bool = False) -> ModelOutput:
    """A call of ``n_in`` input tokens, ``read`` of them from the cache and ``write`` into it, as Inspect counts it."""
    message = ChatMessageAssistant(id="m-fixed", content="blue", model=CACHED_MODEL, source="generate")
    out = ModelOutput(model=CACHED_MODEL, choices=[ChatCompletionChoice(message=message, stop_reason="stop")])
    out.usage = ModelUsage(
        input_tokens=n_in if inclusive else n_in - read - write,
        output_tokens=n_out,
        total_tokens=n_in + n_out,
        input_tokens_cache_read=read or None,
        input_tokens_cache_write=write or None,
    )
    return out


def write_cached(out: Path) -> dict[str, Path]:
    """The prompt-cache logs (see the module's docstring); the priced one last: model info stays set."""
    dataset = [Sample(id=f"c{i}", input="Colour?", target="blue") for i in range(2)]
    task_ = Task(name="cached", dataset=dataset, solver=generate(), scorer=includes())
    found: dict[str, Path] = {}
    for name, inclusive in (("cached", False), ("cached_inclusive", True), ("cached_priced", False)):
        if name == "cached_priced":
            set_model_info(MOCK, ModelInfo(cost=CACHED_PRICES))
        calls = [cached_call(1000, 800, 0, 50, inclusive=inclusive), cached_call(1000, 0, 900, 40)]
        model = get_model(MOCK, custom_outputs=calls, memoize=False)
        logs = eval(task_, model=model, log_dir=str(out / name), display="none", max_samples=1)
        found[name] = Path(logs[0].location)
    return found


def write_rescored(out: Path) -> tuple[Path, Path]:
    dataset = [Sample(id=f"r{i}", input="Say a", target="a") for i in range(3)]
    model = get_model(MOCK, custom_outputs=[text("a"), text("b"), text("a!")], memoize=False)
    task_ = Task(name="rescore", dataset=dataset, solver=generate(), scorer=includes())
    logs = eval(task_, model=model, log_dir=str(out / "unscored"), display="none", max_samples=1, score=False)
    unscored = Path(logs[0].location)
    rescored = out / "rescored" / unscored.name
    rescored.parent.mkdir(parents=True)
    inspect_cli = Path(sys.executable).with_name("inspect")
    subprocess.run(
        [str(inspect_cli), "score", "--output-file", str(rescored), str(unscored)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    # the same unscored log scored with partial credit, through Inspect's own scoring (what `inspect score` runs)
    partial = out / "partial" / unscored.name
    partial.parent.mkdir(parents=True)
    write_eval_log(score(read_eval_log(str(unscored)), partial_credit()), str(partial))
    return unscored, rescored


def die_after_two(out: Path) -> None:
    """In a child process: six samples, the process dies when the third starts (no results, no header.json)."""
    seen = {"n": 0}

    @solver
    def dying():  # noqa: ANN201
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            seen["n"] += 1
            if seen["n"] == 3:
                os._exit(3)
            return await generate(state)

        return solve

    dataset = [Sample(id=f"i{i}", input="q", target="a") for i in range(6)]
    model = get_model(MOCK, custom_outputs=[text("a")] * 6, memoize=False)
    task_ = Task(name="interrupted", dataset=dataset, solver=dying(), scorer=includes())
    eval(task_, model=model, log_dir=str(out / "interrupted"), display="none", max_samples=1)


def write_interrupted(out: Path) -> tuple[Path, Path]:
    """The interrupted log, and a complete run of the same task that fails every sample (it must lead anyway)."""
    proc = subprocess.run([sys.executable, __file__, str(out), "--die"], capture_output=True, timeout=120)
    assert proc.returncode == 3, proc.stderr[-2000:]
    dataset = [Sample(id=f"i{i}", input="q", target="a") for i in range(6)]
    model = get_model(MOCK, custom_outputs=[text("b")] * 6, memoize=False)
    task_ = Task(name="interrupted", dataset=dataset, solver=generate(), scorer=includes())
    logs = eval(task_, model=model, log_dir=str(out / "complete"), display="none", max_samples=1)
    return next((out / "interrupted").glob("*.eval")), Path(logs[0].location)


def write_evalset(out: Path) -> Path:
    """An eval set of two tasks; ``flaky`` errors on its second sample the first time, is retried by the set and
    succeeds. Its errored log is copied to ``errored/`` when the retry starts (the set then replaces it)."""
    folder, errored = out / "evalset", out / "errored"
    errored.mkdir(parents=True)
    calls = {"n": 0}

    @solver
    def flaky():  # noqa: ANN201
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError("flaky failure")
            if calls["n"] == 4:  # the retry's first sample: the errored log is still in the folder
                first = sorted(folder.glob("*flaky*.eval"))[0]  # the errored log (the retry's own is newer)
                shutil.copy(first, errored / first.name)
            return await generate(state)

        return solve

    dataset = [Sample(id=f"e{i}", input="q", target="a") for i in range(3)]
    steady = Task(name="steady", dataset=dataset, solver=generate(), scorer=includes())
    shaky = Task(name="flaky", dataset=dataset, solver=flaky(), scorer=includes())
    model = get_model(MOCK, custom_outputs=[text("a")] * 40, memoize=False)
    eval_set(
        [steady, shaky],
        log_dir=str(folder),
        model=model,
        display="none",
        max_samples=1,
        retry_attempts=1,
        retry_wait=0,
        log_format="eval",
    )
    return folder


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _floats(scores: dict[str, Any]) -> dict[str, float | None]:
    """Inspect's own value_to_float of every score, one per dict key (``scorer/key``), as its metrics read them."""
    to_float = value_to_float()
    out: dict[str, float | None] = {}
    for name, sc in scores.items():
        parts = sc.value.items() if isinstance(sc.value, dict) else [(None, sc.value)]
        for key, value in parts:
            out[name if key is None else f"{name}/{key}"] = _clean(to_float(value))
    return out


def reference(path: Path) -> dict[str, Any]:
    """What Inspect reads from one log: status, ids, counts, every sample's scores, metadata and usage, and the
    metrics of ``results`` (one entry per scorer, dict key and reducer)."""
    log = read_eval_log(str(path))
    row = evals_df(str(path)).iloc[0]
    results = log.results
    return {
        "path": str(path),
        "task": log.eval.task,
        "eval_id": log.eval.eval_id,
        "eval_set_id": log.eval.eval_set_id,
        "task_id": log.eval.task_id,
        "status": log.status,
        "task_args": log.eval.task_args,
        "total_samples": None if results is None else results.total_samples,
        "completed_samples": None if results is None else results.completed_samples,
        "n_samples": len(log.samples or []),
        "dataset_samples": log.eval.dataset.samples,
        "epochs": log.eval.config.epochs,
        "evals_df_status": str(row["status"]),
        "metrics": [
            {
                "name": s.name,
                "scorer": s.scorer,
                "reducer": s.reducer,
                "metrics": {k: _clean(m.value) for k, m in s.metrics.items()},
            }
            for s in (results.scores if results else [])
        ],
        "samples": [
            {
                "id": str(s.id),
                "epoch": s.epoch,
                "scores": {k: _clean(v.value) for k, v in (s.scores or {}).items()},
                "floats": _floats(s.scores or {}),
                "metadata": s.metadata,
                "store": s.store,
                "usage": {
                    m: {k: v for k, v in u.model_dump().items() if v is not None} for m, u in s.model_usage.items()
                },
                "error": s.error.message if s.error else None,
            }
            for s in log.samples or []
        ],
    }


def main() -> int:
    out = Path(sys.argv[1])
    if sys.argv[2:] == ["--die"]:
        die_after_two(out)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    unscored, rescored = write_rescored(out)
    evalset = write_evalset(out)
    interrupted, complete = write_interrupted(out)
    logs = {
        "scorers": write_scorers(out),
        "unscored": unscored,
        "rescored": rescored,
        "partial": out / "partial" / unscored.name,
        "interrupted": interrupted,
        "complete": complete,
        "errored": next((out / "errored").glob("*.eval")),
        **write_cached(out),
    }
    refs: dict[str, Any] = {name: reference(path) for name, path in logs.items()}
    refs["evalset"] = {
        "folder": str(evalset),
        "logs": [reference(p) for p in sorted(evalset.glob("*.eval"))],
        "files": sorted(p.name for p in evalset.iterdir()),
    }
    (out / "variants.json").write_text(json.dumps(refs, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
