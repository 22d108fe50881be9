"""The document of a failure as text: its segments (the failing steps, the final answer against the reference,
what the trajectory says), run-specific tokens cut (``strip_run_specific``), boilerplate shared by most failures
dropped (``failure_documents``). ``analytics.clusters.load`` reads each failure's rows and builds its document here;
the module docstring there says what a document is made of."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import pandas as pd

from analytics.clusters.reading import TIMED_OUT

BOILERPLATE_SHARE = 0.5
LOOP_REPEATS = 2  # repeated tool calls (beyond the first of each) that make an attempt out of budget a loop
# an answer that asks the user: a sentence ending in a question mark, or a request for more to go on ...
ASKS_THE_USER = re.compile(
    r"\?(?:\s|$)|\bI need more (?:details|information)\b|\bwait for your (?:answer|reply|confirmation|input)\b"
    r"|\bplease (?:clarify|confirm)\b",
    re.IGNORECASE,
)
# ... that is not an offer of more work (a closing, "Would you like me to also update the docs?")
OFFERS_MORE = re.compile(r"\b(?:would you like me to|do you want me to|shall I|should I)\b", re.IGNORECASE)


_MASK_NUMBER = re.compile(r"\b[\w.+-]*\d[\w.+-]*\b")  # ids and numbers: acct_045, 18342.17, 10.2.7.14:8443


def mask(text: str) -> str:
    """A segment as boilerplate is recognised: lower case, every token with a digit replaced by ``#``."""
    out = text.lower()
    if _DIGIT.search(out):
        out = _MASK_NUMBER.sub("#", out)
    return " ".join(out.split())  # whitespace runs as one space, none at the ends


def answer_against_reference(answer: str | None, reference: str | None) -> str:
    """What the final answer says against the reference, in words (empty without a reference)."""
    from analytics.judge import normalise_number, normalise_text

    if answer is None or not str(answer).strip():
        return "no final answer"
    if reference is None or not str(reference).strip():
        return ""
    a, r = normalise_number(answer), normalise_number(reference)
    if a is not None and r is not None:
        return "the same number as the reference" if a == r else "a different number than the reference"
    na, nr = normalise_text(answer), normalise_text(reference)
    if na == nr:
        return "the same as the reference"
    first_a, first_r = (na.split() or [""])[0], (nr.split() or [""])[0]
    if first_a in ("yes", "no") and first_r in ("yes", "no") and first_a != first_r:
        return "the opposite yes/no of the reference"
    nums_a, nums_r = re.findall(r"\d+(?:\.\d+)?", na), re.findall(r"\d+(?:\.\d+)?", nr)
    if nums_r and nums_a and set(nums_a) != set(nums_r):
        return "different numbers than the reference"
    return "differs from the reference"


_GENERIC_PREFIX = re.compile(
    r"^(?:(?:error|exception(?: raised)?|tool (?:call )?failed(?: with)?|failed(?: with)?|fatal|warning)\s*[:\-]?\s*)+",
    re.IGNORECASE,
)


def _error_line(line: str) -> str:
    """``tool: text`` of a failing step as embedded: the text without its generic lead ("Error:", "tool failed -"),
    which every failure shares; the tool's name stays out too (it is in the members table), so one cause reported by
    several tools is one cluster. Python's ``IndentationError`` and ``TabError`` are named with their family too
    ("SyntaxError: IndentationError: unexpected indent"): one cause, an edit that does not parse, whatever the
    parser called it; and so is a text of a family whose tools word it each their own way (``FAMILIES``: "timed
    out: the command took longer than 30 seconds and was killed", "edit not applied: Hunk #1 FAILED at 12", "rate
    limited: Too many requests", "build failed: Failed building wheel for astropy", "click intercepted: element is
    obscured by an overlay")."""
    _, _, text = line.partition(": ")
    text = unjson(text.strip())
    if "Error" in text:
        text = _SYNTAX_FAMILY.sub(r"SyntaxError: \1", text)
    said = text  # with its lead: "fatal error: Python.h: No such file or directory" is a build's
    text = _GENERIC_PREFIX.sub("", text) or text
    low = said.lower()
    for name, needles, words in FAMILIES:
        # what the text says, not a name in it ("test_timeout.py", 'timeout' as an argument's name); an exception's
        # class is what it says ("openai.RateLimitError" is a rate limit)
        if not any(n in low for n in needles):
            continue  # (a text without any of the words' needles is skipped: most are, and a search costs more)
        if words.search(said) and words.search(_without_names(_EXCEPTION_CLASS.sub(r"\1", said))):
            if not text.lower().startswith(name):
                text = f"{name}: {text}"
            break
    return "failed: " + text


