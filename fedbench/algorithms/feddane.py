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

How c maps onto the engine: the gradient devices are the round's cohort, so c = K = clients_per_round and
the devices that correct are the devices that solve. This is what the authors' trainer does as committed
(flearn/trainers/feddane.py draws both sets with select_clients(i, clients_per_round), which reseeds
numpy with the round index, so the two draws are the same devices). Figure 4's bottom row varies c in
{10, 20, 30} with 10 solving devices; the committed code has no separate c, and the engine gives an
algorithm the gradients of its cohort only, so c > K is not supported (see the report of issue 3 for the
engine change it needs).

Deviations and choices:
- g_t weights the c gradients by n_k, as the authors' aggregate() does (their selection is uniform).
  It is formed in ``client_init`` from ``cohort.num_samples``, before the engine's weights reach
  ``server_update``; under ``sampling='proportional'`` the engine averages models with equal weights
  while g_t stays n_k-weighted.
- Stragglers keep their partial work, as FedProx (the framework FedDane is compared within); Figure 4 has
  no stragglers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fedbench.ops import prox_gradient, weighted_mean


@dataclass(frozen=True)
class FedDaneState:
    theta: torch.Tensor  # w^{t-1} [P]


@dataclass(frozen=True)
class FedDaneLocal:
    w: torch.Tensor  # [K, P] local models
    correction: torch.Tensor  # [K, P] g_t - grad F_k(w^{t-1}), fixed during the local steps


@dataclass(frozen=True)
class FedDane:
    lr: float
    mu: float = 0.0
    keeps_partial_work: bool = True

    def init(self, theta0: torch.Tensor, num_clients: int) -> FedDaneState:
        return FedDaneState(theta=theta0)

    def init_clients(self, num_clients: int, theta0: torch.Tensor) -> None:
        return None

    def begin_round(self, state: FedDaneState, evaluation) -> FedDaneState:
        return state

    def broadcast(self, state: FedDaneState) -> torch.Tensor:
        return state.theta

    def client_init(self, theta: torch.Tensor, cohort) -> FedDaneLocal:
        k = len(cohort.clients)
        w = theta.expand(k, -1).clone()
        local_grads = cohort.full_grad(w)  # grad F_k(w^{t-1}) [K, P]
        g_t = weighted_mean(local_grads, cohort.num_samples)  # step 1, weights n_k
        return FedDaneLocal(w=w, correction=g_t - local_grads)

    def client_step(self, local: FedDaneLocal, grad_fn, theta: torch.Tensor) -> FedDaneLocal:
        g = prox_gradient(grad_fn(local.w), local.w, theta, self.mu) + local.correction
        return FedDaneLocal(w=torch.add(local.w, g, alpha=-self.lr), correction=local.correction)

    def client_result(self, local: FedDaneLocal, theta: torch.Tensor, cohort) -> tuple[torch.Tensor, None]:
        return local.w, None

    def server_update(self, state: FedDaneState, local_models: torch.Tensor, weights: torch.Tensor,
                      cohort) -> FedDaneState:
        return FedDaneState(theta=weighted_mean(local_models, weights))
