"""search, reported: how a result was computed, the hit marked in its snippet, the JSON and the text
report."""

from __future__ import annotations

from typing import Any

import pandas as pd

from analytics.search.compute import SearchResult


def how_searched(result: SearchResult) -> str:
    """One sentence on how the result was computed, and what would make it faster."""
    if result.is_indexed:
        rest = f"; {result.n_unindexed:,} attempts ingested since were scanned" if result.n_unindexed else ""
        stop = ""
        if not result.is_count_exact:
            stop = (
                " It stopped once its page was full, so the counts are of what it read: "
                f"{count_text(result)} (`--count-all` on the command line reads everything)."
            )
        return f"Read through the search index{rest} (refresh it with `python -m analytics search-index`).{stop}"
    scanned = "Scanned every transcript"
    stop = ""
    if not result.is_count_exact:
        scanned = "Scanned the transcripts run by run in the order hits are listed"
        stop = (
            f" It stopped once its page was full, so the counts are of what it read: {count_text(result)} "
            "(`--count-all` on the command line reads everything)."
        )
    if result.mode == "regex":
        return f"{scanned} (regular-expression searches always scan).{stop}"
    if result.scan_reason:
        return f"{scanned}: {result.scan_reason}.{stop}"
    return (
        f"{scanned}: this store has no search index. On a file store or a local lake, "
        "`python -m analytics search-index` builds one beside the database; phrase and word searches then read it."
        + stop
    )


def count_text(result: SearchResult) -> str:
    """The attempts found, as a reader should take them: exact, or at least what was read and about how many."""
    if result.is_count_exact:
        return f"{result.n_attempts:,} attempts"
    about = result.n_attempts_estimate if result.n_attempts_estimate is not None else result.n_attempts
    return f"at least {result.n_attempts:,} attempts (about {about:,}, estimated from the part read)"


def marked(snippet: str, start: int, length: int) -> str:
    """The snippet with its match between ``⟦`` and ``⟧``: a plain-text highlight (no markup from the log)."""
    return snippet[:start] + "⟦" + snippet[start : start + length] + "⟧" + snippet[start + length :]


def to_json(result: SearchResult) -> dict[str, Any]:
    """The JSON document of ``python -m analytics search --json``."""
    hits = [
        {
            "run_id": r.run_id,
            "task_id": r.task_id,
            "sample": int(r.sample),
            "step": None if pd.isna(r.step) else int(r.step),
            "field": r.field,
            "snippet": r.snippet,
        }
        for r in result.hits.itertuples()
    ]
    return {
        "query": result.query,
        "mode": result.mode,
        "n_attempts": result.n_attempts,
        "n_hits": result.n_hits,
        # false: the search stopped with its page full; the counts are then lower bounds, the estimate extrapolates
        "is_count_exact": result.is_count_exact,
        "n_attempts_estimate": result.n_attempts_estimate,
        "hits": hits,
    }


def text_report(result: SearchResult) -> str:
    """One line per hit (tab-separated), after a count line."""
    if result.is_count_exact:
        head = f"{result.n_attempts:,} attempts, {result.n_hits:,} hits ({len(result.hits):,} listed)"
    else:
        head = f"{count_text(result)}, at least {result.n_hits} hits ({len(result.hits)} listed)"
    lines = [head]
    for r in result.hits.itertuples():
        step = "answer" if pd.isna(r.step) else f"step {int(r.step)}"
        lines.append(f"{r.run_id}\t{r.task_id}\t{int(r.sample)}\t{step} {r.field}\t{r.snippet}")
    return "\n".join(lines)