def _without_names(text: str) -> str:
    """``text`` in lower case without its URLs, paths, quoted values and dotted names (``_RUN_SPECIFIC``), an error
    body's fields unquoted first (``_ERROR_FIELD``: its message is what happened); ``strip_run_specific``'s first
    steps."""
    if "'" in text or '"' in text:
        text = _QUOTED_KEY.sub(r"\2", _ERROR_FIELD.sub(r"\2\3\5", text))
    text = text.lower()
    for pattern, repl, needs in _RUN_SPECIFIC:
        if any(c in text for c in needs):
            text = pattern.sub(repl, text)
    return text


_SYNTAX_FAMILY = re.compile(r"\b(IndentationError|TabError)\b")  # Python's subclasses of SyntaxError
# A failure's family, named first in its text (the first that matches): one cause that several tools word their own
# way. Stopped for its time: pytest-timeout's "Timeout", "took longer than 30 seconds and was killed", GNU timeout's
# exit status 124, "deadline exceeded" (failure-doc@v11). An edit that did not apply: git apply's "patch does not
# apply" and "corrupt patch", patch's "Hunk #1 FAILED" and "malformed patch", str_replace editors' "No replacement was
# performed" (failure-doc@v12). Refused for its rate: HTTP 429, "rate limit", "too many requests", a quota; a build
# that failed: pip's "Failed building wheel" and "subprocess-exited-with-error", a compiler's missing header or exit
# status (failure-doc@v13). A browser's element not found: Playwright's "no element matches the selector" and
# "locator resolved to 0 elements", Selenium's "no such element: Unable to locate element", "not attached to the
# DOM"; a browser that crashed: Chrome's "Aw, Snap!", "renderer process crashed", Playwright's "Target page, context
# or browser has been closed" (failure-doc@v14). A click that another element took: Playwright's "... intercepts
# pointer events", Selenium's "element click intercepted" and "Other element would receive the click", Cypress's "is
# being covered by another element", an element obscured or covered (failure-doc@v15).
FAMILIES = (  # a family's name, what every text it names has in lower case (any one of), its words
    (
        "timed out",
        ("time", "took", "did not finish", "124", "deadline"),
        re.compile(TIMED_OUT + r"|exit code 124\b|deadline exceeded", re.IGNORECASE),
    ),
    (
        "edit not applied",
        ("patch", "hunk", "no replacement", "previously applied", "old_str"),
        re.compile(
            r"patch does not apply|hunk #?\s*\d* failed|corrupt patch|malformed patch|no replacement was performed"
            r"|patch failed|can't find file to patch|previously applied|old_str .{0,40}did not appear",
            re.IGNORECASE,
        ),
    ),
    (
        "rate limited",
        ("rate", "too many", "quota", "throttl", "exhausted", "429"),
        re.compile(
            r"\brate[ _-]?limit|\btoo many requests|(?<!disk )\bquota\b|\bthrottl|\bresource[ _]exhausted"
            r"|(?:http|status|code)\W{0,3}429\b|^\W*429\b",
            re.IGNORECASE,
        ),
    ),
    (
        "build failed",
        (
            "wheel",
            "subprocess-exited",
            "did not run successfully",
            "build_ext",
            "compil",
            "ld returned",
            "fatal error",
            "error: command",
        ),
        re.compile(
            r"failed building wheel|could not build wheels|subprocess-exited-with-error|did not run successfully"
            r"|\bbuild_ext\b|compileerror|compilation (?:terminated|failed)|ld returned \d+ exit status"
            r"|fatal error: .{0,80}no such file or directory|error: command .{0,100}failed with exit (?:code|status)",
            re.IGNORECASE,
        ),
    ),
    (
        "element not found",
        ("element", "locator", "could not find the", "no such", "unable to locate", "not attached"),
        re.compile(
            r"no element matches|\bresolved to (?:0|zero|no) elements|could not find the (?:button|element|link|field)"
            r"|could not find the input|not attached to the dom|unable to locate (?:the )?element|no such element"
            r"|element not found",
            re.IGNORECASE,
        ),
    ),
    (
        "click intercepted",
        ("intercept", "receive the click", "clickable", "covered by", "obscured", "covers the"),
        re.compile(
            r"intercepts pointer events|would receive the click|click intercepted|not clickable at point"
            r"|is (?:being )?covered by another element|\bobscured by\b|\bcovers the (?:element|button|link)",
            re.IGNORECASE,
        ),
    ),
    (
        "browser crashed",
        ("snap", "crash", "closed", "disconnected"),
        re.compile(
            r"\baw,? snap\b|renderer (?:process )?crashed|\bpage crashed|browser (?:process )?crashed"
            r"|browser has (?:been )?(?:closed|disconnected)|target (?:page, context or browser|closed)",
            re.IGNORECASE,
        ),
    ),
)
_EXCEPTION_CLASS = re.compile(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*(?:Error|Exception))\b")


