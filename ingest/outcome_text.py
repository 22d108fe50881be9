"""A file's ingest outcome in words: the command line's line per file, and the notes the Upload page repeats."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ingest.pipeline import FileResult


def describe(result: FileResult) -> str:
    """One line (or the error lines) for a file's outcome."""
    if result.outcome == "duplicate" and result.n_already:
        return f"{result.path}: every span of its {result.n_already} trace(s) is stored already; nothing added"
    if result.outcome == "duplicate":
        return f"{result.path}: already ingested (identical content as {result.duplicate_of}); nothing added"
    if result.outcome == "failed":
        return f"{result.error}\n{result.path}: not ingested; nothing written"
    line = (
        f"{result.path}: ingested as {result.format}: {result.n_runs} runs, {result.n_tasks} tasks, "
        f"{result.n_attempts} attempts, {result.n_steps} steps in {result.seconds:.2f} s"
    )
    if result.n_merged or result.n_already:
        from ingest.otlp.filemerge import merge_note

        line += f"; {merge_note(result.n_merged, result.n_already)}"
    line += f"; {rescore_note(result)}" if result.rescored_runs else ""
    return line + "".join(f"; {note}" for note in result.retries)


def rescore_note(result: FileResult) -> str:
    """What a re-scored log did, in words (the CLI line and the Upload page say it)."""
    runs = ", ".join(result.rescored_runs)
    return (
        f"re-scored run {runs}: the scores of {result.n_rescored} stored attempts replaced by a new revision "
        "(the earlier scores are kept in history: tables scores, score_revisions)"
    )
