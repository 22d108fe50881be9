"""judge, computed: the deterministic answer check, the prompt's messages with untrusted text fenced, strict
parsing of the judge's output, the codes a verdict implies, and judging one attempt (chat, parse, one repair) through
the client it is given (no store, no plotly)."""

from __future__ import annotations

import json
import random
import re
import secrets
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from analytics import llm

ADBENCH_CODES = ("TE", "PE", "DE", "CE", "HAL", "LC")
# Stage-1 booleans -> taxonomy codes (DESIGN.md): the flag that signals the error, and its value when it does.
STAGE1_FLAGS = {
    "trajectory_covered": ("TE", False),
    "has_error_parameters": ("PE", True),
    "has_dependency_error": ("DE", True),
    "has_redundant_calls": ("REDUNDANT", True),
    "has_instructionViolation": ("NO_TOOL", True),
}
GEM_LEVELS = ("bad", "moderate", "good")
MAX_TRAJECTORY_CHARS = 12000
MAX_RESULT_CHARS = 400
# Every free-text field sent to the model is cut to this many characters (one 1.3 MB answer cost 655,679
# input tokens): about 4,000 tokens, ample for a judgement, and a bound on what a hostile log can spend.
MAX_FIELD_CHARS = 16000


class JudgeOutputError(ValueError):
    """The judge's answer does not follow the prompt's output schema."""


@dataclass(frozen=True)
class Prompt:
    """A versioned judge prompt: ``version`` is ``<name>@v<N>`` and is stored with every verdict."""

    name: str
    version: str
    system: str
    user: str

    def messages(self, fields: dict[str, str], *, fence: str) -> list[dict[str, str]]:
        """System and user messages with ``fields`` substituted once (values are never re-expanded)."""
        values = {k: fence_safe(v) for k, v in fields.items()} | {"fence": fence}
        return [
            {"role": "system", "content": string.Template(self.system).safe_substitute(fence=fence)},
            {"role": "user", "content": string.Template(self.user).safe_substitute(values)},
        ]


def fence_safe(text: str) -> str:
    """Untrusted text with fence markers defused, so it cannot close its fence early."""
    return (text or "").replace("<<<", "< < <").replace(">>>", "> > >")


_NUMBER = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
_UNIT_WORDS = ("cny", "usd", "rmb", "yuan", "元", "次", "个")


def normalise_number(text: str | None) -> float | None:
    """The number an answer states, per AD-Bench's report rules, or None when it is not a lone number.

    Thousands separators, currency signs and units are dropped; a trailing ``%`` keeps the number as written
    (``6.29%`` -> 6.29). The result is rounded to two decimals (0.1091 and 0.11 are the same answer).
    """
    if text is None:
        return None
    s = text.strip().lower().rstrip(".")
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)
    s = s.replace("$", "").replace("¥", "").replace("%", "").strip()
    for unit in _UNIT_WORDS:
        s = s.removesuffix(unit).strip()
    if not _NUMBER.match(s):
        return None
    return round(float(s), 2)


def normalise_text(text: str | None) -> str:
    """Case-folded text with punctuation and runs of whitespace removed (LiveAgentBench string matching)."""
    s = (text or "").casefold()
    s = re.sub(r"[\s\"'`.,;:!?()\[\]{}]+", " ", s)
    return s.strip()


@dataclass(frozen=True)
class AnswerCheck:
    """Outcome of the deterministic check: ``is_match`` None means undecided (left to the LLM)."""

    is_match: bool | None
    method: str


def check_answer(answer: str | None, reference: str | None) -> AnswerCheck:
    """Compare an answer with the reference without an LLM: numbers first, then exact, then normalised text."""
    if answer is None or reference is None or not reference.strip():
        return AnswerCheck(None, "none")
    a_num, r_num = normalise_number(answer), normalise_number(reference)
    if a_num is not None and r_num is not None:
        return AnswerCheck(a_num == r_num, "numeric")
    if answer.strip() == reference.strip():
        return AnswerCheck(True, "exact")
    if normalise_text(answer) == normalise_text(reference):
        return AnswerCheck(True, "normalised")
    return AnswerCheck(None, "none")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise JudgeOutputError("duplicate keys in the JSON object")
    return dict(pairs)


