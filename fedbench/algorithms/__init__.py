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

A user's algorithm, in a module of their own, is found in two ways and checked like ours (:func:`user_algorithm`):
by its dotted path, ``package.module:Class`` (what ``fedbench run --algorithm`` and ``algorithms.<variant>.name``
take once :func:`resolve` has registered it), or by a name its package declares in the entry point group
``fedbench.algorithms`` (``myalgo = "mypkg.algos:MyAlgo"`` in its pyproject.toml's
``[project.entry-points."fedbench.algorithms"]``), registered when this module is imported. Its class is a
frozen dataclass with ``lr`` and the engine's methods (fedbench.engine.simulation's docstring); its other fields
are its hyperparameters, each a float, int, str or bool, with an optional class attribute ``DOMAINS`` (field ->
:class:`Domain`) stating the values they may take. Reading such a class imports its module (and whatever it
imports, torch included): only where a user algorithm is named.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import math
import re
from dataclasses import dataclass
from typing import Any, get_type_hints

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
    """The hyperparameters of algorithm ``name`` and their types (:data:`HYPERPARAMETERS`; an entry point's, read
    from its class the first time)."""
    if name not in HYPERPARAMETERS and name in USER_ALGORITHMS:
        register(name, USER_ALGORITHMS[name])
    return HYPERPARAMETERS[name]


def check_hyperparameters(name: str, hyper: dict[str, Any], where: str = "") -> dict[str, Any]:
    """``hyper`` checked against algorithm ``name``'s fields, types and domains; returns the values with ints
    given for float fields made floats. Raises ValueError naming the key (prefixed by ``where``) and what is
    allowed."""
    where = where or name
    if name not in ALGORITHMS and is_target(name):  # a dotted path, as a worker process that did not register it meets it
        register(name, name, where)
    if name not in ALGORITHMS:
        raise ValueError(f"{where}: unknown algorithm {name!r}{did_you_mean(name, ALGORITHMS)}; allowed: "
                         f"{', '.join(ALGORITHMS)}, or a class of your own as package.module:Class")
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
    if name not in ALGORITHMS and is_target(name):
        register(name, name)
    if name in USER_ALGORITHMS:
        return _import_target(USER_ALGORITHMS[name], name)
    module, cls = ALGORITHMS[name].split(":")
    return getattr(importlib.import_module(f"fedbench.algorithms.{module}"), cls)


# a user's algorithms: name -> "package.module:Class" (a dotted path given by name, or an entry point's target);
# each is also in ALGORITHMS, HYPERPARAMETERS and DOMAINS once registered, so config and the CLI treat it as ours
USER_ALGORITHMS: dict[str, str] = {}
ENTRY_POINT_GROUP = "fedbench.algorithms"
TARGET = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")  # package.module:Class
REQUIRED_METHODS = ("init", "broadcast", "client_init", "client_step", "server_update")
OPTIONAL_METHODS = ("init_clients", "begin_round", "client_result", "choose_clients", "filter_cohort", "stacks_as")
HYPERPARAMETER_TYPES = (float, int, str, bool)


def closest(name: str, known) -> str | None:
    """The known name ``name`` most likely means: among those holding it as a whole ``_``-separated part
    (``femnist`` in ``fedprox_femnist``), else among all, the closest by difflib; None where none is close."""
    known = [str(k) for k in known]
    holding = [k for k in known if name and name.lower() in k.lower().split("_")]
    close = difflib.get_close_matches(name, holding, n=1, cutoff=0.0) or difflib.get_close_matches(name, known, n=1)
    return close[0] if close else None


def did_you_mean(name: str, known) -> str:
    """`` (did you mean 'x'?)`` for the known name :func:`closest` to ``name``, or nothing."""
    close = closest(name, known)
    return f" (did you mean {close!r}?)" if close else ""


def is_target(name: str) -> bool:
    """Whether ``name`` is written as a dotted path to a class, ``package.module:Class``."""
    return ":" in name


def _import_target(target: str, where: str) -> type:
    if not TARGET.fullmatch(target):
        raise ValueError(f"{where}: {target!r} is not a class path; allowed: package.module:Class, e.g. "
                         "my_algos.halfstep:HalfStep")
    module, cls = target.split(":")
    try:
        found = getattr(importlib.import_module(module), cls)
    except ModuleNotFoundError as exc:
        raise ValueError(f"{where}: module {module!r} not found ({exc.name} is not importable from here: is its "
                         "folder on PYTHONPATH, or its package installed?)") from None
    except AttributeError:
        raise ValueError(f"{where}: module {module!r} has no class {cls!r}") from None
    return found


