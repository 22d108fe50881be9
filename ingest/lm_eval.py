"""lm-evaluation-harness output (``lm_eval --output_path OUT --log_samples``) -> native v1 records.

lm-eval writes, per model, ``OUT/<model>/results_<date>.json`` (aggregated metrics, task configs, the model's
arguments) and beside it one ``samples_<task>_<date>.jsonl`` per task (one line per document and filter:
``doc_id``, ``doc``, ``target``, ``arguments``, ``resps``, ``filtered_resps``, ``filter``, ``metrics`` and each
metric's value). The results file is what is ingested; its samples files are read with it (a samples file on its
own reads as nothing, like a CSV companion).

One run per model and task group (a task outside any group is a group of its own): run ``<group>:<model>``,
benchmark ``<group>``, tasks ``<task>/<doc_id>`` (category = the task). Each document is an attempt scored by one
metric and filter (the task's first metric and first filter, or ``--scorer metric[,filter]``); every other
metric/filter value is an attempt metric named as lm-eval names it (``exact_match,majority``), and every
metric/filter value (the score's too) is a row of the ``scores`` table under that name, for ``--scorer`` on the
reports. Repeated
evaluations of the same model and group (several results files in the model's folder) are samples 0, 1, ... in
date order. Every response (each repeat of each request) is a step. An evaluation made with ``--limit`` (lm-eval:
"should only be used for testing"), whose ``n-samples`` say it read fewer documents of a task than the task has, is a
run of its own, ``<group>:<model>:limit=<limit>``, with status ``limited`` and its documents read of the task's
(``completed_samples`` of ``total_samples``): never taken for the whole group's evaluation. Docs: docs/formats.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.errors import ProblemCollector
from ingest.jsonline import load_json

Records = Iterator[tuple[str, dict[str, Any]]]
_PRETRAINED = re.compile(r"(?:^|,)\s*pretrained=([^,]+)")


def _is_samples_file(path: Path, head: bytes) -> bool:
    first = head.split(b"\n", 1)[0]
    return path.name.startswith("samples_") and b'"doc_id"' in first and b'"filtered_resps"' in first


def detect_lm_eval(path: Path, head: bytes) -> bool:
    """An lm-eval results JSON (``"results"`` with task ``"alias"`` entries), or one of its samples files."""
    if _is_samples_file(path, head):
        return True
    text = head.lstrip()
    return text[:1] == b"{" and b'"results"' in text and (b'"alias"' in text or b'"group_subtasks"' in text)


def _date_id(path: Path) -> str:
    """The date lm-eval puts in its file names (``results_2026-01-15T10-00-00.123.json`` -> the part after _)."""
    return path.stem.rsplit("_", 1)[-1]


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def model_name(doc: dict[str, Any]) -> str:
    """The evaluated model: ``model_name``, else ``pretrained=`` of the model arguments, else the model type."""
    config = _dict(doc.get("config"))
    if doc.get("model_name"):
        return str(doc["model_name"])
    args = config.get("model_args")
    found = _PRETRAINED.search(args) if isinstance(args, str) else None
    if found:
        return found.group(1).strip()
    if isinstance(args, dict) and args.get("pretrained"):
        return str(args["pretrained"])
    return str(config.get("model") or "model")


def run_units(doc: dict[str, Any]) -> dict[str, list[str]]:
    """Top-level group (or standalone task) -> its leaf tasks (those with a config), in lm-eval's order."""
    subtasks = _dict(doc.get("group_subtasks"))
    configs = _dict(doc.get("configs"))
    children = {c for kids in subtasks.values() for c in kids}

    def leaves(name: str, seen: frozenset[str]) -> list[str]:
        if name in configs and name not in subtasks:
            return [name]
        out: list[str] = []
        for kid in subtasks.get(name, []):
            if kid not in seen:
                out.extend(leaves(kid, seen | {kid}))
        return out

    units = {g: leaves(g, frozenset({g})) for g in subtasks if g not in children}
    grouped = {t for ts in units.values() for t in ts}
    units.update({t: [t] for t in configs if t not in grouped and t not in children})
    return {u: ts for u, ts in units.items() if ts}


