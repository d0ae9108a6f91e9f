"""FedAvg with server momentum (Hsu, Qi, Brown, "Measuring the Effects of Non-Identical Data Distribution
for Federated Visual Classification", 2019, "FedAvgM"; Reddi et al., "Adaptive Federated Optimization",
ICLR 2021, the FedOpt framework with a momentum server optimizer; the SCAFFOLD/Mime talk slides, "Solving
FL: FedAvg with momentum").

Each selected client runs E epochs of minibatch SGD (step ``lr``) from x, as FedAvg. The server treats the
averaged update as a pseudo-gradient and takes a heavy-ball step with server learning rate ``server_lr``:

    Delta = x - sum_k w_k y_k          (w_k: the engine's aggregation weights)
    m <- beta m + Delta                x <- x - server_lr m

With beta = 0 and server_lr = 1 this is FedAvg (tested).

Deviations and choices:
- Undampened momentum (m <- beta m + Delta, as Hsu et al. and the slides). The maths is
  fedbench.optimizers.SGDMomentum, the base optimizer Mime uses, so the two momentum methods differ only
  where the papers say they do.
- Stragglers are dropped as in FedAvg.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar
from functools import cached_property

import torch

from fedbench.ops import sgd_step, weighted_mean
from fedbench.optimizers import MomentumState, SGDMomentum


@dataclass(frozen=True)
class FedAvgMomentumState:
    theta: torch.Tensor  # server model x [P]
    momentum: MomentumState  # m [P]


@dataclass(frozen=True)
class FedAvgMomentum:
    stack_varying: ClassVar[tuple[str, ...]] = ("beta", "server_lr")  # server side only
    lr: float  # local (client) step size
    beta: float = 0.9  # server momentum
    server_lr: float = 1.0
    keeps_partial_work: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.beta < 1.0 or self.server_lr <= 0:
            raise ValueError(f"need 0 <= beta < 1 and server_lr > 0, got beta={self.beta}, server_lr={self.server_lr}")

    @cached_property  # built once; not a field, so not in ==, hash or repr
    def _server(self) -> SGDMomentum:
        return SGDMomentum(momentum=self.beta)

    def init(self, theta0: torch.Tensor, num_clients: int) -> FedAvgMomentumState:
        return FedAvgMomentumState(theta=theta0, momentum=self._server.init(theta0))

    def broadcast(self, state: FedAvgMomentumState) -> torch.Tensor:
        return state.theta

    def client_init(self, theta: torch.Tensor, cohort) -> torch.Tensor:
        return theta.expand(len(cohort.clients), -1).clone()

    def client_step(self, theta: torch.Tensor, grad_fn, bcast) -> torch.Tensor:
        return sgd_step(theta, grad_fn(theta), self.lr)

    def server_update(self, state: FedAvgMomentumState, local_models: torch.Tensor, weights: torch.Tensor,
                      cohort) -> FedAvgMomentumState:
        pseudo_grad = state.theta - weighted_mean(local_models, weights)  # Delta = x - avg y
        m = self._server.next_state(pseudo_grad, state.momentum)  # m <- Delta + beta m
        return FedAvgMomentumState(theta=torch.add(state.theta, m.m, alpha=-self.server_lr), momentum=m)
