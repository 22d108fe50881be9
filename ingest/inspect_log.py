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
from ingest.inspect_events import (
    as_obj,
    as_seq,
)
from ingest.inspect_samples import SampleContext, sample_records, unknown_fields
from ingest.inspect_scores import default_score_name, resolve_score_name, sample_scores, score_names
from ingest.inspect_usage import INSPECT_SOURCE, inspect_version
from ingest.jsonline import load_json
from ingest.safezip import ZipRefused, iter_members, member_names

ZIP_MAGIC = b"PK\x03\x04"
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
JOURNAL_START = "_journal/start.json"
SAMPLE_MEMBER = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")


# Inspect writes ``version``, ``status`` and then the ``eval`` spec first; ``model`` comes after the dataset's
# sample ids and can sit far past any fixed window, so detection needs only these leading keys.
INSPECT_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"[a-z_]+"\s*,\s*"eval"\s*:\s*\{')


# Files an eval set (``inspect_ai.eval_set``) writes beside its logs: its manifest (tasks, models, ids) and an index
# of the log headers. Neither is a log: each reads as nothing (the logs beside them are ingested on their own).
EVAL_SET_FILES = {"eval-set.json": "the eval set's manifest", "logs.json": "the eval set's index of log headers"}


def eval_set_companion(path: Path) -> str | None:
    """What an eval set's own file is (``EVAL_SET_FILES``), or None for any other file."""
    return EVAL_SET_FILES.get(path.name.lower())


def detect_inspect(path: Path, head: bytes) -> bool:
    """A zip named ``.eval``, a JSON object opening with Inspect's header (version, status, eval spec), or an eval
    set's ``eval-set.json`` / ``logs.json`` (read as nothing)."""
    if eval_set_companion(path) is not None and head.lstrip().startswith(b"{"):
        return True
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
    head_name = "header.json" if "header.json" in docs else JOURNAL_START
    if head_name not in docs:
        problems.add(f"{path}:1", "-", "no header.json (nor _journal/start.json) in the .eval archive")
        return None
    header = docs[head_name]
    if head_name == JOURNAL_START and isinstance(header, dict) and not header.get("status"):
        header = {**header, "status": "started"}  # a log still being written, or interrupted: Inspect's status
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
    completed = as_obj(as_obj(header).get("results")).get("completed_samples")
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
    companion = eval_set_companion(path)
    if companion is not None and not data.startswith(ZIP_MAGIC):
        problems.warn(f"{path}:1", f"{companion}: read as nothing (each log of the set is ingested on its own)")
        return
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
    names = score_names((sample for _, sample in samples), header)
    headline = _headline(path, options.get("scorer"), header, names, problems)
    if headline is _UNKNOWN:
        return
    scale = _scale(samples, headline)
    yield (
        f"{path}:$.eval",
        {
            "record": "benchmark",
            "benchmark": benchmark,
            "scoring": "binary" if scale == "binary" else "continuous",
            "pass_threshold": 1.0 if scale == "binary" else 0.5,
            "description": f"Inspect AI task {ev.get('task')}",
        },
    )
    yield f"{path}:$.eval", _run(header, ev, run_id, benchmark, model, headline, samples)
    ctx = SampleContext(benchmark, run_id, headline, scale, problems, inspect_version(header))
    if scale == "raw":
        low, high = _value_range(samples, headline)
        problems.warn(
            f"{path}:$.results.scores",
            f"scorer {headline!r} gives values outside [0, 1] ({low:g} to {high:g}): kept raw (the attempt's raw_score "
            "and the scores table), never clipped; the [0, 1] score is left empty. Rank by it with "
            f"`python -m analytics leaderboard --scorer {headline}` (the mean of raw values, as Inspect's mean)",
        )
    for loc, sample in samples:
        if not isinstance(sample, dict):
            problems.add(loc, "-", "expected a sample object")
            continue
        yield from sample_records(loc, sample, ctx)
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
        kept = {k: v for k, v in _unpriced(rec).items() if k not in LAYOUT_ONLY}
        digest.update(json.dumps(kept, sort_keys=True, default=str).encode() + b"\n")
    return None if problems else digest.digest()


PRICED = ("cost_usd", "cost_source", "cost_missing")  # a cost Runlens computed (ingest.inspect_usage), not the log's


def _unpriced(rec: dict[str, Any]) -> dict[str, Any]:
    """An attempt record without the costs Runlens computed from the catalog (kept: Inspect's own ``total_cost``):
    a new catalog's prices do not make a stored log new content."""
    if rec.get("record") != "attempt":
        return rec

    def strip(part: Any) -> Any:
        if not isinstance(part, dict) or (part.get("cost_source") is None and part.get("cost_missing") is None):
            return part
        if part.get("cost_source") == INSPECT_SOURCE:  # a step priced by Inspect itself
            return part
        return {k: v for k, v in part.items() if k not in PRICED}

    out = strip(rec)
    if isinstance(out.get("steps"), list):
        out = {**out, "steps": [strip(s) for s in out["steps"]]}
    grading = out.get("grading")
    if isinstance(grading, dict):
        calls = grading.get("model_calls")
        grading = strip(grading)
        out = {
            **out,
            "grading": {**grading, "model_calls": [strip(c) for c in calls]} if isinstance(calls, list) else grading,
        }
    return out


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


_UNKNOWN = "\0unknown scorer"  # marks a --scorer this log does not have (a problem was reported)


def _headline(
    path: Path, wanted: Any, header: dict[str, Any], names: list[str], problems: ProblemCollector
) -> str | None:
    """The score that is the attempt's headline: ``--scorer`` (a scorer, ``scorer/key`` or a dict key), else
    Inspect's own headline. An unknown ``--scorer`` is a problem listing the log's scores, never a fallback."""
    if not wanted:
        return default_score_name(header, names)
    found = resolve_score_name(str(wanted), names)
    if found is None:
        problems.add(
            f"{path}:$.results.scores",
            "--scorer",
            f"unknown scorer {wanted!r}; this log has "
            + (", ".join(repr(n) for n in names) if names else "no scores (run `inspect score` on it)"),
        )
        return _UNKNOWN
    return found


def _headline_values(samples: list[tuple[str, Any]], headline: str | None) -> list[float]:
    return [
        e.value
        for _, s in samples
        if isinstance(s, dict)
        for e in sample_scores(s.get("scores"))
        if e.name == headline and e.value is not None
    ]


def _scale(samples: list[tuple[str, Any]], headline: str | None) -> str:
    """``binary`` when every headline value is 0 or 1, ``continuous`` within [0, 1], else ``raw`` (a 0-10 rating:
    kept on its own scale, never clipped)."""
    values = _headline_values(samples, headline)
    if all(v in (0.0, 1.0) for v in values):
        return "binary"
    return "continuous" if all(0.0 <= v <= 1.0 for v in values) else "raw"


def _value_range(samples: list[tuple[str, Any]], headline: str | None) -> tuple[float, float]:
    values = _headline_values(samples, headline)
    return min(values), max(values)


def _run(
    header: dict[str, Any],
    ev: dict[str, Any],
    run_id: str,
    benchmark: str,
    model: str,
    scorer: str | None,
    samples: list[tuple[str, Any]],
) -> dict[str, Any]:
    results = as_obj(header.get("results"))
    stats = as_obj(header.get("stats"))
    created = ev.get("created")
    total, completed = results.get("total_samples"), results.get("completed_samples")
    if not results:  # an interrupted log (no results yet): the samples it holds of the dataset x epochs
        n_ids = len(as_seq(as_obj(ev.get("dataset")).get("sample_ids")))
        epochs = as_obj(ev.get("config")).get("epochs")
        total = n_ids * epochs if n_ids and isinstance(epochs, int) and not isinstance(epochs, bool) else None
        completed = sum(1 for _, s in samples if isinstance(s, dict) and not s.get("error"))
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
        "inspect_eval_set_id": ev.get("eval_set_id"),
        "inspect_created": created if isinstance(created, str) else None,
        "inspect_task_id": ev.get("task_id"),
        "task_file": ev.get("task_file"),
        "task_args": ev.get("task_args") or None,
        "results": _results_scores(results),
        "total_samples": total,
        "completed_samples": completed,
        "model_usage": stats.get("model_usage"),
        "error": header.get("error"),
        "inspect_extra": unknown_fields(header, KNOWN_HEADER)
        | {f"eval.{k}": v for k, v in unknown_fields(ev, KNOWN_EVAL).items()}
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
