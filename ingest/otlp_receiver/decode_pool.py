"""The worker processes that decode request bodies, so that a large body's parse never holds the receiver's
interpreter lock."""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from ingest.otlp_receiver.buffer import Prepared
from ingest.otlp_receiver.payload import prepare_payload
from store import RunlensError

log = logging.getLogger("runlens.otlp")


class DecodePool:
    """Worker processes that decode request bodies (``prepare_payload``): a 26 MB JSON body's parse holds the
    interpreter lock for its whole length, which in a thread would keep ``/health`` waiting. A worker that dies
    (out of memory) is replaced; its request gets 503."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: Any = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the workers (spawned: the receiver has threads, which a fork would copy mid-flight)."""
        import concurrent.futures
        import multiprocessing

        with self._lock:
            if self._pool is None:
                context = multiprocessing.get_context("spawn")
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    self.workers, mp_context=context, initializer=_exit_with_parent, initargs=(os.getpid(),)
                )
                for _ in range(self.workers):  # imported now, not at the first request
                    self._pool.submit(_warm)

    def stop(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None

    def prepare(self, body: bytes, ctype: str, encoding: str, max_bytes: int) -> list[Prepared]:
        """``prepare_payload`` in a worker (raises its BadSpan); BusyError when the worker died."""
        from concurrent.futures.process import BrokenProcessPool

        self.start()
        try:
            return self._pool.submit(prepare_payload, body, ctype, encoding, max_bytes).result()  # type: ignore[no-any-return]
        except BrokenProcessPool:
            log.error("a decoding worker died (out of memory?): restarting the workers")
            with self._lock:
                self._pool = None
            raise BusyError("the request could not be decoded (a worker died): retry later") from None


class BusyError(RunlensError):
    """The receiver cannot take the request now (HTTP 503, gRPC UNAVAILABLE): exporters retry."""


def _exit_with_parent(parent: int) -> None:
    """A decoding worker's initializer: it ends when the receiver is gone (killed with SIGKILL, the pool cannot tell
    its workers), instead of living on as an orphan holding its memory."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _warm() -> None:
    """Nothing: a worker's first task, so that it has imported the receiver's modules before a request comes."""
