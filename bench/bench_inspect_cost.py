"""What pricing an Inspect log's model calls costs at ingest: a log with many cached calls, written by inspect-ai.

Writes (with the test-only virtualenv's inspect-ai, mockllm, offline) one ``.eval`` of ``--samples`` samples of
``--calls`` model calls each, every call 1,000 input tokens with 800 read from the prompt cache, served by
``gpt-4o-mini`` (the catalog prices it); then runs ``python -m ingest`` on it ``--repeat`` times, each into a fresh
database, and prints the CPU seconds of each run (user + system, the process and its children) and what was stored.

    python bench/bench_inspect_cost.py --work /tmp/w [--samples 300] [--calls 10] [--repeat 3]

Compare with the same command on a checkout before the pricing (``--root`` of that checkout).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
INSPECT_PYTHON = ROOT / ".venv-inspect" / "bin" / "python"

WRITER = textwrap.dedent(
    """
    import sys
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import Generate, TaskState, solver

    out, n, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    SERVED = "gpt-4o-mini-2024-07-18"

    def answer(i):
        message = ChatMessageAssistant(content="blue", model=SERVED, source="generate")
        o = ModelOutput(model=SERVED, choices=[ChatCompletionChoice(message=message, stop_reason="stop")])
        o.usage = ModelUsage(input_tokens=200 + i % 50, output_tokens=20, total_tokens=1020 + i % 50,
                             input_tokens_cache_read=800)
        return o

    @solver
    def turns():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            for _ in range(calls):
                state = await generate(state)
            return state
        return solve

    dataset = [Sample(id=f"s{i}", input="q", target="blue") for i in range(n)]
    model = get_model("mockllm/model", custom_outputs=[answer(i) for i in range(n * calls)], memoize=False)
    eval(Task(name="cached", dataset=dataset, solver=turns(), scorer=includes()), model=model, log_dir=out,
         display="none", max_samples=4)
    """
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose ingest is measured")
    args = parser.parse_args()
    logs = args.work / "logs"
    if not any(logs.glob("*.eval")):
        subprocess.run(
            [str(INSPECT_PYTHON), "-c", WRITER, str(logs), str(args.samples), str(args.calls)], check=True, timeout=3600
        )
    log = next(logs.glob("*.eval"))
    for i in range(args.repeat):
        db = args.work / f"run{i}.duckdb"
        db.unlink(missing_ok=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [sys.executable, "-m", "ingest", "--db", str(db), str(log)],
            cwd=args.root,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},  # leaves the other checkout as it is
            check=True,
            capture_output=True,
            timeout=3600,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        con = duckdb.connect(str(db), read_only=True)
        try:
            stored = con.execute("SELECT count(*), sum(input_tokens), sum(cost_usd) FROM attempts").fetchone()
        finally:
            con.close()
        print(f"run {i}: {cpu:.2f} CPU s; attempts, input tokens, cost: {stored}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
