"""The app's shell (the router, the sidebar, the database check) starts without the heavy libraries a page may need:
SciPy, scikit-learn, torch, model2vec and Plotly's figure classes are imported by the pages that use them, not at
start-up (issue 33: app start-up within 2 s; SciPy alone took about 1-2.5 s of the shell's imports). Streamlit
itself imports the ``plotly`` package, whose figure classes load lazily."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

DEFERRED = ("scipy", "sklearn", "torch", "model2vec", "sentence_transformers", "plotly.graph_objs._figure")


def test_the_shell_imports_no_heavy_library() -> None:
    code = (
        "import json, sys; import ui.shell, ui.common; "
        f"print(json.dumps(sorted(d for d in {list(DEFERRED)!r} for m in sys.modules if m == d or "
        "m.startswith(d + '.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_leaderboard_progress_and_gem_analytics_import_no_scipy_stats() -> None:
    """scipy.stats (0.6-1.2 s) is imported on first use: the landing leaderboard's statistics (the max-gap test's
    normal range included) do not need it, nor does GEM before it computes an agreement, so no page pays it for
    another (issue 33)."""
    code = (
        "import sys; import analytics.leaderboard, analytics.progress, analytics.gem, analytics.runs, "
        "analytics.scorers; print('scipy.stats' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_the_errors_and_review_statistics_import_no_scipy_stats() -> None:
    """The judge's corrected figures (PPI++ intervals) and the reviewers' agreement (Fleiss' kappa with its bootstrap
    interval), drawn on the first render of Errors and Review, do not import scipy.stats (0.6-1.0 CPU s of those
    pages' first render in a fresh process; issue 33). Their normal quantile is ``analytics.stats.norm_ppf``."""
    code = (
        "import sys; import numpy as np, pandas as pd; import analytics.errors, analytics.review; "
        "from analytics import ppi; from analytics.review.compute import fleiss_summary; "
        "rng = np.random.default_rng(0); y = (rng.random(40) < 0.5).astype(float); f = (rng.random(40) < 0.5).astype(float); "
        "e = ppi.ppi_mean(y, f, (rng.random(500) < 0.5).astype(float)); assert np.isfinite(e.lo), e; "
        "rv = pd.DataFrame({'attempt_id': [1, 1, 2, 2, 3, 3], 'reviewer': list('ababab'), "
        "'is_correct': [True, True, False, True, False, False]}); assert fleiss_summary(rv) is not None; "
        "print('scipy.stats' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_the_version_diff_imports_no_scipy_stats_before_its_gate_runs() -> None:
    """The Version diff's first view (the diff, the tasks' changes, the trajectories' links) imports the gate's
    package but runs the gate only when its expander is opened: scipy.stats (0.6 CPU s of the page's first render
    in a server that had not imported it) is imported by the gate's decision, not by the page's imports; the gate
    itself still uses it (its t and normal quantiles are unchanged)."""
    code = (
        "import sys; import numpy as np; import analytics.diff, analytics.gate, analytics.trajectory; "
        "print('scipy.stats' in sys.modules); "
        "analytics.gate.decide(np.array([0.5, -1.0, 0.25, 0.0]), alpha=0.05); print('scipy.stats' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
