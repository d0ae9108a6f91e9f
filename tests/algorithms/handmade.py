"""A hand-made federated problem and a float64 NumPy re-derivation of FedAvg / FedProx rounds.

The reference below is written from the papers, not from the engine: each selected client runs SGD on the
minibatches of ``minibatch_order`` (the schedule is the spec of which samples a step sees), with the
proximal step of FedProx eq. (2), and the server takes the n_k-weighted mean of what it receives. Only the
random draws (``plan_round``, ``minibatch_order``) and the initial parameters come from fedbench.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedbench.data.format import FederatedDataset, Split
from fedbench.engine.sampling import minibatch_order, plan_round
from fedbench.engine.simulation import SimulationConfig, simulate
from fedbench.models import Model, mclr
from fedbench.seeding import torch_generator

D, C = 2, 2  # features, classes

# Three clients with 5, 3 and 4 training samples: with batch size 2 every client has a partial last batch
# or not (client 2), and the sizes differ so the n_k weights matter.
TRAIN = [
    ([[1.0, 0.5], [-0.5, 1.5], [2.0, -1.0], [0.0, 0.3], [1.5, 1.0]], [0, 1, 0, 1, 0]),
    ([[-1.0, -0.5], [0.5, 2.0], [-2.0, 0.2]], [1, 1, 0]),
    ([[0.3, -0.7], [1.2, 0.4], [-0.8, -1.1], [2.2, 0.9]], [0, 0, 1, 1]),
]
TEST = [
    ([[0.7, 0.1], [-1.0, 1.0]], [0, 1]),
    ([[0.2, -0.2]], [1]),
    ([[1.0, 1.0]], [0]),
]


def handmade_dataset() -> FederatedDataset:
    def split(parts):
        return Split.from_clients([np.array(x, np.float32) for x, _ in parts],
                                  [np.array(y, np.int64) for _, y in parts], (D,))

    return FederatedDataset(name="handmade", client_ids=("a", "b", "c"), train=split(TRAIN), test=split(TEST),
                            num_classes=C)


def handmade_model() -> Model:
    return mclr(D, C)


def handmade_config(**changes: Any) -> SimulationConfig:
    base = SimulationConfig(rounds=2, clients_per_round=2, local_epochs=2, batch_size=2, straggler_fraction=0.0,
                            seed=3, device="cpu", checkpoint_every=10_000)
    return dataclasses.replace(base, **changes)


def initial_theta(cfg: SimulationConfig, model) -> np.ndarray:
    """theta^0 as the engine draws it (the init stream of the seed), in float64."""
    return model.init(torch_generator(cfg.seed, -1, "init")).double().numpy()


# ---- float64 maths ------------------------------------------------------------------------------------

def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def ce_loss(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """Mean cross-entropy of the softmax regression theta = [W (d x C) row-major, b (C)]."""
    w, b = theta[: D * C].reshape(D, C), theta[D * C:]
    p = softmax(x @ w + b)
    return float(-np.log(p[np.arange(len(y)), y]).mean())


def ce_grad(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Gradient of :func:`ce_loss`: dL/dz = (softmax - onehot) / m, dL/dW = x^T dL/dz, dL/db = sum dL/dz."""
    w, b = theta[: D * C].reshape(D, C), theta[D * C:]
    r = softmax(x @ w + b)
    r[np.arange(len(y)), y] -= 1.0
    r /= len(y)
    return np.concatenate([(x.T @ r).ravel(), r.sum(0)])


def global_loss(ds: FederatedDataset, theta: np.ndarray) -> float:
    """f(w) = sum_k n_k F_k(w) / n over the training data."""
    n = ds.train.sizes
    per_client = [ce_loss(theta, *_client(ds, k)) for k in range(ds.num_clients)]
    return float(np.dot(n, per_client) / n.sum())


def _client(ds: FederatedDataset, k: int) -> tuple[np.ndarray, np.ndarray]:
    x, y = ds.train.client(k)
    return x.astype(np.float64), y


@dataclass
class RoundLog:
    received: list[int]  # clients whose models were averaged
    epochs: list[int]  # their local epochs


