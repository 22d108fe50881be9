"""A fourth, independent generator of failure sets with known causes, written before any result on it was seen: a
coding agent on SWE-bench-like tasks (edit a repository so that its failing tests pass, with tools such as
``bash``, ``str_replace_editor``, ``run_tests`` and ``submit``). Nothing is shared with tests/failure_sets.py,
tests/failure_sets_ops.py or tests/failure_sets_web.py but the ``FailureSet`` type (vocabulary, templates, step
layouts and noise are its own), so a method tuned on those is tested here on text it has never met.

``failure_set(seed, n_causes, n_failures, style)`` returns native run-log records and the truth like
``tests.failure_sets.failure_set``. What makes it hard, as real logs of coding agents are:

* **test-runner and traceback boilerplate shared by the causes**: pytest's session header, "FAILURES",
  "short test summary info", "FAILED tests/...::test_x - ...", "=== 1 failed, 23 passed in 2.31s ===", Django's
  unittest runner ("Ran 42 tests", "FAILED (errors=1)") and "Traceback (most recent call last)" frames with file
  paths and line numbers, around an assertion, a hallucinated attribute, a collection error alike;
* every task has its own repository, source file, test file, function and class (slots shared by every cause that
  fails on that task), and each cause has several cores with little lexical overlap ("Hunk #1 FAILED", "did not
  appear verbatim", "corrupt patch") inside frames with slots (line numbers, hashes, token counts, seconds), random
  case;
* causes show in a tool's error, in the test run's output, in a shell command's output, in a model call's error
  (the run crashed), in the final answer (a question to the user; a claim of success that the hidden test
  refutes), or in the trajectory's shape (the same command to the step limit; an edit of a file the tests never
  import, seen only in its path and in ``git status``);
* noise that is not the cause: a grep on a wrong folder retried, ``find`` printing "Permission denied" for
  ``/proc``, pip's warning about running as root, a reproduction run that fails with the issue's own exception
  before the edit, a deprecation warning in the test summary, a file viewed;
* two styles: ``agent`` (typed tools; an editor's failure is the step's error) and ``terminal`` (one ``bash``
  tool whose results are raw terminal output, some with SWE-agent's prompt footer and an exit code).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.failure_sets import FailureSet

Slot = Callable[[np.random.Generator], str]


def _any(*words: str) -> Slot:
    return lambda r: words[int(r.integers(len(words)))]


def _hex(k: int) -> Slot:
    return lambda r: "".join("0123456789abcdef"[int(i)] for i in r.integers(16, size=k))


def _int(lo: int, hi: int) -> Slot:
    return lambda r: str(int(r.integers(lo, hi)))


SLOTS: dict[str, Slot] = {
    "line": _int(12, 2400),
    "col": _int(1, 140),
    "n": _int(2, 60),
    "sec": _any("60", "120", "300", "600", "900", "1800"),
    "tok": _int(128_500, 260_000),
    "limit": _any("128000", "200000", "131072", "32768"),
    "h7": _hex(7),
    "x": lambda r: (
        _any("0", "1", "-1", "None", "True", "[]", "'utf-8'", "(2, 3)", "nan")(r)
        if r.random() < 0.5
        else f"{r.uniform(-50, 50):.4g}"
    ),
    "y": lambda r: (
        _any("0", "2", "False", "{}", "'latin-1'", "(3, 2)", "inf", "''")(r)
        if r.random() < 0.5
        else f"{r.uniform(-50, 50):.4g}"
    ),
    "var": _any("value", "result", "kwargs", "axis", "node", "expr", "other", "data", "obj", "unit"),
    "attr": _any(
        "_get_cached_value",
        "normalize_units",
        "resolve_alias",
        "as_sql_lookup",
        "to_canonical",
        "safe_repr_v2",
        "iter_leaves",
        "flatten_args",
        "_coerce_strict",
        "from_legacy",
    ),  # fmt: skip
    "kw": _any("strict", "copy_meta", "allow_none", "inplace", "dtype_hint", "keep_attrs"),
    "dep": _any(
        "numpy.typing",
        "packaging.version",
        "erfa",
        "docutils.nodes",
        "pyparsing",
        "asgiref.sync",
        "tomli",
        "importlib_metadata",
    ),  # fmt: skip
    "ver": lambda r: f"{int(r.integers(0, 6))}.{int(r.integers(0, 20))}.dev{int(r.integers(1, 900))}",
}

# repository, package folder, import name, sub-packages, test file, test runner
REPOS: tuple[tuple[str, str, str, tuple[str, ...], str, str], ...] = (
    ("django/django", "django", "django", ("db/models", "forms", "utils", "contrib/admin"),
     "tests/{mod}_tests/tests.py", "unittest"),
    ("sympy/sympy", "sympy", "sympy", ("core", "simplify", "printing", "matrices"), "{pkg}/{sub}/tests/test_{mod}.py",
     "pytest"),
    ("astropy/astropy", "astropy", "astropy", ("units", "io/fits", "coordinates", "modeling"),
     "{pkg}/{sub}/tests/test_{mod}.py", "pytest"),
    ("scikit-learn/scikit-learn", "sklearn", "sklearn", ("utils", "linear_model", "preprocessing"),
     "{pkg}/{sub}/tests/test_{mod}.py", "pytest"),
    ("matplotlib/matplotlib", "lib/matplotlib", "matplotlib", ("axes", "backends", "ticker"),
     "lib/matplotlib/tests/test_{mod}.py", "pytest"),
    ("pallets/flask", "src/flask", "flask", ("json", "sansio", "cli"), "tests/test_{mod}.py", "pytest"),
    ("pytest-dev/pytest", "src/_pytest", "_pytest", ("assertion", "config", "mark"), "testing/test_{mod}.py",
     "pytest"),
    ("pydata/xarray", "xarray", "xarray", ("core", "coding", "backends"), "xarray/tests/test_{mod}.py", "pytest"),
    ("pylint-dev/pylint", "pylint", "pylint", ("checkers", "config", "lint"), "tests/{sub}/unittest_{mod}.py",
     "pytest"),
    ("sphinx-doc/sphinx", "sphinx", "sphinx", ("domains", "ext/autodoc", "writers"), "tests/test_{mod}.py",
     "pytest"),
)  # fmt: skip
MODULES = ("base", "fields", "formatting", "validators", "helpers", "expressions", "indexing", "writer", "parser",
           "checks", "options", "compat")  # fmt: skip
FUNCS = ("to_python", "_resolve_lookup", "get_prep_value", "_validate_shape", "parse_args", "format_value",
         "merge_settings", "_check_bounds", "_coerce_dtype", "render_node", "_get_limits", "simplify_terms")  # fmt: skip
CLASSES = ("Field", "QuerySet", "Quantity", "Axes", "Formatter", "Expression", "Dataset", "Checker", "Pipeline",
           "Config", "Node", "Matrix")  # fmt: skip
TEST_SUFFIX = ("handles_empty_input", "preserves_dtype", "with_unicode", "roundtrip", "raises_on_negative",
               "keeps_order", "with_none", "regression")  # fmt: skip
ISSUE_ERRORS = (
    "ValueError: cannot reshape array of size {n} into shape ({n},)", "TypeError: unhashable type: 'list'",
    "KeyError: '{var}'", "AssertionError: assert {x} == {y}", "RecursionError: maximum recursion depth exceeded",
    "IndexError: list index out of range", "TypeError: '<' not supported between instances of 'str' and 'int'",
)  # fmt: skip
ISSUES = (
    "{cls}.{func} raises on {var}", "{func} returns a wrong result for {var}", "{cls} loses {var} after copy",
    "Regression in {func} since {ver}", "{func} ignores the {var} argument",
)  # fmt: skip
CODE = (
    "return self._{func}({var}, **kwargs)", "if not isinstance({var}, (list, tuple)):", "{var} = {var}.copy()",
    "raise ValueError(f'invalid {var}: {{var}!r}')", "for key, item in sorted(self._items.items()):",
    "{var} = getattr(self, '_{var}', None)", "if {var} is None and self.{var} is not None:",
    "return {cls}({var}, _copy=False)", "self._cache.pop({var}, None)", "{var} = [x for x in {var} if x]",
    "assert {func}({var}) == expected", "result = {func}({var}, {kw}=True)",
)  # fmt: skip


@dataclass(frozen=True)
class Task:
    """One task's repository and files: every cause failing on it names the same paths and functions."""

    task_id: str
    repo: str
    imp: str
    sub: str
    path: str
    test: str
    tname: str
    func: str
    cls: str
    runner: str
    issue_error: str


