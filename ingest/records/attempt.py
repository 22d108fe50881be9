"""Attempt records: the one attempt handler, fed by a decoded record's fields (:class:`_RecordFields`, each
checked) or a fast-path line's (:class:`_FastFields`, already typed); its score, cost, error labels, metrics
and scores."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any

from ingest.fastpath import FastAttempt
from ingest.records.base import NormaliserState
from ingest.records.fields import (
    ATTEMPT_FIELDS,
    INT32_MAX,
    INT64_MAX,
    STATUSES,
    _Bad,
    _bool,
    _enum,
    _extra,
    _Fallback,
    _ident,
    _json_text,
    _number,
    _object,
    _text,
    _type_name,
)
from ingest.records.steps import _fast_json, _fast_steps, _record_steps


class AttemptRecords(NormaliserState):
    """The handler of attempt records (a rating finds its attempt through ``_attempt_key`` too)."""

    def _attempt_key(self, rec: dict[str, Any]) -> tuple[str, str, str, int]:
        run_id = _ident(rec, "run_id")
        task_id = _ident(rec, "task_id")
        assert run_id is not None and task_id is not None
        bench = self._benchmark_of(run_id, task_id)
        sample = _number(rec, "sample", lo=0, hi=INT32_MAX, integer=True)
        return bench, run_id, task_id, int(sample or 0)

    def _benchmark_of(self, run_id: str, task_id: str) -> str:
        """The benchmark of an attempt's run, once its run and task are known to be defined."""
        if run_id not in self.known.runs:
            raise _Bad("run_id", f"unknown run {run_id!r}: define it with a run record first")
        bench = self.known.runs[run_id][0]
        self.known.ensure_tasks(bench)
        if (bench, task_id) not in self.known.tasks:
            raise _Bad(
                "task_id", f"unknown task {task_id!r} of benchmark {bench!r}: define it with a task record first"
            )
        return bench

    def _check_new(self, key: tuple[str, str, int]) -> None:
        """Refuse attempt ``key`` (run, task, sample) when it is already earlier in the file or in the database."""
        if key in self._file_attempts or self.known.existing_attempt(key) is not None:
            where = "earlier in this file" if key in self._file_attempts else "in the database"
            raise _Bad("sample", f"duplicate attempt (run {key[0]!r}, task {key[1]!r}, sample {key[2]}) {where}")

    def _scored(
        self, bench: str, status: str, score: float | None, raw: float | None, passed: bool | None
    ) -> tuple[float, float | None, bool]:
        """(score on [0, 1], raw score, passed) from the checked values of an attempt of ``bench``."""
        scoring, threshold = self.known.benchmarks[bench]
        if score is None and raw is not None:
            if scoring == "graded":
                if not 1.0 <= raw <= 5.0:
                    raise _Bad("raw_score", f"{raw} is outside the graded scale [1, 5]")
                score = (raw - 1.0) / 4.0
            elif scoring == "binary" and raw in (0.0, 1.0) or 0.0 <= raw <= 1.0:
                score = raw
            else:
                raise _Bad("score", f"missing, and raw_score {raw} cannot be normalised for {scoring} scoring")
        if score is None and passed is not None:
            score = 1.0 if passed else 0.0
        if score is None:
            if status == "completed":
                raise _Bad("score", "missing required field (give score, raw_score or passed)")
            score = 0.0
        if scoring == "binary" and score not in (0.0, 1.0):
            raise _Bad("score", f"{score} is not 0 or 1 (benchmark {bench!r} has binary scoring)")
        return score, raw, (score >= threshold - 1e-12) if passed is None else passed

    def _cost(
        self, run_id: str, cost: float | None, in_tok: int | None, out_tok: int | None
    ) -> tuple[float | None, bool]:
        """(cost, whether it was computed from tokens and the run's prices)."""
        if cost is not None:
            return cost, False
        computed = _computed_cost(in_tok, out_tok, *self.known.runs[run_id][1:])
        return computed, computed is not None

    def _attempt(self, loc: str, rec: dict[str, Any]) -> None:
        self._add_attempt(_RecordFields(rec))

    def _add_attempt(self, fields: _RecordFields | _FastFields) -> None:
        """The one attempt handler: ``fields`` checks and converts each field as it is asked for (a decoded
        record's fields one by one, or a fast-path line's, already typed); the order of the questions is the order
        in which problems are found and reported."""
        run_id, task_id = fields.ids()
        bench = self._benchmark_of(run_id, task_id)
        key = (run_id, task_id, fields.sample())
        stored = self.known.existing_attempt(key) if run_id in self.bundle.revised_runs else None
        if stored is None:
            self._check_new(key)
        elif key in self._rescored:
            raise _Bad(
                "sample", f"duplicate attempt (run {key[0]!r}, task {key[1]!r}, sample {key[2]}) earlier in this file"
            )
        else:
            self._rescored.add(key)
        status = fields.status()
        given = fields.score()
        score, raw, passed = (
            (None, fields.unscored_raw(), None) if given is None else self._scored(bench, status, *given)
        )
        in_tok, out_tok = fields.tokens()
        cost, computed = self._cost(run_id, fields.cost(), in_tok, out_tok)
        computed = computed or (cost is not None and fields.cost_is_computed())
        judge = fields.judge()
        errors = fields.errors()
        metrics = fields.metrics()
        scores = fields.scores()
        if stored is not None:  # a re-scored attempt: its new headline and scores; the trajectory stays as stored
            if score is not None or raw is not None or any(r[1] is not None for r in scores):
                self._revision_scored.add(run_id)
            self.bundle.score_updates.append((stored, score, raw, passed, fields.answer(), fields.extra()))
            self.bundle.scores.extend((None, stored, *row) for row in scores)
            return
        ix = self.bundle.ix_base + len(self.bundle.attempts)
        steps, n_tool, n_rounds = fields.steps(ix, self._long_text)
        answer = fields.answer()
        latency = fields.latency()
        self.bundle.steps.extend(steps)
        counts = (len(steps), n_tool, n_rounds)
        self._store_attempt(
            key,
            (score, raw, passed, answer, in_tok, out_tok, cost, computed, latency, status),
            (judge, fields.extra()),
            counts,
            errors,
            metrics,
        )
        if fields.is_partial():
            self.bundle.n_partial += 1
        if scores:
            self.bundle.scores.extend((ix, None, *row) for row in scores)

    def _store_attempt(
        self,
        key: tuple[str, str, int],
        head: tuple[Any, ...],
        tail: tuple[Any, ...],
        counts: tuple[int, int, int],
        errors: list[tuple[str, int | None, str | None]],
        metrics: list[tuple[str, float]],
    ) -> None:
        """Append attempt ``key`` (columns ``head``, the step ``counts``, then ``tail``), its labels and metrics;
        its steps are appended already, at index ``len(attempts)``."""
        ix = self.bundle.ix_base + len(self.bundle.attempts)
        self.bundle.attempts.append((*key, *head, *counts, *tail))
        if errors:
            self.bundle.labels.extend((ix, *label) for label in errors)
        if metrics:
            self.bundle.metrics.extend((ix, *metric) for metric in metrics)
        self._file_attempts[key] = ix

    def _long_text(self, text: str) -> str:
        """Keep a long tool result once in ``texts``; return its key (the SHA-256 of its UTF-8)."""
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        self.bundle.texts.setdefault(digest, text)
        return digest


