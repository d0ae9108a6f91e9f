"""Minibatch SGD, the "server-only" baseline of the SCAFFOLD and Mime papers (Karimireddy et al., ICML 2020,
section 2 and Table 1, "SGD"; Mime, Figure 3 and Table 1, "Server-Only: SGD"; the talk slides, "Solving
FL: SGD": "on each client i in S, compute a large batch stochastic gradient and average them;
equivalent to synchronous centralized large-batch training").

Definition used here. In a round, every selected client i evaluates the gradients of the minibatches of
its local schedule (the engine's E epochs of batch B, the very samples FedAvg's local steps would visit),
all at the server model x, and sends their mean

    g_i = (1/S_i) sum_{t < S_i} grad F_i(x; batch_t)          (S_i = number of minibatches this round)

The server takes one step with the engine's aggregation weights w_i:  x <- x - lr sum_i w_i g_i.
The model moves once per round: the local minibatches only make the round's gradient a larger batch.

Deviations and choices:
- The papers do not pin the per-client batch. We use the round's local schedule so that, with the same
  seed, SGD sees exactly the samples the local-update methods see. With E = 1 every sample counts once
  and g_i is the full local gradient, except that a partial last batch is weighted like a full one.
- Stragglers are dropped as in FedAvg (the papers have none).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fedbench.ops import weighted_mean


@dataclass(frozen=True)
class MinibatchSGDState:
    theta: torch.Tensor  # x [P]


@dataclass(frozen=True)
class MinibatchSGD:
    lr: float  # the server's step size
    keeps_partial_work: bool = False

    def init(self, theta0: torch.Tensor, num_clients: int) -> MinibatchSGDState:
        return MinibatchSGDState(theta=theta0)

    def broadcast(self, state: MinibatchSGDState) -> torch.Tensor:
        return state.theta

    def client_init(self, theta: torch.Tensor, cohort) -> torch.Tensor:
        """[K, P] sum of the minibatch gradients at x, zero before the first step."""
        return torch.zeros(len(cohort.clients), theta.shape[-1], dtype=theta.dtype, device=theta.device)

    def client_step(self, total: torch.Tensor, grad_fn, theta: torch.Tensor) -> torch.Tensor:
        return total + grad_fn(theta.expand_as(total))  # every minibatch at the server model x

    def client_result(self, total: torch.Tensor, theta: torch.Tensor, cohort) -> tuple[torch.Tensor, None]:
        # g_i = sum / S_i: client i took cohort.steps[i] steps, one per minibatch
        return total / cohort.steps.clamp(min=1).to(total.dtype).unsqueeze(1), None

    def server_update(self, state: MinibatchSGDState, grads: torch.Tensor, weights: torch.Tensor,
                      cohort) -> MinibatchSGDState:
        return MinibatchSGDState(theta=torch.add(state.theta, weighted_mean(grads, weights), alpha=-self.lr))
