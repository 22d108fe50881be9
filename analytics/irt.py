"""IRT ability over time (the xbench-index): py-irt fits of agent versions x tasks, linked across refits.

Structure (STYLE.md, after FastChat's rating_systems):

* prepare  -- ``load_responses`` (SQL -> one row per attempt) and ``prepare_arrays`` (frame -> index arrays);
* fit      -- ``fit_arrays``: a py-irt model trained with Pyro SVI on CPU, seeded, NaN-guarded;
* public   -- ``estimate`` (frame -> abilities / items frames, linked to previous item parameters),
              ``fit_and_store`` / ``get_fit`` (the DuckDB cache keyed by a hash of responses + settings),
              ``cli`` (``python -m analytics irt``).

Response coding (see docs/irt.md): subject = agent + version; item = task; every sample of a task is its own
Bernoulli observation of ``passed`` (graded and continuous benchmarks already store ``passed`` as
``score >= pass_threshold``; a missing ``passed`` counts as a failure). Several runs of one agent version are
pooled into one subject.

The default model is py-irt's ``1pl`` with hierarchical priors, which recovered abilities on rotating-item
designs; ``2pl`` is a registered wide-prior 2PL (py-irt's own 2PL priors shrink difficulties so much that
periods cannot be linked; see /work/shared/notes/py-irt.md and tests/test_irt.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import catalog
from store import RunlensError, derived, query_df, query_rows

MODELS = ("1pl", "2pl")
Z90 = 1.6448536269514722  # two-sided 90% normal quantile
ProgressFn = Callable[[float, str], None]


class IrtError(RunlensError):
    """Too little data to fit, or a fit that diverged on every seed."""


@dataclass(frozen=True)
class IrtSettings:
    """Everything that changes the numbers of a fit (part of the cache key).

    Attributes:
        model: ``1pl`` (py-irt 1pl, hierarchical priors) or ``2pl`` (wide-prior 2PL registered here).
        epochs: SVI steps over all observations.
        lr: Adam learning rate.
        lr_decay: multiplicative learning-rate decay per epoch (0.99: the step size falls 20-fold over 300
            epochs, so the fit settles and seed-to-seed noise stays small).
        seed: seeds random, numpy, torch and pyro before the fit (seed + k on the k-th restart).
        min_items: agents with fewer distinct answered tasks are flagged, not ranked.
        sd_inflation: factor on the sd (max of posterior and task-bootstrap sd) before forming 90% intervals;
            1.4 was chosen from measured coverage on simulated rotating designs (docs/irt.md).
        min_anchor_items: shared tasks needed to link a refit to the previous fit's item parameters.
        max_restarts: refits with seed + k after a NaN divergence.
        init: ``jml`` (start the guide at a ridge joint-ML 1PL solution) or ``zeros`` (py-irt's default).
        n_boot: task-bootstrap replicates (ridge JML, numpy) whose sd bounds the posterior sd from below;
            0 uses the variational sd alone.
        priors: ``wide`` (registered subclasses, ability and difficulty ~ N(0, prior_sd)); ``vague`` or
            ``hierarchical`` select py-irt's own models (they compress growth on rotating designs).
        prior_sd: sd of the wide ability and difficulty priors.
    """

    model: str = "1pl"
    epochs: int = 300
    lr: float = 0.05
    lr_decay: float = 0.99
    seed: int = 20251201
    min_items: int = 20
    sd_inflation: float = 1.4
    min_anchor_items: int = 10
    max_restarts: int = 3
    init: str = "jml"
    priors: str = "wide"
    prior_sd: float = 3.0
    n_boot: int = 100

    def key_dict(self) -> dict[str, Any]:
        """The settings that enter the fit key (all of them)."""
        return asdict(self)


def settings_for(model: str, **overrides: Any) -> IrtSettings:
    """Default settings for a model name, with keyword overrides."""
    if model not in MODELS:
        raise IrtError(f"unknown IRT model {model!r}; choose one of {', '.join(MODELS)}")
    return replace(IrtSettings(model=model), **overrides)


# ---------------------------------------------------------------------------------------------
# Prepare: SQL -> observations -> arrays
# ---------------------------------------------------------------------------------------------

# run -> subject. Subject = agent + version. A run without a version whose agent was evaluated on several dates
# takes its evaluation date as the version (leaderboard exports such as SWE-bench reuse one name for different
# systems over time); runs of one version on several dates are pooled (that is what links periods).
SUBJECTS_CTE = """
WITH rs0 AS (
    SELECT run_id, agent, coalesce(family, agent) AS family, eval_date, nullif(agent_version, '') AS v,
           count(DISTINCT eval_date) OVER (PARTITION BY agent, agent_version IS NULL) AS n_dates
    FROM runs WHERE benchmark = ?
), rs AS (
    SELECT run_id, agent, family, eval_date,
           coalesce(v, CASE WHEN n_dates > 1 THEN strftime(eval_date, '%Y-%m-%d') END, '') AS agent_version
    FROM rs0
), subj AS (
    SELECT *, agent || CASE WHEN agent_version = '' THEN '' ELSE ' ' || agent_version END AS subject FROM rs
)
"""

RESPONSES_SQL = (
    SUBJECTS_CTE
    + """
SELECT subject, agent, agent_version, family, eval_date, a.task_id, a.sample,
       coalesce(a.passed, false)::INTEGER AS passed
FROM attempts a JOIN subj USING (run_id)
ORDER BY subject, a.task_id, eval_date, a.sample
"""
)


def load_responses(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """One row per attempt of ``benchmark``: subject, agent, agent_version, family, eval_date, task_id, passed."""
    return query_df(con, RESPONSES_SQL, [benchmark])


@dataclass(frozen=True)
class Arrays:
    """Observations as index arrays (what Pyro consumes)."""

    subject_ix: np.ndarray
    item_ix: np.ndarray
    y: np.ndarray
    subject_ids: tuple[str, ...]
    item_ids: tuple[str, ...]


def prepare_arrays(obs: pd.DataFrame) -> Arrays:
    """Index arrays from observation rows (columns ``subject``, ``task_id``, ``passed``).

    Raises:
        ValueError: a required column is missing.
    """
    for col in ("subject", "task_id", "passed"):
        if col not in obs.columns:
            raise ValueError(f"responses need a {col!r} column")
    subjects = tuple(sorted(obs["subject"].astype(str).unique()))
    items = tuple(sorted(obs["task_id"].astype(str).unique()))
    s_ix = pd.Categorical(obs["subject"].astype(str), categories=subjects).codes.astype(np.int64)
    i_ix = pd.Categorical(obs["task_id"].astype(str), categories=items).codes.astype(np.int64)
    y = obs["passed"].astype(float).to_numpy()
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("responses must be 0/1 (passed); graded scores enter through pass_threshold")
    order = np.lexsort((y, i_ix, s_ix))  # canonical order: the same numbers whatever order rows came in
    return Arrays(s_ix[order], i_ix[order], y[order], subjects, items)


DIGEST_SQL = """
SELECT count(*), bit_xor(h), sum(h % 1000000007), count(DISTINCT subject)
FROM (SELECT hash(r.agent, coalesce(r.agent_version, ''), r.run_id, a.task_id, a.sample,
                  coalesce(a.passed, false), coalesce(r.family, ''), r.eval_date) AS h,
             r.agent || coalesce(r.agent_version, '') AS subject
      FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = ?)
"""


def data_digest(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> str:
    """An order-free fingerprint of a benchmark's responses, computed in SQL (cheap on every page load)."""
    return ":".join(str(v) for v in query_rows(con, DIGEST_SQL, [benchmark])[0])


def fit_key(digest: str, settings: IrtSettings, *, benchmark: str) -> str:
    """Cache key of a fit: data fingerprint + benchmark + every setting; equal inputs give equal keys."""
    payload = json.dumps({"data": digest, "benchmark": benchmark, **settings.key_dict()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


# ---------------------------------------------------------------------------------------------
# Fit: py-irt models trained with Pyro SVI
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RawFit:
    """Parameters on the model's own (unlinked) scale."""

    ability: np.ndarray
    ability_sd: np.ndarray
    difficulty: np.ndarray
    discrimination: np.ndarray
    final_loss: float
    seed_used: int
    restarts: int


_REGISTERED = False


def _register_models() -> None:
    """Register ``runlens_1pl`` / ``runlens_2pl`` with py-irt: wide, fixed-scale priors.

    Why not py-irt's own priors: a N(0, 1) ability prior (``1pl`` vague) pulls the agents of a whole period
    towards 0 as far as the few anchor tasks allow, compressing growth; hierarchical priors shrink the
    difficulty of tasks answered by few agents; the built-in 2PL priors (difficulty sd 0.1) cannot link
    periods at all. Wide priors (ability and difficulty sd 3; 2PL log-discrimination sd 0.5) keep the
    periods apart and still regularise all-pass / all-fail rows.
    """
    global _REGISTERED
    if _REGISTERED:
        return
    import pyro
    import pyro.distributions as dist
    import torch
    from py_irt.models.abstract_model import IrtModel
    from torch.distributions import constraints

    class WidePriorIrt(IrtModel):  # pragma: no cover - exercised through fit_arrays
        """1PL/2PL with wide priors; the guide is mean-field normal (log-normal discrimination)."""

        two_param = False

        def __init__(
            self,
            *,
            num_items: int,
            num_subjects: int,
            device: str = "cpu",
            prior_sd_ability: float = 3.0,
            prior_sd_difficulty: float = 3.0,
            prior_sd_log_disc: float = 0.5,
            **_: Any,
        ) -> None:
            super().__init__(num_items=num_items, num_subjects=num_subjects, device=device)
            self.sd_theta, self.sd_b, self.sd_log_a = prior_sd_ability, prior_sd_difficulty, prior_sd_log_disc

        def model(self, subjects: Any, items: Any, obs: Any) -> None:
            with pyro.plate("thetas", self.num_subjects):
                theta = pyro.sample("theta", dist.Normal(0.0, self.sd_theta))
            with pyro.plate("bs", self.num_items):
                b = pyro.sample("b", dist.Normal(0.0, self.sd_b))
                if self.two_param:
                    log_a = pyro.sample("log_a", dist.Normal(0.0, self.sd_log_a))
            logits = theta[subjects] - b[items]
            if self.two_param:
                logits = torch.exp(log_a[items]) * logits
            with pyro.plate("observe_data", obs.size(0)):
                pyro.sample("obs", dist.Bernoulli(logits=logits), obs=obs)

        def guide(self, subjects: Any, items: Any, obs: Any) -> None:
            pos = constraints.positive
            loc_t = pyro.param("loc_ability", torch.zeros(self.num_subjects))
            sc_t = pyro.param("scale_ability", torch.full((self.num_subjects,), 0.3), constraint=pos)
            loc_b = pyro.param("loc_diff", torch.zeros(self.num_items))
            sc_b = pyro.param("scale_diff", torch.full((self.num_items,), 0.3), constraint=pos)
            with pyro.plate("thetas", self.num_subjects):
                pyro.sample("theta", dist.Normal(loc_t, sc_t))
            with pyro.plate("bs", self.num_items):
                pyro.sample("b", dist.Normal(loc_b, sc_b))
                if self.two_param:
                    loc_a = pyro.param("loc_log_disc", torch.zeros(self.num_items))
                    sc_a = pyro.param("scale_log_disc", torch.full((self.num_items,), 0.1), constraint=pos)
                    pyro.sample("log_a", dist.Normal(loc_a, sc_a))

        def get_model(self) -> Any:
            return self.model

        def get_guide(self) -> Any:
            return self.guide

        def export(self) -> dict[str, Any]:
            out = {"ability": pyro.param("loc_ability").data.tolist(), "diff": pyro.param("loc_diff").data.tolist()}
            if self.two_param:
                out["disc"] = torch.exp(pyro.param("loc_log_disc")).data.tolist()
            return out

    @IrtModel.register("runlens_1pl")
    class Wide1PL(WidePriorIrt):  # pragma: no cover
        """1PL, wide priors."""

    @IrtModel.register("runlens_2pl")
    class Wide2PL(WidePriorIrt):  # pragma: no cover
        """2PL, wide priors."""

        two_param = True

    _REGISTERED = True


def jml_start(
    arrays: Arrays,
    *,
    iters: int = 200,
    ridge: float = 0.01,
    weights: np.ndarray | None = None,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Ridge-penalised joint maximum-likelihood 1PL (diagonal Newton): the starting point of SVI.

    Starting py-irt's guide at these values instead of zeros lets the fit converge in a few hundred epochs
    (on a loaded 2-core machine each Pyro epoch costs milliseconds); the ridge keeps all-pass / all-fail rows
    finite. ``weights`` (per observation) serve the task bootstrap; ``start`` warm-starts it.
    """
    n_s, n_i = len(arrays.subject_ids), len(arrays.item_ids)
    theta, b = (np.zeros(n_s), np.zeros(n_i)) if start is None else (start[0].copy(), start[1].copy())
    s, i, y = arrays.subject_ix, arrays.item_ix, arrays.y
    w0 = np.ones_like(y) if weights is None else weights
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(theta[s] - b[i])))
        theta += (np.bincount(s, w0 * (y - p), n_s) - ridge * theta) / (np.bincount(s, w0 * p * (1 - p), n_s) + ridge)
        p = 1.0 / (1.0 + np.exp(-(theta[s] - b[i])))
        b -= (np.bincount(i, w0 * (y - p), n_i) + ridge * b) / (np.bincount(i, w0 * p * (1 - p), n_i) + ridge)
    return theta, b


def bootstrap_sd(arrays: Arrays, *, n_boot: int, seed: int, iters: int = 50) -> np.ndarray:
    """Seeded bootstrap over tasks of the (fast, numpy) ridge-JML abilities, centred per replicate.

    Resampling tasks captures what mean-field posterior sds miss: uncertainty in how periods with different
    task sets are linked. A task drawn k times weighs k; each replicate starts at the full-data solution.
    """
    rng = np.random.default_rng(seed)
    full = jml_start(arrays)
    n_i = len(arrays.item_ids)
    reps = np.empty((n_boot, len(arrays.subject_ids)))
    for k in range(n_boot):
        counts = np.bincount(rng.integers(0, n_i, n_i), minlength=n_i).astype(float)
        theta, _ = jml_start(arrays, iters=iters, weights=counts[arrays.item_ix], start=full)
        reps[k] = theta - theta.mean()
    return reps.std(axis=0, ddof=1)


def _start_guide(irt: Any, arrays: Arrays) -> None:
    """Create the guide's parameters, then move their means to the JML start and narrow their sds."""
    import pyro
    import torch

    s = torch.tensor(arrays.subject_ix, dtype=torch.long)
    i = torch.tensor(arrays.item_ix, dtype=torch.long)
    irt.get_guide()(s, i, torch.tensor(arrays.y, dtype=torch.float))
    theta, b = jml_start(arrays)
    store = pyro.get_param_store()
    store["loc_ability"] = torch.tensor(theta, dtype=torch.float)
    store["loc_diff"] = torch.tensor(b, dtype=torch.float)
    store["scale_ability"] = torch.full((len(theta),), 0.3)
    store["scale_diff"] = torch.full((len(b),), 0.3)


def _seed_everything(seed: int) -> None:
    """py-irt honours IrtConfig.seed only on its command line: seed every generator ourselves."""
    import pyro
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    pyro.set_rng_seed(seed)


def _train_once(arrays: Arrays, settings: IrtSettings, seed: int, progress: ProgressFn | None) -> RawFit | None:
    """One SVI run on one torch thread (the machine is shared; Pyro's per-step overhead dominates anyway)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _svi(arrays, settings, seed, progress)
    finally:
        torch.set_num_threads(threads)


def _svi(arrays: Arrays, settings: IrtSettings, seed: int, progress: ProgressFn | None) -> RawFit | None:
    """One SVI run of the py-irt model; None when the loss or parameters turn NaN."""
    import pyro
    import torch
    from py_irt.models.abstract_model import IrtModel
    from pyro.infer import SVI, Trace_ELBO

    _register_models()
    _seed_everything(seed)
    pyro.clear_param_store()
    # "wide": our registered subclasses; "vague" / "hierarchical": py-irt's own 1pl / 2pl, for comparison
    name = f"runlens_{settings.model}" if settings.priors == "wide" else settings.model
    irt = IrtModel.from_name(name)(
        priors=settings.priors,
        num_items=len(arrays.item_ids),
        num_subjects=len(arrays.subject_ids),
        device="cpu",
        prior_sd_ability=settings.prior_sd,
        prior_sd_difficulty=settings.prior_sd,
    )
    optim = pyro.optim.ExponentialLR(  # type: ignore[attr-defined]
        {
            "optimizer": torch.optim.Adam,
            "optim_args": {"lr": settings.lr},
            "gamma": settings.lr_decay,
        }
    )
    svi = SVI(irt.get_model(), irt.get_guide(), optim, loss=Trace_ELBO())
    if settings.init == "jml":
        _start_guide(irt, arrays)
    s = torch.tensor(arrays.subject_ix, dtype=torch.long)
    i = torch.tensor(arrays.item_ix, dtype=torch.long)
    y = torch.tensor(arrays.y, dtype=torch.float)
    loss = math.nan
    step_every = max(1, settings.epochs // 50)
    for epoch in range(settings.epochs):
        loss = svi.step(s, i, y)
        optim.step()
        if not math.isfinite(loss):
            return None
        if progress is not None and epoch % step_every == 0:
            progress(epoch / settings.epochs, f"epoch {epoch}/{settings.epochs}, loss {loss:,.0f}")
    params = irt.export()
    ability = np.asarray(params["ability"], dtype=float)
    diff = np.asarray(params["diff"], dtype=float)
    disc = np.asarray(params.get("disc", np.ones_like(diff)), dtype=float)
    sd = pyro.param("scale_ability").detach().numpy().astype(float)
    if not all(np.isfinite(a).all() for a in (ability, diff, disc, sd)):
        return None
    return RawFit(ability, sd, diff, disc, float(loss), seed, 0)


def fit_arrays(arrays: Arrays, settings: IrtSettings, *, progress: ProgressFn | None = None) -> RawFit:
    """Train the configured py-irt model; refit with the next seed if it diverges to NaN.

    Raises:
        IrtError: every seed diverged.
    """
    for restart in range(settings.max_restarts + 1):
        fit = _train_once(arrays, settings, settings.seed + restart, progress)
        if fit is not None:
            return replace(fit, restarts=restart)
    raise IrtError(f"the {settings.model} fit diverged (NaN) on {settings.max_restarts + 1} seeds")


# ---------------------------------------------------------------------------------------------
# Public: frame -> frames, linking, diagnostics
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IrtResult:
    """A linked fit: abilities and items frames plus what the fit did (``info``)."""

    abilities: pd.DataFrame
    items: pd.DataFrame
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Link:
    """Linear map new scale -> reference scale: theta* = slope * theta + shift."""

    slope: float
    shift: float
    n_anchor: int
    method: str


def link_to_previous(
    difficulty: pd.Series,
    discrimination: pd.Series,
    previous: pd.DataFrame | None,
    *,
    model: str,
    min_anchor_items: int,
) -> Link:
    """Link through anchor items (tasks in both fits): mean-mean for 1PL, mean-sigma for 2PL.

    Without a previous fit (or too few shared tasks) the scale is fixed by centring the difficulties of
    informative tasks at 0, so the origin never drifts with the optimiser.
    """
    informative = difficulty.index
    if previous is not None and not previous.empty:
        prev = previous.set_index("task_id")
        prev = prev[~prev["flag"].isin(["saturated", "dead"])] if "flag" in prev else prev
        common = difficulty.index.intersection(prev.index)
        if len(common) >= min_anchor_items:
            b_new, b_old = difficulty.loc[common].to_numpy(), prev.loc[common, "difficulty"].to_numpy(float)
            slope = 1.0
            if model == "2pl" and np.std(b_new) > 1e-9:
                slope = float(np.std(b_old) / np.std(b_new))
            shift = float(np.mean(b_old) - slope * np.mean(b_new))
            return Link(slope, shift, int(len(common)), "anchor mean-mean" if model == "1pl" else "anchor mean-sigma")
    return Link(1.0, -float(difficulty.loc[informative].mean()), 0, "centred (no previous fit)")


def _item_flags(items: pd.DataFrame, *, model: str) -> pd.Series:
    """saturated / dead / negative (responses fall as ability rises: likely a broken task) / ''."""
    flag = pd.Series("", index=items.index, dtype=object)
    flag[items["r_ability"] < -0.1] = "negative"
    if model == "2pl":
        flag[items["discrimination"] < 0] = "negative"
    flag[items["pass_rate"] >= 1.0] = "saturated"
    flag[items["pass_rate"] <= 0.0] = "dead"
    return flag


def _subject_frame(obs: pd.DataFrame) -> pd.DataFrame:
    meta = {"agent": "first", "agent_version": "first", "family": "first", "eval_date": "min"}
    have = {k: v for k, v in meta.items() if k in obs.columns}
    per = obs.groupby("subject", sort=True).agg(
        n_items=("task_id", "nunique"), raw_score=("passed", "mean"), **{k: (k, v) for k, v in have.items()}
    )
    if "eval_date" in per:
        per = per.rename(columns={"eval_date": "first_eval_date"})
    return per


def _item_frame(obs: pd.DataFrame, ability: pd.Series) -> pd.DataFrame:
    per = obs.groupby("task_id", sort=True).agg(pass_rate=("passed", "mean"), n_subjects=("subject", "nunique"))
    theta = obs["subject"].map(ability)
    # correlation of the response with the answering agent's ability, per task (point-biserial)
    tmp = pd.DataFrame({"task_id": obs["task_id"], "y": obs["passed"].astype(float), "t": theta})
    per["r_ability"] = tmp.groupby("task_id").apply(
        lambda g: float(np.corrcoef(g["y"], g["t"])[0, 1]) if g["y"].std() > 0 and g["t"].std() > 0 else 0.0,
        include_groups=False,
    )
    return per


def estimate(
    obs: pd.DataFrame,
    settings: IrtSettings | None = None,
    *,
    previous_items: pd.DataFrame | None = None,
    previous_abilities: pd.DataFrame | None = None,
    progress: ProgressFn | None = None,
) -> IrtResult:
    """Fit abilities and item parameters from observation rows, linked to a previous fit's items.

    Args:
        obs: one row per attempt: ``subject``, ``task_id``, ``passed`` (0/1), optionally ``agent``,
            ``agent_version``, ``family``, ``eval_date``.
        settings: model and optimiser settings (default: 1PL).
        previous_items: the last stored fit's items (``task_id``, ``difficulty``, ``flag``): anchors.
        previous_abilities: the last stored fit's abilities, to report how far old agents moved.
        progress: called with (fraction, message) during training.

    Raises:
        IrtError: fewer than 2 agents or 2 tasks, or the fit diverged.
    """
    settings = settings or IrtSettings()
    if obs.empty or obs["subject"].nunique() < 2 or obs["task_id"].nunique() < 2:
        raise IrtError("an IRT fit needs at least 2 agents and 2 tasks with attempts")
    arrays = prepare_arrays(obs)
    started = time.perf_counter()
    raw = fit_arrays(arrays, settings, progress=progress)
    difficulty = pd.Series(raw.difficulty, index=list(arrays.item_ids))
    discrimination = pd.Series(raw.discrimination, index=list(arrays.item_ids))
    items = _item_frame(obs, pd.Series(raw.ability, index=list(arrays.subject_ids)))
    usable = items.index[(items["pass_rate"] > 0) & (items["pass_rate"] < 1)]
    link = link_to_previous(
        difficulty.loc[usable] if len(usable) else difficulty,
        discrimination,
        previous_items,
        model=settings.model,
        min_anchor_items=settings.min_anchor_items,
    )
    abilities = _subject_frame(obs)
    abilities["ability"] = link.slope * raw.ability + link.shift
    sd = raw.ability_sd
    boot_share = 0.0
    if settings.n_boot > 0:
        n_boot = settings.n_boot if arrays.y.size <= 300_000 else max(30, settings.n_boot // 4)
        boot = bootstrap_sd(arrays, n_boot=n_boot, seed=settings.seed)
        boot_share = float(np.mean(boot > sd))
        sd = np.maximum(sd, boot)
    abilities["ability_sd"] = link.slope * sd * settings.sd_inflation
    abilities["ability_lo"] = abilities["ability"] - Z90 * abilities["ability_sd"]
    abilities["ability_hi"] = abilities["ability"] + Z90 * abilities["ability_sd"]
    abilities["is_flagged"] = abilities["n_items"] < settings.min_items
    items["difficulty"] = link.slope * difficulty + link.shift
    items["discrimination"] = discrimination / link.slope
    items["flag"] = _item_flags(items, model=settings.model)
    info = {
        "model": settings.model,
        "seconds": round(time.perf_counter() - started, 3),
        "n_subjects": len(arrays.subject_ids),
        "n_items": len(arrays.item_ids),
        "n_obs": int(arrays.y.size),
        "final_loss": raw.final_loss,
        "seed_used": raw.seed_used,
        "restarts": raw.restarts,
        "sd_bootstrap_share": boot_share,
        "link_method": link.method,
        "link_slope": link.slope,
        "scale_shift": link.shift,
        "n_anchor_items": link.n_anchor,
        "old_agents_moved": _moved(abilities, previous_abilities),
    }
    return IrtResult(abilities.reset_index(), items.reset_index(), info)


def _moved(abilities: pd.DataFrame, previous: pd.DataFrame | None) -> float | None:
    """Mean absolute change of the abilities of agents present in the previous fit (after linking)."""
    if previous is None or previous.empty:
        return None
    prev = previous.set_index("subject")["ability"]
    common = abilities.index.intersection(prev.index)
    if len(common) == 0:
        return None
    return float(np.mean(np.abs(abilities.loc[common, "ability"] - prev.loc[common])))


# ---------------------------------------------------------------------------------------------
# Storage: irt_fits (the refit log), irt_abilities, irt_items
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredFit:
    """A fit read back from the database."""

    fit_key: str
    benchmark: str
    model: str
    created_at: Any
    seconds: float
    scale_shift: float | None
    info: dict[str, Any]
    abilities: pd.DataFrame
    items: pd.DataFrame
    is_current: bool


ABILITY_COLS = [
    "subject",
    "agent",
    "agent_version",
    "family",
    "ability",
    "ability_lo",
    "ability_hi",
    "n_items",
    "first_eval_date",
    "is_flagged",
]
ITEM_COLS = ["task_id", "difficulty", "discrimination", "pass_rate", "n_subjects", "flag"]


def _latest_key(con: duckdb.DuckDBPyConnection, benchmark: str, model: str, *, exclude: str = "") -> str | None:
    rows = query_rows(
        con,
        "SELECT fit_key FROM irt_fits WHERE benchmark = ? AND model = ? AND fit_key <> ? "
        "ORDER BY created_at DESC LIMIT 1",
        [benchmark, model, exclude],
    )
    return rows[0][0] if rows else None


def read_fit(con: duckdb.DuckDBPyConnection, key: str, *, is_current: bool = True) -> StoredFit:
    """A stored fit by key."""
    head = query_rows(
        con,
        "SELECT fit_key, benchmark, model, created_at, seconds, scale_shift, extra FROM irt_fits WHERE fit_key = ?",
        [key],
    )
    if not head:
        raise IrtError(f"no IRT fit with key {key}")
    k, bench, model, created, seconds, shift, extra = head[0]
    abil = query_df(con, "SELECT * EXCLUDE (fit_key) FROM irt_abilities WHERE fit_key = ? ORDER BY ability DESC", [key])
    items = query_df(con, "SELECT * EXCLUDE (fit_key) FROM irt_items WHERE fit_key = ? ORDER BY difficulty", [key])
    return StoredFit(
        k,
        bench,
        model,
        created,
        float(seconds or 0.0),
        shift,
        json.loads(extra) if isinstance(extra, str) else (extra or {}),
        abil,
        items,
        is_current,
    )


def get_fit(con: duckdb.DuckDBPyConnection, *, benchmark: str, model: str = "1pl") -> StoredFit | None:
    """The stored fit for the current data (``is_current``), else the latest stale one, else None. Never fits."""
    key = fit_key(data_digest(con, benchmark=benchmark), settings_for(model), benchmark=benchmark)
    if query_rows(con, "SELECT count(*) FROM irt_fits WHERE fit_key = ?", [key])[0][0]:
        return read_fit(con, key)
    latest = _latest_key(con, benchmark, model)
    return read_fit(con, latest, is_current=False) if latest else None


def fit_log(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Every stored fit of a benchmark, newest first: the refit log with scale movement."""
    return query_df(
        con,
        "SELECT created_at, model, fit_key, seconds, scale_shift, "
        "extra->>'n_subjects' AS n_agents, extra->>'n_items' AS n_tasks, "
        "extra->>'link_method' AS link, extra->>'n_anchor_items' AS anchor_tasks, "
        "extra->>'old_agents_moved' AS old_agents_moved FROM irt_fits WHERE benchmark = ? "
        "ORDER BY created_at DESC",
        [benchmark],
    )


def store_fit(
    con: duckdb.DuckDBPyConnection, key: str, benchmark: str, settings: IrtSettings, result: IrtResult
) -> None:
    """Write one fit (three tables) in a single transaction."""
    abil = result.abilities.reindex(columns=ABILITY_COLS)
    abil.insert(0, "fit_key", key)
    items = result.items.reindex(columns=ITEM_COLS)
    items.insert(0, "fit_key", key)
    fit = [
        key,
        benchmark,
        settings.model,
        json.dumps(settings.key_dict()),
        dt.datetime.now(dt.UTC).replace(tzinfo=None),
        result.info["seconds"],
        result.info["scale_shift"],
        json.dumps(result.info, default=str),
    ]
    derived.insert_irt_fit(con, fit, abil, items)


def fit_and_store(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    model: str = "1pl",
    progress: ProgressFn | None = None,
    settings: IrtSettings | None = None,
) -> StoredFit:
    """Return the cached fit for the current data, or fit, link to the previous fit, store, and return it.

    ``con`` must be a writer connection (store.writer).
    """
    settings = settings or settings_for(model)
    obs = load_responses(con, benchmark=benchmark)
    if obs.empty:
        raise IrtError(f"benchmark {benchmark!r} has no attempts to fit")
    key = fit_key(data_digest(con, benchmark=benchmark), settings, benchmark=benchmark)
    if query_rows(con, "SELECT count(*) FROM irt_fits WHERE fit_key = ?", [key])[0][0]:
        return read_fit(con, key)
    prev_key = _latest_key(con, benchmark, settings.model, exclude=key)
    prev = read_fit(con, prev_key) if prev_key else None
    result = estimate(
        obs,
        settings,
        progress=progress,
        previous_items=prev.items if prev else None,
        previous_abilities=prev.abilities if prev else None,
    )
    store_fit(con, key, benchmark, settings, result)
    return read_fit(con, key)


# ---------------------------------------------------------------------------------------------
# Simulation (tests and bench): a rotating-item longitudinal design with known abilities
# ---------------------------------------------------------------------------------------------


def simulate_rotating(
    *,
    n_periods: int = 4,
    agents_per_period: int = 12,
    items_per_period: int = 100,
    overlap: float = 0.3,
    growth: float = 0.8,
    missing: float = 0.0,
    model: str = "1pl",
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Observations and truth for agents that improve while the task pool rotates to harder tasks.

    Each period draws ``items_per_period`` tasks: a share ``overlap`` carried from the previous period (the
    anchors), the rest new and harder by ``growth`` per period, matching the agents' growth, so raw pass rates
    stay flat while true ability rises. Each agent answers its period's tasks (minus ``missing``).

    Returns:
        (obs with subject, agent, agent_version, family, eval_date, task_id, passed; truth with subject,
        true_ability, period).
    """
    rng = np.random.default_rng(seed)
    rows: list[pd.DataFrame] = []
    truth = []
    pool: list[int] = []
    diffs: dict[int, float] = {}
    next_item = 0
    for p in range(n_periods):
        keep = list(rng.choice(pool, size=int(overlap * items_per_period), replace=False)) if pool else []
        fresh = list(range(next_item, next_item + items_per_period - len(keep)))
        next_item += len(fresh)
        diffs.update({j: float(rng.normal(growth * p, 1.0)) for j in fresh})
        pool = keep + fresh
        b = np.array([diffs[j] for j in pool])
        a = np.exp(rng.normal(0.0, 0.3, len(pool))) if model == "2pl" else np.ones(len(pool))
        date = dt.date(2024, 1, 15) + dt.timedelta(days=91 * p)
        for k in range(agents_per_period):
            theta = float(rng.normal(growth * p, 0.7))
            subject = f"A{k % 4}-p{p}-{k}"
            y = rng.random(len(pool)) < 1.0 / (1.0 + np.exp(-a * (theta - b)))
            answered = rng.random(len(pool)) >= missing
            rows.append(
                pd.DataFrame(
                    {
                        "subject": subject,
                        "agent": f"A{k % 4}",
                        "agent_version": f"p{p}-{k}",
                        "family": f"F{k % 4}",
                        "eval_date": date,
                        "task_id": [f"t{j:05d}" for j in np.array(pool)[answered]],
                        "passed": y[answered].astype(int),
                    }
                )
            )
            truth.append({"subject": subject, "true_ability": theta, "period": p})
    return pd.concat(rows, ignore_index=True), pd.DataFrame(truth)


def recovery(result: IrtResult, truth: pd.DataFrame) -> dict[str, float]:
    """Spearman of estimates and raw scores with truth, and 90%-interval coverage after a linear link."""
    df = result.abilities.merge(truth, on="subject")
    rho = float(df["ability"].rank().corr(df["true_ability"].rank()))
    rho_raw = float(df["raw_score"].rank().corr(df["true_ability"].rank()))
    slope, icpt = np.polyfit(df["ability"], df["true_ability"], 1)
    lo, hi = icpt + slope * df["ability_lo"], icpt + slope * df["ability_hi"]
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    covered = float(((df["true_ability"] >= lo) & (df["true_ability"] <= hi)).mean())
    return {
        "spearman": rho,
        "spearman_raw": rho_raw,
        "coverage90": covered,
        "pearson": float(df["ability"].corr(df["true_ability"])),
    }


# ---------------------------------------------------------------------------------------------
# CLI: python -m analytics irt
# ---------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``python -m analytics irt``."""
    parser.add_argument("--benchmark", help="benchmark to fit (default: the one with most runs)")
    parser.add_argument("--model", choices=MODELS, default="1pl", help="IRT model (default 1pl)")
    parser.add_argument("--json", action="store_true", help="print the abilities and items as JSON")


def _json_shape(fit: StoredFit) -> dict[str, Any]:
    ab = fit.abilities.sort_values("ability", ascending=False)
    abilities = [
        {
            "agent": r.agent,
            "agent_version": r.agent_version or None,
            "ability": round(float(r.ability), 4),
            "ability_lo": round(float(r.ability_lo), 4),
            "ability_hi": round(float(r.ability_hi), 4),
            "n_items": int(r.n_items),
            "first_eval_date": None if pd.isna(r.first_eval_date) else str(pd.Timestamp(r.first_eval_date).date()),
        }
        for r in ab.itertuples()
    ]
    items = [
        {
            "task_id": r.task_id,
            "difficulty": round(float(r.difficulty), 4),
            "discrimination": round(float(r.discrimination), 4),
            "pass_rate": round(float(r.pass_rate), 4),
            "flag": r.flag or None,
        }
        for r in fit.items.itertuples()
    ]
    return {"model": fit.model, "abilities": abilities, "items": items}


def cli(args: argparse.Namespace) -> int:
    """Print the IRT abilities (cached fit if present, else fit and store it)."""
    from store import reader, writer

    with reader(args.db) as con:
        benchmark = args.benchmark or catalog.default_benchmark(con)
        if benchmark is None:
            raise IrtError("the database holds no runs")
        fit = get_fit(con, benchmark=benchmark, model=args.model)
    if fit is None or not fit.is_current:
        import sys

        def show(frac: float, msg: str) -> None:
            print(f"\rfitting {benchmark} ({args.model}): {msg}   ", end="", file=sys.stderr, flush=True)

        with writer(args.db) as con:
            fit = fit_and_store(
                con, benchmark=benchmark, model=args.model, progress=show if sys.stderr.isatty() else None
            )
        if sys.stderr.isatty():
            print(file=sys.stderr)
    if args.json:
        print(json.dumps(_json_shape(fit), indent=1))
        return 0
    print(
        f"{benchmark}: {fit.model}, {len(fit.abilities)} agents x {len(fit.items)} tasks, "
        f"fit in {fit.seconds:.1f} s (key {fit.fit_key})"
    )
    table = fit.abilities[["agent", "agent_version", "ability", "ability_lo", "ability_hi", "n_items", "is_flagged"]]
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0
