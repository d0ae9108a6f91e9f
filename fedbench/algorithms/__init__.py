"""One algorithm per file. ``ALGORITHMS`` maps the names used in params.yaml to ``module:Class``; the classes
are imported only when an algorithm is built, so reading and checking a config needs no torch.

An algorithm's hyperparameters are the fields of its dataclass (besides ``lr``, which every algorithm takes,
and ``keeps_partial_work``, which is the engine's), written out with their types in ``HYPERPARAMETERS`` (so that
checking a config imports no algorithm). ``DOMAINS`` states the values a field may take where not every value of its type is
allowed; :func:`check_hyperparameters` is the one place that checks a variant of params.yaml against both,
and :func:`build_algorithm` checks again before the class's own ``__post_init__`` (which also checks what
involves two fields, e.g. FedProxVR's beta and smoothness, or needs the data).
tests/faults/test_layering.py checks that the fields read here are the dataclass fields and that every
class refuses the values its domain excludes.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Any

ALGORITHMS: dict[str, str] = {
    "fedavg": "fedavg:FedAvg",
    "fedprox": "fedprox:FedProx",
    "fedprox_adaptive": "fedprox_adaptive:FedProxAdaptiveMu",
    "delta_fl": "delta_fl:DeltaFL",
    "fedlaavg": "fedlaavg:FedLaAvg",
    "sequential_sgd": "sequential_sgd:SequentialSGD",
    "scaffold": "scaffold:Scaffold",
    "minibatch_sgd": "minibatch_sgd:MinibatchSGD",
    "fedavg_momentum": "fedavg_momentum:FedAvgMomentum",
    "fedadam": "fedadam:FedAdam",
    "server_only": "server_only:ServerOnly",
    "mime": "mime:Mime",
    "fedproxvr": "fedproxvr:FedProxVR",
    "feddane": "feddane:FedDane",
}

NOT_HYPERPARAMETERS = ("lr", "keeps_partial_work")  # the run's learning rate; the engine's flag


@dataclass(frozen=True)
class Domain:
    """Allowed values of one hyperparameter: an interval (bounds open or closed; None: unbounded) or choices."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = ()

    def allows(self, value: Any) -> bool:
        if self.choices:
            return value in self.choices
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def refusal(self, value: Any) -> str:
        """What is wrong with ``value``, which this domain does not allow."""
        if self.choices:
            return f"{value!r} is not allowed; allowed: {', '.join(self.choices)}"
        if self.high is None:
            return f"must be {'>' if self.low_open else '>='} {self.low:g}, got {value!r}"
        interval = f"{'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"
        return f"must be in {interval}, got {value!r}"


def at_least(low: float) -> Domain:
    return Domain(low=low)


def positive() -> Domain:
    return Domain(low=0.0, low_open=True)


def unit_interval_open_above() -> Domain:
    return Domain(low=0.0, high=1.0, high_open=True)  # [0, 1): a momentum or decay factor


def one_of(*choices: str) -> Domain:
    return Domain(choices=choices)


DOMAINS: dict[str, dict[str, Domain]] = {
    "fedprox": {"mu": at_least(0.0)},  # the proximal weight (FedProx eq. 2)
    "fedprox_adaptive": {"mu_init": at_least(0.0)},
    "delta_fl": {"theta": Domain(low=0.0, high=1.0, low_open=True), "weighting": one_of("exact", "filter"),
                 "quantile_period": at_least(1)},
    "scaffold": {"eta_g": positive(), "control_variate": one_of("I", "II")},
    "fedavg_momentum": {"beta": unit_interval_open_above(), "server_lr": positive()},
    "mime": {"variant": one_of("mime", "mimelite"), "base": one_of("sgdm", "adam"),
             "momentum": unit_interval_open_above(), "beta1": unit_interval_open_above(),
             "beta2": unit_interval_open_above(), "eps": positive()},
    "fedadam": {"server_lr": positive(), "beta1": unit_interval_open_above(), "beta2": unit_interval_open_above(),
                "eps": positive()},
    "server_only": {"base": one_of("sgdm", "adam"), "momentum": unit_interval_open_above(),
                    "beta1": unit_interval_open_above(), "beta2": unit_interval_open_above(), "eps": positive()},
    "fedproxvr": {"mu": at_least(0.0), "tau": at_least(1), "estimator": one_of("svrg", "sarah"),
                  "beta": at_least(0.0), "smoothness": at_least(0.0)},
    "feddane": {"mu": at_least(0.0), "gradient_clients": at_least(0)},
}


