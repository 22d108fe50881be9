"""How the text of a failed attempt's step is read, as SQL pieces of ``analytics.clusters.load``'s failure query:
whether a tool result reads as a failure (``FAILING_RESULT``, decided without the code it shows: ``prose_sql``),
which lines of a long text or a traceback carry its failure (``FAILURE_LINES``, ``shown_sql``) and a harness's
footer cut from the end of an attempt's texts (``peel_sql``). The module docstring of ``load`` says what a failure's
document is made of."""

from __future__ import annotations

# A result that says nothing (it reads as a failure, ``FAILING_RESULT``'s last case): not a cause a test run's failure
# after it could be the consequence of (an edit command prints nothing when it works).
EMPTY_RESULT = r"^\s*(\[\]|\{\}|null|none)?\s*$"

# Words that say something was stopped for its time: a command, a test run, a page load.
TIMED_OUT = r"timed?[ _-]?out|took (too )?long(er)?\b|did not finish"

# A tool result that reads as a failure: it names an error, an exception, a refusal, an HTTP 4xx/5xx status, a
# missing thing, a command killed or cut short for its time ("Terminated", "took too long"), it says so in a
# structured field (``"ok": false``, ``"success": false``), or it is empty
# (``EMPTY_RESULT``). Such a result is where the attempt went wrong, like a step's ``error``.
FAILING_RESULT = (
    r"error|exception|traceback|fail|invalid|denied|refused|forbidden|unauthori[sz]ed|not found|"
    r"does not exist|no such|unknown|too many|exceeded|unavailable|malformed|could not|cannot|can't|unable|"
    r"\bkilled\b|\bterminated\b|" + TIMED_OUT + "|"
    r"\"?\b(ok|success)\b\"?\s*:\s*false\b|\bempty\b|no rows|no data|no results|\b0 (rows|results)\b|"
    r"(http|status|code)\W{0,3}[45]\d\d\b|^\W*[45]\d\d\b|" + EMPTY_RESULT
)

# The lines of a long text (a test runner's, a build's, longer than ``STEP_CHARS``) or of a traceback that carry the
# failure, in order of preference: exception lines (``ValueError: ...``, a bare ``KeyError``, pytest's ``Failed:
# Timeout``, after pytest's ``E`` or not), pytest's other ``E`` lines (``E       assert 1 == 2``), summary and
# command error lines (``FAILED tests/...``, ``ERROR ...``, unittest's ``FAIL: ...``, git's ``error: ...``). Such a
# text is shown by them, not by its head (pytest's session header) nor, for a traceback, by its last line (a
# runner's footer, "Destroying test database", a shell prompt): a traceback by its last exception line. A long text
# without such lines is shown by its end (``tail_sql``): a program says how it ended last ("Terminated", "took
# longer than 30 seconds and was killed", "5 passed"), after a header every run prints (failure-doc@v6).
FAILURE_LINES = {
    "exc": r"^(E\s+)?[A-Za-z_.]*(Error|Exception|Exit|Interrupt|Failed)(:\s.*|:)?\s*$",
    "e": r"^E\s{2,}\S",
    "sum": r"^(FAILED|FAIL|ERROR)(\s|:)|^(error|fatal)(\[[\w-]+\])?:\s",
}
_TRACEBACK = "Traceback (most recent call last)"
_FRAME = r"(?m)^\s*File \"[^\"\n]*\", line \d+"  # a frame: Python's report of a SyntaxError has no Traceback line


def _traceback(raw: str) -> str:
    """SQL: whether ``raw`` is a traceback: it has Python's Traceback line or a frame (``File "x.py", line 3``: a
    script that does not parse is reported by its frame and ``SyntaxError: ...`` alone)."""
    return f"(contains({raw}, '{_TRACEBACK}') OR regexp_matches({raw}, '{_FRAME}'))"


# Code a tool shows is not a report of failure: ``raise ValueError(...)`` in a file's listing (``cat -n``'s numbered
# lines, as an editor shows the snippet it edited) or in a diff's lines (a patch submitted) names an exception the
# code handles, not one that happened. Whether a result reads as a failure (``FAILING_RESULT``) is decided on its
# text without those lines (``prose_sql``); what the result shows is unchanged.
LISTING = r"(?m)^ +\d+\t"  # cat -n: a number right-aligned in six columns, a tab (a table's first column is not)
LISTING_LINE = r"(?m)^ *\d+\t.*$"  # ... and then every numbered line (a text's first may have lost its padding)
DIFF_HUNK = r"(?m)^@@ -\d"
DIFF_LINE = r"(?m)^(diff --git .*|index [0-9a-f]+\.\.[0-9a-f]+.*|@@ .*|[-+ ].*)$"


def split_sql(raw: str, name: str) -> str:
    """SQL: the lines of ``raw`` when it is a traceback or longer than ``$chars`` (else null), as ``name``."""
    return f"CASE WHEN {_traceback(raw)} OR length({raw}) > $chars THEN string_split({raw}, chr(10)) END AS {name}"


CODE_ONLY = "code"  # what ``prose_sql`` reads a result of code alone as (not a failure; not a last result either)


