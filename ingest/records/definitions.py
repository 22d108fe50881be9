"""Benchmark, task and run records: definitions, each once per file (an identical repeat is skipped, a
conflicting one refused), and a re-scored run or a widened benchmark for a format that ``revises_scores``."""

from __future__ import annotations

import json
from typing import Any

from ingest.records.base import NormaliserState
from ingest.records.fields import (
    AGENT_KINDS,
    BENCHMARK_FIELDS,
    DEFAULT_THRESHOLD,
    RUN_FIELDS,
    SCORING,
    TASK_FIELDS,
    _Bad,
    _date,
    _enum,
    _extra,
    _ident,
    _json_text,
    _number,
    _str_list,
    _text,
    _tool_graph,
)

# The rows of task lines read in this process, by the line's bytes: the logs of one benchmark's runs repeat its
# task definitions line for line (the 1M generator's files, 6,666 a file, a quarter of their lines), and a row is a
# function of the line alone (its benchmark known or not is checked again). Rows are never changed once made.
_TASK_ROWS: dict[bytes, tuple[tuple[str, str], dict[str, Any]]] = {}
TASK_ROWS_MAX = 30_000  # then emptied: about 45 MB at most (the 1M generator's 26,668 tasks fit)


class DefinitionRecords(NormaliserState):
    """The handlers of benchmark, task and run records."""

    def _benchmark(self, loc: str, rec: dict[str, Any]) -> None:
        name = _ident(rec, "benchmark")
        scoring = _enum(rec, "scoring", SCORING, "binary")
        threshold = _number(rec, "pass_threshold", lo=0.0, hi=1.0)
        row = {
            "benchmark": name,
            "version": _text(rec, "version"),
            "scoring": scoring,
            "pass_threshold": DEFAULT_THRESHOLD[scoring] if threshold is None else threshold,
            "description": _text(rec, "description"),
            "tool_graph": _json_text(_tool_graph(rec)),
            "extra": _extra(rec, BENCHMARK_FIELDS),
        }
        assert name is not None
        widened = self._widened(row)
        if widened is not None:
            if widened:
                self.bundle.revised_benchmarks[name] = row
                self.known.add("benchmark", row)
            return
        self._define(loc, ("benchmark", name), row, self.bundle.benchmarks)

    def _widened(self, row: dict[str, Any]) -> bool | None:
        """For a format that ``revises_scores`` (Inspect), a benchmark stored as ``binary`` that a log scores on
        [0, 1] (partial credit, or a re-scored log whose unscored original looked binary) becomes ``continuous``
        (True: update it; its 0/1 scores stay valid and pass as before); a ``continuous`` one met with only 0/1
        scores stays as it is (False). None: not such a case (the usual definition rules apply)."""
        seen = self.known.definitions.get(("benchmark", str(row["benchmark"])))
        if not self.revises_scores or seen is None or seen == row:
            return None
        if any(row[k] != seen.get(k) for k in row if k not in ("scoring", "pass_threshold")):
            return None
        if seen["scoring"] == "binary" and row["scoring"] == "continuous":
            return True
        if seen["scoring"] == "continuous" and row["scoring"] == "binary":
            return False
        return None

    def _need_benchmark(self, rec: dict[str, Any]) -> str:
        name = _ident(rec, "benchmark")
        assert name is not None
        if name not in self.known.benchmarks:
            raise _Bad("benchmark", f"unknown benchmark {name!r}: define it with a benchmark record first")
        return name

    def _task(self, loc: str, rec: dict[str, Any]) -> None:
        key, row = self._task_row(rec)
        if self._task_line is not None:  # the line's bytes (a native reader's TaskLine): its row, for a repeat
            if len(_TASK_ROWS) >= TASK_ROWS_MAX:
                _TASK_ROWS.clear()
            _TASK_ROWS[self._task_line] = (key, row)
        self._define(loc, key, row, self.bundle.tasks)

    def _repeated_task(self, loc: str, line: bytes) -> bool:
        """Define the task of a line whose bytes an earlier line had (in this process): its row is that line's, so
        only what depends on the state is done again -- its benchmark known (else False: the record path reports
        it), then ``_define`` (a conflicting row raises ``_Bad`` as for the record). False when not a repeat."""
        seen = _TASK_ROWS.get(line)
        if seen is None or seen[1]["benchmark"] not in self.known.benchmarks:
            return False
        self._define(loc, seen[0], seen[1], self.bundle.tasks)
        return True

    def _task_row(self, rec: dict[str, Any]) -> tuple[tuple[str, str], dict[str, Any]]:
        """A task record's definition key and row, each field checked (``_Bad``)."""
        bench = self._need_benchmark(rec)
        task_id = _ident(rec, "task_id")
        assert task_id is not None
        ref_answer = rec.get("reference_answer")
        row = {
            "benchmark": bench,
            "task_id": task_id,
            "level": _text(rec, "level"),
            "category": _text(rec, "category"),
            "capabilities": _str_list(rec, "capabilities"),
            "human_minutes": _number(rec, "human_minutes", lo=0.0),
            "query": _text(rec, "query"),
            "reference_answer": ref_answer
            if isinstance(ref_answer, str) or ref_answer is None
            else _json_text(ref_answer),
            "reference_trajectory": _str_list(rec, "reference_trajectory"),
            "extra": _extra(rec, TASK_FIELDS),
        }
        return ("task", f"{bench}/{task_id}"), row

    def _run(self, loc: str, rec: dict[str, Any]) -> None:
        run_id = _ident(rec, "run_id")
        bench = self._need_benchmark(rec)
        row = {
            "run_id": run_id,
            "benchmark": bench,
            "agent": _ident(rec, "agent"),
            "family": _text(rec, "family"),
            "agent_version": _text(rec, "agent_version"),
            "kind": _enum(rec, "kind", AGENT_KINDS, "llm"),
            "eval_date": _date(rec, "eval_date"),
            "judge": _text(rec, "judge"),
            "price_input_per_mtok": _number(rec, "price_input_per_mtok", lo=0.0),
            "price_output_per_mtok": _number(rec, "price_output_per_mtok", lo=0.0),
            "status": _text(rec, "status"),
            "extra": _extra(rec, RUN_FIELDS),
        }
        assert run_id is not None
        if self._is_revision(row):
            self.bundle.revised_runs[str(run_id)] = row
            self.known.add("run", row)
            self._revision_locs[str(run_id)] = loc
            return
        self._define(loc, ("run", run_id), row, self.bundle.runs)

    def _is_revision(self, row: dict[str, Any]) -> bool:
        """True when ``row`` re-scores a stored run: the format allows it, and the stored run is the same eval
        (every field but status and extra equal, the same ``inspect_eval_id``) with another status or extra."""
        seen = self.known.definitions.get(("run", str(row["run_id"])))
        if not self.revises_scores or seen is None or seen == row:
            return False
        if any(row[k] != seen.get(k) for k in row if k not in ("status", "extra")):
            return False
        eval_ids = [json.loads(r.get("extra") or "{}").get("inspect_eval_id") for r in (seen, row)]
        return eval_ids[0] is not None and eval_ids[0] == eval_ids[1]