@dataclass(frozen=True)
class CodeCause:
    """A cause: where it shows (``test_fail``, ``collect``, ``syntax``, ``edit``, ``run``, ``shell``, ``diff``,
    ``model``, ``args``, ``answer``, ``pass``, ``loop``), its cores and frames (``{core}`` and slots filled at
    random; ``{wrong}`` is the wrong file the attempt edited)."""

    name: str
    where: str
    cores: tuple[str, ...]
    frames: tuple[str, ...]


CAUSES: tuple[CodeCause, ...] = (
    CodeCause("assertion still fails", "test_fail",
              ("assert {x} == {y}", "AssertionError: expected {x}, got {y}",
               "AssertionError: Lists differ: [{x}, {y}] != [{y}, {x}]", "AssertionError: {x} != {y}",
               "Arrays are not almost equal to 7 decimals\nMismatched elements: 1 / {n} (33.3%)",
               "AssertionError: False is not true : {func} returned {x}"),
              ("{core}", "{core}\n  +  where {x} = {func}({var})", "{core}\n  At index 0 diff: {x} != {y}",
               "AssertionError\n{core}")),
    CodeCause("syntax error in the edit", "syntax",
              ("SyntaxError: invalid syntax", "IndentationError: unexpected indent",
               "SyntaxError: '(' was never closed", "IndentationError: unindent does not match any outer indentation level",
               "SyntaxError: expected ':'", "TabError: inconsistent use of tabs and spaces in indentation"),
              ("File \"/testbed/{path}\", line {line}\n    {code}\n        ^\n{core}", "{core}",
               "{core} ({module}.py, line {line})")),
    CodeCause("import error", "collect",
              ("ModuleNotFoundError: No module named '{dep}'",
               "ImportError: cannot import name '{cls}' from partially initialized module '{imp}.{module}' (most "
               "likely due to a circular import)",
               "ImportError: attempted relative import with no known parent package",
               "ImportError: cannot import name '{func}' from '{imp}.compat'"),
              ("{core}", "ImportError while importing test module '/testbed/{test}'.\nHint: make sure your test "
               "modules/packages have valid Python names.\nTraceback:\n{core}", "import of {imp}.{module} failed: {core}")),
    CodeCause("patch does not apply", "edit",
              ("No replacement was performed, old_str `{code}` did not appear verbatim in /testbed/{path}.",
               "No replacement was performed. Multiple occurrences of old_str `{code}` in lines [{line}, {line}]. "
               "Please ensure it is unique",
               "Hunk #1 FAILED at {line}.\n1 out of 1 hunk FAILED -- saving rejects to file {path}.rej",
               "error: patch failed: {path}:{line}\nerror: {path}: patch does not apply",
               "patch: **** malformed patch at line {n}: @@ -{line},7 +{line},8 @@",
               "error: corrupt patch at line {n}"),
              ("{core}", "{core}", "checking file {path}\n{core}")),
    CodeCause("test run timed out", "run",
              ("+++++++++++++++++++++++++++ Timeout +++++++++++++++++++++++++++\n~~~~~~~~~~~ Stack of MainThread "
               "(1402{n}) ~~~~~~~~~~~",
               "Failed: Timeout >{sec}.0s", "The command took longer than {sec} seconds and was killed.",
               "Terminated\n[exit code 124]", "run_tests did not finish within {sec} s; the process tree was killed"),
              ("{core}", "{test} ..{core}", "{core}\n(last output {n} s ago)")),
    CodeCause("edited the wrong file", "diff",
              ("On branch main\nnothing to commit, working tree clean",
               " {wrong} | {n} +++--\n 1 file changed, {n} insertions(+), {n} deletions(-)",
               "Changes not staged for commit:\n  (use \"git add <file>...\" to update what will be committed)\n"
               "\tmodified:   {wrong}",
               "Untracked files:\n\t{wrong}"),
              ("{core}", "{core}", "{core}\n")),
    CodeCause("step limit in a loop", "loop",
              ("Exited (max_steps reached)", "Step limit of {n} reached; autosubmitting the current diff",
               "The agent ran out of turns.", "exit_cost: the instance cost limit was hit",
               "stopping: budget of {n} actions used"),
              ("{core}", "{core}", "[harness] {core}")),
    CodeCause("asked for clarification", "answer",
              ("Could you clarify what {func} should return when {var} is {x}?",
               "Before I change anything, can you confirm whether {cls} must stay backwards compatible?",
               "I need more details about the expected behaviour of {func}.",
               "Which of the two behaviours do you expect here: {x} or {y}?",
               "Should the fix also cover {imp}.{module}, or only {func}?"),
              ("{core}", "I looked at {path}. {core}", "{core} Let me know and I will continue.",
               "{core} I'll wait for your answer before editing.")),
    CodeCause("context window exceeded", "model",
              ("This model's maximum context length is {limit} tokens. However, your messages resulted in {tok} "
               "tokens.",
               "prompt is too long: {tok} tokens > {limit} maximum",
               "ContextWindowExceededError: the input does not fit the model's window",
               "Input validation error: `inputs` tokens + `max_new_tokens` must be <= {limit}",
               "history of {tok} tokens left no room for the reply"),
              ("{core}", "litellm.BadRequestError: {core}", "agent loop aborted: {core}", "{core} (request req_{h7})")),
    CodeCause("api rate limit or overload", "model",
              ("Error code: 429 - {'type': 'error', 'error': {'type': 'rate_limit_error', 'message': 'This request "
               "would exceed the rate limit of {n}0,000 output tokens per minute.'}}",
               "openai.RateLimitError: You exceeded your current quota, please check your plan and billing details.",
               "Error code: 529 - {'type': 'error', 'error': {'type': 'overloaded_error', 'message': 'Overloaded'}}",
               "503 UNAVAILABLE: The model is overloaded. Please try again later.",
               "too many requests; retried {n} times with backoff, giving up"),
              ("{core}", "Retrying in {sec} seconds... {core}", "agent loop aborted: {core}",
               "{core} (request req_{h7})")),
    CodeCause("malformed tool arguments", "args",
              ("Expecting ',' delimiter: line 1 column {col} (char {col})",
               "Unterminated string starting at: line 1 column {col} (char {col})",
               "Invalid \\escape: line 1 column {col} (char {col})", "the tool input is not a JSON object",
               "Extra data: line 2 column 1 (char {col})"),
              ("Failed to parse tool call arguments: {core}", "json.decoder.JSONDecodeError: {core}", "{core}",
               "Your function call could not be decoded ({core}). Please retry with valid JSON.")),
    CodeCause("hallucinated name", "test_fail",
              ("AttributeError: '{cls}' object has no attribute '{attr}'", "NameError: name '{attr}' is not defined",
               "AttributeError: module '{imp}.{module}' has no attribute '{attr}'",
               "TypeError: {func}() got an unexpected keyword argument '{kw}'"),
              ("{core}", "{core}. Did you mean: '{func}'?", "{core}\n\n{path}:{line}: in {func}\n    return {attr}()")),
    CodeCause("sandbox permission or disk", "edit",
              ("OSError: [Errno 30] Read-only file system: '/testbed/{path}'",
               "PermissionError: [Errno 13] Permission denied: '/testbed/{path}'",
               "sed: couldn't open temporary file /testbed/{module}sed{h7}: Read-only file system",
               "OSError: [Errno 28] No space left on device",
               "fatal: Unable to create '/testbed/.git/index.lock': File exists.",
               "touch: cannot touch '/testbed/{path}': Permission denied"),
              ("{core}", "{core}", "writing /testbed/{path} failed\n{core}")),
    CodeCause("hidden test fails", "pass",
              ("All tests pass now.", "The fix is complete and the reproduction script no longer raises.",
               "I verified the change against the existing test suite: nothing fails.",
               "The issue is resolved: {func} now returns the expected value.", "Done - {test} is green."),
              ("{core}", "{core} I changed {path} so that {func} handles {var}.", "Summary: {core}",
               "{core} Submitting the patch.")),
    CodeCause("build of the package failed", "shell",
              ("error: command '/usr/bin/gcc' failed with exit code 1", "fatal error: Python.h: No such file or "
               "directory", "ERROR: Failed building wheel for {repo_name}",
               "× Getting requirements to build editable did not run successfully.\n│ exit code: 1",
               "Cython.Compiler.Errors.CompileError: {imp}/_ext.pyx", "error: subprocess-exited-with-error"),
              ("{core}", "Obtaining file:///testbed\n  Installing build dependencies ... done\n{core}\nnote: This error "
               "originates from a subprocess, and is likely not a problem with pip.",
               "running build_ext\n{core}")),
)  # fmt: skip

