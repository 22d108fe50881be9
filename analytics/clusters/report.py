"""Failure clusters as people read them: the page's table, each cluster's size per run, the CLI's JSON and text
report (names, evidence and trends are computed in ``compute_summary``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from analytics import formatting as fmt
from analytics.clusters.compute_summary import Clusters


def cut_at_word(text: str, most: int) -> str:
    """``text`` in at most ``most`` characters: whole when it fits, else cut after its last whole phrase (`` · ``
    separates a name's key phrases) or, when no phrase fits, at the last space before the limit (never inside a
    word), without a dangling separator, and ended by an ellipsis. A first word longer than the limit is the only
    one cut inside."""
    if len(text) <= most:
        return text
    head = text[: max(most - 1, 1)]
    phrase = (head + " ").rfind(" · ")
    if phrase > 0:
        head = head[:phrase]
    elif not text[len(head)].isspace():  # the limit falls inside a word: back to the space before it
        space = head.rfind(" ")
        head = head[:space] if space > 0 else head
    return head.rstrip(" ·:;,-|") + "…"


def by_run_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """Long frame (cluster_id, label, run_id, n_attempts) of each cluster's size per run."""
    rows = [
        (int(r.cluster_id), r.label, run, int(n)) for r in summary.itertuples() for run, n in dict(r.by_run).items()
    ]
    return pd.DataFrame(rows, columns=["cluster_id", "label", "run_id", "n_attempts"])


def display_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The clusters as people read them: named columns, the share in %, codes and terms as text, no None (the
    LLM label column only when some cluster has one)."""
    out = pd.DataFrame(
        {
            "Cluster": summary["cluster_id"].astype(int),
            "Key phrases": summary["label"],
            "LLM label": summary.get("llm_label"),
            "Failed attempts": summary["n_attempts"].astype(int),
            "Share of failures (%)": (100 * summary["share_of_failures"]).round(1),
            "Trend over versions": summary["trend"].map(lambda t: t or fmt.MISSING),
            "Error codes (attempts)": summary["codes"].map(lambda c: ", ".join(f"{k} {v}" for k, v in c.items())),
            "Distinctive terms": summary["terms"].map(", ".join),
        }
    )
    if out["LLM label"].isna().all():
        out = out.drop(columns="LLM label")
    else:
        out["LLM label"] = out["LLM label"].fillna(fmt.MISSING)
    return out


def to_json(clusters: Clusters) -> dict[str, Any]:
    """The JSON document of ``python -m analytics clusters --json``."""
    out = []
    for r in clusters.summary.itertuples():
        m = clusters.members[clusters.members["cluster_id"] == r.cluster_id]
        out.append(
            {
                "cluster_id": int(r.cluster_id),
                "label": r.label,
                "llm_label": getattr(r, "llm_label", None),
                "terms": list(r.terms),
                "phrases": list(r.phrases),
                "n_attempts": int(r.n_attempts),
                "share_of_failures": round(float(r.share_of_failures), 6),
                "by_run": r.by_run,
                "share_by_run": r.share_by_run,
                "share_by_version": r.share_by_version,
                "trend": r.trend,
                "representatives": [
                    {"run_id": x["run_id"], "task_id": x["task_id"], "sample": int(x["sample"])}
                    for x in r.representatives
                ],
                "codes": r.codes,
                "attempts": [
                    {"run_id": a.run_id, "task_id": a.task_id, "sample": int(a.sample)} for a in m.itertuples()
                ],
            }
        )
    return {"model": clusters.model, "n_failures": clusters.n_failures, "clusters": out}


def text_report(clusters: Clusters) -> str:
    """One line per cluster: id, size, share of failures, name (and LLM label)."""
    lines = []
    for r in clusters.summary.itertuples():
        named = f"{r.label}  ({r.llm_label})" if getattr(r, "llm_label", None) else r.label
        trend = f"  [{r.trend}]" if r.trend else ""
        lines.append(f"{r.cluster_id:>3}  {r.n_attempts:>5}  {r.share_of_failures:6.1%}  {named}{trend}")
    return "\n".join(lines)
