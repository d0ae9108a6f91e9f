"""One algorithm per file. ``ALGORITHMS`` maps the names used in params.yaml to their classes and the
hyperparameters each accepts (besides ``lr``, which every algorithm takes)."""

from __future__ import annotations

from typing import Any

from fedbench.algorithms.fedavg import FedAvg
from fedbench.algorithms.fedprox import FedProx
from fedbench.algorithms.fedprox_adaptive import FedProxAdaptiveMu

ALGORITHMS: dict[str, tuple[type, dict[str, type]]] = {
    "fedavg": (FedAvg, {}),
    "fedprox": (FedProx, {"mu": float}),
    "fedprox_adaptive": (FedProxAdaptiveMu, {"mu_init": float}),
}


def build_algorithm(name: str, lr: float, **hyper: Any):
    cls, _ = ALGORITHMS[name]
    return cls(lr=lr, **hyper)
