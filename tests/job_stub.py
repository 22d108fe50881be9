"""``python -m tests.job_stub``: a job's process for the budget tests (tests/test_job_budget.py), started as the
server starts the IRT fit and the clusters job: it caps itself with the limit it was granted, reports that limit,
then waits ``sleep_s`` (a test may kill it meanwhile) and says ``done``."""

from __future__ import annotations

import resource
import sys
import time

from jobs import worker_process


def main() -> int:
    request, say = worker_process.channel()
    worker_process.limit(int(request["memory_bytes"]), 60, say, "the stub's CPU limit")
    worker_process.watch_parent(int(request.get("parent_pid") or 0))
    say(fraction=0.5, message=f"address space {resource.getrlimit(resource.RLIMIT_AS)[0]}")
    time.sleep(float(request.get("sleep_s", 0.0)))
    say(done=resource.getrlimit(resource.RLIMIT_AS)[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
