"""Temporary folders named after the process that owns them, so that one left by a killed process is removed.

An ingest keeps the validated parts of large files (and its workers' files) in a ``runlens-ingest-*`` folder of
the system's temporary folder; the Upload page copies uploads to a ``runlens-upload-*`` folder. Both are deleted
when the work ends, but a process killed with SIGKILL (an out-of-memory kill, a CI timeout, a worker past its
time) deletes nothing. Each folder's name therefore carries its owner's process id and start time
(``runlens-ingest-p<pid>-s<start>-<random>``), and the next ingest or upload removes those whose owner is gone:
no process has that id, or the process with that id started at another time (the id was reused). The start time
is the kernel's (``/proc/<pid>/stat``); where there is none, a folder is kept while a process has its id. Process
ids are those of this machine's (or container's) process table: processes sharing a temporary folder across process
namespaces would see each other's folders as orphans, so give each its own ``TMPDIR``.
A demo load (`data/demo/build.py`) keeps its generated files in a ``runlens-demo-*`` folder named the same way.
Folders named before owners were recorded are removed when older than a day, as before.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ingest.records import Bundle

SPILL_PREFIX = "runlens-ingest-"  # an ingest's folder of validated parts waiting for the writer
MEMORY_PARENT = "/dev/shm"  # a memory-backed folder (tmpfs) where there is one: see ``memory_parent``
LEGACY_STALE_AFTER_S = 24 * 3600  # a folder without an owner in its name, this old, was left by a killed process
_OWNED = re.compile(r"p(\d+)-s(\w+)-")


def start_token(pid: int) -> str | None:
    """The start time of process ``pid`` as the kernel counts it (clock ticks since boot), as text; ``"na"`` where
    the system does not say (no ``/proc``) and the process exists; None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return None  # a /proc without this process: it is gone
        return "na" if _exists(pid) else None
    except OSError:
        return "na" if _exists(pid) else None
    # the command name (field 2) is in parentheses and may hold spaces or parentheses: count after the last ")"
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else "na"


def _exists(pid: int) -> bool:
    if os.name == "nt":  # signal 0 is CTRL_C_EVENT there, not a probe: never send it; the folder is kept
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (PermissionError) another user's process
        return True
    return True


def owner_alive(pid: int, start: str) -> bool:
    """Whether the process that made a folder named with ``pid`` and ``start`` still runs."""
    now = start_token(pid)
    if now is None:
        return False
    return start == "na" or now == "na" or now == start


def owned_folder(prefix: str, parent: str | os.PathLike[str] | None = None) -> str:
    """Make a new folder ``<prefix>p<pid>-s<start>-<random>`` under ``parent`` (the system's temporary folder when
    None) and return its path; the caller removes it when done."""
    pid = os.getpid()
    return tempfile.mkdtemp(prefix=f"{prefix}p{pid}-s{start_token(pid) or 'na'}-", dir=parent)


def remove_orphans(prefix: str, *, now: float | None = None, parent: str | os.PathLike[str] | None = None) -> int:
    """Remove the ``prefix*`` folders of the temporary folder whose owner is gone (see the module's docstring), and
    those without an owner in their name older than a day; only this user's folders. Return how many."""
    now = time.time() if now is None else now
    root = Path(parent if parent is not None else tempfile.gettempdir())
    uid = os.getuid() if hasattr(os, "getuid") else None
    n = 0
    for folder in root.glob(prefix + "*"):
        try:
            info = folder.lstat()
            if not folder.is_dir() or folder.is_symlink() or (uid is not None and info.st_uid != uid):
                continue
            owned = _OWNED.match(folder.name[len(prefix) :])
            if owned is not None:
                if owner_alive(int(owned.group(1)), owned.group(2)):
                    continue
            elif now - info.st_mtime <= LEGACY_STALE_AFTER_S:
                continue
        except OSError:
            continue  # removed by another process meanwhile
        shutil.rmtree(folder, ignore_errors=True)
        n += not folder.exists()
    return n


@contextlib.contextmanager
def owned_temporary_folder(prefix: str, parent: str | os.PathLike[str] | None = None) -> Iterator[str]:
    """A new owned folder in ``parent`` (the system's temporary folder when None), deleted on exit
    (``remove_orphans`` removes those of killed owners)."""
    folder = owned_folder(prefix, parent)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def memory_parent() -> str | None:
    """``MEMORY_PARENT`` when it is a memory-backed file system (``tmpfs`` in ``/proc/mounts``) this user may
    write to, else None (no such folder: not Linux, or a container without it)."""
    try:
        with open("/proc/mounts", encoding="utf-8", errors="replace") as fh:
            mounted = any(
                f[1] == MEMORY_PARENT and f[2] == "tmpfs" for f in (line.split() for line in fh) if len(f) > 2
            )
    except OSError:
        return None
    return MEMORY_PARENT if mounted and os.access(MEMORY_PARENT, os.W_OK | os.X_OK) else None


MEMORY_MARGIN_BYTES = 256 * 1024 * 1024  # what a file's rows leave free in the memory folder's file system, at least


def memory_available() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where there is no such file)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


@dataclass(frozen=True)
class SpillPlaces:
    """Where an ingest's validated rows wait for the writer (``Bundle.spill``: a large file's parts, a validation
    worker's files): in ``memory``, a memory-backed folder (tmpfs, ``memory_parent``; None: none), while they fit
    there within ``memory_bytes`` (``fits_in_memory``), else in ``disk`` (None: the system's temporary folder).
    ``ON_DISK``, no memory folder and the system's temporary folder, is the default where a function takes one."""

    disk: str | None = None
    memory: str | None = None
    memory_bytes: int = 0

    def fits_in_memory(self, tables: Mapping[str, Any]) -> bool:
        """Whether validated rows (Arrow ``tables``: a file's, or one part of a large file's) wait in ``memory``, not
        on disk: there is a memory folder, they fit beside the files already there within ``memory_bytes``, leave
        ``MEMORY_MARGIN_BYTES`` free on its file system and take at most a quarter of the memory available. Workers
        decide at once: the total may pass ``memory_bytes`` by a file (or a part) a worker."""
        if self.memory is None:
            return False
        need = sum(int(t.nbytes) for t in tables.values())
        try:
            fs = os.statvfs(self.memory)
            if (
                need + MEMORY_MARGIN_BYTES > fs.f_bavail * fs.f_frsize
                or folder_bytes(self.memory) + need > self.memory_bytes
            ):
                return False
        except OSError:
            return False
        room = memory_available()
        return room is None or need <= room // 4

    def spill(self, bundle: Bundle, *, to_memory: bool = True) -> None:
        """Move ``bundle``'s rows gathered so far (``Bundle.spill``) to ``memory`` while they fit there, else, or when
        that write fails (the folder filled meanwhile), to ``disk``; with ``to_memory`` False, to ``disk``.

        Raises:
            OSError: the write to disk failed (a full disk); the rows stay in the bundle.
        """
        if to_memory and self.fits_in_memory(bundle.freeze()):
            try:
                bundle.spill(self.memory)
                return
            except OSError:  # (the memory folder filled meanwhile): on disk instead
                pass
        bundle.spill(self.disk)


ON_DISK = SpillPlaces()  # no memory folder, the system's temporary folder: a file ingested on its own


def folder_bytes(folder: str) -> int:
    """The bytes of the files under ``folder`` (a spill folder: a few dozen files)."""
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):  # (removed by the writer meanwhile)
                total += os.stat(os.path.join(root, name)).st_size
    return total
