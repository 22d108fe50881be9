"""judge: LLM-as-a-judge over stored attempts (AD-Bench Stage 1, xbench 1-5, GEM-Bench 0/30/60/90).

Pipeline per selected attempt:
    1. deterministic answer check (no LLM): numbers equal after AD-Bench report normalisation (no thousands
       separators or units, two decimals), else exact / normalised string match (LiveAgentBench's method);
    2. the cache: a verdict for (attempt, prompt version, model) already in ``judge_verdicts`` is reused, which is
       also how an interrupted job resumes;
    3. the prompt (versioned file under analytics/prompts/) with trajectory, query and answer fenced as untrusted;
    4. the chat call (analytics.llm: bounded concurrency, timeouts, backoff on 429/5xx);
    5. strict parsing; one repair request; anything still invalid is stored as a judge failure, never a verdict;
    6. verdicts go to ``judge_verdicts`` (model, prompt version, tokens, cost); AD-Bench error labels go to
       ``error_labels`` with source = 'judge' (the job that selects, judges concurrently and stores in
       resumable batches is ``jobs/judge.py``; this module only reads and computes).

Modules by role: ``load`` (prompts, the attempts to judge, their trajectories, stored verdicts: the only queries)
and ``compute`` (answer checks, output parsing, judging one attempt). This package re-exports their public names:
``from analytics import judge``.
"""

from __future__ import annotations

from analytics.judge.compute import (
    ADBENCH_CODES,
    GEM_LEVELS,
    MAX_FIELD_CHARS,
    MAX_RESULT_CHARS,
    MAX_TRAJECTORY_CHARS,
    PARSERS,
    REPAIR_HINT,
    STAGE1_FLAGS,
    AnswerCheck,
    JudgeOutputError,
    Outcome,
    Prompt,
    check_answer,
    cut_text,
    fence_safe,
    gem_score,
    judge_one,
    labels_from_stage1,
    normalise_number,
    normalise_text,
    parse_adbench,
    parse_gem,
    parse_xbench,
)
from analytics.judge.compute import (
    _fields as _fields,
)
from analytics.judge.load import (
    PROMPT_DIR,
    PROMPT_FILES,
    SELECT_SQL,
    judge_status,
    load_prompt,
    select_attempts,
    trajectories,
)

__all__ = [
    "ADBENCH_CODES",
    "AnswerCheck",
    "GEM_LEVELS",
    "JudgeOutputError",
    "MAX_FIELD_CHARS",
    "MAX_RESULT_CHARS",
    "MAX_TRAJECTORY_CHARS",
    "Outcome",
    "PARSERS",
    "PROMPT_DIR",
    "PROMPT_FILES",
    "Prompt",
    "REPAIR_HINT",
    "SELECT_SQL",
    "STAGE1_FLAGS",
    "check_answer",
    "cut_text",
    "fence_safe",
    "gem_score",
    "judge_one",
    "judge_status",
    "labels_from_stage1",
    "load_prompt",
    "normalise_number",
    "normalise_text",
    "parse_adbench",
    "parse_gem",
    "parse_xbench",
    "select_attempts",
    "trajectories",
]
