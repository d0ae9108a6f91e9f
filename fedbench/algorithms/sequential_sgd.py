"""Sequential SGD, the centralised baseline of FedLaAvg (Yan et al., arXiv 2002.07399 v1, section 5.2: "We run
the standard SGD algorithm to train the global model using the whole dataset, and the total iterations in
each round is K C"; the authors' train/server.py, alg 'sgd').

One model runs K C minibatch SGD steps per round on the pooled training data of all clients. In fedbench it
is an algorithm over a one-client dataset: :func:`pool_clients` merges every client into one, and
:func:`sequential_config` turns a federated run's config (K, C) into the matching one (one client per round,
K C local steps, everyone available, no stragglers). The server adopts the single local model, so a run
with more than one client per round is refused rather than silently becoming FedAvg.

Deviations:
- Each round starts a fresh permutation of the pooled data (the engine's minibatch order) and cycles
  through it; the authors' loader continues its epoch across rounds.
- The learning rate is constant unless SimulationConfig.lr_decay decays it (the CIFAR runs: 0.9999 per round);
  the batch size is the engine's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from fedbench.ops import sgd_step

from fedbench.availability import AvailabilityConfig
from fedbench.data.format import FederatedDataset, Split


@dataclass(frozen=True)
class SequentialSGDState:
    theta: torch.Tensor  # the model [P]


@dataclass(frozen=True)
class SequentialSGD:
    step_scalars: ClassVar[tuple[str, ...]] = ("lr",)  # read by client_step through tensor arithmetic only
    lr: float
    keeps_partial_work: bool = False

    def init(self, theta0: torch.Tensor, num_clients: int) -> SequentialSGDState:
        return SequentialSGDState(theta=theta0)

    def broadcast(self, state: SequentialSGDState) -> torch.Tensor:
        return state.theta

    def client_init(self, theta: torch.Tensor, cohort) -> torch.Tensor:
        return theta.expand(len(cohort.clients), -1).clone()

    def client_step(self, theta: torch.Tensor, grad_fn, bcast) -> torch.Tensor:
        return sgd_step(theta, grad_fn(theta), self.lr)

    def server_update(self, state: SequentialSGDState, local_models: torch.Tensor, weights: torch.Tensor,
                      cohort) -> SequentialSGDState:
        if local_models.shape[0] != 1:
            raise ValueError("sequential SGD trains one model on pooled data: run it on pool_clients(dataset) "
                             "with sequential_config(cfg) (one client per round)")
        return SequentialSGDState(theta=local_models[0])


def pool_clients(dataset: FederatedDataset) -> FederatedDataset:
    """``dataset`` with every client's training (and test) data merged into one client, 'pooled' (its input
    spec, label kind and global test set kept: a real image dataset still reads as images)."""
    def merge(split: Split) -> Split:
        return Split(x=split.x, y=split.y, offsets=np.array([0, len(split.x)], dtype=np.int64))

    return dataclasses.replace(dataset, name=f"{dataset.name}-pooled", client_ids=("pooled",), train=merge(dataset.train),
                               test=merge(dataset.test), hierarchy={}, partition={},
                               source={**dataset.source, "pooled_from": dataset.name})


def sequential_config(cfg, clients_per_round: int | None = None, local_steps: int | None = None):
    """The SimulationConfig of sequential SGD matching a federated run with K clients of C local steps each
    (by default ``cfg``'s own K and C): one client, K C steps per round, always available, no stragglers."""
    k = cfg.clients_per_round if clients_per_round is None else clients_per_round
    c = cfg.local_steps if local_steps is None else local_steps
    if c < 1:
        raise ValueError("sequential SGD counts local iterations: give local_steps C >= 1")
    return dataclasses.replace(cfg, clients_per_round=1, local_steps=k * c, straggler_fraction=0.0,
                               availability=AvailabilityConfig())
