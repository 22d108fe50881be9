"""The writer lock of a database file: one writer session at a time, across processes and threads.

Why a lock of our own: DuckDB locks its file with POSIX ``fcntl`` record locks, which the kernel drops as soon as
the process closes *any* handle on that file -- copying the primary to publish its snapshot did exactly that, and
let the next writer in while the first was still publishing (issue 19). ``flock`` locks belong to one open file
description instead, so nothing else the process opens or closes can release them, and the kernel drops them
when the holder dies (a SIGKILLed writer never leaves a stale lock).

Files next to ``<db>`` (never opened by DuckDB):

* ``<db>.lock``   held exclusively (``LOCK_EX``) for a whole writer session, publish included;
* ``<db>.queue``  held shared (``LOCK_SH``) by every writer that waits for the lock and declared a short session;
  the holder probes it to learn whether such a writer is queued behind it (see ``store.backends.file`` on batching);
* ``<db>.queue-long``  the same for waiting writers that did not declare a short session.

Within one process, sessions on the same file are serialised by a re-entrant thread lock first: another thread
waits its turn, the same thread may nest sessions (only the outermost one holds the file lock).
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

POLL_MAX_S = 0.05  # longest sleep between two tries: a queued writer starts at most this late after a hand-over


class LockTimeout(Exception):
    """The lock stayed held by someone else for the whole wait (``store.backends.file`` raises DatabaseBusyError)."""


def lock_path(db_path: Path) -> Path:
    """The file ``flock``-ed by the writer session of ``db_path``."""
    return db_path.with_name(db_path.name + ".lock")


def queue_path(db_path: Path, *, is_short: bool = True) -> Path:
    """The file on which writers waiting for the lock hold a shared lock (one for short sessions, one for others)."""
    return db_path.with_name(db_path.name + (".queue" if is_short else ".queue-long"))


@dataclass
class _Holder:
    """This process's state for one database file."""

    thread_lock: threading.RLock = field(default_factory=threading.RLock)
    fd: int | None = None  # the open ``<db>.lock`` while this process holds it
    depth: int = 0  # nested sessions of the owning thread
    owner: int | None = None  # thread ident of the session's thread
    publish_requested: bool = False  # set by ``store.publish`` inside the session


_HOLDERS: dict[str, _Holder] = {}
_HOLDERS_GUARD = threading.Lock()


def _reset_after_fork() -> None:
    # A forked child must not believe it holds its parent's lock (the holding thread is not in the child): it starts
    # with no holders and waits for the parent like anyone. Its copy of the parent's lock fd is closed, or the lock
    # would outlive the parent's release for as long as the child lives (flock belongs to the open file description).
    for state in _HOLDERS.values():
        if state.fd is not None:
            os.close(state.fd)
    _HOLDERS.clear()


os.register_at_fork(after_in_child=_reset_after_fork)


def holder(db_path: Path) -> _Holder:
    """The process-wide state of ``db_path`` (created on first use)."""
    key = os.path.realpath(db_path)
    with _HOLDERS_GUARD:
        return _HOLDERS.setdefault(key, _Holder())


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)


def _try_flock(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def acquire(db_path: Path, *, wait_s: float, queue: bool) -> _Holder:
    """Enter a writer session on ``db_path``: wait (polling) until this thread holds the lock.

    Args:
        db_path: the primary database file.
        wait_s: how long to wait for another process or thread before giving up.
        queue: announce this session as short while waiting (a holder that ends meanwhile may leave its
            publish to it); otherwise it is announced as a long one (which keeps holders from leaving theirs).

    Raises:
        LockTimeout: the lock was still held by someone else after ``wait_s``.
    """
    state = holder(db_path)
    deadline = time.monotonic() + wait_s
    if not state.thread_lock.acquire(timeout=max(wait_s, 0.0)):
        raise LockTimeout(str(db_path))
    if state.depth:  # this thread already holds the session: nest
        state.depth += 1
        return state
    try:
        state.fd = _wait_for_flock(db_path, deadline, queue=queue)
    except BaseException:
        state.thread_lock.release()
        raise
    state.depth, state.owner, state.publish_requested = 1, threading.get_ident(), False
    return state


def _wait_for_flock(db_path: Path, deadline: float, *, queue: bool) -> int:
    fd = _open(lock_path(db_path))
    queue_fd = None
    try:
        if _try_flock(fd, fcntl.LOCK_EX):
            return fd
        queue_fd = _open(queue_path(db_path, is_short=queue))
        fcntl.flock(queue_fd, fcntl.LOCK_SH)  # a holder's probe keeps it exclusive for microseconds only
        delay = 0.002
        while not _try_flock(fd, fcntl.LOCK_EX):
            if time.monotonic() > deadline:
                raise LockTimeout(str(db_path))
            time.sleep(delay)
            delay = min(delay * 2, POLL_MAX_S)
        return fd
    except BaseException:
        os.close(fd)
        raise
    finally:
        if queue_fd is not None:
            os.close(queue_fd)  # no longer waiting: stop counting as queued


def try_acquire(db_path: Path) -> _Holder | None:
    """Enter a session only if nobody holds or waits for the lock right now (never waits itself); else None."""
    state = holder(db_path)
    if not state.thread_lock.acquire(blocking=False):
        return None
    if state.depth:
        state.thread_lock.release()
        return None
    fd = None
    try:
        fd = _open(lock_path(db_path))
        is_free = (
            _try_flock(fd, fcntl.LOCK_EX) and not has_waiters(db_path) and not has_waiters(db_path, is_short=False)
        )
    except BaseException:
        is_free = False
        if fd is None:  # could not even open the lock file (a read-only folder): let the caller see why
            state.thread_lock.release()
            raise
    if not is_free:
        os.close(fd)
        state.thread_lock.release()
        return None
    state.fd, state.depth, state.owner, state.publish_requested = fd, 1, threading.get_ident(), False
    return state


def release(state: _Holder) -> None:
    """Leave the session entered by ``acquire``/``try_acquire`` (the file lock goes with the outermost one)."""
    state.depth -= 1
    if state.depth == 0 and state.fd is not None:
        os.close(state.fd)  # closing the only handle drops the flock
        state.fd, state.owner = None, None
    state.thread_lock.release()


def held_here(db_path: Path) -> _Holder | None:
    """The session state when the calling thread is inside a writer session of ``db_path``, else None."""
    state = holder(db_path)
    return state if state.depth and state.owner == threading.get_ident() else None


def has_waiters(db_path: Path, *, is_short: bool = True) -> bool:
    """True while some writer that declared a short session (or, with ``is_short=False``, another one) waits for
    the lock of ``db_path``."""
    fd = _open(queue_path(db_path, is_short=is_short))
    try:
        if _try_flock(fd, fcntl.LOCK_EX):
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        return True
    finally:
        os.close(fd)