def limited(doc: dict[str, Any], tasks: list[str]) -> tuple[Any, int, int] | None:
    """``(limit, documents read, documents of the tasks)`` of a unit evaluated with ``--limit`` on fewer documents
    than its tasks have (lm-eval's ``n-samples``: ``original`` and ``effective`` per task), else None."""
    counts = _dict(doc.get("n-samples"))
    pairs = [_dict(counts.get(t)) for t in tasks]
    read = [(p.get("effective"), p.get("original")) for p in pairs]
    counted = [(e, o) for e, o in read if isinstance(e, int) and isinstance(o, int)]
    if not counted or len(counted) < len(read):
        return None
    effective, original = sum(e for e, _ in counted), sum(o for _, o in counted)
    if effective >= original:
        return None
    return _dict(doc.get("config")).get("limit"), effective, original


def run_key(doc: dict[str, Any], unit: str, tasks: list[str]) -> str:
    """The run a unit's evaluation belongs to (besides the model): the unit, and ``:limit=N`` for a limited one."""
    lim = limited(doc, tasks)
    return unit if lim is None else f"{unit}:limit={lim[0]}"


def siblings(path: Path) -> list[tuple[str, str, frozenset[str]]]:
    """``(date id, model, run keys)`` of every lm-eval results file in ``path``'s folder (repeated evaluations)."""
    out = []
    for other in sorted(path.parent.glob("*.json")):
        try:
            data = other.read_bytes()
            if not detect_lm_eval(other, data[:65536]) or _is_samples_file(other, data[:4096]):
                continue
            doc = json.loads(data)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict):
            keys = frozenset(run_key(doc, u, ts) for u, ts in run_units(doc).items())
            out.append((_date_id(other), model_name(doc), keys))
    return out


def repeat_of(path: Path, model: str, unit: str, *, is_named: bool = False) -> tuple[int, str]:
    """(sample number, eval date) of this file's evaluation of ``unit``: its place among the folder's results
    files of the same model and unit in date order, and the date of the first of them.

    ``is_named``: the agent was named (``--agent``), so every results file of the folder is that agent's whatever
    ``model_name`` it records (a renamed checkpoint, a local path): the files are numbered over the unit alone, and
    a second file becomes the next sample, not a duplicate of the first."""
    dates = sorted(d for d, m, units in siblings(path) if (is_named or m == model) and unit in units)
    mine = _date_id(path)
    if mine not in dates:
        dates = sorted([*dates, mine])
    return dates.index(mine), dates[0][:10]


def fingerprint_lm_eval(path: Path, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """The samples files' bytes and the file's place among repeated evaluations enter the idempotency hash."""
    if _is_samples_file(path, data[:4096]):
        return {"lm_eval": "samples"}
    try:
        doc = json.loads(data)
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    out: dict[str, Any] = {}
    model = str(options.get("agent") or model_name(doc))
    for unit, tasks in run_units(doc).items():
        key = run_key(doc, unit, tasks)
        out[f"_repeat:{unit}"] = repeat_of(path, model, key, is_named=bool(options.get("agent")))
        for task in tasks:
            other = path.parent / f"samples_{task}_{_date_id(path)}.jsonl"
            out[f"_samples:{task}"] = hashlib.sha256(other.read_bytes()).hexdigest() if other.is_file() else None
    return out


def parse_lm_eval(path: Path, data: bytes, problems: ProblemCollector, progress: Any = None, **options: Any) -> Records:
    """Yield benchmark, task, run and attempt records for an lm-eval results file and its samples files.

    Args:
        path: ``results_<date>.json`` (a ``samples_*.jsonl`` file yields nothing: it is read with its results).
        data: its bytes.
        problems: where problems are reported.
        progress: optional tqdm-like bar.
        **options: ``scorer`` (``metric`` or ``metric,filter``) picks the score; ``agent`` names the model.
    """
    if _is_samples_file(path, data[:4096]):
        return
    doc = load_json(path, data, problems)
    if doc is None:
        return
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("results"), dict)
        or not isinstance(doc.get("configs"), dict)
    ):
        problems.add(f"{path}:1", "-", "expected an lm-eval results object with 'results' and 'configs'")
        return
    model = str(options.get("agent") or model_name(doc))
    wanted = str(options.get("scorer") or "").partition(",")[0].strip()
    known = {
        str(m.get("metric"))
        for c in doc["configs"].values()
        for m in _dict(c).get("metric_list") or []
        if isinstance(m, dict)
    }
    if wanted and wanted not in known:
        problems.add(f"{path}:1", "--scorer", f"{wanted!r} is no task's metric (metrics: {', '.join(sorted(known))})")
        return
    for unit, tasks in run_units(doc).items():
        yield from _unit(path, doc, model, unit, tasks, problems, options)
    if progress is not None:
        progress.update(len(data))


