"""The server-only baseline with a base optimizer (Karimireddy et al., "Mime: Mimicking Centralized Stochastic
Algorithms in Federated Learning", 2020, Figure 3: "server-only" SGDm and Adam; the talk slides, "Solving FL: SGD":
"on each client i in S, compute a large batch stochastic gradient and average them; equivalent to synchronous
centralized large-batch training").

The base optimizer B = (U, V) (fedbench.optimizers: SGD with momentum or Adam, as Mime's) runs on the server alone.
In a round, every selected client i evaluates the gradients of the minibatches of its local schedule (the engine's
E epochs of batch B, the very samples FedAvg's local steps would visit), all at the server model x, and sends their
mean g_i (as fedbench.algorithms.minibatch_sgd). The server takes one step of B on their weighted mean:

    g = sum_i w_i g_i,      x <- x - lr U(g, s),      s <- V(g, s)

With base "sgdm" and momentum 0 this is minibatch SGD (tested); with one client and full batches it is B itself
(tested against torch.optim.SGD(momentum) and torch.optim.Adam).

Deviations and choices:
- The per-client batch is the round's local schedule, as minibatch_sgd (the papers do not pin it); with E = 1 g_i is
  the client's full local gradient, except that a partial last batch is weighted like a full one.
- The engine's aggregation weights w_i; under ``sampling='proportional'`` they are the simple means of Mime's
  Algorithm 1.
- Stragglers are dropped as in FedAvg (the papers have none).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch

from fedbench.ops import sgd_step, weighted_mean
from fedbench.optimizers import build_base_optimizer


@dataclass(frozen=True)
class ServerOnlyState:
    theta: torch.Tensor  # x [P]
    opt: Any  # the base optimizer's state s (MomentumState or AdamState), tensors [P]


@dataclass(frozen=True)
class ServerOnly:
    lr: float  # the server's step size
    base: str = "sgdm"
    momentum: float = 0.9  # sgdm
    beta1: float = 0.9  # adam
    beta2: float = 0.999  # adam
    eps: float = 1e-8  # adam
    keeps_partial_work: bool = False

    def __post_init__(self) -> None:
        _ = self.optimizer  # fails here on an unknown base optimizer or a bad hyperparameter

    @cached_property  # built once; not a field, so not in ==, hash or repr
    def optimizer(self):
        return build_base_optimizer(self.base, momentum=self.momentum, beta1=self.beta1, beta2=self.beta2,
                                    eps=self.eps)

    def init(self, theta0: torch.Tensor, num_clients: int) -> ServerOnlyState:
        return ServerOnlyState(theta=theta0, opt=self.optimizer.init(theta0))

    def broadcast(self, state: ServerOnlyState) -> torch.Tensor:
        return state.theta

    def client_init(self, theta: torch.Tensor, cohort) -> torch.Tensor:
        """[K, P] sum of the minibatch gradients at x, zero before the first step."""
        return torch.zeros(len(cohort.clients), theta.shape[-1], dtype=theta.dtype, device=theta.device)

    def client_step(self, total: torch.Tensor, grad_fn, theta: torch.Tensor) -> torch.Tensor:
        return total + grad_fn(theta.expand_as(total))  # every minibatch at the server model x

    def client_result(self, total: torch.Tensor, theta: torch.Tensor, cohort) -> tuple[torch.Tensor, None]:
        # g_i = sum / S_i: client i took cohort.steps[i] steps, one per minibatch
        return total / cohort.steps.clamp(min=1).to(total.dtype).unsqueeze(1), None

    def server_update(self, state: ServerOnlyState, grads: torch.Tensor, weights: torch.Tensor,
                      cohort) -> ServerOnlyState:
        g = weighted_mean(grads, weights)
        return ServerOnlyState(theta=sgd_step(state.theta, self.optimizer.update(g, state.opt), self.lr),
                               opt=self.optimizer.next_state(g, state.opt))