class _RecordFields:
    """An attempt record decoded as JSON, each field checked (``_Bad`` names the field) as the handler asks."""

    __slots__ = ("rec",)

    def __init__(self, rec: dict[str, Any]) -> None:
        self.rec = rec

    def ids(self) -> tuple[str, str]:
        run_id, task_id = _ident(self.rec, "run_id"), _ident(self.rec, "task_id")
        assert run_id is not None and task_id is not None
        return run_id, task_id

    def sample(self) -> int:
        return int(_number(self.rec, "sample", lo=0, hi=INT32_MAX, integer=True) or 0)

    def status(self) -> str:
        return _enum(self.rec, "status", STATUSES, "completed")  # type: ignore[return-value]

    def score(self) -> tuple[float | None, float | None, bool | None] | None:
        """(score, raw score, passed) as given; None when not scored yet (an Inspect sample before ``inspect
        score``: empty, not 0)."""
        rec = self.rec
        if rec.get("is_scored") is False:
            return None
        raw = _number(rec, "raw_score")
        passed = _bool(rec, "passed")
        value = rec.get("score")
        score = (1.0 if value else 0.0) if isinstance(value, bool) else _number(rec, "score", lo=0.0, hi=1.0)
        return score, raw, passed

    def unscored_raw(self) -> float | None:
        """The raw score of an attempt with no [0, 1] score (``is_scored: false``): a value on its own scale (an
        Inspect 0-10 rating), kept; None for an attempt not scored at all."""
        return _number(self.rec, "raw_score")

    def scores(self) -> list[tuple[Any, ...]]:
        return _scores(self.rec.get("scores"))

    def tokens(self) -> tuple[int | None, int | None]:
        in_tok = _number(self.rec, "input_tokens", lo=0, hi=INT64_MAX, integer=True)
        out_tok = _number(self.rec, "output_tokens", lo=0, hi=INT64_MAX, integer=True)
        return in_tok, out_tok  # type: ignore[return-value]

    def cost(self) -> float | None:
        return _number(self.rec, "cost_usd", lo=0.0)

    def cost_is_computed(self) -> bool:
        """A cost the reader computed itself says where it came from (``cost_source``, kept in extra)."""
        return self.rec.get("cost_source") is not None

    def judge(self) -> str | None:
        return _json_text(_object(self.rec, "judge"))

    def errors(self) -> list[tuple[str, int | None, str | None]]:
        return _labels(self.rec.get("errors"))

    def metrics(self) -> list[tuple[str, float]]:
        return _metrics(self.rec.get("metrics"))

    def steps(self, ix: int, keep: Callable[[str], str]) -> tuple[list[tuple[Any, ...]], int, int]:
        steps = self.rec.get("steps")
        if steps is not None and not isinstance(steps, list):
            raise _Bad("steps", f"expected an array of step objects, got {_type_name(steps)}")
        return _record_steps(steps or (), ix, keep)

    def answer(self) -> str | None:
        answer = self.rec.get("answer")
        return answer if isinstance(answer, str) or answer is None else _json_text(answer)

    def latency(self) -> float | None:
        return _number(self.rec, "latency_s", lo=0.0)

    def extra(self) -> str | None:
        return _extra(self.rec, ATTEMPT_FIELDS)

    def is_partial(self) -> bool:
        """The record is of a trace without its root span (the OTLP reader's ``trace_partial`` mark, kept in extra)."""
        return "trace_partial" in self.rec