def prose_sql(raw: str) -> str:
    """SQL: the head of ``raw`` (``$chars``) as its failure is read, without the lines of a listing or a diff
    (``LISTING_LINE`` where one is padded as ``cat -n`` pads, ``LISTING``; ``DIFF_LINE`` where a hunk is,
    ``DIFF_HUNK``), newlines as spaces; ``code`` when only such lines were there (code alone is not an empty
    result)."""
    head = f"left({raw}, $chars)"
    no_listing = f"CASE WHEN regexp_matches({head}, $listing) THEN regexp_replace({head}, $listing_line, '', 'g') ELSE {head} END"
    no_diff = f"CASE WHEN regexp_matches({head}, $hunk) THEN regexp_replace({no_listing}, $diff, '', 'g') ELSE {no_listing} END"
    return (
        f"CASE WHEN contains({head}, chr(9)) OR contains({head}, '@@ -') "
        f"THEN coalesce(nullif(trim(replace({no_diff}, chr(10), ' ')), ''), '{CODE_ONLY}') "
        f"ELSE replace({head}, chr(10), ' ') END"
    )


def lines_sql(lines: str, prefix: str) -> str:
    """SQL: the lines of ``lines`` of each kind of ``FAILURE_LINES``, as ``<prefix>exc``, ``<prefix>e``, ..."""
    return ", ".join(
        f"list_filter({lines}, l -> regexp_matches(l, '{pattern}')) AS {prefix}{kind}"
        for kind, pattern in FAILURE_LINES.items()
    )


def tail_sql(raw: str) -> str:
    """SQL: the end of ``raw`` (``$chars``) from the first line that begins in it (the whole end when one line is
    longer)."""
    end = f"right({raw}, $chars)"
    return f"coalesce(nullif(regexp_replace({end}, '^[^\\n]*\\n', ''), ''), {end})"


def shown_sql(raw: str, lines: str, prefix: str) -> str:
    """SQL: what a text shows (see ``FAILURE_LINES``): a traceback its last exception line (else its last line), a
    long text its failure lines of the first kind it has (else its end, ``tail_sql``), any other text itself."""

    def joined(kind: str) -> str:
        return f"array_to_string(list_transform({prefix}{kind}, l -> trim(regexp_replace(l, '^E\\s+', ''))), ' ')"

    # a traceback without an exception line of that form: the first line at the margin after its last frame
    frame = f"list_max(list_transform({lines}, (l, i) -> CASE WHEN regexp_matches(l, '^\\s+File \"') THEN i END))"
    after = f"list_filter({lines}, (l, i) -> i > coalesce({frame}, 0) AND regexp_matches(l, '^\\S'))[1]"
    last = f"trim(list_last(list_filter({lines}, l -> trim(l) <> '')))"
    return (
        f"CASE WHEN {lines} IS NULL THEN {raw} "
        f"WHEN {_traceback(raw)} "
        f"THEN coalesce(trim(regexp_replace(coalesce(list_last({prefix}exc), {after}), '^E\\s+', '')), {last}) "
        + " ".join(f"WHEN len({prefix}{k}) > 0 THEN {joined(k)}" for k in FAILURE_LINES)
        + f" ELSE {tail_sql(raw)} END"
    )


# A harness's footer: what it appends to every observation (SWE-agent's "(Open file: ...)", "(Current directory:
# ...)" and its prompt, an "[exit code 1]" marker), said in the same words whatever the cause. A line among the last
# ``FOOTER_LINES`` of two different tool results of one attempt that does not read as a failure (``FAILING_RESULT``)
# is one, compared by ``footer_key``; it is cut from the end of the attempt's texts (up to ``FOOTER_LINES`` lines,
# never the whole text). Per attempt, so that a failure's document depends on its own attempt only.
FOOTER_LINES = 3
_TAIL_CHARS = 400  # the end of a text that its last lines are read from


def footer_key(line: str) -> str:
    """SQL: ``line`` as a footer is recognised: lower case, without its tokens with a digit or a slash (a path, a
    line number, an exit code), trimmed."""
    return f"trim(regexp_replace(lower({line}), '\\S*[/\\d]\\S*', '', 'g'))"


def last_lines(raw: str) -> str:
    """SQL: the last ``FOOTER_LINES`` lines of ``raw``, read from its end only."""
    return f"list_slice(string_split(rtrim(right({raw}, {_TAIL_CHARS})), chr(10)), -{FOOTER_LINES}, -1)"


def back_sql(raw: str) -> str:
    """SQL: the last lines of ``raw``, last first, when its attempt has a footer (else null)."""
    return f"CASE WHEN feet IS NOT NULL AND contains({raw}, chr(10)) THEN list_reverse({last_lines(raw)}) END"


def peel_sql(raw: str, back: str) -> str:
    """SQL: ``raw`` without its last lines (``back``: ``back_sql``) while they are the attempt's footer
    (``feet``): at most ``FOOTER_LINES`` of them, never every line, never a line that reads as a failure."""
    cut = " ".join(
        f"WHEN NOT coalesce(list_contains(feet, {footer_key(f'{back}[{i + 1}]')}) "
        f"AND NOT regexp_matches(lower({back}[{i + 1}]), $failing), false) THEN {i}"
        for i in range(FOOTER_LINES)
    )
    lines = f"string_split(rtrim({raw}), chr(10))"
    kept = (
        f"trim(array_to_string(list_slice({lines}, 1, len({lines}) - (CASE {cut} ELSE {FOOTER_LINES} END)), chr(10)))"
    )
    return f"CASE WHEN {back} IS NOT NULL THEN coalesce(nullif({kept}, ''), {raw}) ELSE {raw} END"
