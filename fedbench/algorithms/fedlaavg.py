"""FedLaAvg, Federated Latest Averaging (Yan, Niu, Ding, Zheng, Wu, Chen, Tang, Jiang, "Distributed Non-Convex
Optimization with Sublinear Speedup under Intermittent Client Availability", arXiv 2002.07399 v1,
Algorithm 1, with the multiple-local-iteration variant of its appendix E that all its CIFAR-10 experiments use).

Objective: the average of the rescaled local objectives f'_i = N p_i f_i, p_i = n_i / n (section 2), i.e.
the n_i-weighted global objective. Per round t:

1. ``choose_clients``: among the available clients A_t, the K = min(K, |A_t|) absent the longest, i.e. with
   the smallest latest participating round r_i (-1 if never selected), by a stable sort over client index
   (the authors' sorted(available, key=r)); then r_i <- t (Algorithm 1, lines 5-7).
2. Each selected client runs local SGD from w_t with learning rate eta on its loss scaled by N p_i (one step
   of the engine's local work is one of the paper's local iterations; ``SimulationConfig.local_steps`` gives
   the paper's C) and forms its accumulated scaled gradient G_i = (w_t - w_i) / eta (appendix E).
3. It uploads G_i - G_i^latest; the server keeps G = (1/N) sum_i G_i^latest over *all* N clients
   (eq. (4): G <- G + (1/N) sum_{i in S_t} (G_i - G_i^latest)), and steps w_{t+1} = w_t - eta G.

State: the server's G and every r_i are in the server state; every client's latest G_i is a row of the
engine's per-client table ([N, P], zeros at first, on the GPU when there is one). With one local step,
full batches and every client selected each round this is full-batch gradient descent on the n_i-weighted
objective (tested).

Deviations:
- A round where no client is available leaves w unchanged (the engine skips it); Algorithm 1 would still
  step with the stale G. The authors' option to collect gradients without updating during the first rounds
  (num_non_update_rounds, default 0) is not implemented.
- Stragglers (not in the paper) are dropped like FedAvg drops them; they still count as selected (r_i set).
- The learning rate is constant unless SimulationConfig.lr_decay decays it (the CIFAR runs: 0.9999 per round).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch


@dataclass(frozen=True)
class FedLaAvgState:
    theta: torch.Tensor  # w_t [P]
    latest_mean: torch.Tensor  # G = (1/N) sum_i G_i^latest [P]
    last_round: np.ndarray = field(repr=False)  # r_i [N]: latest participating round, -1 if never


@dataclass(frozen=True)
class FedLaAvgLocal:
    theta: torch.Tensor  # local models [K, P]
    scale: torch.Tensor  # N p_i of each client [K, 1]


@dataclass(frozen=True)
class FedLaAvg:
    step_scalars: ClassVar[tuple[str, ...]] = ("lr",)  # read by client_step through tensor arithmetic only
    lr: float
    keeps_partial_work: bool = False

    def init(self, theta0: torch.Tensor, num_clients: int) -> FedLaAvgState:
        return FedLaAvgState(theta=theta0, latest_mean=torch.zeros_like(theta0),
                             last_round=np.full(num_clients, -1, dtype=np.int64))

    def init_clients(self, num_clients: int, theta0: torch.Tensor) -> torch.Tensor:
        return torch.zeros(num_clients, theta0.numel(), dtype=theta0.dtype, device=theta0.device)

    def choose_clients(self, state: FedLaAvgState, round_: int, available: np.ndarray,
                       k: int) -> tuple[FedLaAvgState, np.ndarray]:
        pool = np.flatnonzero(available)
        chosen = np.sort(pool[np.argsort(state.last_round[pool], kind="stable")[:k]])
        last_round = state.last_round.copy()
        last_round[chosen] = round_
        return dataclasses.replace(state, last_round=last_round), chosen

    def broadcast(self, state: FedLaAvgState) -> torch.Tensor:
        return state.theta

    def client_init(self, theta: torch.Tensor, cohort) -> FedLaAvgLocal:
        scale = cohort.num_clients * cohort.num_samples.to(theta.dtype) / cohort.total_samples  # N p_i
        return FedLaAvgLocal(theta=theta.expand(len(cohort.clients), -1).clone(), scale=scale.unsqueeze(1))

    def client_step(self, local: FedLaAvgLocal, grad_fn, bcast) -> FedLaAvgLocal:
        theta = local.theta - self.lr * local.scale * grad_fn(local.theta)
        return FedLaAvgLocal(theta=theta, scale=local.scale)

    def client_result(self, local: FedLaAvgLocal, theta: torch.Tensor, cohort) -> tuple[torch.Tensor, torch.Tensor]:
        accumulated = (theta - local.theta) / self.lr  # G_i, the accumulated scaled gradient
        return accumulated - cohort.client_rows, accumulated  # upload G_i - G_i^latest; new G_i^latest

    def server_update(self, state: FedLaAvgState, differences: torch.Tensor, weights: torch.Tensor,
                      cohort) -> FedLaAvgState:
        latest_mean = state.latest_mean + differences.sum(0) / cohort.num_clients  # eq. (4)
        return dataclasses.replace(state, theta=state.theta - self.lr * latest_mean, latest_mean=latest_mean)
