"""pandas and ``pyarrow.dataset`` in the ingest process only when something in it uses them
(``ingest.pipeline.ingest_paths``).

DuckDB asks for pandas at the first bound parameter (to tell a pandas value apart) and for ``pyarrow.dataset`` at
the first registered Arrow table (to tell a dataset or scanner apart), and pyarrow asks for pandas at its first
``pa.array`` of a Python list: each imports the module when it is installed, about 0.2 CPU s each in a process
whose ingest uses neither (BENCHMARKS.md "Ingest, ninth pass"). While ``refused()`` holds, importing them fails,
so DuckDB and pyarrow take them as absent (a registered ``pa.Table`` is scanned as before); whatever needs them
calls ``allow()`` first (the rule findings of a benchmark with a tool graph, ``ingest.rules``), and from then on
they import as usual. A process that has imported them already (the app, a notebook) is left as it is.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Iterator
from typing import Any

REFUSED = ("pandas", "pyarrow.dataset")


class Refusal(importlib.abc.MetaPathFinder):
    """An import finder that refuses ``modules`` and their submodules."""

    def __init__(self, modules: tuple[str, ...] = REFUSED) -> None:
        self.modules = modules

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if any(fullname == name or fullname.startswith(name + ".") for name in self.modules):
            raise ImportError(f"{fullname} is not imported by this ingest (ingest.lazy_imports)")
        return None


@contextlib.contextmanager
def refused() -> Iterator[None]:
    """Within: the ``REFUSED`` modules not imported yet cannot be imported unless ``allow()`` is called."""
    missing = tuple(name for name in REFUSED if name not in sys.modules)
    if not missing:
        yield
        return
    finder = Refusal(missing)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # (lifted by allow)
            sys.meta_path.remove(finder)


def allow() -> None:
    """Lift every refusal of ``refused()``: the modules import as usual from now on."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, Refusal)]