def _unit(
    path: Path,
    doc: dict[str, Any],
    model: str,
    unit: str,
    tasks: list[str],
    problems: ProblemCollector,
    options: dict[str, Any],
) -> Records:
    """The records of one run: a group (or standalone task) evaluated by one model."""
    key = run_key(doc, unit, tasks)
    sample, eval_date = repeat_of(path, model, key, is_named=bool(options.get("agent")))
    read = {task: _read_samples(path, task, doc, problems, options) for task in tasks}
    if problems:
        return
    scores = [att["score"] for rows in read.values() for _, att, _ in rows if att.get("score") is not None]
    binary = bool(scores) and all(s in (0, 1, 0.0, 1.0) for s in scores)
    loc = f"{path}:1"
    yield loc, {"record": "benchmark", "benchmark": unit, "scoring": "binary" if binary else "continuous"}
    run: dict[str, Any] = {
        "record": "run",
        "run_id": f"{unit}:{model}",
        "benchmark": unit,
        "agent": model,
        "family": model.split("/", 1)[0] if "/" in model else None,
        "kind": "llm",
        "eval_date": eval_date,
    }
    lim = limited(doc, tasks)
    if lim is not None:  # --limit: a test of a few documents, never the group's evaluation (see the docstring)
        run |= {"run_id": f"{unit}:{model}:limit={lim[0]}", "status": "limited", "lm_eval_limit": lim[0]}
        run |= {"completed_samples": lim[1], "total_samples": lim[2]}
    run_id = str(run["run_id"])
    yield loc, run
    for rows in read.values():
        for line_loc, attempt, task_rec in rows:
            yield line_loc, {"record": "task", "benchmark": unit, **task_rec}
            yield line_loc, {"record": "attempt", "run_id": run_id, "sample": sample, **attempt}


def _chosen(doc: dict[str, Any], task: str, filters: list[str], options: dict[str, Any]) -> tuple[str, str]:
    """(metric, filter) that scores the task's attempts: the task's first metric and first filter, each replaced
    by ``--scorer metric[,filter]``'s when the task has it (so one scorer can name a metric of some tasks only)."""
    names = [
        str(m.get("metric")) for m in (doc["configs"].get(task) or {}).get("metric_list") or [] if isinstance(m, dict)
    ]
    metric, filt = (names or ["acc"])[0], filters[0]
    wanted_metric, _, wanted_filter = str(options.get("scorer") or "").partition(",")
    if wanted_metric.strip() in names:
        metric = wanted_metric.strip()
    if wanted_filter.strip() in filters:
        filt = wanted_filter.strip()
    return metric, filt


