"""What is already known when a record is read: the definitions of earlier lines of the file, or of the
database, which a record may refer to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DEFINITION_TABLES = {"benchmark": "benchmarks", "task": "tasks", "run": "runs"}


def definition_key(kind: str, row: dict[str, Any]) -> str:
    """The name a definition is known by: the benchmark, ``benchmark/task_id``, or the run id."""
    if kind == "benchmark":
        return str(row["benchmark"])
    if kind == "task":
        return f"{row['benchmark']}/{row['task_id']}"
    return str(row["run_id"])


@dataclass
class Known:
    """Definitions a record may refer to: from the database, then from earlier lines of the file.

    ``benchmarks`` maps name -> (scoring, pass_threshold); ``runs`` maps run_id -> (benchmark,
    price_in, price_out); ``tasks`` is a set of (benchmark, task_id); ``attempts`` maps
    (run_id, task_id, sample) -> attempt_id for attempts already in the database.
    ``definitions`` keeps the normalised row of every definition for conflict checks; ``hashes`` maps the
    content hash of every ingested file to its path. The database's tasks are many (one per task of every
    benchmark), so with a ``task_loader`` they are read a benchmark at a time, when a record first names one of
    its tasks (``ensure_tasks``): an upload reads the tasks of its own benchmarks only. Without an ``attempt_loader`` (in a worker process, which
    has no database) attempts already in the database are not seen: the parent checks them before writing.
    """

    benchmarks: dict[str, tuple[str, float]] = field(default_factory=dict)
    runs: dict[str, tuple[str, float | None, float | None]] = field(default_factory=dict)
    tasks: set[tuple[str, str]] = field(default_factory=set)
    attempts: dict[tuple[str, str, int], int] = field(default_factory=dict)
    definitions: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)
    attempt_loader: Callable[[str], dict[tuple[str, int], int]] | None = None
    loaded_runs: set[str] = field(default_factory=set)
    task_loader: Callable[[str | None], list[dict[str, Any]]] | None = None
    loaded_benchmarks: set[str] = field(default_factory=set)

    def ensure_tasks(self, benchmark: str | None) -> None:
        """Know the stored tasks of ``benchmark`` (None: of every benchmark), reading them on first use; a
        definition already known (from a file committed since) is kept as it is."""
        if self.task_loader is None or (benchmark is not None and benchmark in self.loaded_benchmarks):
            return
        if benchmark is None and self.loaded_benchmarks >= set(self.benchmarks):
            return
        for row in self.task_loader(benchmark):
            if ("task", definition_key("task", row)) not in self.definitions:
                self.add("task", row)
        self.loaded_benchmarks.update(self.benchmarks if benchmark is None else (benchmark,))

    def add(self, kind: str, row: dict[str, Any]) -> None:
        """Know the definition ``row`` of ``kind`` (benchmark, task or run)."""
        if kind == "benchmark":
            self.benchmarks[row["benchmark"]] = (row["scoring"], float(row["pass_threshold"]))
        elif kind == "task":
            self.tasks.add((row["benchmark"], row["task_id"]))
        else:
            self.runs[row["run_id"]] = (row["benchmark"], row["price_input_per_mtok"], row["price_output_per_mtok"])
        self.definitions[(kind, definition_key(kind, row))] = row

    def copy(self) -> Known:
        """An independent copy of the definitions (a file's normaliser extends it), with no attempts cached."""
        return Known(
            dict(self.benchmarks),
            dict(self.runs),
            set(self.tasks),
            {},
            dict(self.definitions),
            dict(self.hashes),
            self.attempt_loader,
            task_loader=self.task_loader,
            loaded_benchmarks=set(self.loaded_benchmarks),
        )

    def for_worker(self) -> Known:
        """What a validation worker process needs, small to send: names, scoring and prices, no definition rows
        and no database. A file validated against it keeps every definition it makes, even one the database
        already has; the writer drops the identical ones and refuses conflicting ones (``commit_prepared``). A worker
        cannot read the database, so every stored task is read first."""
        self.ensure_tasks(None)
        return Known(dict(self.benchmarks), dict(self.runs), set(self.tasks), {}, {}, dict(self.hashes))

    def existing_attempt(self, key: tuple[str, str, int]) -> int | None:
        """The database id of attempt ``key``, loading the run's keys on first use."""
        run_id = key[0]
        if self.attempt_loader is not None and run_id not in self.loaded_runs:
            self.loaded_runs.add(run_id)
            for (task_id, sample), attempt_id in self.attempt_loader(run_id).items():
                self.attempts[(run_id, task_id, sample)] = attempt_id
        return self.attempts.get(key)