CLOSINGS = (
    "I've updated {path}; submitting the patch.", "I could not make the failing test pass; submitting what I have.",
    "The change is in place.", "Submitting.", "I was not able to resolve the issue.", "",
)  # fmt: skip
WRONG = ("build/lib/{imp}/{module}.py", "docs/ref/{module}.rst", "{test}",
         "/usr/local/lib/python3.9/site-packages/{imp}/{module}.py", "{imp}/_vendor/{module}.py",
         "examples/{module}_demo.py")  # fmt: skip


def fill(template: str, task: Task, rng: np.random.Generator) -> str:
    """``template`` with each ``{name}`` filled: the task's own names first, then a random slot; anything else (a
    dict's braces in an API error) stays as it is."""
    own = {"path": task.path, "test": task.test, "tname": task.tname, "func": task.func, "cls": task.cls,
           "imp": task.imp, "module": task.path.rsplit("/", 1)[-1][:-3], "repo_name": task.repo.split("/")[1]}  # fmt: skip

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in own:
            return own[name]
        if name == "code":
            return fill(CODE[int(rng.integers(len(CODE)))], task, rng)
        if name == "wrong":
            return fill(WRONG[int(rng.integers(len(WRONG)))], task, rng)
        return SLOTS[name](rng) if name in SLOTS else m.group(0)

    return re.sub(r"\{([a-z_0-9]+)\}", one, template)


