"""What a failure's document reads from a test runner's output, a traceback, an API error body and a crashed run's
last message (analytics/clusters/load.py and reading.py: ``FAILURE_LINES``, ``_ERROR_FIELD``, ``is_last_word``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analytics import clusters as cl
from store import reader

PYTEST_OUT = """============================= test session starts ==============================
platform linux -- Python 3.11.4, pytest-8.1.1, pluggy-1.4.0
rootdir: /testbed
configfile: pyproject.toml
collected 42 items

tests/test_fields.py ...........F                                        [100%]

=================================== FAILURES ===================================
____________________________ test_to_python_roundtrip ____________________________

    def test_to_python_roundtrip():
>       assert to_python(value) == expected
E       AssertionError: expected 3, got 4

tests/test_fields.py:88: AssertionError
=========================== short test summary info ============================
FAILED tests/test_fields.py::test_to_python_roundtrip - AssertionError: expected 3, got 4
========================= 1 failed, 41 passed in 2.31s ========================="""

DJANGO_OUT = """Creating test database for alias 'default'...
System check identified no issues (0 silenced).
..E.
======================================================================
ERROR: test_clean (forms_tests.tests.FieldTests)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/django/forms/fields.py", line 120, in clean
    value = self.to_python(value)
AttributeError: 'Field' object has no attribute 'normalize_units'

----------------------------------------------------------------------
Ran 4 tests in 0.031s

FAILED (errors=1)
Destroying test database for alias 'default'..."""

API_ERROR = (
    "Error code: 429 - {'type': 'error', 'error': {'type': 'rate_limit_error', 'message': 'This request would "
    "exceed the rate limit of 40,000 output tokens per minute.'}}"
)


def _store(folder: Path, attempts: list[dict[str, Any]]) -> Path:
    """A store of one run whose attempts (status and steps each) all failed."""
    from ingest.pipeline import ingest_paths

    lines: list[dict[str, Any]] = [
        {"record": "benchmark", "benchmark": "swe", "scoring": "binary"},
        {"record": "run", "run_id": "r1", "benchmark": "swe", "agent": "A", "agent_version": "1"},
    ]
    for i, a in enumerate(attempts):
        lines.append({"record": "task", "benchmark": "swe", "task_id": f"t{i}", "query": "fix it"})
        lines.append({"record": "attempt", "run_id": "r1", "task_id": f"t{i}", "sample": 0, "score": 0.0,
                      "answer": "", **a})  # fmt: skip
    path = folder / "swe.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    db = folder / "swe.duckdb"
    assert [r.outcome for r in ingest_paths([path], db=db)] == ["ingested"]
    return db


def _bash(result: str, round_: int = 1) -> dict[str, Any]:
    return {"round": round_, "kind": "tool_call", "tool": "bash", "args": {"command": "python -m pytest"},
            "result": result}  # fmt: skip


GREP_HIT = "src/fields.py:88:    def to_python(self, value):"
PATCH = "error: patch failed: src/fields.py:88\nerror: src/fields.py: patch does not apply"
FOOTER = "\n(Open file: /testbed/src/{}.py)\n(Current directory: /testbed)\nbash-$"  # SWE-agent's, on every result

READ_ONLY = "OSError: [Errno 30] Read-only file system: '/testbed/src/fields.py'"


def _edit(**outcome: str) -> dict[str, Any]:
    """An edit in step 1: ``error=...`` (it failed) or ``result=...``."""
    args = {"command": "str_replace", "path": "/testbed/src/fields.py"}
    return {"round": 1, "kind": "tool_call", "tool": "str_replace_editor", "args": args, **outcome}


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The documents of six failures: a pytest run, a Django run, a crashed run's last message, a model error, a
    pytest run after a failed edit and one after an edit that printed nothing."""
    db = _store(
        tmp_path_factory.mktemp("cluster_documents"),
        [
            {"status": "completed", "steps": [_bash(PYTEST_OUT)]},
            {"status": "completed", "steps": [_bash(DJANGO_OUT + "\nbash-$")]},
            {"status": "crashed", "steps": [_bash("ok"), {"round": 2, "kind": "message",
                                                          "content": "prompt is too long: 201000 tokens > 200000"}]},
            {"status": "crashed", "steps": [{"round": 1, "kind": "model_call", "error": API_ERROR}]},
            {"status": "completed", "steps": [_edit(error=READ_ONLY), _bash(PYTEST_OUT, 2)]},
            {"status": "completed", "steps": [_edit(result=""), _bash(PYTEST_OUT, 2)]},
        ],
    )  # fmt: skip
    with reader(db) as con:
        return cl.failure_texts(con, benchmark="swe")["text"].tolist()


