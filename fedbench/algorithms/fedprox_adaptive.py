"""FedProx with the adaptive-mu heuristic (Li et al., MLSys 2020, section 5.3.2, Figure 3, appendix C.3.3).

FedProx (Algorithm 2) whose mu follows the global training loss: +0.1 whenever the loss increases from one
round to the next, -0.1 after 5 consecutive rounds of decrease (then the count restarts). The paper starts
mu at 1 on Synthetic-IID and at 0 on the heterogeneous sets (``mu_init``).

Deviations: mu is never allowed below 0 (the paper does not say what happens at 0; a negative proximal
weight would push iterates away from the global model). The loss is the engine's evaluation of the global
objective at the start of each round, as in the authors' code, where evaluation precedes training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from fedbench.ops import prox_sgd_step, weighted_mean

MU_STEP = 0.1
PATIENCE = 5


@dataclass(frozen=True)
class AdaptiveMuState:
    theta: torch.Tensor
    mu: float
    last_loss: float
    decreasing_rounds: int


@dataclass(frozen=True)
class AdaptiveMuBroadcast:
    theta: torch.Tensor
    mu: float


def next_mu(mu: float, last_loss: float, loss: float, decreasing: int) -> tuple[float, int]:
    """One step of the heuristic: returns (new mu, consecutive-decrease count)."""
    if loss > last_loss:
        return mu + MU_STEP, 0
    if loss < last_loss:
        decreasing += 1
        if decreasing >= PATIENCE:
            return max(0.0, mu - MU_STEP), 0
    return mu, decreasing


@dataclass(frozen=True)
class FedProxAdaptiveMu:
    stack_varying: ClassVar[tuple[str, ...]] = ("mu_init",)  # mu reaches clients through the broadcast
    # begin_round reads the global training loss: the engine evaluates it every round, whatever the protocol
    needs_evaluation: ClassVar[tuple[str, ...]] = ("train/loss",)
    lr: float
    mu_init: float
    keeps_partial_work: bool = True

    def init(self, theta0: torch.Tensor, num_clients: int) -> AdaptiveMuState:
        return AdaptiveMuState(theta=theta0, mu=self.mu_init, last_loss=float("inf"), decreasing_rounds=0)

    def begin_round(self, state: AdaptiveMuState, evaluation) -> AdaptiveMuState:
        loss = evaluation.train_loss
        if state.last_loss == float("inf"):
            return AdaptiveMuState(state.theta, state.mu, loss, 0)
        mu, dec = next_mu(state.mu, state.last_loss, loss, state.decreasing_rounds)
        return AdaptiveMuState(state.theta, mu, loss, dec)

    def broadcast(self, state: AdaptiveMuState) -> AdaptiveMuBroadcast:
        return AdaptiveMuBroadcast(theta=state.theta, mu=state.mu)

    def client_init(self, bcast: AdaptiveMuBroadcast, cohort) -> torch.Tensor:
        return bcast.theta.expand(len(cohort.clients), -1).clone()

    def client_step(self, theta: torch.Tensor, grad_fn, bcast: AdaptiveMuBroadcast) -> torch.Tensor:
        return prox_sgd_step(theta, grad_fn(theta), bcast.theta, bcast.mu, self.lr)

    def server_update(self, state: AdaptiveMuState, local_models: torch.Tensor, weights: torch.Tensor,
                      cohort) -> AdaptiveMuState:
        return AdaptiveMuState(weighted_mean(local_models, weights), state.mu, state.last_loss,
                               state.decreasing_rounds)