def _phrase(cause: CodeCause, task: Task, rng: np.random.Generator, wrong: str = "") -> str:
    frame = cause.frames[int(rng.integers(len(cause.frames)))]
    core = cause.cores[int(rng.integers(len(cause.cores)))]
    text = fill(frame.replace("{core}", core).replace("{wrong}", wrong), task, rng)
    u = rng.random()
    return text.upper() if u < 0.06 else text.lower() if u < 0.2 else text


def _code(task: Task, rng: np.random.Generator, k: int) -> str:
    start = int(rng.integers(10, 900))
    return "\n".join(f"{start + i:6d}\t    {fill('{code}', task, rng)}" for i in range(k))


def _frames(task: Task, rng: np.random.Generator) -> str:
    """Traceback frames through the task's source file (the same layout whatever the exception)."""
    out = ["Traceback (most recent call last):"]
    for _ in range(int(rng.integers(1, 4))):
        where = task.path if rng.random() < 0.7 else task.test
        out.append(f'  File "/testbed/{where}", line {fill("{line}", task, rng)}, in {task.func}')
        out.append("    " + fill("{code}", task, rng))
    return "\n".join(out)


def _head(rng: np.random.Generator) -> str:
    return (
        "============================= test session starts ==============================\n"
        f"platform linux -- Python 3.{int(rng.integers(8, 12))}.{int(rng.integers(0, 19))}, "
        f"pytest-{('7.4.0', '8.1.1', '8.2.2', '6.2.5')[int(rng.integers(4))]}, pluggy-1.{int(rng.integers(0, 6))}.0\n"
        f"rootdir: /testbed\nconfigfile: {('setup.cfg', 'pyproject.toml', 'tox.ini')[int(rng.integers(3))]}\n"
    )


def _pytest(task: Task, rng: np.random.Generator, fail: str | None, kind: str) -> str:
    """pytest's output: ``kind`` ``test`` (a failing test), ``collect`` (an error collecting the test file) or
    ``pass``; with or without the session header (``-q``), with or without a warnings summary."""
    n = int(rng.integers(3, 120))
    secs = f"{rng.uniform(0.05, 40):.2f}s"
    out = _head(rng) + f"collected {n} items\n\n" if rng.random() < 0.6 else ""
    warn = ""
    if rng.random() < 0.3:  # noise: a deprecation warning in every kind of run
        warn = (
            "\n=============================== warnings summary ===============================\n"
            f"{task.path}:{fill('{line}', task, rng)}\n  DeprecationWarning: distutils Version classes are "
            "deprecated. Use packaging.version instead.\n"
        )
    if kind == "pass":
        return out + f"{task.test} {'.' * min(n, 40)} [100%]\n{warn}\n{'=' * 20} {n} passed in {secs} {'=' * 20}"
    body = "\n".join("E   " + ln if kind == "collect" else "E       " + ln for ln in (fail or "").splitlines())
    short = (fail or "").splitlines()[0][:90] if fail else ""
    found = re.match(r"[A-Za-z_.]*(Error|Exception)\b", short)
    exc = found.group(0) if found else "AssertionError"
    if kind == "collect":
        return (
            out + f"{'=' * 20} ERRORS {'=' * 20}\n{'_' * 10} ERROR collecting {task.test} {'_' * 10}\n"
            f"{_frames(task, rng)}\n{body}\n{warn}{'=' * 10} short test summary info {'=' * 10}\nERROR {task.test}\n"
            f"!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n"
            f"{'=' * 20} 1 error in {secs} {'=' * 20}"
        )
    return (
        out + f"{task.test} {'.' * int(rng.integers(0, 20))}F [100%]\n\n{'=' * 20} FAILURES {'=' * 20}\n"
        f"{'_' * 10} {task.tname} {'_' * 10}\n\n    def {task.tname}():\n>       {fill('{code}', task, rng)}\n"
        f"{body}\n\n{task.test}:{fill('{line}', task, rng)}: {exc}\n{warn}"
        f"{'=' * 10} short test summary info {'=' * 10}\nFAILED {task.test}::{task.tname} - {short}\n"
        f"{'=' * 20} 1 failed, {n - 1} passed in {secs} {'=' * 20}"
    )


