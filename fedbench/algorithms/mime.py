"""Mime and MimeLite (Karimireddy, Jaggi, Kale, Mohri, Reddi, Stich, Suresh, "Mime: Mimicking Centralized
Stochastic Algorithms in Federated Learning", 2020, Algorithm 1; the SCAFFOLD/Mime talk slides).

A base optimizer B = (U, V) (fedbench.optimizers: SGD with momentum or Adam) has state s kept by the
server. Each round the server sends (x, s); s stays fixed during the local steps. Every selected client
starts from y_i = x and, for each of its minibatches zeta, takes

    Mime:      y_i <- y_i - lr U(grad f_i(y_i; zeta) - grad f_i(x; zeta) + c, s)
    MimeLite:  y_i <- y_i - lr U(grad f_i(y_i; zeta), s)

with c = (1/|S|) sum_{j in S} grad f_j(x), the mean full-batch gradient of the selected clients at x. Each
client also sends its full-batch gradient grad f_i(x), and the server sets

    x <- (1/|S|) sum_S y_i,        s <- V((1/|S|) sum_S grad f_i(x), s).

With one client, full batches and one local step per round, Mime and MimeLite are their base optimizer
(tested against torch.optim.SGD(momentum) and torch.optim.Adam).

How c is computed: the engine calls ``client_init(bcast, cohort)`` once for the whole cohort before any
local step, and ``cohort.full_grad`` gives every selected client's full-data gradient at x. c is their
mean, formed there and copied into every client's local state. In a real deployment this is the extra
communication round Algorithm 1 has ("communicate c", before local work); the simulation needs no second
pass because the same gradients are the ones the clients send back for the update of s.

Deviations and choices:
- Simple means over the selected clients, as Algorithm 1, for c, x and s; the engine's aggregation
  weights (n_k under ``sampling='uniform'``) are not used. Under ``sampling='proportional'`` the engine's
  weights are these simple means.
- SGDm is the slides' undampened form (U = g + beta m, V: m <- g + beta m); Adam is the standard one
  with its bias correction, U using the step count t + 1 of the state it is applied with.
- K is each client's own number of local steps this round (E epochs of batch B), not a fixed K.
- Stragglers are dropped as in FedAvg (the paper has none).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch

from fedbench.ops import sgd_step

from fedbench.optimizers import build_base_optimizer

VARIANTS = ("mime", "mimelite")


@dataclass(frozen=True)
class MimeState:
    theta: torch.Tensor  # server model x [P]
    opt: Any  # base-optimizer state s (MomentumState or AdamState), tensors [P]


@dataclass(frozen=True)
class MimeBroadcast:
    theta: torch.Tensor  # x [P]
    opt: Any  # s, fixed during local work


@dataclass(frozen=True)
class MimeLocal:
    y: torch.Tensor  # [K, P] local models
    c: torch.Tensor  # [K, P] every row the same c (rows so the engine can slice the cohort)
    grad_x: torch.Tensor  # [K, P] each client's full-batch gradient at x, sent back for s


@dataclass(frozen=True)
class MimeResult:
    y: torch.Tensor  # [K, P]
    grad_x: torch.Tensor  # [K, P]


@dataclass(frozen=True)
class Mime:
    lr: float
    variant: str = "mime"
    base: str = "sgdm"
    momentum: float = 0.9  # sgdm
    beta1: float = 0.9  # adam
    beta2: float = 0.999  # adam
    eps: float = 1e-8  # adam
    keeps_partial_work: bool = False

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant {self.variant!r}; allowed: {list(VARIANTS)}")
        _ = self.optimizer  # fails here on an unknown base optimizer or a bad hyperparameter

    @cached_property  # built once (client_step uses it every step); not a field, so not in ==, hash or repr
    def optimizer(self):
        return build_base_optimizer(self.base, momentum=self.momentum, beta1=self.beta1, beta2=self.beta2,
                                    eps=self.eps)

    def init(self, theta0: torch.Tensor, num_clients: int) -> MimeState:
        return MimeState(theta=theta0, opt=self.optimizer.init(theta0))

    def broadcast(self, state: MimeState) -> MimeBroadcast:
        return MimeBroadcast(theta=state.theta, opt=state.opt)

    def client_init(self, bcast: MimeBroadcast, cohort) -> MimeLocal:
        k = len(cohort.clients)
        y = bcast.theta.expand(k, -1).clone()
        grad_x = cohort.full_grad(y)  # grad f_i(x) on all of client i's data
        c = grad_x.mean(0, keepdim=True).expand(k, -1).clone()  # (1/|S|) sum_S grad f_j(x)
        return MimeLocal(y=y, c=c, grad_x=grad_x)

    def client_step(self, local: MimeLocal, grad_fn, bcast: MimeBroadcast) -> MimeLocal:
        g = grad_fn(local.y)
        if self.variant == "mime":  # SVRG-style correction on the same minibatch
            g = g - grad_fn(bcast.theta.expand_as(local.y)) + local.c
        y = sgd_step(local.y, self.optimizer.update(g, bcast.opt), self.lr)
        return MimeLocal(y=y, c=local.c, grad_x=local.grad_x)

    def client_result(self, local: MimeLocal, bcast: MimeBroadcast, cohort) -> tuple[MimeResult, None]:
        return MimeResult(y=local.y, grad_x=local.grad_x), None

    def server_update(self, state: MimeState, result: MimeResult, weights: torch.Tensor, cohort) -> MimeState:
        # Simple means, as Algorithm 1 (module docstring); ``weights`` is not used.
        return MimeState(theta=result.y.mean(0), opt=self.optimizer.next_state(result.grad_x.mean(0), state.opt))
