"""ui/background.py: a job's heavy imports are finished before its thread starts, so no other thread sees them
half-initialised (a torch import in a fit's thread made another page's scipy.stats import fail)."""

from __future__ import annotations

import sys
import threading

from ui import background


def test_modules_to_import_first_are_whole_before_the_jobs_thread_runs() -> None:
    name = "colorsys"  # a small standard module nothing else here imports
    sys.modules.pop(name, None)
    seen: dict[str, bool] = {}
    release = threading.Event()

    def job(*, progress: object) -> None:
        seen["imported_when_the_thread_ran"] = name in sys.modules
        release.wait(10)

    key = "test-import-first"
    try:
        started = background.start(key, job, import_first=(name,))
        # start() has returned: the module is already whole, whatever the job's thread is doing
        assert name in sys.modules and hasattr(sys.modules[name], "rgb_to_hls")
        release.set()
        assert started.thread is not None
        started.thread.join(10)
        assert seen == {"imported_when_the_thread_ran": True}
        assert started.error is None and started.is_done
    finally:
        release.set()
        background.forget(key)
