"""params.yaml as frozen, validated config objects whose field names are the YAML keys.

Every problem is found at load time and reported in one line naming the key and what is allowed, before
anything is computed or written. Loading imports no torch (the algorithms' hyperparameters are checked
against their dataclass fields read from source, fedbench.algorithms), so ``fedbench check-config`` and
``--help`` answer at once.

The YAML is read as DVC reads it (YAML 1.2, fedbench.data.params): a key repeated in a mapping is an error, not
"last one wins", and ``1e-3`` is a number, not a string.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from fedbench.algorithms import ALGORITHMS, check_hyperparameters
from fedbench.data.params import parse_value, read_params
from fedbench.data.registry import known_num_clients, validate_data_section
from fedbench.data.synthetic import SYNTHETIC_DATASETS
from fedbench.engine.sampling import SAMPLING_SCHEMES, STRAGGLER_EPOCHS
from fedbench.errors import ConfigError
from fedbench.study import layout, registry
from fedbench.study.declaration import Arm, StudyDeclaration

__all__ = ["Config", "ConfigError", "check_stragglers", "load_config", "parse_config", "parse_value"]


@dataclass(frozen=True)
class DataConfig:
    seed: int = 0  # seed of the synthetic generators (one fixed draw of the paper's law)
    num_devices: int = 30  # FedProx appendix C.1
    train_fraction: float = 0.9  # authors' code (the paper says 0.8)
    datasets: tuple[str, ...] = tuple(SYNTHETIC_DATASETS)
    # real data (fedbench.data.registry validates these): sources fetched and prepared, variants built, and
    # per-variant / per-source parameters (the authors' defaults where not given)
    sources: tuple[str, ...] = ()
    real: tuple[str, ...] = ()
    variants: dict[str, Any] = field(default_factory=dict)
    prepare: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TrainConfig:
    model: str = "mclr"  # multinomial logistic regression
    rounds: int = 40  # where params.yaml gives none; its train.rounds is the paper's 200
    clients_per_round: int = 10  # K
    local_epochs: int = 20  # E (Figures 1 and 2)
    batch_size: int = 10
    lr: float = 0.01  # the paper's tuned rate for the synthetic data
    sampling: str = "uniform"  # 'uniform' (experiments) or 'proportional' (Algorithms 1-2)
    straggler_epochs: str = "authors_code"  # U{1..E-1} as coded, 'paper' for U{1..E}, or 'minibatches':
    # U{1..S_k-1} of the S_k minibatch steps of E epochs (what E = 1 needs: fedbench.engine.sampling.straggler_steps)
    seeds: tuple[int, ...] = (0, 1, 2)
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    workers: int = 2  # processes the stacks of runs are spread over
    eval_every: int = 1  # dissimilarity every this many rounds (SimulationConfig.dissimilarity_every)
    # each device's gradient in the dissimilarity on a seeded sample of at most this many of its samples (0: all;
    # FedProx's authors: at most 4 minibatches of 50 for their LSTMs, 200)
    dissimilarity_samples: int = 0
    # the runs the dissimilarity is computed for: those of these variants (algorithms' keys) at these straggler
    # fractions; either left out: every one (the main job's figures read it of every run). A study sets them to the
    # runs its claims read (FedProx's real-data studies: FedAvg and the best mu without stragglers); the other runs'
    # numbers are unchanged, their histories only lack the metric
    dissimilarity_variants: tuple[str, ...] = ()
    dissimilarity_stragglers: tuple[float, ...] = ()
    checkpoint_every: int = 10  # rounds between resumable checkpoints
    executor: str = "local"  # where the units run: local (worker processes) | ray (fedbench.executors)
    gpu_fraction: float = 0.25  # ray: the share of one GPU a unit asks for when it trains on a GPU
    # ray: where units keep their runs' checkpoints: "" (default) the driver's own folders, written through the
    # driver's node; or a folder or fsspec URI (s3://bucket/path, gs://...) that every node and the driver reach
    checkpoint_storage: str = ""
    # how local steps run (fedbench.engine.capture): none (the default) | static (padded, masked, no host read; the
    # same numbers) | cuda_graph (the static loop replayed from a CUDA graph; CUDA only, opt-in until measured) |
    # fused_step / fused_round (the mclr model's Triton kernels, one launch a chain step or a round, the static loop's
    # numbers within fp32 rounding: fedbench.engine.fused; CUDA only, opt-in until measured)
    capture: str = "none"
    # the arithmetic (fedbench.engine.precision): fp32 (the default: IEEE float32, TF32 off on CUDA) | tf32 | bf16,
    # declared reduced-precision modes for a GPU, each with its measured tolerance against fp32 (the GPU check's
    # precision part); never a default; recorded with every run that uses one
    precision: str = "fp32"

    def computes_dissimilarity(self, variant: str, stragglers: float) -> bool:
        """Whether the run of ``variant`` at ``stragglers`` computes the gradient dissimilarity (every
        ``eval_every`` rounds): where ``dissimilarity_variants`` and ``dissimilarity_stragglers`` both allow it."""
        return ((not self.dissimilarity_variants or variant in self.dissimilarity_variants)
                and (not self.dissimilarity_stragglers or float(stragglers) in self.dissimilarity_stragglers))


@dataclass(frozen=True)
class AlgorithmConfig:
    name: str
    hyper: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StudyConfig:
    datasets: tuple[str, ...]
    algorithms: tuple[str, ...]
    stragglers: tuple[float, ...]
    # the study's own train settings (STUDY_TRAIN_KEYS) over the train section, e.g. the paper's rate for its data
    train: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClaimStudyConfig:
    """One claim study of params.yaml ``claim_studies``: the round budget it runs at (one its declaration names;
    default "pipeline"), other training seeds (every study but a deterministic one)
    (None: the study's own), and whether `dvc repro` runs it (its group: ``default`` or ``opt_in``)."""

    budget: str = "pipeline"
    seeds: tuple[int, ...] | None = None
    default: bool = True


CLAIM_STUDY_GROUPS = ("default", "opt_in")  # claim_studies' keys: one DVC stage each / run by `fedbench study run`
CLAIM_STUDY_KEYS = ("budget", "seeds")
PIPELINE_BUDGET = layout.PIPELINE_BUDGET  # a small claim study's budget where params.yaml names none


DEVICES = r"auto|cpu|cuda(:\d+)?"  # train.device and `fedbench bench --device`: auto picks CUDA where there is one
STUDY_TRAIN_KEYS = ("model", "rounds", "lr", "local_epochs", "batch_size", "clients_per_round", "eval_every",
                    "dissimilarity_samples", "dissimilarity_variants", "dissimilarity_stragglers", "straggler_epochs")


@dataclass(frozen=True)
class Config:
    data: DataConfig
    train: TrainConfig
    algorithms: dict[str, AlgorithmConfig]
    studies: dict[str, StudyConfig]
    # small studies in fedbench/studies/, each turning paper statements into claims: name -> its settings, the
    # ones `dvc repro` runs (default) first
    claim_studies: dict[str, ClaimStudyConfig] = field(default_factory=dict)

    def cells(self, studies: Sequence[str] | None = None) -> list[tuple[str, str, str, float]]:
        """Every (study, dataset, variant, straggler fraction) of ``studies`` (default: all of them), study by study in
        that order, each in declared order: the main job's grid, which the train, report and track stages all read
        (a cell two studies list appears under each)."""
        names = list(self.studies) if studies is None else list(studies)
        for name in names:
            if name not in self.studies:
                raise ConfigError(f"study {name!r} is not in studies; allowed: {', '.join(self.studies)}")
        return [(name, ds, variant, float(f)) for name in names for ds in self.studies[name].datasets
                for variant in self.studies[name].algorithms for f in self.studies[name].stragglers]

    def train_for(self, dataset: str) -> TrainConfig:
        """The train settings of ``dataset``'s runs: the train section with the overrides of the study that lists
        it (parse_config checks that every study listing a dataset gives it the same settings)."""
        for study in self.studies.values():
            if dataset in study.datasets and study.train:
                return dataclasses.replace(self.train, **study.train)
        return self.train

    def declaration(self, name: str) -> StudyDeclaration:
        """params.yaml study ``name`` as a study declaration (fedbench.study.declaration.StudyDeclaration, issue
        19): its algorithms as arms (each its algorithm and hyperparameters), train.seeds as seeds, its datasets and
        straggler levels as knobs, one budget ("pipeline": its rounds, the study's own train.rounds where it sets
        one) and no claims (the report judges them: fedbench.studies.fedprox_main_job). params.yaml's studies are
        FedProx's (the main job). A ConfigError naming the studies for an unknown ``name``."""
        from fedbench.claims.papers import FEDPROX_PAPER
        if name not in self.studies:
            raise ConfigError(f"studies.{name}: no such study; allowed: {', '.join(self.studies) or 'none'}")
        study = self.studies[name]
        rounds = dataclasses.replace(self.train, **study.train).rounds
        arms = tuple(Arm(a, self.algorithms[a].name, dict(self.algorithms[a].hyper)) for a in study.algorithms)
        return StudyDeclaration(name=name, paper=FEDPROX_PAPER, dataset=", ".join(study.datasets), arms=arms,
                                seeds=tuple(self.train.seeds), budgets={"pipeline": rounds}, claims=(),
                                data_seeds=(self.data.seed,),
                                knobs={"datasets": tuple(study.datasets), "stragglers": tuple(study.stragglers)})


def _suggest(key: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _build(cls: type, raw: Any, where: str) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(raw).__name__}")
    hints = get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key in raw:
        if key not in names:
            raise ConfigError(f"{where}.{key}: unknown key{_suggest(key, names)}; allowed: {', '.join(names)}")
    required = [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing := [name for name in required if name not in raw]:
        raise ConfigError(f"{where}: missing {', '.join(missing)}; required: {', '.join(required)}")
    values = {}
    for name in names:
        if name not in raw:
            continue
        values[name] = _coerce(raw[name], hints[name], f"{where}.{name}")
    return cls(**values)


def _coerce(value: Any, hint: Any, where: str) -> Any:
    text = str(hint)
    if hint is int or text == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if hint is float or text == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{where}: expected a finite number, got {value!r}")
        return float(value)
    if hint is str or text == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    if text.startswith("tuple[int"):
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{where}: expected a non-empty list of integers, got {value!r}")
        return tuple(_coerce(v, int, where) for v in value)
    if text.startswith("tuple[float"):
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{where}: expected a non-empty list of numbers, got {value!r}")
        return tuple(_coerce(v, float, where) for v in value)
    if text.startswith("tuple[str"):
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{where}: expected a non-empty list of names, got {value!r}")
        return tuple(_coerce(v, str, where) for v in value)
    raise ConfigError(f"{where}: unsupported type {hint}")  # pragma: no cover


def _one_of(value: Any, allowed: list | tuple, where: str) -> None:
    if value not in allowed:
        raise ConfigError(f"{where}: {value!r} is not allowed{_suggest(str(value), list(map(str, allowed)))}; "
                          f"allowed: {', '.join(map(str, allowed))}")


def _algorithm(raw: Any, where: str) -> AlgorithmConfig:
    if not isinstance(raw, dict) or "name" not in raw:
        raise ConfigError(f"{where}: expected a mapping with 'name' (one of {', '.join(ALGORITHMS)})")
    name = raw["name"]
    _one_of(name, list(ALGORITHMS), f"{where}.name")
    try:  # fields, types and allowed values, from the algorithm's dataclass (fedbench.algorithms)
        hyper = check_hyperparameters(name, {k: v for k, v in raw.items() if k != "name"}, where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return AlgorithmConfig(name=name, hyper=hyper)


def check_stragglers(train: TrainConfig, fraction: float, where: str) -> None:
    """A straggler fraction the engine can run with ``train``: in [0, 1], and with stragglers (who run fewer
    epochs than E) only if fewer epochs exist."""
    if not 0.0 <= fraction <= 1.0:
        raise ConfigError(f"{where}: {fraction:g} is outside [0, 1]")
    if fraction > 0 and train.straggler_epochs == "authors_code" and train.local_epochs < 2:
        raise ConfigError(f"{where}: stragglers with straggler_epochs='authors_code' run U{{1..E-1}} epochs, "
                          f"which needs train.local_epochs >= 2 (it is {train.local_epochs}); allowed: "
                          "local_epochs >= 2, straggler_epochs: paper, or no stragglers")


def _check_executor(train: TrainConfig) -> None:
    """train.executor, train.gpu_fraction and train.checkpoint_storage (none is in a run's fingerprint: they change
    no number)."""
    import importlib.util

    from fedbench.executors import EXECUTORS, check_storage

    _one_of(train.executor, EXECUTORS, "train.executor")
    if train.executor == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError("train.executor: 'ray' needs Ray, which is not installed here (pip install "
                          "-e '.[ray]'); allowed without it: local")
    if not 0.0 < train.gpu_fraction <= 1.0:
        raise ConfigError(f"train.gpu_fraction: must be in (0, 1], got {train.gpu_fraction}")
    problem = check_storage(train.checkpoint_storage)
    if problem:
        raise ConfigError(f"train.checkpoint_storage: {problem}")


TOP_KEYS = ["data", "train", "algorithms", "studies", "claim_studies"]
# the quick profile: the main job at a few rounds, one seed, a few cells, as overrides of params.yaml (dotted keys) for
# load_config; what the CI regression check (fedbench.regression) and the executors' bench (fedbench.bench.executors) run
QUICK_PROFILE = Path(__file__).resolve().parent.parent / "tests" / "regression" / "quick_profile.yaml"
REAL_DATA_KEYS = ("sources", "real", "variants", "prepare")


def _data_config(raw: Any) -> DataConfig:
    """The data section: synthetic keys built as usual, real-data keys checked by fedbench.data.registry."""
    if not isinstance(raw, dict):
        return _build(DataConfig, raw, "data")
    data = _build(DataConfig, {k: v for k, v in raw.items() if k not in REAL_DATA_KEYS}, "data")
    sources, real = raw.get("sources") or [], raw.get("real") or []
    variants, prepare = raw.get("variants") or {}, raw.get("prepare") or {}
    try:
        validate_data_section(sources, real, variants, prepare)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return dataclasses.replace(data, sources=tuple(sources), real=tuple(real), variants=dict(variants),
                               prepare=dict(prepare))


def parse_config(raw: Any) -> Config:
    if not isinstance(raw, dict):
        raise ConfigError("params: expected a mapping at the top level")
    for key in raw:
        if key not in TOP_KEYS:
            raise ConfigError(f"{key}: unknown top-level key{_suggest(key, TOP_KEYS)}; allowed: {', '.join(TOP_KEYS)}")
    data = _data_config(raw.get("data"))
    train = _build(TrainConfig, raw.get("train"), "train")
    for ds in data.datasets:
        _one_of(ds, list(SYNTHETIC_DATASETS), "data.datasets")
    if data.num_devices < 1:
        raise ConfigError(f"data.num_devices: must be >= 1, got {data.num_devices}")
    if not 0.0 < data.train_fraction < 1.0:
        raise ConfigError(f"data.train_fraction: must be in (0, 1), got {data.train_fraction}")
    _one_of(train.model, available_models(), "train.model")
    _one_of(train.sampling, list(SAMPLING_SCHEMES), "train.sampling")
    _one_of(train.straggler_epochs, list(STRAGGLER_EPOCHS), "train.straggler_epochs")
    for key in ("rounds", "clients_per_round", "local_epochs", "batch_size", "workers", "eval_every",
                "checkpoint_every"):
        if getattr(train, key) < 1:
            raise ConfigError(f"train.{key}: must be >= 1, got {getattr(train, key)}")
    if train.dissimilarity_samples < 0:
        raise ConfigError(f"train.dissimilarity_samples: must be >= 0 (0: all samples), got {train.dissimilarity_samples}")
    _check_executor(train)
    _one_of(train.capture, ["none", "static", "cuda_graph", "fused_step", "fused_round"], "train.capture")
    _one_of(train.precision, ["fp32", "tf32", "bf16"], "train.precision")
    if train.precision != "fp32" and train.capture in ("fused_step", "fused_round"):
        raise ConfigError(f"train.precision: {train.precision} with train.capture {train.capture}: the fused kernels "
                          "compute in IEEE float32 only; allowed with them: fp32")
    if train.capture in ("cuda_graph", "fused_step", "fused_round") and train.device == "cpu":
        raise ConfigError(f"train.capture: {train.capture} needs a CUDA device, and train.device is cpu; allowed "
                          "here: none, static")
    if train.lr <= 0:
        raise ConfigError(f"train.lr: must be > 0, got {train.lr}")
    if train.clients_per_round > data.num_devices:
        raise ConfigError(f"train.clients_per_round: {train.clients_per_round} exceeds data.num_devices "
                          f"({data.num_devices}); allowed: 1..{data.num_devices}")
    if not re.fullmatch(DEVICES, train.device):
        raise ConfigError(f"train.device: {train.device!r} is not allowed; allowed: auto, cpu, cuda, cuda:N")
    if any(seed < 0 for seed in train.seeds):
        raise ConfigError(f"train.seeds: seeds must be >= 0, got {list(train.seeds)}")
    if data.seed < 0:
        raise ConfigError(f"data.seed: must be >= 0, got {data.seed}")
    if train.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"train.device: {train.device!r} but CUDA is not available here; allowed: auto, cpu")
    if len(set(train.seeds)) != len(train.seeds):
        raise ConfigError(f"train.seeds: seeds must be distinct, got {list(train.seeds)}")

    raw_algos = raw.get("algorithms") or {}
    if not isinstance(raw_algos, dict) or not raw_algos:
        raise ConfigError("algorithms: expected a mapping of variant name -> {name: ..., hyperparameters}")
    algorithms = {k: _algorithm(v, f"algorithms.{k}") for k, v in raw_algos.items()}
    _check_dissimilarity_runs(train, algorithms, "train")

    raw_studies = raw.get("studies") or {}
    if not isinstance(raw_studies, dict):
        raise ConfigError("studies: expected a mapping of study name -> {datasets, algorithms, stragglers}")
    studies = {}
    train_of: dict[str, tuple[str, dict[str, Any]]] = {}  # dataset -> (first study listing it, its overrides)
    for name, body in raw_studies.items():
        overrides = _study_train(body, train, raw.get("train"), f"studies.{name}")
        study = _build(StudyConfig, {k: v for k, v in body.items() if k != "train"} if isinstance(body, dict) else body,
                       f"studies.{name}")
        study = dataclasses.replace(study, train=overrides)
        study_train = dataclasses.replace(train, **overrides)
        for ds in study.datasets:
            first, given = train_of.setdefault(ds, (name, overrides))
            if given != overrides:
                raise ConfigError(f"studies.{name}.train: {ds} is also in studies.{first}, with other train settings "
                                  f"({given or 'none'} vs {overrides or 'none'}); a dataset's runs have one set of "
                                  "train settings: give both studies the same, or list the dataset once")
        for ds in study.datasets:
            _one_of(ds, list(data.datasets) + list(data.real), f"studies.{name}.datasets")
            clients = known_num_clients(ds, data.variants.get(ds)) if ds in data.real else None
            if clients is not None and study_train.clients_per_round > clients:
                raise ConfigError(f"train.clients_per_round: {study_train.clients_per_round} exceeds the {clients} clients "
                                  f"of {ds} (studies.{name}); allowed: 1..{clients}")
        for algo in study.algorithms:
            _one_of(algo, list(algorithms), f"studies.{name}.algorithms")
        if {"dissimilarity_variants", "dissimilarity_stragglers"} & set(overrides):
            _check_dissimilarity_runs(study_train, algorithms, f"studies.{name}.train")
        for f in study.stragglers:  # floats as loaded: 0 and 0.0 are one fraction, and name one run
            check_stragglers(study_train, f, f"studies.{name}.stragglers")
        studies[name] = study
    claim_studies = _claim_studies(raw.get("claim_studies"))
    return Config(data=data, train=train, algorithms=algorithms, studies=studies, claim_studies=claim_studies)


def _check_dissimilarity_runs(train: TrainConfig, algorithms: dict[str, AlgorithmConfig], where: str) -> None:
    """train.dissimilarity_variants name variants of ``algorithms``, train.dissimilarity_stragglers fractions in
    [0, 1)."""
    for v in train.dissimilarity_variants:
        _one_of(v, list(algorithms), f"{where}.dissimilarity_variants")
    for f in train.dissimilarity_stragglers:
        if not 0.0 <= f < 1.0:
            raise ConfigError(f"{where}.dissimilarity_stragglers: {f:g} is not a straggler fraction; allowed: numbers "
                              "in [0, 1)")


def _claim_studies(raw: Any) -> dict[str, ClaimStudyConfig]:
    """params.yaml ``claim_studies``: {default: {NAME: {budget, seeds}}, opt_in: {NAME: ...}}, each name a claim
    study of fedbench/studies/ listed once, its budget one the study declares, its seeds distinct integers >= 0 and
    given only to a study that is not deterministic, as the study registry (fedbench.study.registry) says: no torch is
    imported."""
    if raw is None:
        return {}
    shape = "a mapping {default: {NAME: {budget, seeds}}, opt_in: {NAME: ...}}"
    if not isinstance(raw, dict):
        raise ConfigError(f"claim_studies: expected {shape}, got {type(raw).__name__}")
    out: dict[str, ClaimStudyConfig] = {}
    available = registry.names()
    for group in raw:
        _one_of(group, CLAIM_STUDY_GROUPS, "claim_studies")
    for group in CLAIM_STUDY_GROUPS:
        body = raw.get(group)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise ConfigError(f"claim_studies.{group}: expected a mapping of study name -> {{budget, seeds}}, got "
                              f"{type(body).__name__}")
        for name, settings in body.items():
            where = f"claim_studies.{group}.{name}"
            if name not in available:
                raise ConfigError(f"{where}: unknown claim study{_suggest(str(name), available)}; allowed: "
                                  f"{', '.join(available)}")
            if name in out:
                raise ConfigError(f"{where}: also in claim_studies.default; list a study once")
            if registry.is_paper_scale(name):
                raise ConfigError(f"{where}: {name} is a paper-scale study on real data (its runs go to results/{name}/, "
                                  f"not a claim_studies stage); allowed: a small claim study; run it with `fedbench "
                                  f"paper run {name}`")
            settings = {} if settings is None else settings
            if not isinstance(settings, dict):
                raise ConfigError(f"{where}: expected a mapping {{budget, seeds}}, got {settings!r}")
            for key in settings:
                if key not in CLAIM_STUDY_KEYS:
                    raise ConfigError(f"{where}.{key}: unknown key{_suggest(str(key), list(CLAIM_STUDY_KEYS))}; "
                                      f"allowed: {', '.join(CLAIM_STUDY_KEYS)}")
            budget = _coerce(settings.get("budget", PIPELINE_BUDGET), str, f"{where}.budget")
            _one_of(budget, registry.budgets(name), f"{where}.budget")
            seeds = None
            if settings.get("seeds") is not None:
                seeds = _coerce(settings["seeds"], tuple[int, ...], f"{where}.seeds")
                if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
                    raise ConfigError(f"{where}.seeds: expected distinct integers >= 0, got {list(seeds)}")
                if registry.is_deterministic(name):
                    raise ConfigError(f"{where}.seeds: study {name} is deterministic (no seed randomness: its "
                                      "declaration has seeds=()); allowed: leave seeds out")
            out[name] = ClaimStudyConfig(budget=budget, seeds=seeds, default=group == "default")
    return out


def _study_train(body: Any, train: TrainConfig, raw_train: Any, where: str) -> dict[str, Any]:
    """A study's ``train`` overrides (STUDY_TRAIN_KEYS), checked as the train section is: only keys that differ
    from the train section are kept, so a study that repeats the section's value changes no run."""
    given = body.get("train") if isinstance(body, dict) else None
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise ConfigError(f"{where}.train: expected a mapping of train keys ({', '.join(STUDY_TRAIN_KEYS)})")
    for key in given:
        if key not in STUDY_TRAIN_KEYS:
            raise ConfigError(f"{where}.train.{key}: not a per-study key{_suggest(key, list(STUDY_TRAIN_KEYS))}; "
                              f"allowed: {', '.join(STUDY_TRAIN_KEYS)}")
    merged = _build(TrainConfig, {**(raw_train or {}), **given}, f"{where}.train")
    _one_of(merged.model, available_models(), f"{where}.train.model")
    for key in ("rounds", "local_epochs", "batch_size", "clients_per_round", "eval_every"):
        if getattr(merged, key) < 1:
            raise ConfigError(f"{where}.train.{key}: must be >= 1, got {getattr(merged, key)}")
    if merged.lr <= 0:
        raise ConfigError(f"{where}.train.lr: must be > 0, got {merged.lr}")
    _one_of(merged.straggler_epochs, list(STRAGGLER_EPOCHS), f"{where}.train.straggler_epochs")
    if merged.dissimilarity_samples < 0:
        raise ConfigError(f"{where}.train.dissimilarity_samples: must be >= 0 (0: all samples), got "
                          f"{merged.dissimilarity_samples}")
    return {k: getattr(merged, k) for k in given if getattr(merged, k) != getattr(train, k)}


# the model names params.yaml may give (fedbench.models.MODEL_NAMES, the keys of its BUILDERS), written here so that
# loading the config imports no torch; tests/test_config.py holds the two equal
MODELS = ("mclr", "cnn", "cifar_cnn", "fedlaavg_cifar_cnn", "fedprox_shakespeare_lstm", "fedprox_sent140_lstm",
          "deltafl_emnist_linear", "deltafl_emnist_cnn", "deltafl_sent140_linear", "deltafl_sent140_lstm",
          "deltafl_shakespeare_gru", "scaffold_logreg", "scaffold_mlp", "leaf_femnist_cnn", "fedproxvr_cnn",
          "fashion_cnn")


def available_models() -> list[str]:
    """The model names of fedbench.models.build_model (:data:`MODELS`)."""
    return list(MODELS)


def load_config(path: str | Path = "params.yaml", overrides: dict[str, Any] | None = None) -> Config:
    """Read and validate ``path``; ``overrides`` maps dotted keys ('train.rounds') to values."""
    raw = read_params(path)
    for dotted, value in (overrides or {}).items():
        node = raw
        *parents, leaf = dotted.split(".")
        for i, p in enumerate(parents):
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{'.'.join(parents[: i + 1])}: is a value, not a section; cannot set {dotted}")
        node[leaf] = value
    return parse_config(raw)