def _unittest(task: Task, rng: np.random.Generator, fail: str | None, kind: str) -> str:
    """Django's runner: the same three kinds in ``runtests.py``'s layout."""
    n = int(rng.integers(3, 400))
    head = (
        "Testing against Django installed in '/testbed/django'\nCreating test database for alias 'default'...\n"
        "System check identified no issues (0 silenced).\n"
    )
    tail = f"\n----------------------------------------------------------------------\nRan {n} tests in "
    tail += f"{rng.uniform(0.01, 30):.3f}s\n\n"
    if kind == "pass":
        return head + "." * min(n, 60) + tail + "OK\nDestroying test database for alias 'default'..."
    is_assert = (fail or "").startswith(("Assert", "assert", "Arrays"))
    label = "FAIL" if is_assert else "ERROR"
    name = f"{task.tname} ({task.test.split('/')[1]}.tests.{task.cls}Tests)"
    if kind == "collect":
        name = f"{task.test.split('/')[1]} (unittest.loader._FailedTest)"
    return (
        head
        + f"..{label[0]}.\n{'=' * 70}\n{label}: {name}\n{'-' * 70}\n{_frames(task, rng)}\n{fail}\n"
        + tail
        + f"FAILED ({'failures' if is_assert else 'errors'}=1)\nDestroying test database for alias 'default'..."
    )


def _tests_out(task: Task, rng: np.random.Generator, fail: str | None = None, kind: str = "test") -> str:
    return (_unittest if task.runner == "unittest" else _pytest)(task, rng, fail, kind)


def _call(style: str, tool: str, args: dict[str, Any], cmd: str, out: str, rng: np.random.Generator,
          *, is_error: bool = False, footer: str = "") -> dict[str, Any]:  # fmt: skip
    """One tool call: a typed tool (an error in ``error``), or ``bash`` with the raw output as the result."""
    if style == "agent":
        return {"kind": "tool_call", "tool": tool, "args": args, ("error" if is_error else "result"): out}
    raw = out
    if is_error and rng.random() < 0.5:
        raw += f"\n[exit code {int(rng.integers(1, 3))}]"
    return {"kind": "tool_call", "tool": "bash", "args": {"command": cmd}, "result": raw + footer}


def _view(task: Task, style: str, rng: np.random.Generator, footer: str) -> dict[str, Any]:
    code = _code(task, rng, int(rng.integers(4, 10)))
    return _call(style, "str_replace_editor", {"command": "view", "path": f"/testbed/{task.path}"},
                 f"cat -n {task.path} | sed -n '{fill('{line}', task, rng)},+8p'", code, rng, footer=footer)  # fmt: skip


def _noise(task: Task, style: str, rng: np.random.Generator, footer: str) -> list[dict[str, Any]]:
    """Steps that are not the cause: a file viewed, a grep on a wrong folder retried, ``find`` complaining about
    /proc, pip's warning about root, ``git log``."""
    steps = [_view(task, style, rng, footer)] if rng.random() < 0.7 else []
    grep = f"grep -rn 'def {task.func}' "
    hit = f"{task.path}:{fill('{line}', task, rng)}:    def {task.func}(self, {fill('{var}', task, rng)}):"
    if rng.random() < 0.3:
        steps.append(_call(style, "bash", {"command": grep + "src/"}, grep + "src/",
                           "grep: src/: No such file or directory", rng, is_error=True, footer=footer))  # fmt: skip
    if rng.random() < 0.5:
        steps.append(_call(style, "bash", {"command": grep + "."}, grep + ".", hit, rng, footer=footer))
    if rng.random() < 0.2:
        out = f"find: '/proc/{int(rng.integers(2, 400))}/map_files': Permission denied\n/testbed/{task.test}"
        steps.append(_call(style, "bash", {"command": "find / -name 'test_*.py'"}, "find / -name 'test_*.py'",
                           out, rng, footer=footer))  # fmt: skip
    if rng.random() < 0.2:
        out = (
            f"Successfully installed {task.repo.split('/')[1]}-{fill('{ver}', task, rng)}\nWARNING: Running pip as "
            "the 'root' user can result in broken permissions and conflicting behaviour with the system package "
            "manager. It is recommended to use a virtual environment instead: https://pip.pypa.io/warnings/venv"
        )
        steps.append(_call(style, "bash", {"command": "pip install -e ."}, "pip install -e .", out, rng, footer=footer))
    if rng.random() < 0.15:
        out = "\n".join(fill("{h7} Fix {func} for {var}", task, rng) for _ in range(3))
        steps.append(_call(style, "bash", {"command": "git log --oneline -3"}, "git log --oneline -3", out, rng,
                           footer=footer))  # fmt: skip
    return steps


