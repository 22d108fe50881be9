"""pandas for the ingest process only when something in it uses pandas (``ingest.pipeline.ingest_paths``).

DuckDB asks for pandas at the first bound parameter or registered table (to tell a DataFrame or a pandas value
apart), and pyarrow at its first ``pa.array`` of a Python list: each imports it when it is installed, 0.2-0.25 CPU
s of a process whose ingest has no use for it (BENCHMARKS.md "Ingest, eighth pass": most of a new lake's 0.34 s of
migrations). While ``refused()`` holds, importing pandas fails, so both take it as absent; whatever needs it calls
``allow()`` first (the rule findings of a benchmark with a tool graph, ``ingest.rules``), and from then on it
imports as usual. A process that has imported pandas already (the app, a notebook) is left as it is.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Iterator
from typing import Any


class NoPandas(importlib.abc.MetaPathFinder):
    """An import finder that refuses pandas."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ImportError("pandas is not imported by this ingest (ingest.lazy_pandas)")
        return None


@contextlib.contextmanager
def refused() -> Iterator[None]:
    """Within: pandas cannot be imported unless ``allow()`` is called (nothing changes if it is imported)."""
    if "pandas" in sys.modules:
        yield
        return
    finder = NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # (lifted by allow)
            sys.meta_path.remove(finder)


def allow() -> None:
    """Lift every refusal of ``refused()``: pandas imports as usual from now on."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, NoPandas)]