class _FastFields:
    """An attempt line the fast path decoded (ingest/fastpath.py: every field has its documented type already).

    What the record path would refuse raises ``_Fallback`` here: the caller then reads the line again by the record
    path, which finds and reports the same problem exactly as for any other line.
    """

    __slots__ = ("att",)

    def __init__(self, att: FastAttempt) -> None:
        self.att = att

    def ids(self) -> tuple[str, str]:
        run_id, task_id = self.att.run_id, self.att.task_id
        if not run_id.strip() or not task_id.strip():
            raise _Fallback
        return run_id, task_id

    def sample(self) -> int:
        return self.att.sample or 0

    def status(self) -> str:
        status = self.att.status
        if status is None:
            return "completed"
        if status not in STATUSES:
            raise _Fallback
        return status

    def score(self) -> tuple[float | None, float | None, bool | None]:
        score = self.att.score
        if score.__class__ is bool:
            score = 1.0 if score else 0.0
        return score, self.att.raw_score, self.att.passed

    def unscored_raw(self) -> None:
        return None  # the fast path has no ``is_scored``

    def scores(self) -> list[tuple[Any, ...]]:
        return []  # nor ``scores``: lines with them take the record path

    def tokens(self) -> tuple[int | None, int | None]:
        return self.att.input_tokens, self.att.output_tokens

    def cost(self) -> float | None:
        return self.att.cost_usd

    def cost_is_computed(self) -> bool:
        return False  # a line with cost_source has a field the fast path does not know: it takes the record path

    def judge(self) -> str | None:
        return None if self.att.judge is None else _fast_json(self.att.judge)

    def errors(self) -> list[tuple[str, int | None, str | None]]:
        out: list[tuple[str, int | None, str | None]] = []
        for code in self.att.errors or ():
            code = code.strip()
            if not code:
                raise _Fallback
            out.append((code.upper(), None, None))
        return out

    def metrics(self) -> list[tuple[str, float]]:
        metrics = self.att.metrics
        return [(name, value) for name, value in metrics.items() if value is not None] if metrics else []

    def steps(self, ix: int, keep: Callable[[str], str]) -> tuple[list[tuple[Any, ...]], int, int]:
        return _fast_steps(self.att.steps or (), ix, keep)

    def answer(self) -> str | None:
        answer = self.att.answer
        return answer if answer is None or answer.__class__ is str else _fast_json(answer)

    def latency(self) -> float | None:
        return self.att.latency_s

    def extra(self) -> None:
        return None  # the fast path takes only lines without unknown fields

    def is_partial(self) -> bool:
        return False  # (``trace_partial`` is an unknown field to the fast path)


