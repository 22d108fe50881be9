"""A task for Inspect's own ``inspect eval`` and ``inspect eval-retry`` (tests/test_inspect_retry.py): sample ``r1``
raises the first time it runs (a file beside the logs marks that it did), so the first log errors and its retry,
outside any eval set, succeeds. No model is called (the answer is set by the solver): nothing goes online.
"""

import os
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import includes
from inspect_ai.solver import Generate, TaskState, solver


@solver
def once():  # noqa: ANN201 - inspect's decorators read the inner function
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        mark = Path(os.environ["RETRIED_MARK"])
        if state.sample_id == "r1" and not mark.exists():
            mark.touch()
            raise RuntimeError("failed the first time")
        state.output = ModelOutput.from_content("mockllm/model", "the right answer")
        return state

    return solve


@task
def retried():  # noqa: ANN201
    dataset = [Sample(id=f"r{i}", input="q", target="right") for i in range(3)]
    return Task(dataset=dataset, solver=once(), scorer=includes())
