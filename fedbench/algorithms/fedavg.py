"""FedAvg (McMahan et al., AISTATS 2017) as the FedProx paper runs it (Li et al., MLSys 2020, section 5).

Each selected client runs E epochs of minibatch SGD from the global model; the server averages the local
models with the engine's aggregation weights (n_k under uniform sampling, equal under sampling by n_k).
Stragglers are dropped: only clients that finish their E epochs are aggregated (section 5.2).

Deviations: none from the authors' flearn/trainers/fedavg.py beyond those of the engine (seeded streams
instead of reseeding numpy's global generator).

Stacking (issue 49, D1): a run trains as its stacking form, FedProx with mu = 0 whose stragglers are dropped
(:meth:`FedAvg.stacks_as`), so FedAvg's runs share a stack with FedProx's. The numbers are FedAvg's: alone or
among FedAvg runs mu is the number 0 and the step is ``sgd_step`` itself; beside FedProx runs mu is a per-row
tensor and the step FedProx's in-place one with mu = 0, d = ((theta - w^t) * 0 + grad) * lr, theta - d, which
rounds as theta - lr * grad (IEEE operations are exact on a zero, and x + 0 = x) except in two cases that a
run does not reach: a zero of the wrong sign (theta = -0 with grad = -0 and w^t <= -0: theta stays -0 where
FedAvg gives +0; no step turns +0 or a nonzero number into -0, and a model starts without -0), and theta - w^t overflowing
(0 * inf is nan; the divergence check stops such a run). tests/algorithms/test_fedavg.py checks it on inputs
with exact zeros.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fedbench.algorithms.fedprox import FedProx
from fedbench.ops import sgd_step, weighted_mean


@dataclass(frozen=True)
class FedAvgState:
    theta: torch.Tensor  # global model [P]


@dataclass(frozen=True)
class FedAvg:
    lr: float
    keeps_partial_work: bool = False

    def stacks_as(self) -> FedProx:
        """The same algorithm as FedProx's object (mu = 0, stragglers dropped), so that it stacks with FedProx."""
        return FedProx(lr=self.lr, mu=0.0, keeps_partial_work=False)

    def init(self, theta0: torch.Tensor, num_clients: int) -> FedAvgState:
        return FedAvgState(theta=theta0)

    def broadcast(self, state: FedAvgState) -> torch.Tensor:
        return state.theta

    def client_init(self, theta: torch.Tensor, cohort) -> torch.Tensor:
        return theta.expand(len(cohort.clients), -1).clone()

    def client_step(self, theta: torch.Tensor, grad_fn, bcast) -> torch.Tensor:
        return sgd_step(theta, grad_fn(theta), self.lr)

    def server_update(self, state: FedAvgState, local_models: torch.Tensor, weights: torch.Tensor, cohort) -> FedAvgState:
        return FedAvgState(theta=weighted_mean(local_models, weights))