def test_a_long_runner_output_is_read_by_its_failure_lines_not_its_head(documents: list[str]) -> None:
    """pytest's session header is the first 240 characters; the ``E`` line says what failed."""
    assert documents[0] == "failed: assertionerror: expected, got | final answer: no final answer"


def test_a_traceback_is_read_by_its_exception_line_not_the_runners_footer(documents: list[str]) -> None:
    assert documents[1] == "failed: attributeerror: object has no attribute | final answer: no final answer"


def test_a_crashed_runs_last_message_is_why_it_failed(documents: list[str]) -> None:
    assert documents[2] == "failed: prompt is too long: tokens > | final answer: no final answer"


def test_an_api_error_body_keeps_its_type_message_and_status(documents: list[str]) -> None:
    assert documents[3] == (
        "failed: rate limited: code: 429 - {type: error, error: {type: rate_limit_error, message: this request would "
        "exceed the rate limit of, output tokens per minute.}} | final answer: no final answer"
    )
    assert cl.strip_run_specific('{"error": {"type": "invalid_request_error", "message": "bad \'x\'"}}') == (
        "{error: {type: invalid_request_error, message: bad }}"
    )


def test_source_code_is_not_an_exception_line() -> None:
    """``raise ValueError(...)`` in a listing is code; ``ValueError: ...`` at a line's start is an exception."""
    import re

    from analytics.clusters.reading import FAILURE_LINES

    exc = re.compile(FAILURE_LINES["exc"])
    for line in ("ValueError: cannot reshape array", "E       KeyError", "Failed: Timeout >60.0s"):
        assert exc.match(line), line
    assert not exc.match("    raise ValueError(f'invalid {value!r}')")
    assert not exc.match("Error code: 429 - {'type': 'error'}")


def test_a_command_killed_for_its_time_reads_as_a_failure() -> None:
    """timeout(1)'s ``Terminated``, a harness's "took longer than ... and was killed": failures in words that name
    no error."""
    import re

    from analytics.clusters.reading import FAILING_RESULT

    failing = re.compile(FAILING_RESULT)
    for text in ("Terminated\n[exit code 124]", "The command took longer than 30 seconds and was killed.",
                 "The command took too long to execute (>300s)", "run_tests did not finish within 60 s"):  # fmt: skip
        assert failing.search(text.lower()), text
    assert not failing.search("4 passed in 0.21s")


def test_a_test_run_failing_after_a_failed_edit_is_its_consequence(documents: list[str]) -> None:
    """The edit's error is why the attempt failed; the tests after it fail as they did before the edit."""
    assert documents[4] == "failed: oserror: [errno] read-only file system | final answer: no final answer"


def test_an_edit_that_printed_nothing_is_not_the_cause_of_the_test_run_after_it(documents: list[str]) -> None:
    """An empty result reads as a failure, but says nothing: the test run's own failure is kept."""
    assert documents[5] == documents[0]


EDITED = (  # the editor's report of an edit that worked: the snippet it shows raises an exception in its code
    "The file /testbed/src/fields.py has been edited. Here's the result of running `cat -n` on a snippet of "
    "/testbed/src/fields.py:\n   118\t    if value is None:\n   119\t        raise ValueError(f'invalid {value!r}')\n"
    "   120\t    return value\nReview the changes and make sure they are as expected."
)
SUBMITTED = (  # a patch submitted: its hunk header reads like an HTTP status ("@@ -471"), its lines like errors
    "diff --git a/src/errors.py b/src/errors.py\nindex 544fb21..bffab76 100644\n--- a/src/errors.py\n"
    "+++ b/src/errors.py\n@@ -471,7 +471,7 @@\n-    raise KeyError(key)\n+    return None"
)


