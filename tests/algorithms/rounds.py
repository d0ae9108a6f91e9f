"""What one round hands each client, for the float64 references of SCAFFOLD, Mime, FedProxVR, FedDane and the
server-side baselines: which clients are received, their aggregation weights, and their minibatches.

Only the random draws (``plan_round``, ``minibatch_order``) come from fedbench; the maths of every
reference is written out in its test file from the paper. Gradients are handmade.ce_grad (float64).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedbench.data.format import FederatedDataset
from fedbench.engine.sampling import minibatch_order, plan_round
from fedbench.engine.simulation import SimulationConfig
from tests.algorithms.handmade import ce_grad


@dataclass
class ClientWork:
    client: int
    weight: float  # engine weight, normalised over the received clients
    batches: list[tuple[np.ndarray, np.ndarray]]  # float64 x, int y of each local step
    x: np.ndarray  # all training inputs of the client (float64)
    y: np.ndarray

    def full_grad(self, theta: np.ndarray) -> np.ndarray:
        return ce_grad(theta, self.x, self.y)


def round_work(ds: FederatedDataset, cfg: SimulationConfig, r: int, keep_stragglers: bool) -> list[ClientWork]:
    sizes = ds.train.sizes
    plan = plan_round(cfg.seed, r, sizes, cfg.clients_per_round, cfg.sampling, cfg.straggler_fraction,
                      cfg.local_epochs, cfg.straggler_epochs)
    out = []
    for c, straggler, epochs, weight in zip(plan.clients, plan.straggler, plan.epochs, plan.weights):
        if straggler and not keep_stragglers:
            continue
        x, y = ds.train.client(int(c))
        x = x.astype(np.float64)
        batches = []
        for batch in minibatch_order(cfg.seed, r, int(c), len(y), int(epochs), cfg.batch_size):
            idx = batch[batch >= 0]
            batches.append((x[idx], y[idx]))
        out.append(ClientWork(int(c), float(weight), batches, x, y))
    total = sum(w.weight for w in out)
    for w in out:
        w.weight /= total
    return out
