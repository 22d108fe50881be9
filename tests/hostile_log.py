"""A native log whose every string field holds Markdown, HTML and URL payloads aimed at a local beacon server."""

from __future__ import annotations

import json
from pathlib import Path


def payload(beacon: str, tag: str) -> str:
    """Text that would fetch ``beacon`` or become a link if any page rendered it as Markdown or HTML."""
    return (
        f'{tag} ![x]({beacon}/img-{tag}.png) <a href="{beacon}/a-{tag}">link</a> '
        f'<img src="{beacon}/tag-{tag}.png"> {beacon}/bare-{tag} www.example.com :red[{tag}] $x$ =1+1'
    )


def write_hostile_log(path: Path, beacon: str) -> Path:
    """Write the log (two runs, a human baseline, two tasks, steps, error labels, judge text) to ``path``."""
    p = lambda tag: payload(beacon, tag)  # noqa: E731 - a short alias keeps the records readable
    bench = p("bench")
    records: list[dict] = [
        {"record": "benchmark", "benchmark": bench, "version": p("ver"), "scoring": "binary", "pass_threshold": 1.0},
    ]
    for t in ("t1", "t2"):
        records.append(
            {
                "record": "task",
                "benchmark": bench,
                "task_id": p(t),
                "level": p(f"level-{t}"),
                "category": p(f"cat-{t}"),
                "capabilities": [p(f"cap-{t}")],
                "human_minutes": 5,
                "query": p(f"query-{t}"),
                "reference_answer": p(f"ref-{t}"),
                "reference_trajectory": [p("tool-a"), p("tool-b")],
            }
        )
    runs = [("r1", "llm", "2026-01-10"), ("r2", "llm", "2026-02-10"), ("rh", "human", "2026-01-05")]
    for r, kind, date in runs:
        records.append(
            {
                "record": "run",
                "run_id": p(r),
                "benchmark": bench,
                "agent": p(f"agent-{r}"),
                "family": p(f"family-{r}"),
                "agent_version": p(f"version-{r}"),
                "kind": kind,
                "eval_date": date,
                "judge": p(f"judge-{r}"),
                "price_input_per_mtok": 1.0,
                "price_output_per_mtok": 4.0,
            }
        )
        for i, t in enumerate(("t1", "t2")):
            passed = {"r1": (True, False), "r2": (False, True), "rh": (True, True)}[r][i]  # r1 -> r2 flips both
            records.append(
                {
                    "record": "attempt",
                    "run_id": p(r),
                    "task_id": p(t),
                    "sample": 0,
                    "score": 1.0 if passed else 0.0,
                    "passed": passed,
                    "answer": p(f"answer-{r}-{t}"),
                    "input_tokens": 1000,
                    "output_tokens": 200,
                    "cost_usd": 0.01 * (1 + i),
                    "latency_s": 3.0,
                    "status": "completed",
                    "errors": [] if passed else ["TE", p("code")],
                    "judge": {"result_correct": passed, "brief_reason": p(f"reason-{r}-{t}")},
                    "steps": [
                        {
                            "round": 1,
                            "kind": "tool_call",
                            "tool": p("tool-a"),
                            "args": {"q": p("arg")},
                            "result": p("result"),
                        },
                        {"round": 2, "kind": "final", "content": p(f"final-{r}-{t}")},
                    ],
                }
            )
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path