# Run-specific tokens: what differs between two reports of one cause (an id, a number, a path, a host, a quoted
# value) and says nothing about the cause. They are cut from the embedded document, so "connection refused
# (10.2.7.14:8443)" and "connection refused" are one text with one vector.
_RUN_SPECIFIC = [  # before the numbers; each with the characters a match needs (a text without them is skipped)
    (re.compile(r"\bhttps?://\S+"), " ", ("://",)),  # URLs
    (re.compile(r"(?<![\w/])(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]*)*|\b[\w.-]+(?:/[\w.-]+){2,}/?"), " ", ("/",)),  # paths
    (re.compile(r"(?<!\w)'[^'\n]{1,80}'(?!\w)|\"[^\"\n]{1,80}\"|`[^`\n]{1,80}`"), " ", ("'", '"', "`")),  # quoted
    (re.compile(r"\b[\w-]+(?:\.[\w-]+)+(?::\d+)?\b"), " ", (".",)),  # hosts, dotted names, ip:port, decimals
]
# after them: brackets left empty (not an empty result "[]"), then no space before a closing mark, then one space
_EMPTY_BRACKETS = re.compile(r"\([\s:;,.#/-]*\)|\[[\s:;,.#/-]+\]")
_SPACE_BEFORE = re.compile(r"\s+([,.;:)\]])")

_DIGIT = re.compile(r"\d")
_NUMBER = re.compile(r"\b[\w.+:-]*\d[\w.+:-]*")  # ids and numbers: acct_045, 18342, 0x1f
_HTTP_STATUS = re.compile(r"[45]\d\d")
_COUNTED = re.compile(r" [a-z]")
_STATUS_LEAD = re.compile(r"(?:^|^failed: |http |status |code |error |code: |status: )$")


def _number(match: re.Match[str]) -> str:
    """A token with a digit is cut, except an HTTP status where one is reported ("404 not found", "http 429"):
    401, 404 and 429 are different causes; and a count of zero is said in a word ("0 rows" is "zero rows")."""
    token = match.group(0)
    if len(token) == 3 and _HTTP_STATUS.fullmatch(token):
        if _STATUS_LEAD.search(match.string[max(0, match.start() - 8) : match.start()]):
            return token
    elif token == "0" and _COUNTED.match(match.string, match.end()):
        return " zero "  # "0 results" is "no results"; "call 0" is an index
    return " "


_JSON_STRING = re.compile(r'"((?:[^"\\\n]|\\.){0,400})"')
_JSON_ESCAPE = re.compile(r"\\[nrt]|\\u[0-9a-fA-F]{4}|\\(.)")


def unjson(text: str) -> str:
    """A JSON object or list (a tool's structured result, possibly cut short) as plain text: its keys and string
    values unquoted (``{"ok": false, "message": "sold out"}`` is ``{ok: false, message: sold out}``), so the
    message is kept, not cut as a quoted value; any other text unchanged."""
    if not text.lstrip().startswith(("{", "[{")):
        return text
    out = _JSON_STRING.sub(lambda m: _JSON_ESCAPE.sub(lambda e: e.group(1) or " ", m.group(1)), text)
    return out


# A string field of an error body, JSON or a Python dict's repr inside a message ("Error code: 429 - {'type':
# 'error', 'error': {'type': 'rate_limit_error', 'message': ...}}", an SDK's exception): its value names the error
# and is kept, unquoted, where any other quoted value is cut as run-specific; so are the body's keys.
_ERROR_FIELD = re.compile(
    r"""(['"])(type|code|message|error|detail|reason|title|status)\1(\s*:\s*)(['"])((?:(?!\4)[^\n]){1,300})\4"""
)
_QUOTED_KEY = re.compile(r"""(['"])(\w{1,40})\1(?=\s*:\s*[{\['"\w])""")


def strip_run_specific(text: str) -> str:
    """``text`` without its run-specific tokens (URLs, paths, quoted values, hosts, ids, numbers), lower case (a
    shouted error is the same error); the text itself when nothing else is left. A JSON text is unquoted first
    (``unjson``), and so are the string fields of an error body inside a text (``_ERROR_FIELD``)."""
    out = _without_names(unjson(text))
    if _DIGIT.search(out):
        out = _NUMBER.sub(_number, out)
    if "(" in out or "[" in out:
        out = _EMPTY_BRACKETS.sub(" ", out)
    out = " ".join(_SPACE_BEFORE.sub(r"\1", out).split())  # what ``\s+`` -> " " did, without a regex
    out = out.strip(" ,;:-|")
    return out or text.strip()


