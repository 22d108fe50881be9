"""The benchmark last shown on each store, kept in the user's cache folder so that it outlives a server process:
where a visit without a benchmark in its link opens (``ui.shell.start_benchmark``).

One small JSON file, ``<RUNLENS_STATE_DIR, else RUNLENS_CACHE_DIR, else ~/.cache/runlens>/last-benchmark.json``: ``{store: benchmark}`` for
the most recently used stores. It is written atomically (a temporary file renamed over it), so a reader never sees
half a file; a missing, unreadable or corrupt file reads as "nothing remembered" (a visit then opens on the
benchmark with the newest runs), and a failed write is logged, never raised: a preference is not worth a page.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from pathlib import Path

FILE_NAME = "last-benchmark.json"
SCHEME = re.compile(r"^[A-Za-z][\w+.-]+:")  # ducklake:..., s3://..., md:... (two letters at least: not C:)
MAX_STORES = 50  # the most recently used stores are kept; older ones are forgotten
log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """``RUNLENS_STATE_DIR`` (the tests give each test its own), else ``RUNLENS_CACHE_DIR``, else
    ``~/.cache/runlens`` (the folder analytics.embeddings keeps its models in)."""
    folder = os.environ.get("RUNLENS_STATE_DIR") or os.environ.get("RUNLENS_CACHE_DIR")
    return Path(folder or Path.home() / ".cache" / "runlens")


def store_key(store: str) -> str:
    """A store's location as a key: a DuckDB file's path made absolute, a lake (``ducklake:sqlite:...``,
    ``ducklake:postgres:...``) or a URL as it is (``str`` of ``store.resolve_db_path``, which spells each one way)."""
    if store.startswith(":") or SCHEME.match(store):
        return store
    return str(Path(store).expanduser().resolve())


def read_all(path: Path | None = None) -> dict[str, str]:
    """Every remembered ``{store: benchmark}``; empty when the file is missing, unreadable or not such a map."""
    path = path or cache_dir() / FILE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, str) and v}


def last_benchmark(store: str) -> str | None:
    """The benchmark last used on ``store``, or None."""
    return read_all().get(store_key(store))


def remember(store: str, benchmark: str) -> bool:
    """Keep ``benchmark`` as the last one used on ``store``; True when the file was written. A failed write (a
    read-only home, a full disk) is logged and the visit goes on."""
    path = cache_dir() / FILE_NAME
    known = read_all(path)
    key = store_key(store)
    if known.get(key) == benchmark:
        return False
    known.pop(key, None)
    known[key] = benchmark  # the most recent last, so the oldest are the first dropped
    kept = dict(list(known.items())[-MAX_STORES:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=".last-", delete=False) as f:
            json.dump(kept, f, indent=1, sort_keys=False)
            tmp = Path(f.name)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("could not remember the last benchmark in %s: %s", path, exc)
        return False
    return True