def _read_samples(
    path: Path, task: str, doc: dict[str, Any], problems: ProblemCollector, options: dict[str, Any]
) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(location, attempt fields, task fields)`` per document of a task's samples file."""
    samples = path.parent / f"samples_{task}_{_date_id(path)}.jsonl"
    if not samples.is_file():
        problems.add(f"{path}:1", "samples", f"{samples.name} not found beside it (run lm_eval with --log_samples)")
        return []
    by_doc: dict[Any, dict[str, tuple[int, dict[str, Any]]]] = {}
    for number, line in enumerate(samples.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(f"{samples}:{number}", "-", f"invalid JSON (column {exc.colno}): {exc.msg}")
            continue
        if not isinstance(row, dict) or "doc_id" not in row:
            problems.add(f"{samples}:{number}", "doc_id", "missing: not an lm-eval samples line")
            continue
        filters = by_doc.setdefault(row["doc_id"], {})
        filt = str(row.get("filter") or "none")
        if filt in filters:
            problems.add(f"{samples}:{number}", "doc_id", f"document {row['doc_id']} appears twice for filter {filt!r}")
            continue
        filters[filt] = (number, row)
    if not by_doc:
        return []
    seen_filters = list(dict.fromkeys(f for filters in by_doc.values() for f in filters))
    metric, filt = _chosen(doc, task, seen_filters, options)
    out = []
    for doc_id, filters in by_doc.items():
        if filt not in filters:
            number = next(iter(filters.values()))[0]
            problems.add(f"{samples}:{number}", "filter", f"no line for filter {filt!r} (has {', '.join(filters)})")
            continue
        number, row = filters[filt]
        attempt = _attempt(task, row, metric, filters, doc)
        headline = f"{metric},{filt}"
        attempt["scores"] = [
            {"scorer": name, "value": value, **({"is_headline": True} if name == headline else {})}
            for name, value in (attempt.get("metrics") or {}).items()
        ] or None
        if "score" not in attempt:
            problems.add(
                f"{samples}:{number}", metric, f"metric {metric!r} not in this line (has {row.get('metrics')})"
            )
            continue
        task_rec = {"task_id": f"{task}/{doc_id}", "category": task, "reference_answer": _text(row.get("target"))}
        task_rec["doc"] = row.get("doc")
        out.append((f"{samples}:{number}", attempt, task_rec))
    return out


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _attempt(
    task: str, row: dict[str, Any], metric: str, filters: dict[str, tuple[int, dict[str, Any]]], doc: dict[str, Any]
) -> dict[str, Any]:
    metrics = {
        f"{name},{filt}": value
        for filt, (_, other) in filters.items()
        for name in other.get("metrics") or []
        if (value := _number(other.get(name))) is not None
    }
    filtered = row.get("filtered_resps")
    answer = filtered[0] if isinstance(filtered, list) and filtered else filtered
    config = doc["configs"].get(task) or {}
    prompt = ((row.get("arguments") or {}).get("gen_args_0") or {}).get("arg_0")
    attempt: dict[str, Any] = {
        "task_id": f"{task}/{row['doc_id']}",
        "answer": _text(answer),
        "status": "completed",
        "steps": _steps(row, config.get("output_type")),
        "metrics": metrics or None,
        "filter": row.get("filter"),
        "prompt": prompt,
        "doc_hash": row.get("doc_hash"),
        "prompt_hash": row.get("prompt_hash"),
        "target_hash": row.get("target_hash"),
        "n_shot": (doc.get("n-shot") or {}).get(task),
        "task_version": (doc.get("versions") or {}).get(task),
        "lm_eval_version": doc.get("lm_eval_version"),
    }
    value = _number(row.get(metric))
    if value is not None:
        attempt["score"] = value
    return {k: v for k, v in attempt.items() if v is not None}


def _steps(row: dict[str, Any], output_type: Any) -> list[dict[str, Any]]:
    """Every response: per request (a choice, for multiple choice), per repeat."""
    steps = []
    arguments = row.get("arguments") or {}
    for i, responses in enumerate(row.get("resps") or []):
        args = arguments.get(f"gen_args_{i}") or {}
        for j, response in enumerate(responses if isinstance(responses, list) else [responses]):
            if output_type == "generate_until":
                steps.append({"round": j + 1, "kind": "generation", "content": _text(response)})
            else:
                steps.append(
                    {
                        "round": 1,
                        "kind": "loglikelihood",
                        "args": {"continuation": args.get("arg_1")},
                        "content": _text(response),
                    }
                )
    return steps
