"""One memory budget for the server and every process it starts, the job processes included (ingest/workers.py):
a job's process starts with the limit the budget grants, holds it while it runs and gives it back when it ends or
dies; a job the budget cannot hold waits or is refused with the budget, what it needs and the setting that raises
it; an upload still gets a worker while a job runs when the budget holds both. The jobs here are a stub
(tests/job_stub.py) started exactly as the server starts the IRT fit and the clusters job."""

from __future__ import annotations

import itertools
import resource
import time
from collections.abc import Iterator

import pytest

from ingest import workers
from jobs import worker_process
from ui import background

MB = 1024 * 1024
SERVER = 500 * MB  # the server's resident memory, held still for the arithmetic
_keys = itertools.count()


@pytest.fixture(autouse=True)
def budget(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """The server's budget switched on (the app does it in a `streamlit run` server), its resident memory fixed."""
    monkeypatch.setattr(workers, "server_rss_bytes", lambda: SERVER)
    monkeypatch.setattr(workers, "_trim_heap", lambda: False)
    yield workers.use_budget
    workers.use_budget(None)
    assert workers.jobs_running() == 0 and workers.running() == 0  # nothing leaked past a test


def stub(want_mb: int, min_mb: int, sleep_s: float = 0.0) -> dict[str, object]:
    return {
        "memory_bytes": want_mb * MB,
        "min_memory_bytes": min_mb * MB,
        "job": "The stub job",
        "memory_setting": "RUNLENS_STUB_WORKER_MB",
        "sleep_s": sleep_s,
    }


def start(request: dict[str, object]) -> background.Job:
    return background.start_process(f"budget-test-{next(_keys)}", "tests.job_stub", request)


def finish(job: background.Job) -> background.Job:
    assert job.thread is not None
    job.thread.join(timeout=60)
    assert job.is_done
    background.forget(job.key)
    return job


def test_a_job_the_budget_cannot_hold_is_refused_at_once_naming_the_budget() -> None:
    workers.use_budget(SERVER + workers.WORKER_MEMORY_BYTES + 1000 * MB)  # 1,000 MB left for jobs
    job = start(stub(4096, 2048))
    assert job.is_done and job.process is None  # never started
    assert job.error is not None
    for words in ("The stub job was not started", "at least 2,048 MB", "memory budget of 2,524 MB"):
        assert words in job.error
    assert "RUNLENS_MEMORY_BUDGET_MB" in job.error and "RUNLENS_STUB_WORKER_MB" in job.error
    background.forget(job.key)


def test_a_job_starts_with_the_limit_the_budget_grants_and_gives_it_back() -> None:
    left = 1800 * MB  # for jobs, after the server and the room kept for an upload
    workers.use_budget(SERVER + workers.WORKER_MEMORY_BYTES + left)
    job = start(stub(8192, 1024, sleep_s=0.5))
    assert job.process is not None and job.error is None
    assert workers.jobs_running() == 1
    finish(job)
    assert job.error is None, job.error
    assert job.fraction == 1.0 and job.message == f"address space {left}"  # less than its cap of 8 GB: all there was
    assert workers.jobs_running() == 0 and workers.held_bytes() == 0

    workers.use_budget(SERVER + workers.WORKER_MEMORY_BYTES + workers.JOB_ROOM_BYTES + 2000 * MB)
    job = finish(start(stub(8192, 1024)))
    assert job.message == f"address space {2000 * MB}"  # room kept for another job's process when it can


def test_a_second_job_waits_for_the_first_then_runs_or_is_refused_after_its_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workers.use_budget(SERVER + workers.WORKER_MEMORY_BYTES + 1500 * MB)  # one job of 1,024 MB at a time
    first = start(stub(1024, 1024, sleep_s=1.5))
    second = start(stub(1024, 1024))
    assert first.process is not None and second.process is None and not second.is_done
    for _ in range(40):  # the page shows why it waits
        if "is waiting for memory" in second.message:
            break
        time.sleep(0.05)
    assert "The stub job is waiting for memory: it needs at least 1,024 MB" in second.message
    assert finish(second).error is None, second.error  # it started once the first gave its share back
    assert first.is_done and first.error is None
    assert second.message == f"address space {1024 * MB}"

    monkeypatch.setattr(workers, "JOB_WAIT_S", 0.3)
    first = start(stub(1024, 1024, sleep_s=1.5))
    second = finish(start(stub(1024, 1024)))
    assert second.error is not None and "none came free within 0.3 s" in second.error
    assert "RUNLENS_MEMORY_BUDGET_MB" in second.error
    finish(first)


def test_a_killed_jobs_share_is_given_back_and_an_upload_gets_its_worker() -> None:
    workers.use_budget(SERVER + workers.WORKER_MEMORY_BYTES + 1500 * MB)
    job = start(stub(1024, 1024, sleep_s=120.0))
    assert job.process is not None and workers.jobs_running() == 1
    # an upload while the job runs: the budget keeps one worker's limit for it
    with workers.worker_slot("Checking the upload", wait_s=0.1, want_bytes=workers.WORKER_MEMORY_BYTES) as cap:
        assert cap == workers.WORKER_MEMORY_BYTES
    job.process.kill()
    finish(job)
    assert job.error is not None and "status -9" in job.error
    assert workers.jobs_running() == 0 and workers.held_bytes() == 0
    # the share is back: a job as large as the whole of what is left starts
    assert finish(start(stub(1500, 1500))).error is None


def test_the_command_lines_run_is_a_process_under_the_jobs_cap_without_a_budget() -> None:
    workers.use_budget(None)  # the command line: no server budget, the job's own cap
    said: list[str] = []
    done = worker_process.run("tests.job_stub", stub(1200, 1024), progress=lambda f, m: said.append(m))
    assert done == 1200 * MB and said == [f"address space {1200 * MB}"]
    assert resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY  # this process stays unbounded
    with pytest.raises(worker_process.JobFailed, match="status"):
        worker_process.run("tests.job_stub", {**stub(1200, 1024), "sleep_s": "x"})
    assert workers.jobs_running() == 0


def test_the_real_jobs_ask_the_budget_for_their_caps_and_name_themselves() -> None:
    from jobs import clusters_worker, irt

    requests = [
        irt.worker_request("db", benchmark="b", model="1pl"),
        clusters_worker.worker_request("db", benchmark="b", run_id=None),
    ]
    workers.use_budget(SERVER + workers.WORKER_MEMORY_BYTES + workers.JOB_ROOM_BYTES + 4096 * MB)
    for request in requests:
        held = worker_process.reserve(request, wait=False)
        assert held is not None
        assert held[1]["memory_bytes"] == min(int(request["memory_bytes"]), 4096 * MB)
        worker_process.release(held[0])
    workers.use_budget(SERVER + workers.WORKER_MEMORY_BYTES + 1024 * MB)  # below either job's minimum
    for request, name, setting in zip(
        requests,
        ("The IRT fit", "The failure clusters job"),
        ("RUNLENS_IRT_WORKER_MB", "RUNLENS_CLUSTERS_WORKER_MB"),
        strict=True,
    ):
        with pytest.raises(workers.JobRefused, match=f"{name} was not started: it needs at least") as refused:
            worker_process.reserve(request)
        assert setting in str(refused.value) and "RUNLENS_MEMORY_BUDGET_MB" in str(refused.value)
