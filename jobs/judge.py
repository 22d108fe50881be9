"""The LLM-judge job: select attempts, judge them concurrently (``analytics.judge.judge_one``), and keep verdicts,
judge failures and AD-Bench labels through the one writer in batches, so an interrupted job resumes."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import duckdb
import pandas as pd

import store as rdb
from analytics import llm
from analytics.judge import Outcome, judge_one, load_prompt, select_attempts, trajectories
from store import derived

FLUSH_EVERY = 20  # verdicts per commit: what an interruption can lose at most


@dataclass(frozen=True)
class JudgeSummary:
    """Counts of one judge job."""

    prompt_version: str
    model: str
    n_selected: int
    n_cached: int
    n_judged: int
    n_failed: int
    n_labels: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    is_interrupted: bool = False


def store_outcomes(
    con: duckdb.DuckDBPyConnection, outcomes: Sequence[Outcome], *, prompt_version: str, cfg: llm.LLMConfig
) -> None:
    """Write verdicts/failures and judge labels of a batch in one transaction (replacing older ones)."""
    if not outcomes:
        return
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    derived.replace_judge_outcomes(
        con,
        [
            {
                "attempt_id": o.attempt_id,
                "prompt_version": prompt_version,
                "model": cfg.model,
                "verdict": None if o.verdict is None else json.dumps(o.verdict),
                "is_failure": o.verdict is None,
                "failure": o.failure,
                "raw_output": o.raw_output,
                "input_tokens": o.input_tokens,
                "output_tokens": o.output_tokens,
                "cost_usd": cfg.cost_usd(o.input_tokens, o.output_tokens),
                "created_at": now,
                "labels": list(o.labels or []),
            }
            for o in outcomes
        ],
    )


def run_judge(
    db: str | None,
    *,
    benchmark: str,
    cfg: llm.LLMConfig,
    prompt_name: str = "adbench-stage1",
    run_id: str | None = None,
    is_failed_only: bool = False,
    limit: int | None = None,
    retry_failures: bool = False,
    show_progress: bool = False,
    client: Any = None,
) -> JudgeSummary:
    """Judge the selected attempts; completed verdicts are committed in batches, so a rerun resumes."""
    prompt = load_prompt(prompt_name)
    client = client or llm.make_client(cfg)
    path = rdb.resolve_db_path(db)
    with rdb.writer(path, publish_snapshot=False) as con:
        todo_df = select_attempts(
            con,
            benchmark=benchmark,
            run_id=run_id,
            is_failed_only=is_failed_only,
            limit=limit,
            prompt_version=prompt.version,
            model=cfg.model,
            retry_failures=retry_failures,
        )
        todo = todo_df[~todo_df["is_cached"]]
        texts = trajectories(con, todo["attempt_id"].tolist()) if prompt.name == "adbench-stage1" else {}
        done: list[Outcome] = []
        pending: list[Outcome] = []
        interrupted = False
        pool = ThreadPoolExecutor(max_workers=cfg.concurrency)
        try:
            futures: list[Future[Outcome]] = [
                pool.submit(judge_one, client, cfg, prompt, item, texts.get(int(item["attempt_id"]), ""))
                for item in todo.to_dict("records")
            ]
            for fut in _progress(as_completed(futures), total=len(futures), enabled=show_progress):
                pending.append(fut.result())
                if len(pending) >= FLUSH_EVERY:
                    store_outcomes(con, pending, prompt_version=prompt.version, cfg=cfg)
                    done.extend(pending)
                    pending = []
        except KeyboardInterrupt:
            interrupted = True
            pool.shutdown(wait=False, cancel_futures=True)
        finally:
            store_outcomes(con, pending, prompt_version=prompt.version, cfg=cfg)
            done.extend(pending)
            pool.shutdown(wait=not interrupted, cancel_futures=True)
            rdb.publish(con, path)
    return _summary(prompt.version, cfg, todo_df, done, interrupted)


def _progress(it: Any, *, total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(it, total=total, disable=not enabled, desc="judging", unit="attempt", file=sys.stderr)


def _summary(
    version: str, cfg: llm.LLMConfig, todo: pd.DataFrame, done: Sequence[Outcome], interrupted: bool
) -> JudgeSummary:
    tin = sum(o.input_tokens for o in done)
    tout = sum(o.output_tokens for o in done)
    return JudgeSummary(
        prompt_version=version,
        model=cfg.model,
        n_selected=len(todo),
        n_cached=int(todo["is_cached"].sum()),
        n_judged=sum(o.verdict is not None for o in done),
        n_failed=sum(o.verdict is None for o in done),
        n_labels=sum(len(o.labels) for o in done),
        input_tokens=tin,
        output_tokens=tout,
        cost_usd=cfg.cost_usd(tin, tout),
        is_interrupted=interrupted,
    )