def user_algorithm(target: str, where: str = "") -> tuple[type, dict[str, type], dict[str, Domain]]:
    """The class at ``target`` (package.module:Class), checked as the engine needs it: a frozen dataclass with an
    ``lr`` field, every required method, no method named like a hook it misspells, hyperparameters typed float,
    int, str or bool, and ``DOMAINS`` (optional) naming only them with :class:`Domain` values. Returns the class,
    its hyperparameters with their types, and their domains; ValueError naming the problem otherwise."""
    where = where or target
    cls = _import_target(target, where)
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:
        raise ValueError(f"{where}: {target} is not a frozen dataclass; allowed: a class declared with "
                         "@dataclass(frozen=True), as every algorithm of fedbench/algorithms/ is")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if "lr" not in fields:
        raise ValueError(f"{where}: {target} has no field 'lr' (the run's learning rate, which every algorithm takes)")
    missing = [m for m in REQUIRED_METHODS if not callable(getattr(cls, m, None))]
    if missing:
        raise ValueError(f"{where}: {target} lacks {', '.join(missing)}; an algorithm defines "
                         f"{', '.join(REQUIRED_METHODS)} (fedbench/engine/simulation.py's docstring)")
    hooks = REQUIRED_METHODS + OPTIONAL_METHODS
    for method in (m for m in vars(cls) if not m.startswith("_") and callable(vars(cls)[m]) and m not in hooks):
        close = difflib.get_close_matches(method, hooks, n=1, cutoff=0.8)
        if close:
            raise ValueError(f"{where}: {target}.{method} is not a method the engine calls (did you mean "
                             f"{close[0]!r}?); the engine would never call it")
    types = get_type_hints(cls)
    hyper = {}
    for name in fields:
        if name in NOT_HYPERPARAMETERS:
            continue
        if types.get(name) not in HYPERPARAMETER_TYPES:
            raise ValueError(f"{where}: {target}.{name} is typed {types.get(name)!r}; allowed for a hyperparameter: "
                             "float, int, str or bool")
        hyper[name] = types[name]
    domains = dict(getattr(cls, "DOMAINS", {}) or {})
    for name, domain in domains.items():
        if name not in hyper or not isinstance(domain, Domain):
            raise ValueError(f"{where}: {target}.DOMAINS[{name!r}]: allowed: a Domain "
                             f"(fedbench.algorithms.Domain) for one of its hyperparameters ({', '.join(hyper) or 'none'})")
    return cls, hyper, domains


def register(name: str, target: str, where: str = "") -> str:
    """Algorithm ``target`` (package.module:Class) checked by :func:`user_algorithm` and registered as ``name``:
    from then on params.yaml's ``algorithms.<variant>.name`` and ``--algorithm`` take ``name`` as one of ours.
    Returns ``name``. Registering a built-in name, or one name for two classes, is a ValueError."""
    where = where or name
    if name in ALGORITHMS and USER_ALGORITHMS.get(name) != target:
        raise ValueError(f"{where}: {name!r} is already the algorithm {ALGORITHMS[name]}; give {target} another name")
    _, hyper, domains = user_algorithm(target, where)
    ALGORITHMS[name], USER_ALGORITHMS[name] = target, target
    HYPERPARAMETERS[name], DOMAINS[name] = hyper, domains
    return name


def resolve(name: str, where: str = "--algorithm") -> str:
    """``name`` as a registered algorithm: one of ours or an entry point's, as it is; a dotted path
    (package.module:Class) registered under that path first. ValueError naming what is allowed otherwise."""
    if name in ALGORITHMS:
        return name
    if is_target(name):
        return register(name, name, where)
    raise ValueError(f"{where} {name!r}: not an algorithm{did_you_mean(name, ALGORITHMS)}; allowed: "
                     f"{', '.join(ALGORITHMS)}, or a class of your own as package.module:Class")


def _register_entry_points() -> None:
    """The algorithms installed packages declare in the entry point group ``fedbench.algorithms`` (name ->
    package.module:Class), added to ALGORITHMS without importing them; checked when first used
    (:func:`hyperparameters`). A name that is already ours is left out."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in ALGORITHMS:
            ALGORITHMS[ep.name] = USER_ALGORITHMS[ep.name] = ep.value


def build_algorithm(name: str, lr: float, **hyper: Any):
    """The algorithm ``name`` with learning rate ``lr`` and its hyperparameters (checked first; one without a default
    must be given: ValueError naming it)."""
    checked = check_hyperparameters(name, hyper)
    cls = algorithm_class(name)
    required = [f.name for f in dataclasses.fields(cls) if f.name not in (*NOT_HYPERPARAMETERS, *checked)
                and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if required:
        raise ValueError(f"{' and '.join(required)} {'has' if len(required) == 1 else 'have'} no default in {name}: "
                         f"give {'it' if len(required) == 1 else 'them'} a value (params.yaml, or --set "
                         f"algorithms.VARIANT.{required[0]}=VALUE)")
    return cls(lr=lr, **checked)


def __getattr__(attr: str) -> type:
    """``from fedbench.algorithms import FedProx``: the class, imported on first use."""
    for name, target in ALGORITHMS.items():
        if target.split(":")[1] == attr:
            return algorithm_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


_register_entry_points()
