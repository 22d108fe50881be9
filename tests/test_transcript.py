"""The drilldown's task picker marks and failed-attempt navigation (ui/transcript.py), on mixed and large runs."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

from ui import transcript


def test_marks_and_neighbours_read_every_spelling_of_passed() -> None:
    run = pd.DataFrame(
        {
            "task_id": ["a", "a", "b", "c", "d", "e", "e"],
            "sample": [0, 1, 0, 0, 0, 0, 1],
            "passed": [True, None, 0, 1, float("nan"), False, True],
        }
    )
    assert transcript.task_marks(run) == {"a": "✓", "b": "✗", "c": "✓", "d": "·", "e": "◐"}
    assert transcript.failed_neighbours(run, "c", 0) == (("b", 0), ("e", 0))
    assert transcript.failed_neighbours(run, "a", 0) == (None, ("b", 0))
    assert transcript.failed_neighbours(run, "e", 0) == (("b", 0), None)
    assert transcript.failed_neighbours(run, "gone", 3) == (None, ("b", 0))  # not in the run: the first failure


def test_a_run_of_twenty_thousand_attempts_is_marked_in_order() -> None:
    n = 20_000
    run = pd.DataFrame(
        {
            "task_id": [f"t{i // 3:05d}" for i in range(n)],
            "sample": [i % 3 for i in range(n)],
            "passed": [i % 7 == 0 for i in range(n)],
        }
    )
    marks = transcript.task_marks(run)
    assert list(marks)[:3] == ["t00000", "t00001", "t00002"] and len(marks) == -(-n // 3)
    assert transcript.failed_neighbours(run, "t00000", 0) == (None, ("t00000", 1))
    assert transcript.failed_neighbours(run, "t06666", 1) == (("t06666", 0), None)


def _grader_header() -> None:
    from ui.transcript import attempt_header

    base = {"attempt_id": 1, "n_steps": 2, "n_tool_calls": 1, "status": "completed", "score": 1.0, "passed": True}
    attempt_header(base | {"grading": {"model_calls": [{"content": "GRADE: C"}], "input_tokens": 1200}})
    attempt_header(base | {"attempt_id": 2, "grading": {"model_calls": [{}, {}], "output_tokens": 7}})


def test_the_graders_usage_reads_with_plurals_right() -> None:
    at = AppTest.from_function(_grader_header).run()
    assert not at.exception
    graders = [c.value for c in at.caption if c.value.startswith("Grader")]
    assert graders == [
        "Grader (not counted in the agent's steps, tokens or cost): 1 model call, 1,200 / 0 tokens in / out",
        "Grader (not counted in the agent's steps, tokens or cost): 2 model calls, 0 / 7 tokens in / out",
    ]
