"""IRT settings (everything that changes a fit's numbers), model names and the package's error."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from store import RunlensError

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
