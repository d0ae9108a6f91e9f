"""FedAvg and FedProx on softmax regression as a plain numpy loop, one client after another: the baseline the
engine is measured against on the papers' workload (issue 10). Written from the FedProx paper (Li et al.,
MLSys 2020: Algorithm 2, eq. 2, section 5) and the authors' straggler rule, independently of
fedbench.engine; it shares only the data and fedbench.seeding.

A round: K clients drawn uniformly without replacement; round(K (1 - f)) of them, drawn uniformly, run E
epochs and the others are stragglers running U{1, ..., E-1} epochs (flearn/trainers/fedprox.py); FedAvg
drops the stragglers, FedProx keeps their partial work. Each epoch is a fresh permutation cut into batches
of B, the last one partial. A local step is w <- w - lr (grad F_k(w; batch) + mu (w - w^t)), the gradient
of the batch's mean cross-entropy, x_aug^T (softmax(x_aug w) - onehot(y)) / |batch|, with w = [W; b] as
[d + 1, C] and x_aug = [x, 1]. The server takes the n_k-weighted mean of the local models.

Deviation from the engine: its own draws (it need not see the engine's clients, stragglers or batches, only
the same law), so its numbers are compared with the engine's only where it is handed the engine's schedule
(tests/test_bench.py). Training only: no evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedbench.data.format import FederatedDataset
from fedbench.seeding import rng


@dataclass(frozen=True)
class ClientWork:
    """One client's local work in a round."""

    x: np.ndarray  # [n_k, d + 1] float32 inputs with a column of ones
    y: np.ndarray  # [n_k] labels
    batches: list[np.ndarray]  # the local steps' minibatches (indices into x), in order
    weight: float  # aggregation weight (n_k)


def local_sgd(w_global: np.ndarray, work: ClientWork, lr: float, mu: float) -> np.ndarray:
    """The client's local model after its minibatch steps from w_global (FedProx eq. 2 when mu > 0)."""
    w = w_global.copy()
    for idx in work.batches:
        xb = work.x[idx]
        z = xb @ w
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(idx)), work.y[idx]] -= 1.0
        g = xb.T @ p
        g /= len(idx)
        if mu:
            g += mu * (w - w_global)
        w -= lr * g
    return w


def train_round(w_global: np.ndarray, works: list[ClientWork], lr: float, mu: float) -> np.ndarray:
    """The weighted mean of the clients' local models (w_global when no client trains)."""
    if not works:
        return w_global
    total = sum(c.weight for c in works)
    out = np.zeros_like(w_global)
    for c in works:
        out += (c.weight / total) * local_sgd(w_global, c, lr, mu)
    return out


@dataclass(frozen=True)
class Settings:
    clients_per_round: int
    local_epochs: int
    batch_size: int
    lr: float
    mu: float  # 0 for FedAvg
    straggler_fraction: float
    keeps_stragglers: bool  # FedProx: True; FedAvg: False


class NumpyRun:
    """One run on one dataset: the clients' arrays prepared once, then rounds on demand."""

    def __init__(self, ds: FederatedDataset, settings: Settings, seed: int) -> None:
        self.s, self.seed = settings, seed
        x = ds.train.x.reshape(len(ds.train.x), -1).astype(np.float32)
        x_aug = np.concatenate([x, np.ones((len(x), 1), np.float32)], axis=1)
        offs = ds.train.offsets
        self.clients = [(x_aug[offs[k]: offs[k + 1]], ds.train.y[offs[k]: offs[k + 1]]) for k in range(ds.num_clients)]
        self.sizes = ds.train.sizes
        d, c = x_aug.shape[1], ds.num_classes
        limit = np.sqrt(6.0 / (d - 1 + c))  # Glorot-uniform W, zero b (the authors' init)
        w = rng(seed, -1, "init").uniform(-limit, limit, (d, c)).astype(np.float32)
        w[-1] = 0.0
        self.w = w

    def plan(self, r: int) -> list[tuple[int, int]]:
        """(client, epochs) of the clients that train in round r."""
        s, k = self.s, self.s.clients_per_round
        clients = rng(self.seed, r, "select").choice(len(self.sizes), size=k, replace=False)
        g = rng(self.seed, r, "stragglers")
        active = round(k * (1.0 - s.straggler_fraction))
        straggler = g.permutation(k) >= active
        epochs = np.where(straggler, g.integers(1, max(2, s.local_epochs), size=k), s.local_epochs)
        keep = np.ones(k, bool) if s.keeps_stragglers else ~straggler
        return [(int(c), int(e)) for c, e in zip(clients[keep], epochs[keep]) if self.sizes[c] > 0]

    def work(self, r: int) -> list[ClientWork]:
        out = []
        for c, epochs in self.plan(r):
            x, y = self.clients[c]
            g = rng(self.seed, r, "minibatch", c)
            batches = [b for _ in range(epochs) for b in np.array_split(g.permutation(len(y)),
                                                                      range(self.s.batch_size, len(y), self.s.batch_size))]
            out.append(ClientWork(x=x, y=y, batches=batches, weight=float(len(y))))
        return out

    def samples(self, r: int) -> int:
        """Samples trained in round r (without drawing the minibatches)."""
        return sum(e * int(self.sizes[c]) for c, e in self.plan(r))

    def steps(self, r: int) -> int:
        """Local steps in round r."""
        return sum(e * -(-int(self.sizes[c]) // self.s.batch_size) for c, e in self.plan(r))

    def round(self, r: int) -> None:
        self.w = train_round(self.w, self.work(r), self.s.lr, self.s.mu)