def _json_object(text: str) -> dict[str, Any]:
    """Exactly one JSON object, optionally inside one ```json fence; nothing else around it."""
    s = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*\n?(.*?)\n?```", s, flags=re.S)
    if fenced:
        s = fenced.group(1).strip()
    if not s.startswith("{") or not s.endswith("}"):
        raise JudgeOutputError("the answer is not a single JSON object")
    try:
        obj = json.loads(s, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise JudgeOutputError(f"invalid JSON: {exc.msg} at char {exc.pos}") from None
    if not isinstance(obj, dict):
        raise JudgeOutputError("the answer is not a JSON object")
    return obj


def _exact_keys(obj: dict[str, Any], keys: Sequence[str]) -> None:
    missing = [k for k in keys if k not in obj]
    extra = [k for k in obj if k not in keys]
    if missing or extra:
        raise JudgeOutputError(f"schema mismatch: missing {missing}, unexpected {extra}")


def _reason(obj: dict[str, Any]) -> str:
    reason = obj["brief_reason"]
    if not isinstance(reason, str) or len(reason) > 600:
        raise JudgeOutputError("brief_reason must be a string of at most 600 characters")
    return reason


def parse_adbench(text: str) -> dict[str, Any]:
    """AD-Bench Stage-1 JSON: six booleans, ``error_types`` (subset of the six codes), ``brief_reason``."""
    obj = _json_object(text)
    booleans = ["result_correct", *STAGE1_FLAGS]
    _exact_keys(obj, [*booleans, "error_types", "brief_reason"])
    for key in booleans:
        if not isinstance(obj[key], bool):
            raise JudgeOutputError(f"{key} must be true or false")
    types = obj["error_types"]
    if not isinstance(types, list) or not all(isinstance(t, str) and t in ADBENCH_CODES for t in types):
        raise JudgeOutputError(f"error_types must be a list drawn from {', '.join(ADBENCH_CODES)}")
    if len(set(types)) != len(types):
        raise JudgeOutputError("error_types repeats a code")
    return {**{k: obj[k] for k in booleans}, "error_types": list(types), "brief_reason": _reason(obj)}


def parse_xbench(text: str) -> dict[str, Any]:
    """xbench rubric answer: free analysis, last non-empty line exactly ``Score: X`` with X in 1..5."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        raise JudgeOutputError("empty answer")
    match = re.fullmatch(r"\"?Score:\s*([1-5])\"?", lines[-1])
    if not match:
        raise JudgeOutputError("the last line is not 'Score: X' with X from 1 to 5")
    score = int(match.group(1))
    return {"score": score, "score_100": (score - 1) * 25.0, "analysis": "\n".join(lines[:-1])[:2000]}


def gem_score(first: str, second: str) -> int:
    """GEM-Bench's unified rubric over two bad/moderate/good ratings -> 0, 30, 60 or 90."""
    points = GEM_LEVELS.index(first) + GEM_LEVELS.index(second)  # bad 0, moderate 1, good 2
    return {0: 0, 1: 30, 2: 60, 3: 60, 4: 90}[points]


def parse_gem(text: str) -> dict[str, Any]:
    """GEM-Bench accuracy judge JSON: relevance and accuracy ratings; the 0/30/60/90 score is ours."""
    obj = _json_object(text)
    _exact_keys(obj, ["relevance", "accuracy", "brief_reason"])
    for key in ("relevance", "accuracy"):
        if obj[key] not in GEM_LEVELS:
            raise JudgeOutputError(f"{key} must be one of {', '.join(GEM_LEVELS)}")
    return {
        "relevance": obj["relevance"],
        "accuracy": obj["accuracy"],
        "score": gem_score(obj["relevance"], obj["accuracy"]),
        "brief_reason": _reason(obj),
    }


PARSERS: dict[str, Callable[[str], dict[str, Any]]] = {
    "adbench-stage1": parse_adbench,
    "xbench-1to5": parse_xbench,
    "gem-0-90": parse_gem,
}
REPAIR_HINT = {
    "adbench-stage1": "Reply with only the JSON object of the requested format, with exactly its eight keys.",
    "xbench-1to5": "Reply with a brief analysis and, as the last line, exactly `Score: X` with X from 1 to 5.",
    "gem-0-90": 'Reply with only {"relevance": ..., "accuracy": ..., "brief_reason": ...}, ratings bad|moderate|good.',
}


def labels_from_stage1(verdict: dict[str, Any]) -> list[tuple[str, str]]:
    """Error codes a Stage-1 verdict implies, each with the field it came from."""
    out: dict[str, str] = {code: "error_types" for code in verdict.get("error_types", [])}
    for flag, (code, signal) in STAGE1_FLAGS.items():
        if verdict.get(flag) is signal:
            out.setdefault(code, flag)
    return sorted(out.items())


@dataclass
class Outcome:
    """What judging one attempt produced: a verdict, or a failure (never both)."""

    attempt_id: int
    verdict: dict[str, Any] | None = None
    failure: str | None = None
    raw_output: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    labels: list[tuple[str, str]] = field(default_factory=list)


def cut_text(text: str, max_chars: int = MAX_FIELD_CHARS) -> str:
    """``text`` cut to ``max_chars`` characters, saying how much was left out (the judge's input is bounded)."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n...[cut: {len(text) - max_chars:,} more characters]"


def _fields(item: dict[str, Any], trajectory: str) -> dict[str, str]:
    ref_traj = item.get("reference_trajectory")
    fields = {
        "query": str(item.get("query") or ""),
        "ground_truth": str(item.get("reference_answer") or ""),
        "expected_trajectory": " -> ".join(ref_traj)
        if isinstance(ref_traj, (list, tuple)) and len(ref_traj)
        else "(none given)",
        "trajectory": trajectory or "(no steps recorded)",
        "final_answer": str(item.get("answer") or ""),
    }
    return {name: cut_text(value) for name, value in fields.items()}


def judge_one(
    client: Any, cfg: llm.LLMConfig, prompt: Prompt, item: dict[str, Any], trajectory: str, *, seed: int = 0
) -> Outcome:
    """Judge one attempt: deterministic check, chat, strict parse, one repair; failures are outcomes too."""
    out = Outcome(attempt_id=int(item["attempt_id"]))
    check = check_answer(item.get("answer"), item.get("reference_answer"))
    if prompt.name == "xbench-1to5" and check.is_match:
        out.verdict = {"score": 5, "score_100": 100.0, "decided_by": f"deterministic:{check.method}"}
        return out
    messages = prompt.messages(_fields(item, trajectory), fence=secrets.token_hex(8))
    parser = PARSERS[prompt.name]
    rng = random.Random(seed * 1_000_003 + out.attempt_id)
    for round_no in range(2):  # the answer, then at most one repair
        try:
            reply = llm.chat(client, cfg, messages, rng=rng)
        except llm.LLMError as exc:
            out.failure = f"{exc.kind}: {exc}"[:500]
            return out
        out.input_tokens += reply.input_tokens
        out.output_tokens += reply.output_tokens
        out.raw_output = reply.text[:20000]
        try:
            verdict = parser(reply.text)
        except JudgeOutputError as exc:
            if round_no == 1:
                out.failure = f"invalid output after repair: {exc}"
                return out
            messages = [
                *messages,
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": f"Your answer was rejected ({exc}). {REPAIR_HINT[prompt.name]}"},
            ]
            continue
        out.verdict = _finish(prompt.name, verdict, check, repaired=round_no == 1)
        out.labels = labels_from_stage1(out.verdict) if prompt.name == "adbench-stage1" else []
        return out
    return out  # pragma: no cover


def _finish(name: str, verdict: dict[str, Any], check: AnswerCheck, *, repaired: bool) -> dict[str, Any]:
    """Attach the deterministic check; for Stage 1 a decided check overrides the LLM's result_correct."""
    verdict = dict(verdict, answer_check={"is_match": check.is_match, "method": check.method}, is_repaired=repaired)
    if name == "adbench-stage1" and check.is_match is not None:
        verdict["result_correct_llm"] = verdict["result_correct"]
        verdict["result_correct"] = check.is_match
    return verdict
