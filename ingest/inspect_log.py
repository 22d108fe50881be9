"""Inspect AI eval logs (``.json`` and the zipped ``.eval``) -> native v1 records, without inspect_ai.

Mapping (see docs/formats.md): the eval is a run (``eval.task`` -> benchmark, ``eval.model`` -> agent,
``eval.created`` -> eval date, log ``status`` -> run status); each sample x epoch is an attempt
(``sample = epoch - 1``); the chosen scorer's value is the score (C=1, P=0.5, I=0, N=0; numbers and
booleans as they are); ``model_usage`` summed over models gives tokens, ``total_time`` the latency;
events (or, without events, messages) give steps: model turns, tool calls with arguments and
results, errors.

A ``.eval`` file is a zip: ``header.json`` (or ``_journal/start.json`` while running),
``samples/<id>_epoch_<n>.json``, ``reductions.json``, ``summaries.json``, each member stored, deflated or
(current inspect-ai) zstd-compressed. Its members are parsed one at a time as ``ingest.safezip`` streams them out,
within a budget of bytes decompressed (member count, total and per-member size, checked before and while
decompressing; no ratio limit); a member name that is absolute or contains ``..`` rejects the whole file.
Locations are ``file!member:$.json.path``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.errors import ProblemCollector
from ingest.jsonline import load_json
from ingest.safezip import ZipRefused, iter_members, member_names

ZIP_MAGIC = b"PK\x03\x04"
SCORE_LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
# The fields of Inspect's ModelEvent / ToolEvent / ErrorEvent (0.3.285, plus older names): any other field of such
# an event is kept in the step's extra (``inspect_extra``), never dropped.
_EVENT_BASE = "uuid span_id timestamp working_start metadata pending event"
KNOWN_EVENT_FIELDS = {
    "model": frozenset(
        f"""{_EVENT_BASE} model role requested_model input input_refs tools tool_choice config output retries
        request_ids error traceback traceback_ansi cache call completed working_time""".split()
    ),
    "tool": frozenset(
        f"""{_EVENT_BASE} type id function arguments view result truncated error events completed working_time agent
        agent_span_id failed message_id internal""".split()
    ),
    "error": frozenset(_EVENT_BASE.split() + ["error"]),
}
LAYOUT_ONLY = frozenset({"inspect_extra", "unknown_events"})
KNOWN_HEADER = frozenset(
    {
        "version",
        "status",
        "eval",
        "plan",
        "results",
        "stats",
        "error",
        "samples",
        "reductions",
        "location",
        "invalidated",
    }
)
KNOWN_EVAL = frozenset(
    [
        "eval_set_id",
        "eval_id",
        "run_id",
        "created",
        "task",
        "task_id",
        "task_version",
        "task_file",
        "task_display_name",
        "task_registry_name",
        "task_attribs",
        "task_args",
        "task_args_passed",
        "solver",
        "solver_args",
        "tags",
        "dataset",
        "sandbox",
        "model",
        "model_generate_config",
        "model_base_url",
        "model_args",
        "model_roles",
        "config",
        "revision",
        "packages",
        "metadata",
        "scorers",
        "metrics",
    ]
)
KNOWN_SAMPLE = frozenset(
    [
        "id",
        "epoch",
        "input",
        "choices",
        "target",
        "sandbox",
        "files",
        "setup",
        "messages",
        "output",
        "scores",
        "metadata",
        "store",
        "events",
        "model_usage",
        "total_time",
        "working_time",
        "uuid",
        "error",
        "error_retries",
        "attachments",
        "limit",
        "invalidation",
        "total_tokens",
        "started_at",
        "completed_at",
        "timelines",
        "events_data",
        "transcript",  # old layout of events (read through _events)  # the pool of messages events point into (0.3.2xx .eval): its content is read as steps
    ]
)
KNOWN_EVENTS = frozenset(
    [
        "sample_init",
        "sample_limit",
        "sandbox",
        "state",
        "store",
        "model",
        "tool",
        "approval",
        "input",
        "score",
        "score_edit",
        "error",
        "logger",
        "info",
        "step",
        "subtask",
        "span_begin",
        "span_end",
        "compaction",
        "checkpoint",
    ]
)
SAMPLE_MEMBER = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (logs omit or null out optional parts)."""
    return value if isinstance(value, dict) else {}


