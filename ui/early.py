"""The store opened while the app imports the rest (issue 33: app start-up within 2 s).

A server's first run of app.py imports pandas, the analytics and their libraries (0.4-0.5 s on a quiet machine) and
then opens the store: on a lake, a DuckDB instance loading the DuckLake and SQLite extensions and the attachment of
the newest snapshot (0.2-0.3 s wall quiet, more when loaded; most of its CPU in DuckDB's own threads, outside the
interpreter lock). Measured gain: 0.0-0.15 s of a 1.4-1.7 s first run (BENCHMARKS.md, "Start-up and the page shell,
fourth pass"). app.py calls
``open_store`` right after importing the store package, so that open runs in a thread of its own while the main
thread imports; the shell calls ``wait`` before it touches the store, so nothing else reads or writes the store
while the thread works. The reader it opened is kept by the store (a lake's snapshot attachment is shared by every
reader of that snapshot), so the page's first read finds it ready.

Once per process and store location: later runs (every rerun executes app.py) start nothing. The thread's error,
if any, is not reported here: the shell opens the same store right after and shows that error on the page.
"""

from __future__ import annotations

import threading

import store as rdb

_THREADS: dict[str, threading.Thread] = {}
_GUARD = threading.Lock()


def _open(location: str) -> None:
    try:
        with rdb.reader(location):
            pass
    except Exception:  # noqa: BLE001 (the shell's own open of the same store reports it on the page)
        return


def open_store(location: str | None = None) -> threading.Thread | None:
    """Start opening the store (``RUNLENS_DB``, else the default) in a background thread, once per process and
    location; the thread when this call started it, else None."""
    where = str(rdb.resolve_db_path(location))
    with _GUARD:
        if where in _THREADS:
            return None
        thread = _THREADS[where] = threading.Thread(target=_open, args=(where,), name="runlens-open-store", daemon=True)
    thread.start()
    return thread


def wait(location: str | None = None) -> None:
    """Return when the early open of this store (if one was started) has finished."""
    thread = _THREADS.get(str(rdb.resolve_db_path(location)))
    if thread is not None and thread is not threading.current_thread():
        thread.join()
