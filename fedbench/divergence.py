"""When a run has diverged, is diverging or has converged: the rules on a run's training losses f_0..f_t that the
engine stops runs by and the claims read runs by (FedProx appendix C.3.2). Plain Python and numpy, no torch:
fedbench.engine.metrics and fedbench.claims.readings both use it."""

from __future__ import annotations

import numpy as np

DIVERGENCE_WINDOW = 10
DIVERGENCE_JUMP = 1.0
CONVERGENCE_TOL = 1e-4
# A run has diverged, and the engine stops it, once its training loss f_t is not finite or exceeds
# DIVERGENCE_FACTOR * max(|f_0|, 1), f_0 being the loss of the initial model (round 0). The run is then a
# result (recorded diverged), not an error. From the usual initialisation a cross-entropy f_0 is about
# ln(classes) (2.3 to 3.5 on the synthetic data), so the bound is in the thousands; the largest loss of a
# normal run here is about 42 f_0 (FedDane in the Figure 4 study), 24 times below it.
DIVERGENCE_FACTOR = 1000.0


def has_diverged(losses: list[float], factor: float = DIVERGENCE_FACTOR) -> bool:
    """The divergence rule on the losses f_0..f_t of the rounds so far: f_t not finite, or above ``factor`` *
    max(|f_0|, 1) (SimulationConfig.divergence_factor; default DIVERGENCE_FACTOR)."""
    return not np.isfinite(losses[-1]) or losses[-1] > factor * max(abs(losses[0]), 1.0)


def is_diverging(losses: list[float]) -> bool:
    """Appendix C.3.2: diverging once f_t - f_{t-10} > 1 (or the run has diverged by has_diverged)."""
    if not losses or has_diverged(losses):
        return bool(losses)
    return len(losses) > DIVERGENCE_WINDOW and losses[-1] - losses[-1 - DIVERGENCE_WINDOW] > DIVERGENCE_JUMP


def reporting_round(losses: list[float] | np.ndarray) -> tuple[int, str]:
    """The round at which FedProx appendix C.3.2 reads a method's accuracy: the first round that has
    converged (|f_t - f_{t-1}| < 1e-4), or has started to diverge (f_t - f_{t-10} > 1), or the last one;
    or the round at which the run diverged (has_diverged), reason "diverged"."""
    losses = list(map(float, losses))
    if not losses:
        raise ValueError("reporting_round needs at least one evaluated round")
    if has_diverged(losses[:1]):
        return 0, "diverged"
    for t in range(1, len(losses)):
        if has_diverged(losses[: t + 1]):
            return t, "diverged"
        if abs(losses[t] - losses[t - 1]) < CONVERGENCE_TOL:
            return t, "converged"
        if is_diverging(losses[: t + 1]):
            return t, "diverging"
    return len(losses) - 1, "round budget"