def _run_tests(task: Task, style: str, rng: np.random.Generator, footer: str, out: str, *, is_error: bool = False
               ) -> dict[str, Any]:  # fmt: skip
    cmd = (f"python tests/runtests.py {task.test.split('/')[1]} --verbosity 2" if task.runner == "unittest"
           else f"python -m pytest {task.test} -x {'-q' if rng.random() < 0.5 else '-rA'}")  # fmt: skip
    return _call(style, "run_tests", {"test_ids": [f"{task.test}::{task.tname}"]}, cmd, out, rng,
                 is_error=is_error, footer=footer)  # fmt: skip


def _edit(task: Task, style: str, rng: np.random.Generator, footer: str, path: str = "") -> dict[str, Any]:
    """A successful edit (of ``path``, the task's source file unless given)."""
    path = path or task.path
    old, new = fill("{code}", task, rng), fill("{code}", task, rng)
    out = (
        f"The file /testbed/{path} has been edited. Here's the result of running `cat -n` on a snippet of "
        f"/testbed/{path}:\n{_code(task, rng, 5)}\nReview the changes and make sure they are as expected."
    )
    if style == "terminal":
        out = "" if rng.random() < 0.6 else f"patching file {path}"
    args = {"command": "str_replace", "path": f"/testbed/{path}", "old_str": old, "new_str": new}
    cmd = f"sed -i 's/{old[:24]}/{new[:24]}/' {path}" if rng.random() < 0.5 else "git apply /tmp/fix.patch"
    return _call(style, "str_replace_editor", args, cmd, out, rng, footer=footer)


def _diff(task: Task, rng: np.random.Generator, path: str) -> str:
    line = fill("{line}", task, rng)
    return (
        f"diff --git a/{path} b/{path}\nindex {fill('{h7}..{h7}', task, rng)} 100644\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -{line},7 +{line},7 @@\n-    {fill('{code}', task, rng)}\n+    {fill('{code}', task, rng)}"
    )


def _submit(task: Task, style: str, rng: np.random.Generator, footer: str, patch: str) -> dict[str, Any]:
    return _call(style, "submit", {}, "submit", patch or "<empty patch>", rng, footer=footer)


@dataclass(frozen=True)
class Attempt:
    """What one attempt's steps are built from: its task, style, the terminal footer and the cause's text."""

    task: Task
    style: str
    footer: str
    text: str
    wrong: str


Outcome = tuple[list[dict[str, Any]], str | None, str]  # steps, final answer (None: a closing), status


def _on_test(a: Attempt, rng: np.random.Generator) -> Outcome:
    """The edit lands and the test still fails, on an assertion or on a name that does not exist."""
    out = _tests_out(a.task, rng, a.text)
    return [_edit(a.task, a.style, rng, a.footer), _run_tests(a.task, a.style, rng, a.footer, out)], None, "completed"


def _on_collect(a: Attempt, rng: np.random.Generator) -> Outcome:
    """The test file cannot even be imported."""
    out = _tests_out(a.task, rng, a.text, "collect")
    return [_edit(a.task, a.style, rng, a.footer), _run_tests(a.task, a.style, rng, a.footer, out)], None, "completed"


def _on_syntax(a: Attempt, rng: np.random.Generator) -> Outcome:
    """The edit broke the file: the editor's lint refuses it, or the test run fails to collect."""
    if rng.random() < 0.6:
        return _on_collect(a, rng)
    t = a.task
    lint = (
        "Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then "
        f"retry editing the file.\n\nERRORS:\n- E999 {a.text}\n\nThis is how your edit would have looked if "
        f"applied\n-------------------------------------------------\n{_code(t, rng, 4)}\n"
    )
    cmd = f"python -m flake8 --select=E999 {t.path}"
    if a.style == "terminal":
        lint = f"{t.path}:{fill('{line}:{col}', t, rng)}: E999 {a.text.splitlines()[-1]}"
    args = {"command": "str_replace", "path": f"/testbed/{t.path}", "old_str": fill("{code}", t, rng)}
    return (
        [_call(a.style, "str_replace_editor", args, cmd, lint, rng, is_error=True, footer=a.footer)],
        None,
        "completed",
    )


def _on_edit(a: Attempt, rng: np.random.Generator, cause: CodeCause) -> Outcome:
    """The edit itself fails (the patch does not apply; the file system refuses), once or twice; the tests may be
    run anyway and fail as before the edit."""
    t, steps = a.task, []
    for i in range(1 + int(rng.random() < 0.4)):
        text = a.text if i == 0 else _phrase(cause, t, rng)
        if a.style == "agent" and rng.random() < 0.4:  # a patch applied from the shell: its output is the result
            steps.append(_call(a.style, "bash", {"command": "git apply /tmp/fix.patch"}, "", text, rng))
        else:
            args = {"command": "str_replace", "path": f"/testbed/{t.path}", "old_str": fill("{code}", t, rng),
                    "new_str": fill("{code}", t, rng)}  # fmt: skip
            steps.append(_call(a.style, "str_replace_editor", args, "patch -p1 < /tmp/fix.patch", text, rng,
                               is_error=True, footer=a.footer))  # fmt: skip
    if rng.random() < 0.4:
        steps.append(_run_tests(t, a.style, rng, a.footer, _tests_out(t, rng, fill(t.issue_error, t, rng))))
    return steps, None, "tool_failure" if rng.random() < 0.3 else "completed"