def asks_the_user(answer: object) -> bool:
    """Whether a final answer asks the user something (``ASKS_THE_USER``, not ``OFFERS_MORE``): the agent stopped
    to ask instead of doing the task."""
    return isinstance(answer, str) and bool(ASKS_THE_USER.search(answer)) and not OFFERS_MORE.search(answer)


def _segments(row: dict[str, Any], strip: Callable[[str], str] = strip_run_specific) -> list[str]:
    """The segments of one failure's document, most informative first: the failing steps (with the final answer
    only as it compares with the reference), else the final answer; the attempt's status and the trajectory hints
    only when no step failed (after a failed step, a crashed status or a retry is its consequence). A loop, out of
    its budget (``timeout``) after ``LOOP_REPEATS`` repeated calls, is "repeated call" and the status alone; an
    answer that asks the user (``asks_the_user``) is that alone, whatever failed before it."""
    status = row.get("status")
    if status == "timeout" and int(row.get("n_repeated") or 0) >= LOOP_REPEATS:
        # the loop is why it failed: what it kept hitting (a test failure, a listing, a warning, nothing) or said
        # when stopped differs from loop to loop and would split one cause by it (failure-doc@v8)
        return [strip("repeated call"), strip(f"status {status}")]
    errors = row.get("errors")
    out: list[str] = []
    answer = row.get("answer")
    versus = answer_against_reference(answer, row.get("reference_answer"))
    if asks_the_user(answer):
        # the agent stopped to ask: a tool that failed on the way (a grep in the wrong folder) and what it last saw
        # are noise of its own, and the question's words differ from one attempt to the next (failure-doc@v10)
        return [strip("the final answer asks the user a question" + (f" ({versus})" if versus else ""))]
    failed = isinstance(errors, str) and bool(errors.strip())
    if failed:
        out += [_error_line(line) for line in str(errors).split("\n") if line.strip()]
        if versus:
            out.append(f"final answer: {versus}")
    elif isinstance(answer, str) and answer.strip():
        out.append(f"final answer: {answer}" + (f" ({versus})" if versus else ""))
    else:
        out.append(versus)
    if not failed:
        if int(row.get("n_tool_calls") or 0) == 0:
            out.append("no tool called")
        last = row.get("last_result")
        last = unjson(last.strip()) if isinstance(last, str) and last.strip() else None
        if int(row.get("n_repeated") or 0) > 0:  # a loop is told by what it kept seeing: the last tool result
            out.append("repeated call" + (f": {last}" if last else ""))
        elif last:  # nothing failed: what the agent saw last before it answered
            out.append(f"last result: {last}")
        ref = row.get("reference_trajectory")
        tools = row.get("tools")
        if ref is not None and len(ref) and tools is not None:
            missing = [t for t in dict.fromkeys(ref) if t not in set(tools)]
            if missing:
                out.append("skipped " + ", ".join(missing))
        if isinstance(status, str) and status and status != "completed":
            out.append(f"status {status}")
    return [strip(s) for s in out if s]


def segments_of(raw: pd.DataFrame) -> tuple[list[list[str]], list[list[str]]]:
    """The segments of each failure (``_segments``) and each segment masked (``mask``); a segment's text that
    recurs (a cause's message, a tool's note) is cut and masked once."""
    strip = functools.lru_cache(maxsize=None)(strip_run_specific)
    masked_of = functools.lru_cache(maxsize=None)(mask)
    segs = [_segments(r, strip) for r in raw.to_dict("records")]
    return segs, [[masked_of(s) for s in ss] for ss in segs]


def failure_documents(raw: pd.DataFrame, *, boilerplate_share: float = BOILERPLATE_SHARE) -> list[str]:
    """The document of each failure (rows of ``failure_frame``), boilerplate cut (see the module docstring)."""
    segs, masked = segments_of(raw)
    df = Counter(m for ms in masked for m in set(ms))
    limit = boilerplate_share * len(segs)
    common = {m for m, k in df.items() if k >= limit and len(segs) >= 10}
    docs = []
    for ss, ms in zip(segs, masked, strict=True):
        kept = [s for s, m in zip(ss, ms, strict=True) if m not in common]
        docs.append(" | ".join(kept or ss))
    return docs