CUT_SHORT = (  # a test run killed for its time: pytest's session header, then the kill, past the first 240 characters
    PYTEST_OUT.split("tests/test_fields.py ...")[0]
    + "tests/unit/forms/test_fields_roundtrip.py ..Terminated\n[exit code 124]"
)


def _tool(tool: str, round_: int, **outcome: Any) -> dict[str, Any]:
    return {"round": round_, "kind": "tool_call", "tool": tool, "args": {"command": tool}, **outcome}


@pytest.fixture(scope="module")
def code_documents(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The documents of eight failures: a test run failing after an edit whose report shows code, a claim of
    success after a passing test run and a submitted diff, a search that failed before two other tools worked and a
    wrong answer (twice: with two tools after it and with one), a test run cut short, and three attempts that ran
    out of steps (one repeating a failing test run, one not, one repeating a file's view and stopped by its
    harness)."""
    db = _store(
        tmp_path_factory.mktemp("code_documents"),
        [
            {"status": "completed", "steps": [_edit(result=EDITED), _bash(PYTEST_OUT, 2)]},
            {"status": "completed", "answer": "All tests pass now.",
             "steps": [_edit(result=EDITED), _tool("run_tests", 2, result="4 passed in 0.2s"),
                       _tool("submit", 3, result=SUBMITTED)]},
            {"status": "completed", "answer": "All tests pass now.",
             "steps": [_tool("find", 1, result="find: '/proc/12/map_files': Permission denied"),
                       _edit(result="patching file src/fields.py") | {"round": 2},
                       _tool("run_tests", 3, result="4 passed in 0.2s")]},
            {"status": "completed", "answer": "All tests pass now.",
             "steps": [_tool("find", 1, result="find: '/proc/12/map_files': Permission denied"),
                       _edit(result="patching file src/fields.py") | {"round": 2}]},
            {"status": "completed", "steps": [_tool("run_tests", 1, error=CUT_SHORT)]},
            {"status": "timeout", "steps": [_bash(PYTEST_OUT, i) for i in range(1, 5)]},
            {"status": "timeout", "steps": [_bash(PYTEST_OUT, 1), _edit(error=READ_ONLY) | {"round": 2}]},
            {"status": "timeout", "answer": "exit_cost: the instance cost limit was hit",
             "steps": [_tool("view", i, result=EDITED) for i in range(1, 4)]},
        ],
    )  # fmt: skip
    with reader(db) as con:
        return cl.failure_texts(con, benchmark="swe")["text"].tolist()


def test_code_a_tool_shows_is_not_a_failure(code_documents: list[str]) -> None:
    """``raise ValueError`` in an editor's ``cat -n`` snippet and a diff's lines and hunk header (``@@ -471``) are
    code, not a report of failure: the test run after the edit is why the first attempt failed (not its
    consequence), and nothing failed in the second, which is read by its answer and what it last saw: the test run
    before the patch it submitted, not the patch (code alone is the agent's own code echoed back, not an outcome)."""
    assert code_documents[0] == "failed: assertionerror: expected, got | final answer: no final answer"
    assert code_documents[1] == "final answer: all tests pass now. | last result: passed in"


def test_only_a_listings_numbered_lines_and_a_diffs_lines_are_code() -> None:
    """A table of rows whose first column is a number (no ``cat -n`` padding) and a list of errors without a hunk are
    data: they still read as failures."""
    import re

    import duckdb

    from analytics.clusters import reading

    params = {"chars": 240, "listing": reading.LISTING, "listing_line": reading.LISTING_LINE,
              "hunk": reading.DIFF_HUNK, "diff": reading.DIFF_LINE}  # fmt: skip
    con = duckdb.connect()

    def reads_as_failure(text: str) -> bool:
        (prose,) = con.execute(f"SELECT {reading.prose_sql('$raw')}", params | {"raw": text}).fetchone() or ("",)
        return bool(re.search(reading.FAILING_RESULT, prose.lower()))

    assert reads_as_failure("12\tpayment\terror: card declined\n13\trefund\tok")
    assert reads_as_failure("- error: the date is invalid\n- the account is fine")
    assert not reads_as_failure("   118\t        raise ValueError(f'invalid {value!r}')\n   119\t    return value")
    assert not reads_as_failure("118\t        raise ValueError(f'invalid')\n   119\t    return value")  # trimmed
    assert not reads_as_failure(SUBMITTED)


def test_a_failure_two_other_tools_worked_after_is_not_why_the_attempt_failed(code_documents: list[str]) -> None:
    """``find``'s complaint about /proc, then an edit and a test run that worked: the agent moved past it
    (``MOVED_PAST_TOOLS``); with one other tool after it, it is still the failure."""
    assert code_documents[2] == "final answer: all tests pass now. | last result: passed in"
    assert code_documents[3] == "failed: find:: permission denied"


def test_a_long_output_without_failure_lines_is_read_by_its_end(code_documents: list[str]) -> None:
    """A program says how it ended last: a test run killed for its time is read by its end ("Terminated"), not by
    pytest's session header, which every run of every cause prints first."""
    assert len(CUT_SHORT) > 240 and "Terminated" not in CUT_SHORT[:240]
    assert "..terminated [exit code]" in code_documents[4] and "session starts" not in code_documents[4]


def test_an_edit_that_does_not_parse_is_a_syntax_error_whatever_the_parser_called_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Python's IndentationError and TabError are SyntaxErrors: their documents name the family, so the three read
    as one cause; an exception that only ends in "Error" the same way is left as it is. A script that does not parse
    is reported by its frame without a Traceback line: it is read by its exception line all the same."""
    tracebacks = [
        "File \"/testbed/src/fields.py\", line 88\n    return x)\n            ^\nSyntaxError: unmatched ')'",
        'File "/testbed/src/fields.py", line 88\n    return x\nIndentationError: unexpected indent',
        'File "/testbed/src/fields.py", line 88\nTabError: inconsistent use of tabs and spaces in indentation',
        "MyTabError: tab 3 is closed",
    ]
    db = _store(
        tmp_path_factory.mktemp("syntax_family"),
        [{"status": "completed", "steps": [_bash(text)]} for text in tracebacks],
    )
    with reader(db) as con:
        docs = cl.failure_texts(con, benchmark="swe")["text"].tolist()
    none = " | final answer: no final answer"
    assert docs[0] == "failed: syntaxerror: unmatched" + none
    assert docs[1] == "failed: syntaxerror: indentationerror: unexpected indent" + none
    assert docs[2] == "failed: syntaxerror: taberror: inconsistent use of tabs and spaces in indentation" + none
    assert docs[3] == "failed: mytaberror: tab is closed" + none


def test_an_attempt_out_of_steps_repeating_a_call_failed_by_its_loop(code_documents: list[str]) -> None:
    """The same failing test run four times until the step budget ran out, and the same file viewed three times
    until its harness stopped it: the loop is why each failed, not what it kept seeing (a test failure, code) nor
    what it said when stopped, so loops over different things read alike; an attempt out of steps that did not
    repeat itself is read by its failure alone."""
    assert code_documents[5] == "repeated call | status timeout"
    assert code_documents[7] == code_documents[5]
    assert code_documents[6] == "failed: oserror: [errno] read-only file system | final answer: no final answer"


FAMILY_TEXTS = {  # a family's texts as several tools word them; texts of no family that look alike
    "timed out": (
        [
            "+++++++++++++++++++ Timeout +++++++++++++++++++\n~~~~~~~~~ Stack of MainThread (140234) ~~~~~~~~~",
            "The command took longer than 30 seconds and was killed.",
            "Terminated\n[exit code 124]",
            "net::ERR_TIMED_OUT at https://shop.example/cart",
            "Error code: 504 - {'type': 'error', 'error': {'type': 'api_error', 'message': 'Request timed out'}}",
        ],
        [
            "Killed\n[exit code 137]",  # killed for its memory
            "FAILED tests/test_timeout.py::test_retry - AssertionError: assert 1 == 2",  # a test's name
            "TypeError: connect() got an unexpected keyword argument 'timeout'",  # an argument's name
        ],
    ),
    "edit not applied": (
        [
            PATCH,
            "checking file src/fields.py\nHunk #1 FAILED at 88.\n1 out of 1 hunk FAILED -- saving rejects to file",
            "No replacement was performed, old_str `return x` did not appear verbatim in /testbed/src/fields.py.",
            "error: corrupt patch at line 14",
        ],
        ["KeyError: 'patch_id'", "ModuleNotFoundError: No module named 'patch_failed'"],  # a name, no refused edit
    ),
    "rate limited": (
        [
            API_ERROR,
            "openai.RateLimitError: You exceeded your current quota, please check your plan and billing details.",
            "HTTP 429: retry after 20 s",
            "Too many requests; retried 5 times with backoff, giving up",
            "google.api_core.exceptions.ResourceExhausted: 429 RESOURCE_EXHAUSTED",
            "botocore.exceptions.ClientError: ThrottlingException: Rate exceeded",
        ],
        [
            "OSError: [Errno 122] Disk quota exceeded",  # a disk's quota
            "FAILED tests/test_rate_limit.py::test_backoff - AssertionError: assert 3 == 2",  # a test's name
            "KeyError: 'quota'",  # a key
            'File "/testbed/src/fields.py", line 429, in to_python',  # a line number
        ],
    ),
    "build failed": (
        [
            "error: subprocess-exited-with-error",
            "ERROR: Failed building wheel for astropy",
            "fatal error: Python.h: No such file or directory",
            "error: command '/usr/bin/gcc' failed with exit code 1",
            "Cython.Compiler.Errors.CompileError: sympy/_ext.pyx",
            "× Getting requirements to build editable did not run successfully.",
        ],
        [
            "ModuleNotFoundError: No module named 'build_ext'",  # a module's name
            "cat: setup.py: No such file or directory",  # a file not there, not a compiler's header
            "error Command failed with exit code 1.",  # a package script that failed (yarn)
        ],
    ),
    "element not found": (
        [
            'Locator.click failed [E_ACTION]: no element matches the selector "#buy"\nCall log:\n  - waiting for',
            "locator resolved to 0 elements (tried 3 times)",
            "selenium.common.exceptions.NoSuchElementException: Message: no such element: Unable to locate element",
            "Could not find the button on the page",
            "Element is not attached to the DOM",
        ],
        [
            "element is obscured by an overlay",  # the click went elsewhere: the element is there
            "another element would receive the click",
            "FileNotFoundError: [Errno 2] No such file or directory: 'cart.json'",
        ],
    ),
    "click intercepted": (
        [
            '<div class="modal-backdrop"> intercepts pointer events\nretrying click action, attempt #2',
            "element click intercepted: Element <button> is not clickable at point (412, 88). Other element would "
            "receive the click",
            "cy.click() failed because this element is being covered by another element",
            "element is obscured by an overlay",
            "a cookie banner covers the element",
        ],
        [
            "no element matches the selector",  # not there at all
            "KeyError: 'intercept'",
            "the request was intercepted by the proxy and rejected",
        ],
    ),
    "browser crashed": (
        [
            "BrowserError [E_BROWSER] Aw, Snap! something went wrong while displaying this page",
            "the renderer process crashed",
            "Target page, context or browser has been closed",
            "Browser has disconnected",
            "Page crashed",
        ],
        [
            "ConnectionResetError: connection closed by peer",  # a socket, not the browser
            "FAILED tests/test_crash_report.py::test_upload - AssertionError",
            "the cookie dialog was closed",
        ],
    ),
}


@pytest.mark.parametrize("family", list(FAMILY_TEXTS))
def test_a_failure_is_named_by_its_family_whatever_tool_worded_it(
    family: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """pytest-timeout's banner, a harness killing a slow command, GNU timeout's exit status 124, a browser's
    ``ERR_TIMED_OUT`` and an API's error body all say a step was stopped for its time; git apply, patch and a
    str_replace editor each refuse an edit in their own words; so do API providers refusing a request for its rate,
    pip or a compiler failing a build, Playwright and Selenium not finding an element or a click taken by another,
    a browser crashing. Each document is named by its family first ("timed out: ...", "edit not
    applied: ...", "rate limited: ...", "build failed: ..."), so one cause worded by several tools is one family; a
    text that only looks alike is not: a process killed for its memory, a disk's quota, a yarn script's exit, or
    the family's words only in a name (a test file, an argument, a key, a module, a line number), which the document
    cuts anyway."""
    texts, others = FAMILY_TEXTS[family]
    db = _store(
        tmp_path_factory.mktemp("family"),
        [{"status": "completed", "steps": [_tool("run", 1, error=text)]} for text in [*texts, *others]],
    )
    with reader(db) as con:
        docs = cl.failure_texts(con, benchmark="swe")["text"].tolist()
    assert all(d.startswith(f"failed: {family}:") for d in docs[: len(texts)]), docs  # ":: " after a name cut
    assert not any(family in d for d in docs[len(texts) :]), docs


def test_an_answer_that_asks_the_user_is_why_the_attempt_failed(tmp_path_factory: pytest.TempPathFactory) -> None:
    """An agent that stopped to ask the user failed by asking, whatever tool failed on its way (a grep in the wrong
    folder) or what it saw last (pip's warning), and however the question is worded: the three read alike. An offer
    of more work after a failure, and a question mark inside a link, are not questions to the user: those attempts
    are read by their failures as before."""
    grep = _tool("grep", 1, error="grep: src/: No such file or directory")
    pip = _tool("pip", 1, result="WARNING: Running pip as the 'root' user can result in broken permissions")
    db = _store(
        tmp_path_factory.mktemp("asks_the_user"),
        [
            {"status": "completed", "answer": "Could you clarify what parse_args should return when axis is None?",
             "steps": [grep]},
            {"status": "completed", "answer": "I need more details about the expected behaviour of to_python."},
            {"status": "completed", "answer": "Which do you expect here: 1 or 2? Let me know and I will continue.",
             "steps": [pip]},
            {"status": "completed", "answer": "I could not fix it. Would you like me to try another approach?",
             "steps": [grep]},
            {"status": "completed", "answer": "The fix is described at https://example.org/?q=fields now.",
             "steps": [grep]},
        ],
    )  # fmt: skip
    with reader(db) as con:
        docs = cl.failure_texts(con, benchmark="swe")["text"].tolist()
    asked = "the final answer asks the user a question"
    assert docs[:3] == [asked] * 3
    assert docs[3] == docs[4] == "failed: grep: src/: no such file or directory"


@pytest.fixture(scope="module")
def footer_documents(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A patch refused after a grep: with a harness's footer on both results, on neither, on the failing one only,
    and with a failure line closing both."""
    twice = "\nerror: build failed"
    db = _store(
        tmp_path_factory.mktemp("cluster_footers"),
        [
            {"status": "completed", "steps": [_bash(GREP_HIT + FOOTER.format("a")), _bash(PATCH + FOOTER.format("b"), 2)]},
            {"status": "completed", "steps": [_bash(GREP_HIT), _bash(PATCH, 2)]},
            {"status": "completed", "steps": [_bash(GREP_HIT), _bash(PATCH + FOOTER.format("b"), 2)]},
            {"status": "completed", "steps": [_bash(GREP_HIT + twice), _bash(PATCH + twice, 2)]},
        ],
    )  # fmt: skip
    with reader(db) as con:
        return cl.failure_texts(con, benchmark="swe")["text"].tolist()


def test_a_harness_footer_on_the_attempts_results_is_cut(footer_documents: list[str]) -> None:
    """SWE-agent's "(Open file: ...) (Current directory: ...) bash-$" closes every result of the attempt: the failure
    reads as it does without it."""
    assert footer_documents[0] == footer_documents[1]
    assert "bash-$" not in footer_documents[0] and "patch does not apply" in footer_documents[0]


def test_a_line_that_closes_one_result_only_is_not_a_footer(footer_documents: list[str]) -> None:
    assert "bash-$" in footer_documents[2]


def test_a_failure_line_is_never_a_footer(footer_documents: list[str]) -> None:
    """A line that reads as a failure says what went wrong, even when it closes two results of the attempt."""
    assert "build failed" in footer_documents[3]