def _on_run(a: Attempt, rng: np.random.Generator) -> Outcome:
    """The test run never finishes."""
    out = (_head(rng) + f"collected {int(rng.integers(3, 900))} items\n\n" if rng.random() < 0.5 else "") + a.text
    run = _run_tests(a.task, a.style, rng, a.footer, out, is_error=True)
    return [_edit(a.task, a.style, rng, a.footer), run], None, "completed"


def _on_shell(a: Attempt, rng: np.random.Generator) -> Outcome:
    """Rebuilding the package after the edit fails."""
    cmd = "pip install -e ." if rng.random() < 0.6 else "python setup.py build_ext --inplace"
    build = _call(a.style, "bash", {"command": cmd}, cmd, a.text, rng, is_error=True, footer=a.footer)
    return [_edit(a.task, a.style, rng, a.footer), build], None, "completed"


def _on_diff(a: Attempt, rng: np.random.Generator) -> Outcome:
    """The edit lands in a file the tests never import (a build copy, the docs, site-packages): only its path and
    ``git status`` show it; the tests fail as before."""
    t = a.task
    cmd = "git status" if rng.random() < 0.5 else "git diff --stat"
    steps = [_edit(t, a.style, rng, a.footer, a.wrong), _call(a.style, "bash", {"command": cmd}, cmd, a.text, rng,
                                                             footer=a.footer)]  # fmt: skip
    if rng.random() < 0.5:
        steps.append(_run_tests(t, a.style, rng, a.footer, _tests_out(t, rng, fill(t.issue_error, t, rng))))
    if rng.random() < 0.6:
        ignored = a.wrong.startswith(("/", "build/")) or "nothing to commit" in a.text.lower()
        patch = "" if ignored else _diff(t, rng, a.wrong)
        steps.append(_submit(t, a.style, rng, a.footer, patch))
    return steps, None, "completed"


def _on_model(a: Attempt, rng: np.random.Generator, cause: CodeCause) -> Outcome:
    """The model call fails and the run crashes (after a long output, for a full context window)."""
    steps = []
    if cause.name.startswith("context") and rng.random() < 0.6:
        cmd = f"cat {a.task.path}"
        steps.append(_call(a.style, "bash", {"command": cmd}, cmd, _code(a.task, rng, 30), rng, footer=a.footer))
    text = a.text
    if rng.random() < 0.4:
        text = (
            f'Traceback (most recent call last):\n  File "/opt/agent/loop.py", line {fill("{line}", a.task, rng)}, '
            f"in step\n    response = self.model.query(history)\n{text}"
        )
    steps.append({"kind": "model_call", "error": text} if a.style == "agent" else {"kind": "message",
                                                                                   "content": "[harness] " + text})  # fmt: skip
    return steps, "", "crashed"


def _on_args(a: Attempt, rng: np.random.Generator, cause: CodeCause) -> Outcome:
    """The tool call's arguments are not valid JSON, once to three times."""
    steps = []
    for i in range(int(rng.integers(1, 4))):
        text = a.text if i == 0 else _phrase(cause, a.task, rng)
        raw = f'{{"command": "str_replace", "path": "/testbed/{a.task.path}", "old_str": "{fill("{code}", a.task, rng)}'
        tool = "str_replace_editor" if a.style == "agent" else "bash"
        steps.append({"kind": "tool_call", "tool": tool, "args": {"raw": raw[: int(rng.integers(30, len(raw)))]},
                      ("error" if a.style == "agent" else "result"): text})  # fmt: skip
    return steps, None, "tool_failure" if rng.random() < 0.5 else "completed"


def _on_pass(a: Attempt, rng: np.random.Generator) -> Outcome:
    """The visible tests pass and the answer claims success; the hidden test fails."""
    t = a.task
    steps = [_edit(t, a.style, rng, a.footer), _run_tests(t, a.style, rng, a.footer, _tests_out(t, rng, kind="pass"))]
    if rng.random() < 0.7:
        steps.append(_submit(t, a.style, rng, a.footer, _diff(t, rng, t.path)))
    return steps, a.text, "completed"


def _on_loop(a: Attempt, rng: np.random.Generator) -> Outcome:
    """The same command, with the same output, until the step limit."""
    t, u = a.task, rng.random()
    if u < 0.4:
        step = _view(t, a.style, rng, a.footer)
    elif u < 0.7:
        cmd = f"grep -rn '{t.func}' {t.path.rsplit('/', 1)[0]}"
        out = "\n".join(f"{t.path}:{fill('{line}', t, rng)}:    {fill('{code}', t, rng)}" for _ in range(3))
        step = _call(a.style, "bash", {"command": cmd}, cmd, out, rng, footer=a.footer)
    else:
        step = _run_tests(t, a.style, rng, a.footer, _tests_out(t, rng, fill(t.issue_error, t, rng)))
    steps = [dict(step) for _ in range(int(rng.integers(4, 10)))]
    return steps, a.text if rng.random() < 0.7 else "", "timeout"