def _computed_cost(
    in_tok: float | int | None, out_tok: float | int | None, price_in: float | None, price_out: float | None
) -> float | None:
    """Cost from tokens and per-million-token prices, when every needed price is known."""
    if in_tok is None and out_tok is None:
        return None
    if (in_tok is not None and price_in is None) or (out_tok is not None and price_out is None):
        return None
    return ((in_tok or 0) * (price_in or 0.0) + (out_tok or 0) * (price_out or 0.0)) / 1e6


def _labels(value: Any) -> list[tuple[str, int | None, str | None]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad("errors", f"expected an array of error codes, got {_type_name(value)}")
    out: list[tuple[str, int | None, str | None]] = []
    for pos, item in enumerate(value):
        if isinstance(item, str) and item.strip():
            out.append((item.strip().upper(), None, None))
        elif isinstance(item, dict) and isinstance(item.get("code"), str) and item["code"].strip():
            try:
                step = _number(item, "step", lo=0, hi=INT32_MAX, integer=True)
            except _Bad as bad:
                raise _Bad(f"errors[{pos}].{bad.field}", bad.reason) from None
            detail = item.get("detail")
            out.append(
                (
                    item["code"].strip().upper(),
                    None if step is None else int(step),
                    detail if isinstance(detail, str) or detail is None else _json_text(detail),
                )
            )
        else:
            raise _Bad(f"errors[{pos}]", "expected an error code string or an object with a 'code'")
    return out


def _metrics(value: Any) -> list[tuple[str, float]]:
    if value is None:
        return []
    if not isinstance(value, dict):
        raise _Bad("metrics", f"expected an object of name: number, got {_type_name(value)}")
    out = []
    for name, metric in value.items():
        if metric is None:
            continue
        if isinstance(metric, bool) or not isinstance(metric, (int, float)) or not math.isfinite(metric):
            raise _Bad(f"metrics.{name}", f"expected a finite number, got {_type_name(metric)}")
        out.append((str(name), float(metric)))
    return out


def _scores(value: Any) -> list[tuple[Any, ...]]:
    """The ``scores`` of an attempt: ``[{scorer, value, raw_value, answer, explanation, is_headline}, ...]`` as rows
    (scorer, value, raw value as JSON text, answer, explanation, is_headline); one per scorer name, at most one
    headline. ``value`` is a finite number on the scorer's own scale, or null (no score)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad("scores", f"expected an array of score objects, got {_type_name(value)}")
    rows: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for pos, item in enumerate(value):
        if not isinstance(item, dict):
            raise _Bad(f"scores[{pos}]", f"expected an object, got {_type_name(item)}")
        try:
            name = _ident(item, "scorer")
            number = _number(item, "value")
            answer, explanation = _text(item, "answer"), _text(item, "explanation")
            is_headline = bool(_bool(item, "is_headline"))
        except _Bad as bad:
            raise _Bad(f"scores[{pos}].{bad.field}", bad.reason) from None
        assert name is not None
        if name in seen:
            raise _Bad(f"scores[{pos}].scorer", f"{name!r} is given twice")
        seen.add(name)
        raw = item.get("raw_value", item.get("value"))
        rows.append((name, number, _json_text(raw), answer, explanation, is_headline))
    if sum(1 for row in rows if row[5]) > 1:
        raise _Bad("scores", "more than one score is_headline")
    return rows
