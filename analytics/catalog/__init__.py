"""catalog: what the database holds: options for the global filters, counts, the demo flag.

Modules by role: ``load`` (the only database reads) and ``compute`` (the ``Catalog`` the sidebar reads). This
package re-exports their public names: ``from analytics.catalog import catalog``.
"""

from __future__ import annotations

from analytics.catalog.compute import Catalog, catalog_from, newest_first, pd_date
from analytics.catalog.load import (
    attempt_count,
    benchmark_names,
    catalog,
    default_benchmark,
    filtered_counts,
    filtered_run_count,
    require_benchmark,
)

__all__ = [
    "Catalog",
    "attempt_count",
    "benchmark_names",
    "catalog",
    "catalog_from",
    "default_benchmark",
    "filtered_counts",
    "filtered_run_count",
    "newest_first",
    "pd_date",
    "require_benchmark",
]
