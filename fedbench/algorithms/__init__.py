"""One algorithm per file. ``ALGORITHMS`` maps the names used in params.yaml to their classes and the
hyperparameters each accepts (besides ``lr``, which every algorithm takes): a type, or a tuple of the allowed
values of a named option."""

from __future__ import annotations

from typing import Any

from fedbench.algorithms.delta_fl import WEIGHTINGS, DeltaFL
from fedbench.algorithms.fedavg import FedAvg
from fedbench.algorithms.fedavg_momentum import FedAvgMomentum
from fedbench.algorithms.feddane import FedDane
from fedbench.algorithms.fedlaavg import FedLaAvg
from fedbench.algorithms.fedprox import FedProx
from fedbench.algorithms.fedprox_adaptive import FedProxAdaptiveMu
from fedbench.algorithms.fedproxvr import ESTIMATORS, FedProxVR
from fedbench.algorithms.mime import VARIANTS, Mime
from fedbench.algorithms.minibatch_sgd import MinibatchSGD
from fedbench.algorithms.scaffold import CONTROL_VARIATES, Scaffold
from fedbench.algorithms.sequential_sgd import SequentialSGD
from fedbench.optimizers import BASE_OPTIMIZERS

ALGORITHMS: dict[str, tuple[type, dict[str, type]]] = {
    "fedavg": (FedAvg, {}),
    "fedprox": (FedProx, {"mu": float}),
    "fedprox_adaptive": (FedProxAdaptiveMu, {"mu_init": float}),
    "delta_fl": (DeltaFL, {"theta": float, "weighting": WEIGHTINGS, "quantile_period": int}),
    "fedlaavg": (FedLaAvg, {}),
    "sequential_sgd": (SequentialSGD, {}),
    "scaffold": (Scaffold, {"eta_g": float, "control_variate": CONTROL_VARIATES}),
    "minibatch_sgd": (MinibatchSGD, {}),
    "fedavg_momentum": (FedAvgMomentum, {"beta": float, "server_lr": float}),
    "mime": (Mime, {"variant": VARIANTS, "base": BASE_OPTIMIZERS, "momentum": float,
                    "beta1": float, "beta2": float, "eps": float}),
    "fedproxvr": (FedProxVR, {"mu": float, "tau": int, "estimator": ESTIMATORS, "beta": float,
                              "smoothness": float}),
    "feddane": (FedDane, {"mu": float, "gradient_clients": int}),
}


def build_algorithm(name: str, lr: float, **hyper: Any):
    """The algorithm ``name`` with learning rate ``lr`` and its hyperparameters (checked by fedbench.config)."""
    cls, _ = ALGORITHMS[name]
    return cls(lr=lr, **hyper)
