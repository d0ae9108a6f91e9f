"""Delta-FL / Simplicial-FL (Pillutla, Laguel, Malick, Harchaoui, "Device Heterogeneity in Federated Learning:
A Superquantile Approach", arXiv 2002.11223, Algorithm 2 "practical Delta-FL", over the meta-algorithm
Algorithm 1).

The objective is the superquantile F_theta(w) = max { sum_i pi_i F_i(w) : pi in the simplex,
pi_i <= alpha_i / theta }, alpha_i proportional to n_i, theta in (0, 1] the conformity level (section 3,
eq. (3)); its dual min_eta eta + (1/theta) sum_i alpha_i (F_i(w) - eta)_+ alternates an eta-step, the
closed-form weighted (1 - theta)-quantile of the losses (Property 2), with a w-step. Per round t:

1. the engine selects m clients (uniformly, among the available ones);
2. each reports F_i(w_t), its mean loss on all its training data (``filter_cohort`` receives them);
3. every ``quantile_period`` (k) rounds, the threshold eta_t = the n_i-weighted (1 - theta)-quantile of the
   reported losses (fedbench.quantile.weighted_quantile; the authors' replicate-and-sort quantile);
   in between, the last eta is kept (the appendix's eta updated every k rounds; Algorithm 2 has k = 1);
4. aggregation weights, ``weighting``:
   - ``exact``: on a round that updates eta, the maximising pi of the superquantile over the cohort
     (clients above the quantile get alpha_i / theta, the boundary client the fractional remainder;
     fedbench.quantile.superquantile_weights). On a round that keeps an older eta, alpha_i / theta for
     F_i > eta and 0 otherwise (the w-gradient of the dual at fixed eta);
   - ``filter``: the authors' code: keep F_i >= eta, weights n_i;
5. each client with a positive weight runs local SGD from w_t (FedAvg's client, the engine's epochs and
   batches); the server sets w_{t+1} to the weighted mean of their models.

With theta = 1 the threshold is the 0-quantile, -inf: every client is kept with weight n_i, and the
algorithm is FedAvg exactly (tested, both weightings, any quantile period).

Deviations:
- The paper's own Algorithm 2 reweighting formula is stripped from our copy; ``exact`` is the closed-form
  maximiser of (1) restricted to the cohort, ``filter`` is what the authors' code does (setups 4.2).
- Weights are normalised to sum to 1 before averaging (a mean of local models). On rounds with a stale eta
  the exact dual gradient has mass (1/theta) sum_{F_i > eta} alpha_i, not 1; we take the mean instead.
- theta = 1: the authors' quantile returns the smallest loss, which keeps everyone on the round it is
  computed but would drop clients on later rounds if it were kept (k > 1); we use -inf, the 0-quantile.
- The authors' code rejects updates with a non-finite norm and, as committed, raises at its update call
  (setups 4.2); neither is reproduced. A round where no client is left is skipped, as in their code.
- Stragglers (not in the paper) are dropped after filtering, as FedAvg drops them; the quantile is
  computed over every selected client, since a loss is reported before any local work.
- Clients run the engine's local work (E epochs or C steps); the paper uses 1 epoch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from fedbench.ops import sgd_step, weighted_mean
from fedbench.quantile import superquantile_weights, weighted_quantile

WEIGHTINGS = ("exact", "filter")


@dataclass(frozen=True)
class DeltaFLState:
    theta: torch.Tensor  # global model w_t [P]
    eta: float  # threshold: the last weighted (1 - theta)-quantile of the reported losses (nan before any)


@dataclass(frozen=True)
class DeltaFL:
    stack_varying: ClassVar[tuple[str, ...]] = ("theta", "weighting", "quantile_period")  # server side only
    lr: float
    theta: float = 1.0  # conformity level in (0, 1] (not the model parameters, which the engine calls theta)
    weighting: str = "exact"  # exact | filter (see the module docstring)
    quantile_period: int = 1  # k: eta is recomputed in rounds r with r % k == 0
    keeps_partial_work: bool = False

    def __post_init__(self) -> None:
        if not 0.0 < self.theta <= 1.0:
            raise ValueError(f"theta (conformity level) must be in (0, 1], got {self.theta}")
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {self.weighting!r}")
        if self.quantile_period < 1:
            raise ValueError(f"quantile_period must be >= 1, got {self.quantile_period}")

    def init(self, theta0: torch.Tensor, num_clients: int) -> DeltaFLState:
        return DeltaFLState(theta=theta0, eta=math.nan)

    def filter_cohort(self, state: DeltaFLState, round_: int, losses: np.ndarray,
                      num_samples: np.ndarray) -> tuple[DeltaFLState, np.ndarray]:
        n = np.asarray(num_samples, dtype=np.float64)
        fresh = round_ % self.quantile_period == 0 or math.isnan(state.eta)
        if not fresh:
            eta = state.eta
        elif self.theta == 1.0:
            eta = -math.inf  # the 0-quantile: every loss is at or above it (the mean objective, FedAvg)
        else:
            eta = weighted_quantile(losses, n, 1.0 - self.theta)
        if self.weighting == "filter":
            weights = np.where(losses >= eta, n, 0.0)
        elif fresh:
            weights = superquantile_weights(losses, n, self.theta)
        else:
            weights = np.where(losses > eta, n / self.theta, 0.0)
        return dataclasses.replace(state, eta=float(eta)), weights

    def broadcast(self, state: DeltaFLState) -> torch.Tensor:
        return state.theta

    def client_init(self, theta: torch.Tensor, cohort) -> torch.Tensor:
        return theta.expand(len(cohort.clients), -1).clone()

    def client_step(self, theta: torch.Tensor, grad_fn, bcast) -> torch.Tensor:
        return sgd_step(theta, grad_fn(theta), self.lr)

    def server_update(self, state: DeltaFLState, local_models: torch.Tensor, weights: torch.Tensor,
                      cohort) -> DeltaFLState:
        return dataclasses.replace(state, theta=weighted_mean(local_models, weights))
