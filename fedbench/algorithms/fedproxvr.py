"""FedProxVR (Dinh, Tran, Nguyen, Bao, Zomaya, Zhou, "Federated Learning with Proximal Stochastic Variance
Reduced Gradient Algorithms", ICPP 2020; Algorithm 1 as the talk slides give it, "Algorithm Design").

Round s, every selected device n, with eta the step size and w_bar the global model:

    w^(0) = w_bar,   v^(0) = grad F_n(w^(0)) (all local data),   w^(1) = prox(w^(0) - eta v^(0))
    for t = 1, ..., tau - 1, on a minibatch i_t:
        SVRG:   v^(t) = grad f_it(w^(t)) - grad f_it(w^(0)) + v^(0)                           (8b)
        SARAH:  v^(t) = grad f_it(w^(t)) - grad f_it(w^(t-1)) + v^(t-1)                       (8a)
        w^(t+1) = prox(w^(t) - eta v^(t))
    send w^(t'), t' uniform in {1, ..., tau}

with prox(x) = argmin_w (mu/2)||w - w_bar||^2 + ||w - x||^2/(2 eta) = (eta/(1 + eta mu))(mu w_bar + x/eta)
(fedbench.proximal). The server averages what it receives with the engine's weights (n_k under uniform
sampling; the authors' code aggregates with weights n_k by default). Step size: ``lr`` directly, or
eta = 1/(beta L) from ``beta`` and ``smoothness`` (L), which then take precedence over ``lr``.

How the local loop maps onto the engine: ``client_init`` takes the full-gradient step to w^(1); engine
step j (0-based) computes w^(j+2), so iterates w^(1..tau) need tau - 1 minibatch steps: run with
``SimulationConfig(local_steps=tau - 1)``. Under epoch-based local work every client needs at least tau - 1
steps (checked; it raises otherwise) and steps beyond w^(tau) return at once, computing nothing; both give
the same numbers (tested). t' is drawn per client from the (seed, round, 'algorithm', client id) stream, with
the run's seed and the round index from the engine's Cohort, so it does not depend on the cohort or on the
order of clients.

Deviations and choices:
- The loop runs t = 1..tau-1, so the tau candidate outputs w^(1..tau) are all computed and none is wasted.
  The authors' code (CharlieDinh/FederatedLearningWithSVRG, flearn/models/*/mclr.py) instead takes tau
  minibatch steps after the full-gradient step and returns the last iterate, w^(tau+1), not a random one.
- Minibatches are the engine's (each epoch a fresh permutation cut into batches, the last one partial);
  the authors' code draws each batch at random.
- eta = 1/(beta L) is the usual convention for these methods; the slides name beta the "step size
  parameter" but the formula is not verified in the material we have (paper-setups.md, section 3.2).
- The slides have every device participate each round; here the engine's cohort does (set
  clients_per_round = N for full participation). Stragglers are dropped (the paper has none).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fedbench.ops import to_device, weighted_mean
from fedbench.proximal import prox_squared_distance
from fedbench.seeding import rng

ESTIMATORS = ("svrg", "sarah")


@dataclass(frozen=True)
class FedProxVRState:
    theta: torch.Tensor  # w_bar [P]


@dataclass(frozen=True)
class FedProxVRLocal:
    w: torch.Tensor  # [K, P] current iterate w^(t)
    w_prev: torch.Tensor  # [K, P] w^(t-1) (SARAH)
    v: torch.Tensor  # [K, P] v^(t-1) for SARAH; v^(0) for SVRG
    t_out: torch.Tensor  # [K] int64, t' in 1..tau
    out: torch.Tensor  # [K, P] w^(t') once reached
    # t of w. One number for all rows: every row of a local state has taken the same number of steps (the
    # cohort starts together and each client_step advances all the rows it is given). Only client_step
    # reads it; the engine writes finished rows back into a state whose counter it does not advance.
    t: int


@dataclass(frozen=True)
class FedProxVR:
    lr: float
    mu: float = 0.0  # proximal weight
    tau: int = 20  # local iterations
    estimator: str = "svrg"
    beta: float = 0.0  # if > 0 (with smoothness): eta = 1/(beta L)
    smoothness: float = 0.0  # L
    keeps_partial_work: bool = False

    def __post_init__(self) -> None:
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator {self.estimator!r}; allowed: {list(ESTIMATORS)}")
        if self.tau < 1:
            raise ValueError(f"tau must be >= 1, got {self.tau}")
        if self.mu < 0:
            raise ValueError(f"mu must be >= 0, got {self.mu}")
        if (self.beta > 0) != (self.smoothness > 0):
            raise ValueError("give both beta and smoothness (eta = 1/(beta L)) or neither (eta = lr)")
        if self.eta <= 0:
            raise ValueError(f"the step size must be > 0, got {self.eta}")

    @property
    def eta(self) -> float:
        return 1.0 / (self.beta * self.smoothness) if self.beta > 0 else self.lr

    def init(self, theta0: torch.Tensor, num_clients: int) -> FedProxVRState:
        return FedProxVRState(theta=theta0)

    def broadcast(self, state: FedProxVRState) -> torch.Tensor:
        return state.theta  # w_bar = w^(0), the proximal anchor

    def output_iterates(self, seed: int, round_: int, clients) -> list[int]:
        """t' of each client in round ``round_`` of the run with ``seed``, uniform in 1..tau."""
        return [int(rng(seed, round_, "algorithm", int(c)).integers(1, self.tau + 1)) for c in clients]

    def client_init(self, theta: torch.Tensor, cohort) -> FedProxVRLocal:
        fewest = int(cohort.host_steps.min())
        if fewest < self.tau - 1:
            raise ValueError(f"FedProxVR with tau={self.tau} needs at least tau - 1 = {self.tau - 1} local steps "
                             f"per client, but a client has {fewest}: raise local_epochs or lower batch_size")
        k = len(cohort.clients)
        w0 = theta.expand(k, -1).contiguous()
        v0 = cohort.full_grad(w0)  # v^(0) = grad F_n(w^(0))
        w1 = prox_squared_distance(w0 - self.eta * v0, theta, self.eta, self.mu)
        t_out = to_device(np.array(self.output_iterates(cohort.seed, cohort.round, cohort.host_clients), np.int64),
                          w0.device)
        return FedProxVRLocal(w=w1, w_prev=w0, v=v0, t_out=t_out, out=w1.clone(), t=1)

    def client_step(self, local: FedProxVRLocal, grad_fn, theta: torch.Tensor) -> FedProxVRLocal:
        if local.t >= self.tau:  # w^(tau) is computed: the remaining engine steps change nothing
            return local
        if self.estimator == "svrg":  # (8b): anchor point w^(0) and v^(0) stay fixed
            v = grad_fn(local.w) - grad_fn(theta.expand_as(local.w)) + local.v
        else:  # (8a): recursive, from the previous iterate
            v = grad_fn(local.w) - grad_fn(local.w_prev) + local.v
        w_next = prox_squared_distance(local.w - self.eta * v, theta, self.eta, self.mu)
        t = local.t + 1
        out = torch.where((local.t_out == t).unsqueeze(1), w_next, local.out)
        return FedProxVRLocal(w=w_next, w_prev=local.w, v=v if self.estimator == "sarah" else local.v,
                              t_out=local.t_out, out=out, t=t)

    def client_result(self, local: FedProxVRLocal, theta: torch.Tensor, cohort) -> tuple[torch.Tensor, None]:
        return local.out, None

    def server_update(self, state: FedProxVRState, outputs: torch.Tensor, weights: torch.Tensor,
                      cohort) -> FedProxVRState:
        return FedProxVRState(theta=weighted_mean(outputs, weights))