def reference_round(ds: FederatedDataset, cfg: SimulationConfig, r: int, theta: np.ndarray, lr: float, mu: float,
                    keep_stragglers: bool) -> tuple[np.ndarray, RoundLog]:
    """One round of FedProx (mu, keep_stragglers=True) or FedAvg (mu=0, keep_stragglers=False)."""
    sizes = ds.train.sizes
    plan = plan_round(cfg.seed, r, sizes, cfg.clients_per_round, cfg.sampling, cfg.straggler_fraction,
                      cfg.local_epochs, cfg.straggler_epochs)
    models, weights, log = [], [], RoundLog([], [])
    for c, straggler, epochs, weight in zip(plan.clients, plan.straggler, plan.epochs, plan.weights):
        if straggler and not keep_stragglers:
            continue
        x, y = _client(ds, int(c))
        w = theta.copy()
        for batch in minibatch_order(cfg.seed, r, int(c), len(y), int(epochs), cfg.batch_size):
            idx = batch[batch >= 0]
            w = w - lr * (ce_grad(w, x[idx], y[idx]) + mu * (w - theta))
        models.append(w)
        weights.append(float(weight))
        log.received.append(int(c))
        log.epochs.append(int(epochs))
    if not models:
        return theta, log
    weights_arr = np.array(weights)
    return (weights_arr[:, None] * np.array(models)).sum(0) / weights_arr.sum(), log


def reference_run(ds, cfg, theta0, lr, mu, keep_stragglers):
    """Rounds 0..cfg.rounds-1; returns final theta, the loss f(theta_r) before each round and the logs."""
    theta, losses, logs = theta0, [], []
    for r in range(cfg.rounds):
        losses.append(global_loss(ds, theta))
        theta, log = reference_round(ds, cfg, r, theta, lr, mu, keep_stragglers)
        logs.append(log)
    losses.append(global_loss(ds, theta))
    return theta, losses, logs


# ---- instrumentation ----------------------------------------------------------------------------------

class Recorder:
    """Wraps an algorithm and records what the server receives each round (clients, epochs, weights)."""

    def __init__(self, algorithm):
        self.algorithm = algorithm
        self.rounds: list[dict[str, np.ndarray]] = []
        self.begin_states: list[Any] = []

    def __getattr__(self, name):
        return getattr(self.algorithm, name)

    @property
    def needs_evaluation(self) -> tuple[str, ...]:  # begin_round records every round: it needs an evaluation
        return getattr(self.algorithm, "needs_evaluation", ()) or ("train/loss",)

    def begin_round(self, state, evaluation):
        begin = getattr(self.algorithm, "begin_round", None)
        new = begin(state, evaluation) if begin is not None else state
        self.begin_states.append(new)
        return new

    def server_update(self, state, result, weights, cohort):
        self.rounds.append({
            "clients": cohort.clients.cpu().numpy().copy(),
            "epochs": cohort.epochs.cpu().numpy().copy(),
            "weights": weights.cpu().double().numpy().copy(),
        })
        return self.algorithm.server_update(state, result, weights, cohort)


def metrics_only(history: list[dict[str, float]]) -> list[dict[str, float]]:
    """History rows without the wall-clock timings (which legitimately differ between runs)."""
    return [{k: v for k, v in row.items() if not k.endswith("time_s")} for row in history]


def assert_same_history(h1, h2) -> None:
    a, b = metrics_only(h1), metrics_only(h2)
    assert len(a) == len(b)
    for ra, rb in zip(a, b):
        assert ra.keys() == rb.keys()
        for key in ra:
            va, vb = ra[key], rb[key]
            assert va == vb or (np.isnan(va) and np.isnan(vb)), (key, va, vb)


def as_numpy(theta: torch.Tensor) -> np.ndarray:
    return theta.detach().cpu().double().numpy()


# ---- checks every algorithm's test file runs ------------------------------------------------------------
# make_algorithm is a zero-argument factory (``lambda: FedDane(lr=LR, mu=0.5)``), so each run gets a fresh
# algorithm; ds and model default to the hand-made problem above.

def assert_paths_agree(make_algorithm: Callable[[], Any], cfg: SimulationConfig, atol: float = 1e-5,
                       ds: FederatedDataset | None = None, model=None) -> None:
    """cfg's local path (the default, vectorized) and the reference path end at the same theta, to atol."""
    ds = handmade_dataset() if ds is None else ds
    model = handmade_model() if model is None else model
    fast = simulate(cfg, ds, model, make_algorithm())
    slow = simulate(dataclasses.replace(cfg, local_path="reference"), ds, model, make_algorithm())
    torch.testing.assert_close(fast.theta, slow.theta, rtol=0, atol=atol)


def assert_repeatable(make_algorithm: Callable[[], Any], cfg: SimulationConfig,
                      ds: FederatedDataset | None = None, model=None) -> None:
    """Two runs with the same config (so the same seed): identical theta, parameter digest and history."""
    ds = handmade_dataset() if ds is None else ds
    model = handmade_model() if model is None else model
    first = simulate(cfg, ds, model, make_algorithm())
    second = simulate(cfg, ds, model, make_algorithm())
    assert torch.equal(first.theta, second.theta)
    assert first.param_digest == second.param_digest
    assert_same_history(first.history, second.history)