def _cause_steps(cause: CodeCause, a: Attempt, rng: np.random.Generator) -> Outcome:
    w = cause.where
    if w in ("edit", "model", "args"):
        return {"edit": _on_edit, "model": _on_model, "args": _on_args}[w](a, rng, cause)
    if w == "answer":
        return [], a.text, "completed"
    handlers = {"test_fail": _on_test, "collect": _on_collect, "syntax": _on_syntax, "run": _on_run,
                "shell": _on_shell, "diff": _on_diff, "pass": _on_pass, "loop": _on_loop}  # fmt: skip
    return handlers[w](a, rng)


def _steps(cause: CodeCause, task: Task, style: str, rng: np.random.Generator) -> Outcome:
    """Steps, final answer and status of one failed attempt: noise, maybe a reproduction of the issue, the cause."""
    footer = f"\n(Open file: /testbed/{task.path})\n(Current directory: /testbed)\nbash-$" if rng.random() < 0.5 else ""
    footer = footer if style == "terminal" else ""
    wrong = fill(WRONG[int(rng.integers(len(WRONG)))], task, rng)
    a = Attempt(task, style, footer, _phrase(cause, task, rng, wrong), wrong)
    steps = _noise(task, style, rng, footer) if cause.where != "answer" or rng.random() < 0.6 else []
    if cause.where not in ("answer", "model") and rng.random() < 0.35:  # the issue reproduced before the edit
        steps.append(_run_tests(task, style, rng, footer, _tests_out(task, rng, fill(task.issue_error, task, rng))))
    more, answer, status = _cause_steps(cause, a, rng)
    steps += more
    if answer is None:
        answer = fill(CLOSINGS[int(rng.integers(len(CLOSINGS)))], task, rng)
    if answer:
        steps.append({"kind": "final", "content": answer})
    for i, s in enumerate(steps):
        s["round"] = i + 1
    return steps, answer, status


def _tasks(n_tasks: int, rng: np.random.Generator) -> list[Task]:
    out = []
    for t in range(n_tasks):
        repo, pkg, imp, subs, test, runner = REPOS[int(rng.integers(len(REPOS)))]
        sub, mod = subs[int(rng.integers(len(subs)))], MODULES[int(rng.integers(len(MODULES)))]
        func, cls = FUNCS[int(rng.integers(len(FUNCS)))], CLASSES[int(rng.integers(len(CLASSES)))]
        tname = f"test_{func.strip('_')}_{TEST_SUFFIX[int(rng.integers(len(TEST_SUFFIX)))]}"
        task_id = f"{repo.replace('/', '__')}-{10000 + 13 * t + int(rng.integers(13))}"
        test_path = test.replace("{pkg}", pkg).replace("{sub}", sub).replace("{mod}", mod)
        issue = ISSUE_ERRORS[int(rng.integers(len(ISSUE_ERRORS)))]
        out.append(Task(task_id, repo, imp, sub, f"{pkg}/{sub}/{mod}.py", test_path, tname, func, cls, runner, issue))
    return out


def failure_set(
    *, seed: int, n_causes: int, n_failures: int, style: str = "agent", n_passes: int = 10, benchmark: str = "code"
) -> FailureSet:
    """A seeded set (see the module docstring); ``style``: ``agent`` or ``terminal``."""
    rng = np.random.default_rng(seed)
    chosen = [CAUSES[i] for i in rng.choice(len(CAUSES), n_causes, replace=False)]
    which = rng.choice(n_causes, n_failures, p=rng.dirichlet(np.full(n_causes, 1.6)))
    models = ["sonnet-3.5", "gpt-4o", "qwen2.5-coder-32b"]
    records: list[dict[str, Any]] = [{"record": "benchmark", "benchmark": benchmark, "scoring": "binary"}]
    records += [
        {"record": "run", "run_id": f"{benchmark}-{m}", "benchmark": benchmark, "agent": "PatchPilot",
         "agent_version": m}
        for m in models
    ]  # fmt: skip
    tasks = _tasks(max(12, n_failures // 5), rng)
    for t in tasks:
        records.append(
            {"record": "task", "benchmark": benchmark, "task_id": t.task_id,
             "query": f"{t.repo}: " + fill(ISSUES[int(rng.integers(len(ISSUES)))], t, rng),
             "reference_answer": f"FAIL_TO_PASS: {t.test}::{t.tname}",
             "reference_trajectory": ["bash", "str_replace_editor", "run_tests", "submit"]}
        )  # fmt: skip
    truth: dict[tuple[str, str, int], str] = {}
    for i, c in enumerate(which):
        cause, task = chosen[int(c)], tasks[int(rng.integers(len(tasks)))]
        key = (f"{benchmark}-{models[int(rng.integers(len(models)))]}", task.task_id, i)
        steps, answer, status = _steps(cause, task, style, rng)
        truth[key] = cause.name
        records.append(
            {"record": "attempt", "run_id": key[0], "task_id": key[1], "sample": i, "score": 0.0, "passed": False,
             "answer": answer, "status": status, "steps": steps}
        )  # fmt: skip
    for j in range(n_passes):
        records.append(
            {"record": "attempt", "run_id": f"{benchmark}-{models[0]}", "task_id": tasks[0].task_id,
             "sample": n_failures + j, "score": 1.0, "passed": True, "answer": "Submitted the fix.", "steps": []}
        )  # fmt: skip
    return FailureSet(records=records, truth=truth, causes=tuple(c.name for c in chosen), benchmark=benchmark)
