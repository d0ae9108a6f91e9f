"""FedAvg with a server-side Adam (Reddi, Charles, Zaheer, Garrett, Rush, Konecny, Kumar, McMahan, "Adaptive
Federated Optimization", ICLR 2021, Algorithm 2, "FedAdam"; the FedAvg baseline of the Mime paper's Figure 3 Adam
panel: Karimireddy et al., "Mime", 2020, and the SCAFFOLD/Mime talk slides).

Each selected client runs E epochs of minibatch SGD (step ``lr``) from x, as FedAvg. The server treats the averaged
update as a pseudo-gradient and takes one Adam step with server step ``server_lr``:

    Delta = x - sum_k w_k y_k          (w_k: the engine's aggregation weights)
    x <- x - server_lr U(Delta, s),    s <- V(Delta, s)     (U, V: fedbench.optimizers.Adam)

Deviations and choices:
- The server's Adam is fedbench.optimizers.Adam, the one Mime and MimeLite apply on their clients (bias-corrected,
  eps added after the square root, as torch.optim.Adam), so that the Adam panel's arms differ only where the papers
  say they do. Reddi et al.'s Algorithm 2 has no bias correction and adds its tau where we add eps; with
  beta1 = beta2 = 0 both are sign-like steps, and the two differ by the bias correction's factor in early rounds.
- Stragglers are dropped as in FedAvg.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import torch

from fedbench.ops import sgd_step, weighted_mean
from fedbench.optimizers import Adam, AdamState


@dataclass(frozen=True)
class FedAdamState:
    theta: torch.Tensor  # server model x [P]
    adam: AdamState  # the server's Adam state s: m, v [P], step t


@dataclass(frozen=True)
class FedAdam:
    stack_varying: ClassVar[tuple[str, ...]] = ("server_lr",)  # server side only
    lr: float  # local (client) SGD step size
    server_lr: float = 1e-3  # the server's Adam step
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    keeps_partial_work: bool = False

    def __post_init__(self) -> None:
        if self.server_lr <= 0 or not (0.0 <= self.beta1 < 1.0 and 0.0 <= self.beta2 < 1.0) or self.eps <= 0:
            raise ValueError(f"need server_lr > 0, 0 <= beta1, beta2 < 1 and eps > 0, got server_lr={self.server_lr}, "
                             f"beta1={self.beta1}, beta2={self.beta2}, eps={self.eps}")

    @cached_property  # built once; not a field, so not in ==, hash or repr
    def _server(self) -> Adam:
        return Adam(beta1=self.beta1, beta2=self.beta2, eps=self.eps)

    def init(self, theta0: torch.Tensor, num_clients: int) -> FedAdamState:
        return FedAdamState(theta=theta0, adam=self._server.init(theta0))

    def broadcast(self, state: FedAdamState) -> torch.Tensor:
        return state.theta

    def client_init(self, theta: torch.Tensor, cohort) -> torch.Tensor:
        return theta.expand(len(cohort.clients), -1).clone()

    def client_step(self, theta: torch.Tensor, grad_fn, bcast) -> torch.Tensor:
        return sgd_step(theta, grad_fn(theta), self.lr)

    def server_update(self, state: FedAdamState, local_models: torch.Tensor, weights: torch.Tensor,
                      cohort) -> FedAdamState:
        pseudo_grad = state.theta - weighted_mean(local_models, weights)  # Delta = x - avg y
        step = self._server.update(pseudo_grad, state.adam)  # U(Delta, s)
        return FedAdamState(theta=torch.add(state.theta, step, alpha=-self.server_lr),
                            adam=self._server.next_state(pseudo_grad, state.adam))