def _seq(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


# Inspect writes ``version``, ``status`` and then the ``eval`` spec first; ``model`` comes after the dataset's
# sample ids and can sit far past any fixed window, so detection needs only these leading keys.
INSPECT_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"[a-z_]+"\s*,\s*"eval"\s*:\s*\{')


def detect_inspect(path: Path, head: bytes) -> bool:
    """A zip named ``.eval``, or a JSON object opening with Inspect's header (version, status, eval spec)."""
    if head.startswith(ZIP_MAGIC):
        return path.name.lower().endswith(".eval")
    text = head.lstrip()
    if INSPECT_HEAD.match(text):
        return True
    return (  # other key orders (hand-edited or re-serialised logs): the eval spec's leading fields
        text.startswith(b"{")
        and re.search(rb'"eval"\s*:\s*\{', text) is not None
        and b'"task"' in text
        and b'"created"' in text
    )


def _member_json(path: Path, name: str, body: bytes | bytearray, problems: ProblemCollector) -> Any:
    sub = ProblemCollector()
    doc = load_json(Path(f"{path}!{name}"), body, sub)
    problems.problems.extend(sub.problems)
    return doc


def load_log(
    path: Path, data: bytes, problems: ProblemCollector
) -> tuple[dict[str, Any], list[tuple[str, Any]]] | None:
    """``(header, [(location, sample), ...])`` from either layout; None when unreadable."""
    if data.startswith(ZIP_MAGIC):
        return _load_archive(path, data, problems)
    doc = load_json(path, data, problems)
    if doc is None:
        return None
    if not isinstance(doc, dict):
        problems.add(f"{path}:$", "-", "expected an Inspect log object")
        return None
    raw = doc.get("samples") or []
    if not isinstance(raw, list):
        problems.add(f"{path}:$.samples", "-", "expected a list of samples")
        return None
    if doc.get("samples") is None and _missing_samples(f"{path}", doc, raw, problems):  # [] is said, not lost
        return None
    return doc, [(f"{path}:$.samples[{i}]", s) for i, s in enumerate(raw)]


def _load_archive(
    path: Path, data: bytes, problems: ProblemCollector
) -> tuple[dict[str, Any], list[tuple[str, Any]]] | None:
    """``load_log`` of a ``.eval``: members parsed one at a time as they stream out (``safezip.iter_members``), so
    the archive's expansion is never held at once, only the parsed header and samples."""
    try:  # members under samples/ are read whatever their name, so an unknown (chunked) layout is seen and refused
        odd = [n for n in member_names(path, data) if n.startswith("samples/") and not SAMPLE_MEMBER.match(n)]
        if odd:
            problems.add(
                f"{path}!{odd[0]}",
                "-",
                f"unknown sample layout ({len(odd)} member(s) like this one); this reader knows "
                "samples/<id>_epoch_<n>.json only: convert the log with `inspect log convert`",
            )
            return None
        docs: dict[str, Any] = {}
        for name, body in iter_members(path, data, wanted=_archive_member_wanted):
            docs[name] = _member_json(path, name, body, problems)
            del body  # the member's bytes go before the next one is decompressed
    except ZipRefused as exc:
        problems.add(exc.loc, "-", exc.reason)
        return None
    head_name = "header.json" if "header.json" in docs else "_journal/start.json"
    if head_name not in docs:
        problems.add(f"{path}:1", "-", "no header.json (nor _journal/start.json) in the .eval archive")
        return None
    header = docs[head_name]
    samples = [(f"{path}!{n}:$", docs[n]) for n in sorted(docs, key=_sample_order) if SAMPLE_MEMBER.match(n)]
    samples = [(loc, doc) for loc, doc in samples if doc is not None]
    if header is None or _missing_samples(f"{path}!{head_name}", header, samples, problems):
        return None
    return header, samples


def _archive_member_wanted(name: str) -> bool:
    """The members a ``.eval`` is read for: its header (or the journal's start) and the samples."""
    return name in ("header.json", "_journal/start.json") or name.startswith("samples/")


def _missing_samples(loc: str, header: Any, samples: list[Any], problems: ProblemCollector) -> bool:
    """True (with a problem) when the header counts completed samples but the log holds none: a header-only or
    unknown layout must not ingest as a run of 0 attempts."""
    completed = _obj(_obj(header).get("results")).get("completed_samples")
    if samples or not isinstance(completed, int) or completed <= 0:
        return False
    problems.add(
        f"{loc}:$.results.completed_samples",
        "-",
        f"the header counts {completed} completed samples but the log holds none (a header-only log, or a "
        "layout this reader does not know); refused rather than ingested as 0 attempts",
    )
    return True


def _sample_order(name: str) -> tuple[Any, ...]:
    match = SAMPLE_MEMBER.match(name)
    if not match:
        return (1, name)
    sid = match.group(1)
    return (0, int(match.group(2)), (0, int(sid), "") if sid.isdigit() else (1, 0, sid))


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------


def parse_inspect(
    path: Path, data: bytes, problems: ProblemCollector, progress: Any = None, **options: Any
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield native records for one Inspect log.

    Args:
        path: the ``.json`` or ``.eval`` file.
        data: its bytes.
        problems: where problems are reported.
        progress: optional tqdm-like bar.
        **options: ``scorer`` (which scorer's value is the score; default: the first in the log),
            ``benchmark``, ``agent``, ``run_id`` to override names.
    """
    loaded = load_log(path, data, problems)
    if loaded is None:
        return
    header, samples = loaded
    ev = header.get("eval") if isinstance(header, dict) else None
    if not isinstance(ev, dict):
        problems.add(f"{path}:$.eval", "-", "missing the eval header (task, model, created)")
        return
    benchmark = str(options.get("benchmark") or ev.get("task") or "inspect")
    benchmark = benchmark.split("/")[-1]
    if not (options.get("agent") or isinstance(ev.get("model"), str) and ev["model"]):
        problems.add(f"{path}:$.eval.model", "model", "missing or not a string; name the agent with --agent")
        return
    model = str(options.get("agent") or ev.get("model"))
    run_id = str(options.get("run_id") or f"{benchmark}-{ev.get('eval_id') or ev.get('run_id') or path.stem}")
    scorer = options.get("scorer") or _default_scorer(header)
    numeric = _all_numeric(samples, scorer)
    yield (
        f"{path}:$.eval",
        {
            "record": "benchmark",
            "benchmark": benchmark,
            "scoring": "binary" if numeric == "binary" else "continuous",
            "pass_threshold": 1.0 if numeric == "binary" else 0.5,
            "description": f"Inspect AI task {ev.get('task')}",
        },
    )
    yield f"{path}:$.eval", _run(header, ev, run_id, benchmark, model, scorer)
    for loc, sample in samples:
        if not isinstance(sample, dict):
            problems.add(loc, "-", "expected a sample object")
            continue
        yield from _sample(loc, sample, benchmark, run_id, scorer, problems)
    if progress is not None:
        progress.update(len(data))


def canonical_inspect(path: Path, data: bytes, options: dict[str, Any]) -> bytes | None:
    """The records a log yields, without their locations: one eval written as ``.eval`` and as ``.json`` (``inspect
    log convert``) gives the same bytes, so the second adds nothing and is reported as already present. None
    (hash the file's bytes) when the log does not parse: the ingest then reports its problems."""
    problems = ProblemCollector()
    # fields kept only in ``extra`` (unknown to this reader) differ by layout, not content: the .eval keeps a
    # message pool (``events_data``) that conversion resolves, the .json gains counts such as ``turn_count``
    digest = hashlib.sha256(b"inspect-records\0")
    for _, rec in parse_inspect(path, data, problems, **options):  # streamed: no second copy of a large log
        kept = {k: v for k, v in rec.items() if k not in LAYOUT_ONLY}
        digest.update(json.dumps(kept, sort_keys=True, default=str).encode() + b"\n")
    return None if problems else digest.digest()


def _events(sample: dict[str, Any]) -> list[Any]:
    """A sample's events: ``events``, or in old logs ``transcript.events``."""
    events = sample.get("events")
    if events is None:
        events = _obj(sample.get("transcript")).get("events")
    return _seq(events)


def _results_scores(results: dict[str, Any]) -> Any:
    """``results.scores`` with each metric's ``options`` named ``params``, as current Inspect names it (so one log
    converted between versions and layouts reads the same)."""
    scores = results.get("scores")
    if not isinstance(scores, list):
        return scores
    out = []
    for entry in scores:
        if isinstance(entry, dict) and isinstance(entry.get("metrics"), dict):
            metrics = {
                name: {("params" if k == "options" else k): v for k, v in m.items()} if isinstance(m, dict) else m
                for name, m in entry["metrics"].items()
            }
            entry = {**entry, "metrics": metrics}
        out.append(entry)
    return out


def _default_scorer(header: dict[str, Any]) -> str | None:
    results = _obj(header.get("results"))
    for entry in results.get("scores") or []:
        if isinstance(entry, dict) and entry.get("name"):
            return str(entry["name"])
    for entry in (header.get("eval") or {}).get("scorers") or []:
        if isinstance(entry, dict) and entry.get("name"):
            return str(entry["name"])
    return None


def score_value(value: Any) -> float | None:
    """An Inspect score value as a number: C=1, P=0.5, I=0, N=0; numbers/booleans as is; dicts averaged."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        if value.strip().upper() in SCORE_LETTERS:
            return SCORE_LETTERS[value.strip().upper()]
        try:
            return float(value)
        except ValueError:
            return None
    if isinstance(value, dict):
        parts = [v for v in (score_value(x) for x in value.values()) if v is not None and v == v]
        return sum(parts) / len(parts) if parts else None
    return None


def _pick_score(sample: dict[str, Any], scorer: str | None) -> tuple[str | None, dict[str, Any] | None]:
    scores = _obj(sample.get("scores"))
    if scorer and isinstance(scores.get(scorer), dict):
        return scorer, scores[scorer]
    for name, entry in scores.items():
        if isinstance(entry, dict):
            return name, entry
    return None, None


def _all_numeric(samples: list[tuple[str, Any]], scorer: str | None) -> str:
    values = [
        score_value(e.get("value"))
        for _, s in samples
        if isinstance(s, dict)
        for _, e in [_pick_score(s, scorer)]
        if e is not None
    ]
    return "binary" if all(v in (0.0, 1.0) for v in values if v is not None) else "continuous"


def _run(
    header: dict[str, Any], ev: dict[str, Any], run_id: str, benchmark: str, model: str, scorer: str | None
) -> dict[str, Any]:
    results = _obj(header.get("results"))
    stats = _obj(header.get("stats"))
    created = ev.get("created")
    return {
        "record": "run",
        "run_id": run_id,
        "benchmark": benchmark,
        "agent": model,
        "family": model.split("/")[0] if "/" in model else None,
        "kind": "llm",
        "eval_date": _date(created),
        "status": str(header.get("status") or "unknown"),
        "scorer": scorer,
        "inspect_eval_id": ev.get("eval_id"),
        "inspect_run_id": ev.get("run_id"),
        "task_file": ev.get("task_file"),
        "results": _results_scores(results),
        "total_samples": results.get("total_samples"),
        "completed_samples": results.get("completed_samples"),
        "model_usage": stats.get("model_usage"),
        "error": header.get("error"),
        "inspect_extra": _unknown(header, KNOWN_HEADER) | {f"eval.{k}": v for k, v in _unknown(ev, KNOWN_EVAL).items()}
        or None,
    }


def _date(created: Any) -> str | None:
    """``YYYY-MM-DD`` from an ISO string or a Unix time (seconds, or milliseconds when that large)."""
    if isinstance(created, str) and len(created) >= 10:
        return created[:10]
    if isinstance(created, (int, float)) and not isinstance(created, bool):
        seconds = created / 1000 if created > 1e11 else created
        try:
            return dt.datetime.fromtimestamp(seconds, dt.UTC).date().isoformat()
        except (OverflowError, OSError, ValueError):  # out of any calendar: no date rather than a crash
            return None
    return None


def _unknown(obj: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """Fields this reader does not map: kept (in ``extra``), never dropped."""
    return {k: v for k, v in obj.items() if k not in known}


def _text(value: Any, attachments: dict[str, Any]) -> str | None:
    """Content (string or list of content parts) as text, resolving ``attachment://`` references."""
    if value is None:
        return None
    if isinstance(value, str):
        for scheme in ("attachment://", "tc://"):  # tc:// is the old transcript's content pool
            if value.startswith(scheme):
                return str(attachments.get(value[len(scheme) :], value))
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, dict):
                parts.append(_text(part.get("text") or part.get("reasoning") or part.get("content"), attachments) or "")
            else:
                parts.append(_text(part, attachments) or "")
        return "\n".join(p for p in parts if p)
    return json.dumps(value, ensure_ascii=False)


def _sample(
    loc: str, sample: dict[str, Any], benchmark: str, run_id: str, scorer: str | None, problems: ProblemCollector
) -> Iterator[tuple[str, dict[str, Any]]]:
    if sample.get("id") is None:
        problems.add(loc, "id", "missing sample id")
        return
    if _bad_types(loc, sample, problems):
        return
    # old logs (before ~0.3.50) keep events and their content pool under ``transcript``
    att = {**_obj(_obj(sample.get("transcript")).get("content")), **_obj(sample.get("attachments"))}
    task_id = str(sample["id"])
    target = sample.get("target")
    yield (
        loc,
        {
            "record": "task",
            "benchmark": benchmark,
            "task_id": task_id,
            "query": _text(sample.get("input"), att),
            "reference_answer": _text(target, att)
            if not isinstance(target, list)
            else json.dumps(target, ensure_ascii=False),
        },
    )
    name, entry = _pick_score(sample, scorer)
    value = _checked_value(loc, name, entry, problems)
    if value is _ODD:
        return
    status = _status(sample)
    epoch = sample.get("epoch", 1)
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        problems.add(f"{loc}.epoch", "epoch", f"expected an integer >= 1, got {type(epoch).__name__} {epoch!r}")
        return
    attempt: dict[str, Any] = {
        "record": "attempt",
        "run_id": run_id,
        "task_id": task_id,
        "sample": epoch - 1,
        "score": None if value is None else min(max(value, 0.0), 1.0),
        "raw_score": value,
        "status": status,
        "latency_s": sample.get("total_time"),
        "answer": (entry or {}).get("answer") if isinstance((entry or {}).get("answer"), str) else _answer(sample, att),
        "scorer": name,
        "score_value": None if entry is None else entry.get("value"),
        "explanation": None if entry is None else entry.get("explanation"),
        "working_time_s": sample.get("working_time"),
        "inspect_uuid": sample.get("uuid"),
        "limit": sample.get("limit") if isinstance(sample.get("limit"), dict) else None,
        "inspect_extra": _unknown(sample, KNOWN_SAMPLE) or None,
        "unknown_events": [e for e in _events(sample) if isinstance(e, dict) and e.get("event") not in KNOWN_EVENTS]
        or None,
    }
    if value is None and status == "completed":
        # Inspect writes samples before scoring them (``--no-score``) or keeps a NaN: an empty score, not a 0
        attempt["is_scored"] = False
        problems.warn(
            f"{loc}.scores",
            f"sample {task_id!r} epoch {epoch} has no score{f' for {scorer!r}' if scorer else ''}: stored with an "
            "empty score (run `inspect score` on the log to score it)",
        )
    try:  # every token count is read here once: a bad one refuses the sample with its path
        attempt.update(agent_usage(sample))
        attempt["grading"] = grading_of(sample, att)
        attempt["steps"] = steps_from_sample(sample, att)
    except BadCount as exc:
        problems.add(f"{loc}.{exc.args[0]}", "tokens", "expected a whole number of tokens")
        return
    if isinstance(sample.get("error"), dict):
        attempt["error"] = sample["error"].get("message")
    yield loc, {k: v for k, v in attempt.items() if v is not None}


SAMPLE_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str, int),
    "total_time": (int, float),
    "working_time": (int, float),
    "scores": (dict,),
    "events": (list,),
    "messages": (list,),
    "model_usage": (dict,),
}


def _bad_types(loc: str, sample: dict[str, Any], problems: ProblemCollector) -> bool:
    """True (with problems at Inspect's JSON path, ``$.samples[3].total_time``) when a field has the wrong type."""
    bad = False
    for name, types in SAMPLE_TYPES.items():
        value = sample.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            expected = " or ".join("number" if t in (int, float) else t.__name__ for t in types)
            problems.add(
                f"{loc}.{name}",
                name,
                f"expected {expected.replace('number or number', 'number')}, got {type(value).__name__}",
            )
            bad = True
    return bad


_ODD = float("inf")  # marks a score value refused (a problem was reported)


def _checked_value(
    loc: str, name: str | None, entry: dict[str, Any] | None, problems: ProblemCollector
) -> float | None:
    """The score as a number; None when missing or NaN; ``_ODD`` (with a problem naming scorer and type)
    when the value is of a shape no single score can come from (a list, a dict of non-scores, text)."""
    if entry is None:
        return None
    raw = entry.get("value")
    value = score_value(raw)
    if value is not None and value != value:  # NaN: Inspect's "no score", never a number to average
        return None
    if value is None and raw is not None and not (isinstance(raw, float) and raw != raw):
        problems.add(
            f"{loc}.scores.{name}.value",
            name or "-",
            f"scorer {name!r} gave a {type(raw).__name__} ({json.dumps(raw)[:80]}) that is not a score; "
            "choose another scorer with --scorer",
        )
        return _ODD
    if isinstance(raw, dict) and len(raw) > 1 and value is not None:
        problems.warn(
            f"{loc}.scores.{name}.value",
            f"scorer {name!r} gave a dict of {len(raw)} values; the score is their mean (choose one with --scorer)",
        )
    return value


def _status(sample: dict[str, Any]) -> str:
    """``timeout`` for any limit Inspect hit (message, token, time, working, cost, ...; the kind is kept in the
    attempt's ``limit``), ``crashed`` for an error, else ``completed``."""
    limit = sample.get("limit")
    if isinstance(limit, dict) and limit.get("type"):
        return "timeout"
    if sample.get("error"):
        return "crashed"
    return "completed"


def _answer(sample: dict[str, Any], att: dict[str, Any]) -> str | None:
    output = _obj(sample.get("output"))
    if isinstance(output.get("completion"), str) and output["completion"]:
        return output["completion"]
    for choice in output.get("choices") or []:
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            return _text(choice["message"].get("content"), att)
    return None


class BadCount(ValueError):
    """A token count that is not a whole number; ``args[0]`` is its JSON path below the sample."""


def _count(value: Any, where: str) -> int | None:
    """A token count: an int, an integral float, or digits in a string (``"74"``); None when absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise BadCount(where)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise BadCount(where)


def _usage(model_usage: Any) -> dict[str, Any]:
    """Tokens (and cost when the log has it) summed over every model the sample used."""
    if not isinstance(model_usage, dict) or not model_usage:
        return {}
    totals: dict[str, Any] = {}
    for name, usage in model_usage.items():
        if not isinstance(usage, dict):
            continue
        for key in ("input_tokens", "output_tokens"):
            n = _count(usage.get(key), f"model_usage.{name}.{key}")
            if n is not None:
                totals[key] = totals.get(key, 0) + n
        if isinstance(usage.get("total_cost"), (int, float)):
            totals["cost_usd"] = totals.get("cost_usd", 0.0) + usage["total_cost"]
    return totals


GRADING_SPANS = ("scorer", "scorers")


def _is_grading_open(ev: dict[str, Any]) -> bool:
    """A scorer span (``span_begin`` of type scorer/scorers) or an old-style scorer ``step`` beginning."""
    if ev.get("event") == "span_begin":
        return ev.get("type") in GRADING_SPANS
    return ev.get("event") == "step" and ev.get("type") == "scorer" and ev.get("action") == "begin"


def _is_grading_close(ev: dict[str, Any], open_ids: list[Any]) -> bool:
    if ev.get("event") == "span_end":
        return ev.get("id") in open_ids
    return ev.get("event") == "step" and ev.get("type") == "scorer" and ev.get("action") == "end"


def split_events(events: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(solver events, grading events)``: whatever happens inside a scorer span belongs to the grader.

    Inspect scores a sample after its solver, so the events inside a scorer span are contiguous; model calls
    there are the grader's (``model_graded_qa``), never the agent's turns.
    """
    solver: list[dict[str, Any]] = []
    grading: list[dict[str, Any]] = []
    open_ids: list[Any] = []
    depth = 0
    for ev in events:
        if not isinstance(ev, dict):
            continue
        if _is_grading_open(ev):
            depth += 1
            open_ids.append(ev.get("id"))
        elif depth and _is_grading_close(ev, open_ids):
            depth -= 1
            if ev.get("event") == "span_end":
                open_ids.remove(ev.get("id"))
        (grading if depth else solver).append(ev)
    return solver, grading


def steps_from_sample(sample: dict[str, Any], att: dict[str, Any]) -> list[dict[str, Any]]:
    """Steps from the solver's events (model turns, tool calls, errors); from messages without events.

    Scorer spans are left out: ``grading_of`` reads them.
    """
    solver, _ = split_events(_events(sample))
    steps: list[dict[str, Any]] = []
    rnd = 0
    for ev in solver:
        kind = ev.get("event")
        if kind == "model":
            rnd += 1
            steps.append(_model_step(ev, rnd, att) | _event_extra(ev))
        elif kind == "tool":
            steps.append(
                {
                    "round": rnd,
                    "kind": "tool_call",
                    "tool": ev.get("function"),
                    "args": ev.get("arguments"),
                    "result": _text(ev.get("result"), att) or "",
                    "latency_s": ev.get("working_time"),
                    "error": _err(ev.get("error")),
                }
                | _event_extra(ev)
            )
        elif kind == "error":
            steps.append({"round": rnd, "kind": "error", "error": _err(ev.get("error")) or "error"} | _event_extra(ev))
    if not steps:
        steps = _steps_from_messages(sample.get("messages"), att)
    _mark_final(steps)
    return [{k: v for k, v in s.items() if v is not None} for s in steps]


def _event_extra(ev: dict[str, Any]) -> dict[str, Any]:
    """``{"inspect_extra": {...}}`` with the event's fields this reader does not know, or nothing."""
    known = KNOWN_EVENT_FIELDS.get(str(ev.get("event")), frozenset())
    unknown = {k: v for k, v in ev.items() if k not in known}
    return {"inspect_extra": unknown} if unknown else {}


def _model_step(ev: dict[str, Any], rnd: int, att: dict[str, Any]) -> dict[str, Any]:
    output = _obj(ev.get("output"))
    usage = _obj(output.get("usage"))
    message = _obj(_obj((_seq(output.get("choices")) or [{}])[0]).get("message"))
    return {
        "round": rnd,
        "kind": "model",
        "content": _text(message.get("content"), att),
        "input_tokens": _count(usage.get("input_tokens"), "events[].output.usage.input_tokens"),
        "output_tokens": _count(usage.get("output_tokens"), "events[].output.usage.output_tokens"),
        "latency_s": output.get("time", ev.get("working_time")),
        "error": _err(ev.get("error")),
        "n_tool_calls": len(_seq(message.get("tool_calls"))),
    }


def _token_sums(model_events: list[dict[str, Any]]) -> dict[str, Any]:
    """Input/output tokens (and cost when every call has one) over model events."""
    usages = [_obj(_obj(ev.get("output")).get("usage")) for ev in model_events]
    out: dict[str, Any] = {}
    for key in ("input_tokens", "output_tokens"):
        values = [n for n in (_count(u.get(key), f"events[].output.usage.{key}") for u in usages) if n is not None]
        if values:
            out[key] = sum(values)
    costs = [float(u["total_cost"]) for u in usages if isinstance(u.get("total_cost"), (int, float))]
    if usages and len(costs) == len(usages):
        out["cost_usd"] = sum(costs)
    return out


def grading_of(sample: dict[str, Any], att: dict[str, Any]) -> dict[str, Any] | None:
    """The grader's model calls and their tokens (kept apart from the agent's), or None without any."""
    _, grading = split_events(_events(sample))
    calls = [ev for ev in grading if ev.get("event") == "model"]
    if not calls:
        return None
    turns = [
        {"model": ev.get("model"), **{k: v for k, v in _model_step(ev, 0, att).items() if k not in ("round", "kind")}}
        for ev in calls
    ]
    return {"model_calls": turns, **_token_sums(calls)}


def agent_usage(sample: dict[str, Any]) -> dict[str, Any]:
    """The agent's tokens and cost: its own model calls when the log has events, else ``model_usage``.

    Raises:
        BadCount: a token count is not a whole number (its JSON path below the sample in ``args[0]``).
    """
    solver, grading = split_events(_events(sample))
    calls = [ev for ev in solver if ev.get("event") == "model"]
    if calls:
        return _token_sums(calls)
    if any(ev.get("event") == "model" for ev in grading):
        return {}  # only the grader's calls were logged: model_usage would credit them to the agent
    return _usage(sample.get("model_usage"))


def _err(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or json.dumps(error))
    return str(error)


def _steps_from_messages(messages: Any, att: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    by_call: dict[str, int] = {}
    rnd = 0
    for msg in messages if isinstance(messages, list) else []:
        if not isinstance(msg, dict) or msg.get("role") in ("system", "user"):
            continue
        if msg.get("role") == "assistant":
            rnd += 1
            calls = msg.get("tool_calls") or []
            steps.append(
                {"round": rnd, "kind": "model", "content": _text(msg.get("content"), att), "n_tool_calls": len(calls)}
            )
            for call in calls:
                if isinstance(call, dict):
                    by_call[str(call.get("id"))] = len(steps)
                    steps.append(
                        {"round": rnd, "kind": "tool_call", "tool": call.get("function"), "args": call.get("arguments")}
                    )
        elif msg.get("role") == "tool":
            ix = by_call.get(str(msg.get("tool_call_id")))
            if ix is not None:
                steps[ix]["result"] = _text(msg.get("content"), att) or ""
                steps[ix]["error"] = _err(msg.get("error"))
    return steps


def _mark_final(steps: list[dict[str, Any]]) -> None:
    """The last model turn that called no tool and said something is the final answer."""
    for step in reversed(steps):
        if step["kind"] == "model":
            if not step.get("n_tool_calls") and step.get("content"):
                step["kind"] = "final"
            break
    for step in steps:
        step.pop("n_tool_calls", None)
