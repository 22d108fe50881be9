"""IRT ability over time (the xbench-index): py-irt fits of agent versions x tasks, linked across refits.

Structure (STYLE.md, after FastChat's rating_systems):

* prepare  -- ``load_responses`` (SQL -> one row per attempt) and ``prepare_arrays`` (frame -> index arrays);
* fit      -- ``fit_arrays``: a py-irt model trained with Pyro SVI on CPU, seeded, NaN-guarded;
* public   -- ``estimate`` (frame -> abilities / items frames, linked to previous item parameters),
              ``get_fit`` (read the DuckDB cache keyed by a hash of responses + settings);
              ``jobs.irt.fit_and_store`` fits and stores through the one writer, ``cli/reports.py`` runs
              ``python -m analytics irt``.

Modules: ``settings`` (settings, models, error), ``load`` (the only database reads: responses, data digest, stored
fits read back), ``data`` (prepare: index arrays, fit key), ``fit`` (fit and estimate), ``fits`` (a stored fit as a
value, its JSON and text report), ``simulate`` (known-truth simulation for tests and bench).

Response coding (see docs/irt.md): subject = agent + version; item = task; every sample of a task is its own
Bernoulli observation of ``passed`` (graded and continuous benchmarks already store ``passed`` as
``score >= pass_threshold``; a missing ``passed`` counts as a failure). Several runs of one agent version are
pooled into one subject.

The default model is py-irt's ``1pl`` with hierarchical priors, which recovered abilities on rotating-item
designs; ``2pl`` is a registered wide-prior 2PL (py-irt's own 2PL priors shrink difficulties so much that
periods cannot be linked; see ../shared/notes/py-irt.md and tests/test_irt.py).
"""

from __future__ import annotations

from analytics.irt.data import Arrays, fit_key, prepare_arrays
from analytics.irt.fit import IrtResult, Link, RawFit, bootstrap_sd, estimate, fit_arrays, jml_start, link_to_previous
from analytics.irt.fits import ABILITY_COLS, ITEM_COLS, StoredFit, fit_json, text_report
from analytics.irt.load import (
    DIGEST_SQL,
    FITS_SQL,
    RESPONSES_SQL,
    SUBJECTS_CTE,
    data_digest,
    fit_and_log,
    fit_log,
    get_fit,
    latest_fit_key,
    load_responses,
    read_fit,
)
from analytics.irt.settings import MODELS, Z90, IrtError, IrtSettings, ProgressFn, settings_for
from analytics.irt.simulate import recovery, simulate_rotating

__all__ = [
    "MODELS",
    "Z90",
    "ProgressFn",
    "IrtError",
    "IrtSettings",
    "settings_for",
    "SUBJECTS_CTE",
    "RESPONSES_SQL",
    "load_responses",
    "Arrays",
    "prepare_arrays",
    "DIGEST_SQL",
    "data_digest",
    "fit_key",
    "RawFit",
    "jml_start",
    "bootstrap_sd",
    "fit_arrays",
    "IrtResult",
    "Link",
    "link_to_previous",
    "estimate",
    "StoredFit",
    "ABILITY_COLS",
    "ITEM_COLS",
    "latest_fit_key",
    "read_fit",
    "fit_json",
    "text_report",
    "get_fit",
    "fit_log",
    "FITS_SQL",
    "fit_and_log",
    "simulate_rotating",
    "recovery",
]
