"""Fit: py-irt models trained with Pyro SVI on CPU (seeded, NaN-guarded), linked to the previous fit's items."""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from analytics.irt.data import Arrays, prepare_arrays
from analytics.irt.settings import Z90, IrtError, IrtSettings, ProgressFn


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
    jml: tuple[np.ndarray, np.ndarray] | None = None  # the JML start the guide began at (init "jml"), reused


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


@dataclass(frozen=True)
class Cells:
    """Observations summed per (agent, task) cell: the 1PL likelihood depends on a cell's trials and passes only."""

    subject_ix: np.ndarray
    item_ix: np.ndarray
    trials: np.ndarray
    passes: np.ndarray


def cells_of(arrays: Arrays) -> Cells:
    """One row per (agent, task) pair answered, with its trials and passes (``prepare_arrays`` sorts the
    observations by agent and task, so a pair's rows are adjacent; other orders are sorted first)."""
    key = arrays.subject_ix * len(arrays.item_ids) + arrays.item_ix
    y = np.asarray(arrays.y, dtype=float)
    if key.size > 1 and not bool(np.all(key[1:] >= key[:-1])):
        order = np.argsort(key, kind="stable")
        key, y = key[order], y[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else np.zeros(0, dtype=np.int64)
    trials = np.diff(np.r_[first, key.size]).astype(float)
    passes = np.add.reduceat(y, first) if key.size else np.zeros(0)
    return Cells(key[first] // len(arrays.item_ids), key[first] % len(arrays.item_ids), trials, passes)


def _jml_cells(
    cells: Cells,
    n_s: int,
    n_i: int,
    *,
    iters: int,
    ridge: float,
    start: tuple[np.ndarray, np.ndarray] | None,
    item_weights: np.ndarray | None = None,
    tol: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The diagonal-Newton ridge JML of ``jml_start`` on cells: the same steps, a cell's trials summed.

    ``item_weights`` (per task) weigh each task's cells; ``tol`` > 0 stops once no agent's ability, centred, moved
    more than ``tol`` in an iteration (the centring removes the drift along the 1PL's free shift, which only the
    ridge holds)."""
    theta, b = (np.zeros(n_s), np.zeros(n_i)) if start is None else (start[0].copy(), start[1].copy())
    s, i = cells.subject_ix, cells.item_ix
    trials, passes = cells.trials, cells.passes
    if item_weights is not None:
        w = item_weights[i]
        trials, passes = w * trials, w * passes
    for _ in range(iters):
        before = theta - theta.mean()
        p = 1.0 / (1.0 + np.exp(-(theta[s] - b[i])))
        theta += (np.bincount(s, passes - trials * p, n_s) - ridge * theta) / (
            np.bincount(s, trials * p * (1 - p), n_s) + ridge
        )
        p = 1.0 / (1.0 + np.exp(-(theta[s] - b[i])))
        b -= (np.bincount(i, passes - trials * p, n_i) + ridge * b) / (
            np.bincount(i, trials * p * (1 - p), n_i) + ridge
        )
        if tol > 0 and float(np.max(np.abs(theta - theta.mean() - before), initial=0.0)) <= tol:
            break
    return theta, b


RIDGE = 0.01  # the JML's ridge on abilities and difficulties: all-pass / all-fail rows stay finite


def jml_start(arrays: Arrays, *, iters: int = 200, ridge: float = RIDGE) -> tuple[np.ndarray, np.ndarray]:
    """Ridge-penalised joint maximum-likelihood 1PL (diagonal Newton): the starting point of SVI.

    Starting py-irt's guide at these values instead of zeros lets the fit converge in a few hundred epochs
    (on a loaded 2-core machine each Pyro epoch costs milliseconds); the ridge keeps all-pass / all-fail rows
    finite. The steps run on (agent, task) cells (``cells_of``): the sums of the observations', a third of the rows
    when each task is tried three times.
    """
    n_s, n_i = len(arrays.subject_ids), len(arrays.item_ids)
    return _jml_cells(cells_of(arrays), n_s, n_i, iters=iters, ridge=ridge, start=None)


def boot_replicates(settings: IrtSettings, n_observations: int) -> int:
    """How many task-bootstrap replicates ``estimate`` draws: ``settings.n_boot``, a quarter of it (at least 30)
    above 300,000 observations."""
    return settings.n_boot if n_observations <= 300_000 else max(30, settings.n_boot // 4)


BOOT_TOL = 1e-7  # a replicate stops once no centred ability moves more than this in an iteration


def bootstrap_sd(
    arrays: Arrays,
    *,
    n_boot: int,
    seed: int,
    iters: int = 50,
    start: tuple[np.ndarray, np.ndarray] | None = None,
    tol: float = BOOT_TOL,
) -> np.ndarray:
    """Seeded bootstrap over tasks of the (fast, numpy) ridge-JML abilities, centred per replicate.

    Resampling tasks captures what mean-field posterior sds miss: uncertainty in how periods with different
    task sets are linked. A task drawn k times weighs k; each replicate starts at the full-data solution
    (``start``: ``jml_start(arrays)``, computed when not given) and runs on the cells of the tasks it drew, until
    its centred abilities settle (``tol``) or ``iters`` steps.
    """
    rng = np.random.default_rng(seed)
    full = jml_start(arrays) if start is None else start
    cells = cells_of(arrays)
    n_s, n_i = len(arrays.subject_ids), len(arrays.item_ids)
    reps = np.empty((n_boot, n_s))
    for k in range(n_boot):
        counts = np.bincount(rng.integers(0, n_i, n_i), minlength=n_i).astype(float)
        drawn = counts[cells.item_ix] > 0
        part = Cells(cells.subject_ix[drawn], cells.item_ix[drawn], cells.trials[drawn], cells.passes[drawn])
        theta, _ = _jml_cells(part, n_s, n_i, iters=iters, ridge=RIDGE, start=full, item_weights=counts, tol=tol)
        reps[k] = theta - theta.mean()
    return reps.std(axis=0, ddof=1)


def _start_guide(irt: Any, arrays: Arrays) -> tuple[np.ndarray, np.ndarray]:
    """Create the guide's parameters, then move their means to the JML start and narrow their sds; return the
    start."""
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
    return theta, b


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
    jml = _start_guide(irt, arrays) if settings.init == "jml" else None
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
    return RawFit(ability, sd, diff, disc, float(loss), seed, 0, jml)


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
    per["r_ability"] = _r_ability(obs, ability)
    return per


def _r_ability(obs: pd.DataFrame, ability: pd.Series) -> pd.Series:
    """Per task, the correlation of the response with the answering agent's ability (point-biserial); 0 where the
    responses or the abilities do not vary. Grouped sums of centred products, not a function per task: 66,667 tasks
    cost a pass over the observations, not 66,667 calls."""
    tmp = pd.DataFrame({"task_id": obs["task_id"], "y": obs["passed"].astype(float), "t": obs["subject"].map(ability)})
    by = tmp.groupby("task_id", sort=True)
    dy = tmp["y"] - by["y"].transform("mean")
    dt = tmp["t"] - by["t"].transform("mean")
    sums = pd.DataFrame({"task_id": tmp["task_id"], "yy": dy * dy, "tt": dt * dt, "yt": dy * dt})
    sums = sums.groupby("task_id", sort=True).sum()
    varies = (by["y"].std() > 0) & (by["t"].std() > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (sums["yt"] / np.sqrt(sums["yy"] * sums["tt"])).clip(-1.0, 1.0)
    return r.where(varies & (sums["yy"] > 0) & (sums["tt"] > 0), 0.0).astype(float)


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
        progress: called with (fraction, message) during training, then (fraction 1.0) before the item statistics
            and before the bootstrap of the sd.

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
    if progress is not None:
        progress(1.0, f"item statistics of {len(arrays.item_ids):,} tasks")
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
        n_boot = boot_replicates(settings, arrays.y.size)
        if progress is not None:
            progress(1.0, f"the abilities' sd: {n_boot} task-bootstrap replicates")
        boot = bootstrap_sd(arrays, n_boot=n_boot, seed=settings.seed, start=raw.jml)
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
