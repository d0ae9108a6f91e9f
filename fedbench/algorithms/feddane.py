"""FedDane (Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, "Federated Optimization in Heterogeneous Networks",
MLSys 2020, appendix B and Figure 4; in full in Li et al., "FedDANE: A Federated Newton-Type Method",
arXiv 2001.01920), DANE (Shamir et al., ICML 2014, eq. 13) adapted to partial participation and local
updating.

Round t, with w^{t-1} the global model:
1. A set of c devices each sends its full local gradient at w^{t-1}; the server averages them into
   g_t, the estimate of the full gradient.
2. Each selected device k approximately minimises, with E epochs of minibatch SGD,

       F_k(w) + <g_t - grad F_k(w^{t-1}), w> + (mu/2)||w - w^{t-1}||^2,

   i.e. steps w <- w - lr (grad F_k(w; batch) + g_t - grad F_k(w^{t-1}) + mu (w - w^{t-1})), as the
   authors' flearn/optimizer/pggd.py ("gold" = g_t - grad F_k(w^{t-1}), "vstar" = w^{t-1}).
3. The server averages the local models with the engine's weights.

The c gradient devices: ``gradient_clients`` = c. With c = 0 (the default) or c = K they are the round's
cohort, so the devices that correct are the devices that solve. This is what the authors' trainer does as
committed (flearn/trainers/feddane.py draws both sets with select_clients(i, clients_per_round), which
reseeds numpy with the round index, so the two draws are the same devices). Figure 4's bottom row varies c
in {10, 20, 30} with K = 10 solving devices out of 30; with c > K the gradient devices are the K solving
devices plus c - K more, drawn uniformly without replacement among the other clients available in the
round (stream (seed, round, 'algorithm')). Their full gradients at w^{t-1} come from
``cohort.client_grads``; they do no local work.

Deviations and choices:
- g_t weights the c gradients by n_k, as the authors' aggregate() does (their selection is uniform).
- The paper does not say whether the c gradient devices include the solving ones; here they do, so that
  c = K is the committed code and c = N uses the exact full gradient. Another reading of Figure 4's
  bottom row (its FedProx curve is also labelled "c=10", and the caption speaks of increasing "the number
  of selected devices") is K = c selected devices that all send gradients and all solve: that is this
  class with gradient_clients = 0 and clients_per_round = c. fedbench.studies.feddane_synthetic runs both.
- Under ``sampling='proportional'`` the engine averages the models with equal weights while g_t stays
  n_k-weighted, and the extra gradient devices are drawn uniformly.
- If fewer than c clients are available in a round, all available ones send gradients.
- Stragglers keep their partial work, as FedProx (the framework FedDane is compared within); Figure 4 has
  no stragglers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from fedbench.ops import prox_gradient, sgd_step, to_device, weighted_mean
from fedbench.seeding import rng


@dataclass(frozen=True)
class FedDaneState:
    theta: torch.Tensor  # w^{t-1} [P]


@dataclass(frozen=True)
class FedDaneLocal:
    w: torch.Tensor  # [K, P] local models
    correction: torch.Tensor  # [K, P] g_t - grad F_k(w^{t-1}), fixed during the local steps


@dataclass(frozen=True)
class FedDane:
    stack_varying: ClassVar[tuple[str, ...]] = ("gradient_clients",)  # chosen in client_init
    lr: float
    mu: float = 0.0
    gradient_clients: int = 0  # c; 0: the cohort (c = K)
    keeps_partial_work: bool = True

    def __post_init__(self) -> None:
        if self.gradient_clients < 0:
            raise ValueError(f"gradient_clients must be >= 0 (0: the cohort), got {self.gradient_clients}")

    def init(self, theta0: torch.Tensor, num_clients: int) -> FedDaneState:
        return FedDaneState(theta=theta0)

    def broadcast(self, state: FedDaneState) -> torch.Tensor:
        return state.theta

    def client_init(self, theta: torch.Tensor, cohort) -> FedDaneLocal:
        k = len(cohort.clients)
        w = theta.expand(k, -1).clone()
        local_grads = cohort.full_grad(w)  # grad F_k(w^{t-1}) [K, P]
        grads, sizes = local_grads, cohort.num_samples
        extra = self.extra_gradient_clients(cohort)
        if len(extra):
            grads = torch.cat([grads, cohort.client_grads(extra, theta)])
            sizes = torch.cat([sizes, to_device(cohort.train_sizes[extra], sizes.device)])
        g_t = weighted_mean(grads, sizes)  # step 1, weights n_k
        return FedDaneLocal(w=w, correction=g_t - local_grads)

    def extra_gradient_clients(self, cohort) -> np.ndarray:
        """The c - K gradient devices beyond the cohort, drawn among the other available clients."""
        k = len(cohort.clients)
        if 0 < self.gradient_clients < k:
            raise ValueError(f"gradient_clients={self.gradient_clients} is below the {k} solving devices of the "
                             "round: give 0 (the cohort) or at least clients_per_round")
        if self.gradient_clients <= k:
            return np.zeros(0, dtype=np.int64)
        others = np.ones(cohort.num_clients, dtype=bool) if cohort.available is None else cohort.available.copy()
        others[cohort.host_clients] = False
        pool = np.flatnonzero(others)
        take = min(self.gradient_clients - k, len(pool))
        return np.sort(rng(cohort.seed, cohort.round, "algorithm").choice(pool, size=take, replace=False))

    def client_step(self, local: FedDaneLocal, grad_fn, theta: torch.Tensor) -> FedDaneLocal:
        g = prox_gradient(grad_fn(local.w), local.w, theta, self.mu) + local.correction
        return FedDaneLocal(w=sgd_step(local.w, g, self.lr), correction=local.correction)

    def client_result(self, local: FedDaneLocal, theta: torch.Tensor, cohort) -> tuple[torch.Tensor, None]:
        return local.w, None

    def server_update(self, state: FedDaneState, local_models: torch.Tensor, weights: torch.Tensor,
                      cohort) -> FedDaneState:
        return FedDaneState(theta=weighted_mean(local_models, weights))
