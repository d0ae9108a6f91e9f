"""SCAFFOLD (Karimireddy, Kale, Mohri, Reddi, Stich, Suresh, "SCAFFOLD: Stochastic Controlled Averaging for
Federated Learning", ICML 2020, Algorithm 1).

Server state: model x and control variate c. Each client i keeps a control variate c_i across rounds (in
the engine's per-client table, zeros at the start). Each round, every selected client starts from
y_i = x and takes K local steps

    y_i <- y_i - eta_l (g_i(y_i) - c_i + c)                                          (line 10)

then computes its new control variate (line 12), option I or II (``control_variate``):

    (I)  c_i+ = g_i(x), the gradient of client i's loss on all its data at the server model
    (II) c_i+ = c_i - c + (x - y_i) / (K eta_l)

and the server applies (lines 16-17)

    x <- x + eta_g (1/|S|) sum_S (y_i - x)        c <- c + (|S|/N) (1/|S|) sum_S (c_i+ - c_i).

``lr`` is the local step size eta_l and ``eta_g`` the global one.

Deviations and choices:
- Averages are the paper's simple means over the clients received; the engine's aggregation weights are
  not used. The control-variate bookkeeping needs it: with simple means and |S|/N, c stays exactly the
  mean of all N client variates c_i (tested), which is what the correction c - c_i assumes. Under the
  engine's ``sampling='uniform'`` FedAvg instead weights by n_k; compare the two on equal-sized clients or
  with ``sampling='proportional'`` (equal weights), where the conventions coincide.
- K is each client's own number of local steps this round (``cohort.steps``): E epochs of its minibatches,
  fewer for a straggler whose partial work is kept, or exactly K for all with the engine's
  ``local_steps = K`` (the paper's setting: the same K for every client, "1 epoch = 5 steps" with a batch
  of 20% of the client's data). Option II divides by the K the client actually took, which is what makes
  (x - y_i)/(K eta_l) the average corrected gradient along its path.
- Option I's "(possibly large-batch) gradient at the server model" is the full local gradient at x (one
  extra pass over the client's data).
- Stragglers are dropped as in FedAvg by default (``keeps_partial_work=False``): the paper has none.
  With ``keeps_partial_work=True`` their partial work is aggregated with option II's K_i as above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from fedbench.ops import sgd_step

CONTROL_VARIATES = ("I", "II")


@dataclass(frozen=True)
class ScaffoldState:
    theta: torch.Tensor  # server model x [P]
    c: torch.Tensor  # server control variate [P] = mean of the N client c_i


@dataclass(frozen=True)
class ScaffoldBroadcast:
    theta: torch.Tensor  # x [P]
    c: torch.Tensor  # c [P]


@dataclass(frozen=True)
class ScaffoldLocal:
    y: torch.Tensor  # [K, P] local models
    correction: torch.Tensor  # [K, P] c - c_i (fixed during the local steps)


@dataclass(frozen=True)
class ScaffoldResult:
    delta_y: torch.Tensor  # [K, P] y_i - x
    delta_c: torch.Tensor  # [K, P] c_i+ - c_i


@dataclass(frozen=True)
class Scaffold:
    stack_varying: ClassVar[tuple[str, ...]] = ("eta_g", "control_variate")  # server side and client_result only
    lr: float  # eta_l
    eta_g: float = 1.0  # global step size (the paper's experiments use 1)
    control_variate: str = "II"
    keeps_partial_work: bool = False

    def __post_init__(self) -> None:
        if self.control_variate not in CONTROL_VARIATES:
            raise ValueError(f"control_variate {self.control_variate!r}; allowed: {list(CONTROL_VARIATES)}")
        if self.lr <= 0 or self.eta_g <= 0:
            raise ValueError(f"step sizes must be > 0, got lr={self.lr}, eta_g={self.eta_g}")

    def init(self, theta0: torch.Tensor, num_clients: int) -> ScaffoldState:
        return ScaffoldState(theta=theta0, c=torch.zeros_like(theta0))

    def init_clients(self, num_clients: int, theta0: torch.Tensor) -> torch.Tensor:
        """c_i = 0 for every client: [N, P] on the model's device."""
        return torch.zeros(num_clients, theta0.shape[-1], dtype=theta0.dtype, device=theta0.device)

    def broadcast(self, state: ScaffoldState) -> ScaffoldBroadcast:
        return ScaffoldBroadcast(theta=state.theta, c=state.c)

    def client_init(self, bcast: ScaffoldBroadcast, cohort) -> ScaffoldLocal:
        k = len(cohort.clients)
        return ScaffoldLocal(y=bcast.theta.expand(k, -1).clone(), correction=bcast.c - cohort.client_rows)

    def client_step(self, local: ScaffoldLocal, grad_fn, bcast: ScaffoldBroadcast) -> ScaffoldLocal:
        g = grad_fn(local.y) + local.correction  # g_i(y_i) - c_i + c  (line 10)
        return ScaffoldLocal(y=sgd_step(local.y, g, self.lr), correction=local.correction)

    def client_result(self, local: ScaffoldLocal, bcast: ScaffoldBroadcast, cohort) -> tuple[ScaffoldResult, torch.Tensor]:
        c_i = cohort.client_rows
        x = bcast.theta.expand_as(local.y)
        if self.control_variate == "I":
            c_new = cohort.full_grad(x.contiguous())
        else:  # option II: c_i - c + (x - y_i) / (K_i eta_l), with c_i - c = -correction
            k_i = cohort.steps.to(local.y.dtype).unsqueeze(1)
            c_new = (x - local.y) / (k_i * self.lr) - local.correction
        return ScaffoldResult(delta_y=local.y - x, delta_c=c_new - c_i), c_new

    def server_update(self, state: ScaffoldState, result: ScaffoldResult, weights: torch.Tensor,
                      cohort) -> ScaffoldState:
        # Simple means over the received clients (lines 16-17); ``weights`` is not used (module docstring).
        delta_x = result.delta_y.mean(0)
        delta_c = result.delta_c.mean(0)
        share = result.delta_c.shape[0] / cohort.num_clients  # |S| / N
        return ScaffoldState(theta=torch.add(state.theta, delta_x, alpha=self.eta_g),
                             c=torch.add(state.c, delta_c, alpha=share))