# each algorithm's hyperparameters and their types: its dataclass fields less NOT_HYPERPARAMETERS, written out here so
# that reading and checking a config imports no algorithm (and no torch); tests/faults/test_layering.py holds every
# entry equal to the class's fields
HYPERPARAMETERS: dict[str, dict[str, type]] = {
    "fedavg": {},
    "fedprox": {"mu": float},
    "fedprox_adaptive": {"mu_init": float},
    "delta_fl": {"theta": float, "weighting": str, "quantile_period": int},
    "fedlaavg": {},
    "sequential_sgd": {},
    "scaffold": {"eta_g": float, "control_variate": str},
    "minibatch_sgd": {},
    "fedavg_momentum": {"beta": float, "server_lr": float},
    "fedadam": {"server_lr": float, "beta1": float, "beta2": float, "eps": float},
    "server_only": {"base": str, "momentum": float, "beta1": float, "beta2": float, "eps": float},
    "mime": {"variant": str, "base": str, "momentum": float, "beta1": float, "beta2": float, "eps": float},
    "fedproxvr": {"mu": float, "tau": int, "estimator": str, "beta": float, "smoothness": float},
    "feddane": {"mu": float, "gradient_clients": int},
}


def hyperparameters(name: str) -> dict[str, type]:
    """The hyperparameters of algorithm ``name`` and their types (:data:`HYPERPARAMETERS`)."""
    return HYPERPARAMETERS[name]


def check_hyperparameters(name: str, hyper: dict[str, Any], where: str = "") -> dict[str, Any]:
    """``hyper`` checked against algorithm ``name``'s fields, types and domains; returns the values with ints
    given for float fields made floats. Raises ValueError naming the key (prefixed by ``where``) and what is
    allowed."""
    where = where or name
    if name not in ALGORITHMS:
        raise ValueError(f"{where}: unknown algorithm {name!r}; allowed: {', '.join(ALGORITHMS)}")
    fields, domains = hyperparameters(name), DOMAINS.get(name, {})
    out = {}
    for key, value in hyper.items():
        if key not in fields:
            allowed = ", ".join(["name", *fields])
            raise ValueError(f"{where}.{key}: unknown key for {name}; allowed: {allowed}")
        out[key] = _typed(value, fields[key], f"{where}.{key}")
        if key in domains and not domains[key].allows(out[key]):
            raise ValueError(f"{where}.{key}: {domains[key].refusal(out[key])}")
    return out


def _typed(value: Any, kind: type, where: str) -> Any:
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind in (str, bool) and isinstance(value, kind):
        return value
    wanted = {float: "a finite number", int: "an integer", str: "a string", bool: "true or false"}[kind]
    raise ValueError(f"{where}: expected {wanted}, got {value!r}")


def algorithm_class(name: str) -> type:
    module, cls = ALGORITHMS[name].split(":")
    return getattr(importlib.import_module(f"fedbench.algorithms.{module}"), cls)


def build_algorithm(name: str, lr: float, **hyper: Any):
    """The algorithm ``name`` with learning rate ``lr`` and its hyperparameters (checked first)."""
    return algorithm_class(name)(lr=lr, **check_hyperparameters(name, hyper))


def __getattr__(attr: str) -> type:
    """``from fedbench.algorithms import FedProx``: the class, imported on first use."""
    for name, target in ALGORITHMS.items():
        if target.split(":")[1] == attr:
            return algorithm_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
