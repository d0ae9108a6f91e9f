"""FedAvg (McMahan et al., AISTATS 2017) as the FedProx paper runs it (Li et al., MLSys 2020, section 5).

Each selected client runs E epochs of minibatch SGD from the global model; the server averages the local
models with the engine's aggregation weights (n_k under uniform sampling, equal under sampling by n_k).
Stragglers are dropped: only clients that finish their E epochs are aggregated (section 5.2).

Deviations: none from the authors' flearn/trainers/fedavg.py beyond those of the engine (seeded streams
instead of reseeding numpy's global generator).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fedbench.ops import sgd_step, weighted_mean


@dataclass(frozen=True)
class FedAvgState:
    theta: torch.Tensor  # global model [P]


@dataclass(frozen=True)
class FedAvg:
    lr: float
    keeps_partial_work: bool = False

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
