"""FedProx(mu) whose stragglers run part of their one epoch (Li et al., MLSys 2020, Figures 9 and 10 at E = 1; the
arm of fedbench.studies.fedprox_synthetic that runs it): with E = 1 the authors' straggler rule (U{1..E-1} epochs)
is empty and the engine's stragglers are whole epochs, so here a straggler runs a uniformly drawn part of its one
epoch, U{1..S_k-1} of its S_k minibatch steps (the authors' rule at the granularity of minibatches; how the paper's
E = 1 runs drew it is not known). The draw comes from the (seed, round, "stragglers", 1) stream, the same for the
arm that keeps the partial work (FedProx, mu = 0) and the one that drops it (FedAvg).

Its own module (not the study's): a run's fingerprint hashes the source of the study module that defines its
algorithm (fedbench.study.reuse), so the wrapper kept apart from the study's claims and figure is rerun only when
it changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fedbench.seeding import rng

if TYPE_CHECKING:  # annotations only: importing the study imports no torch (fedbench.study.registry)
    import torch

    from fedbench.algorithms.fedprox import FedProx


@dataclass(frozen=True)
class PartialLocal:
    inner: torch.Tensor  # [K, P] the wrapped algorithm's local models
    step: torch.Tensor  # [K] local steps taken
    budget: torch.Tensor  # [K] local steps allowed this round
    kept: torch.Tensor  # [K] 1.0 if the client's update is aggregated


@dataclass(frozen=True)
class PartialEpochStragglers:
    """FedProx(mu) whose stragglers run part of their one epoch (module docstring): round(K (1 - fraction)) of
    the cohort run all S_k steps, the others U{1..S_k - 1}; ``keep`` aggregates the stragglers' partial work
    (FedProx), else they are dropped (FedAvg)."""

    lr: float
    fraction: float
    keep: bool
    mu: float = 0.0
    keeps_partial_work: bool = True  # the engine sees no stragglers (straggler_fraction = 0): this class has them

    @property
    def inner(self) -> FedProx:
        from fedbench.algorithms.fedprox import FedProx

        return FedProx(lr=self.lr, mu=self.mu)

    def init(self, theta0, num_clients):
        return self.inner.init(theta0, num_clients)

    def broadcast(self, state):
        return self.inner.broadcast(state)

    def client_init(self, bcast, cohort) -> PartialLocal:
        import torch

        from fedbench.ops import to_device

        k = len(cohort.clients)
        g = rng(cohort.seed, cohort.round, "stragglers", 1)
        active = np.zeros(k, bool)
        active[g.choice(k, size=int(round(k * (1.0 - self.fraction))), replace=False)] = True
        steps = cohort.host_steps  # the host's copy: reading cohort.steps back would wait for the device
        budget = np.where(active | (steps <= 1), steps, g.integers(1, np.maximum(steps, 2)))
        device = bcast.theta.device
        return PartialLocal(inner=self.inner.client_init(bcast, cohort), step=torch.zeros(k, device=device),
                            budget=to_device(budget, device, torch.float32),
                            kept=to_device(active | self.keep, device, torch.float32))

    def client_step(self, local: PartialLocal, grad_fn, bcast) -> PartialLocal:
        import torch

        moved = self.inner.client_step(local.inner, grad_fn, bcast)
        working = (local.step < local.budget).unsqueeze(1)
        return PartialLocal(inner=torch.where(working, moved, local.inner), step=local.step + 1, budget=local.budget,
                            kept=local.kept)

    def client_result(self, local: PartialLocal, bcast, cohort) -> tuple[PartialLocal, None]:
        return local, None

    def server_update(self, state, local: PartialLocal, weights: torch.Tensor, cohort):
        w = weights * local.kept
        return self.inner.server_update(state, local.inner, w / w.sum(), cohort)
