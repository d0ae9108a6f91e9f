"""FedProx (Li et al., "Federated Optimization in Heterogeneous Networks", MLSys 2020, Algorithm 2).

Each selected client approximately minimises h_k(w; w^t) = F_k(w) + (mu/2)||w - w^t||^2 (eq. 2) with
minibatch SGD, w <- w - lr (grad F_k(w) + mu (w - w^t)), as the authors' flearn/optimizer/pgd.py does.
Stragglers keep their partial work (fewer epochs) and are aggregated with everyone else. With mu = 0
and no stragglers this is FedAvg exactly (tested).

Deviations: none beyond the engine's (seeded streams; see fedbench.engine.sampling).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from fedbench.ops import prox_sgd_step, weighted_mean


@dataclass(frozen=True)
class FedProxState:
    theta: torch.Tensor  # global model w^t [P]


@dataclass(frozen=True)
class FedProxBroadcast:
    theta: torch.Tensor  # w^t, the proximal anchor
    mu: float


@dataclass(frozen=True)
class FedProx:
    step_scalars: ClassVar[tuple[str, ...]] = ("lr",)  # read by client_step through tensor arithmetic only
    # per-row in a stack: mu read through the broadcast (client_step never reads self.mu); keeps_partial_work read
    # run by run when its round is drawn (FedAvg trains as FedProx with mu = 0 that drops its stragglers)
    stack_varying: ClassVar[tuple[str, ...]] = ("mu", "keeps_partial_work")
    lr: float
    mu: float
    keeps_partial_work: bool = True

    def init(self, theta0: torch.Tensor, num_clients: int) -> FedProxState:
        return FedProxState(theta=theta0)

    def broadcast(self, state: FedProxState) -> FedProxBroadcast:
        return FedProxBroadcast(theta=state.theta, mu=self.mu)

    def client_init(self, bcast: FedProxBroadcast, cohort) -> torch.Tensor:
        return bcast.theta.expand(len(cohort.clients), -1).clone()

    def client_step(self, theta: torch.Tensor, grad_fn, bcast: FedProxBroadcast) -> torch.Tensor:
        return prox_sgd_step(theta, grad_fn(theta), bcast.theta, bcast.mu, self.lr)

    def server_update(self, state: FedProxState, local_models: torch.Tensor, weights: torch.Tensor, cohort) -> FedProxState:
        return FedProxState(theta=weighted_mean(local_models, weights))
