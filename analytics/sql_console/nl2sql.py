"""Natural language to SQL: a prompt with the schema and the example gallery, sent to the configured OpenAI-compatible model; the answer is only ever run through the sandbox."""

from __future__ import annotations

import re
from typing import Any

from analytics.sql_console.schema import Example

NL_SYSTEM = """You write one DuckDB SQL query that answers the user's question about AI-agent evaluation runs.
Rules: exactly one read-only SELECT (WITH is fine); no file, URL or table-function access; prefer the friendly
views (v_attempts, v_runs, v_steps, v_tool_calls, v_errors, v_attempt_capabilities); give columns readable
names; round percentages to 1 decimal. Reply with the SQL only, in one ```sql fenced block.

Schema:
{schema}

Example queries:
{examples}"""


def nl_messages(question: str, *, schema: str, gallery: list[Example], max_examples: int = 6) -> list[dict[str, str]]:
    """Chat messages asking the model for SQL answering ``question``."""
    shots = "\n\n".join(f"-- {e.title}\n{e.sql}" for e in gallery[:max_examples])
    return [
        {"role": "system", "content": NL_SYSTEM.format(schema=schema, examples=shots)},
        {"role": "user", "content": question.strip()},
    ]


def extract_sql(text: str) -> str:
    """The SQL inside the model's reply (the first fenced block, else the whole text)."""
    match = re.search(r"```(?:sql|SQL)?\s*\n?(.*?)```", text, flags=re.DOTALL)
    return (match.group(1) if match else text).strip()


def ask_sql(question: str, *, schema: str, gallery: list[Example], client: Any = None, cfg: Any = None) -> str:
    """Ask the configured OpenAI-compatible model for SQL (returned for review; it is NOT run here).

    Raises:
        analytics.llm.LLMError: no endpoint configured, or the call failed.
    """
    from analytics import llm

    cfg = cfg or llm.require_config()
    client = client or llm.make_client(cfg)
    reply = llm.chat(client, cfg, nl_messages(question, schema=schema, gallery=gallery), max_tokens=800)
    return extract_sql(reply.text)
