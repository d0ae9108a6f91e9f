"""The train stage's runs: each experiment (dataset, algorithm variant, straggler fraction, seed) of params.yaml's
studies as a Simulation of the one runner (fedbench.study.runner), kept in the one store (:class:`TrainStore`: outcome
files named by the one fingerprint, fedbench.study.reuse, as every claim study's).

The runs live in ``results/train/`` (fedbench.study.layout): ``outcomes/<fingerprint>.json``, each run's full
outcome (every history row, the final scalars, the per-device metrics, float64), and ``index.jsonl``, one line per finished run naming its fingerprint
beside the settings that determine it (:func:`run_params`), its data's content hash and the code's hash. The
fingerprint is the identity of everything that determines the run's numbers (its settings, its data and the code,
fedbench.study.reuse.fingerprint), so runs of other parameters (a ``dvc exp run -S train.rounds=4`` variation) get
outcomes of their own and never overwrite each other; going back to earlier parameters finds their runs again and
reuses them. Readers (the report, the track stage, ``fedbench compare``) look a run up in the index by the parameters in
force (:func:`find_run`: no torch, no model built), so they see only the runs of those parameters.

A run's summary (:func:`summary`: its settings, final and reporting values, divergence, wall time, provenance) is
computed from its outcome, the same for a run just computed and one read back. Runs checkpoint every few rounds into
``outcomes/.<fingerprint>.checkpoint.pt`` and pick up from there when restarted with the same settings; a finished
run whose fingerprint matches is not run again. One process at a time works on a run (a lock beside its outcome), so
the same run started twice at once is computed once and reused by the other.

A run whose loss leaves the engine's bound (fedbench.engine.metrics.has_diverged) is a result: it stops, is
recorded ``diverged`` with the round it diverged at, and a warning is printed; its final metrics may be null.

Importing this module imports no torch (the engine is imported when a run is computed), so the tracking and
report stages that read runs stay light.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedbench.config import Config
from fedbench.data.format import read_meta
from fedbench.data.load import load, rebuild_hint, word_table
from fedbench.data.registry import VARIANTS, dataset_dir
from fedbench.errors import ConfigError, DataError
from fedbench.locking import file_lock
from fedbench.provenance import RUN_CODE, TRAIN_RUN_CODE, code_hash, git_commit
from fedbench.study import reuse
from fedbench.study.layout import MAIN_JOB, train_folder
from fedbench.study.record import read_simulations
from fedbench.study.reuse import versions
from fedbench.study.runner import Outcome, Simulation

DATA_ROOT = Path("data/generated")
INDEX = "index.jsonl"  # in the train store: one line per finished run, its fingerprint by its settings, data and code


def outcome_path(results_root: str | Path, fingerprint: str) -> Path:
    """The file of the finished run ``fingerprint``: in the main job study's store (results/fedprox_main_job/<budget>/
    outcomes/) where one of its budgets holds it, else in the train store."""
    name = f"{fingerprint}.json"
    found = [f / reuse.OUTCOMES / name for f in _study_folders(results_root) if (f / reuse.OUTCOMES / name).exists()]
    return found[0] if found else train_folder(results_root) / reuse.OUTCOMES / name


def _study_folders(results_root: str | Path) -> list[Path]:
    """The folders of the studies that record params.yaml-style runs in ``results_root``: the main job's, one per
    budget it ran at (pipeline first), then each FedProx real-data study's (fedbench.studies.fedprox_real)."""
    from fedbench.study.registry import FEDPROX_REAL

    out = []
    for name in (MAIN_JOB, *FEDPROX_REAL):
        root = Path(results_root) / name
        folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []
        out += sorted(folders, key=lambda p: p.name != "pipeline")
    return out


def recorded(results_root: str | Path) -> dict[str, str]:
    """The runs the main job study and the FedProx real-data studies recorded (results/<study>/<budget>/
    simulations.jsonl, fedbench.studies.fedprox_main_job, fedprox_real: each record's params are :func:`run_params`'s):
    each one's fingerprint by its params (the main job's pipeline budget winning), read once per state of the records."""
    out: dict[str, str] = {}
    for folder in reversed(_study_folders(results_root)):  # the pipeline budget's last: it wins
        path = folder / "simulations.jsonl"
        if path.is_file():
            stat = path.stat()
            out |= _recorded(str(folder), stat.st_mtime_ns, stat.st_size)
    return out


@functools.lru_cache(maxsize=16)
def _recorded(folder: str, mtime_ns: int, size: int) -> dict[str, str]:
    return {json.dumps(r["params"], sort_keys=True): r["fingerprint"] for r in read_simulations(folder)
            if "fingerprint" in r}


def run_params(cfg: Config, dataset: str, variant: str, stragglers: float, seed: int) -> dict[str, Any]:
    """Every setting that determines a run's numbers, flat, as logged to MLflow."""
    algo = cfg.algorithms[variant]
    t = cfg.train_for(dataset)  # the train section with the overrides of the study listing the dataset
    return {
        "dataset": dataset, "algorithm": algo.name, "variant": variant, **{f"algo.{k}": v for k, v in algo.hyper.items()},
        "straggler_fraction": stragglers, "seed": seed, "model": t.model, "rounds": t.rounds,
        "clients_per_round": t.clients_per_round, "local_epochs": t.local_epochs, "batch_size": t.batch_size,
        "lr": t.lr, "sampling": t.sampling, "straggler_epochs": t.straggler_epochs, "eval_every": t.eval_every,
        "data.seed": cfg.data.seed, "data.num_devices": cfg.data.num_devices,
        "data.train_fraction": cfg.data.train_fraction,
        # a sampled dissimilarity changes that metric's numbers; recorded only where a study asks for one
        **({"dissimilarity_samples": t.dissimilarity_samples} if t.dissimilarity_samples else {}),
        # a run whose dissimilarity no claim reads (train.dissimilarity_variants, _stragglers) skips it: recorded only
        # there, so the runs that compute it keep their fingerprints
        **({} if t.computes_dissimilarity(variant, stragglers) else {"dissimilarity": False}),
        # a captured loop may move CUDA numbers in the last bits (fedbench.engine.capture); recorded where it is on
        **({"capture": t.capture} if t.capture != "none" else {}),
        # a declared reduced-precision mode computes other numbers (fedbench.engine.precision); fp32 runs as before
        **({"precision": t.precision} if t.precision != "fp32" else {}),
    }


def dataset_meta(cfg: Config, dataset: str, data_root: str | Path = DATA_ROOT) -> dict[str, Any]:
    """The metadata of the dataset a run of ``cfg`` would train on, checked against ``cfg``: the settings a run
    records (data.seed, data.num_devices, data.train_fraction) must be the ones the data was made with, and
    the data must have at least train.clients_per_round clients. Raises DataError (one line) otherwise."""
    folder = dataset_dir(data_root, dataset)
    try:
        meta = read_meta(folder)
    except FileNotFoundError:
        raise DataError(f"{folder}: no dataset there (no meta.json); {rebuild_hint(dataset)}") from None
    except (OSError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise DataError(f"{folder}/meta.json is unreadable ({type(exc).__name__}: {exc}); {rebuild_hint(dataset)}") from None
    if meta.get("name") != dataset:
        raise DataError(f"{folder} holds dataset {meta.get('name')!r}, not {dataset!r}; {rebuild_hint(dataset)}")
    made = {} if dataset in VARIANTS else meta.get("source", {}).get("params", {})  # the generators' settings
    wanted = {"seed": cfg.data.seed, "num_devices": cfg.data.num_devices, "train_fraction": cfg.data.train_fraction}
    differ = [k for k, v in wanted.items() if k in made and made[k] != v]
    if differ:
        was = ", ".join(f"data.{k}={made[k]}" for k in differ)
        now = ", ".join(f"data.{k}={wanted[k]}" for k in differ)
        raise DataError(f"{folder} was made with {was} but the config says {now}: a run would record settings its "
                        f"data was not made with; run with the data's settings, or regenerate it: fedbench "
                        f"generate {dataset} " + " ".join(f"--set data.{k}={wanted[k]}" for k in differ))
    clients = int(meta.get("num_clients", len(meta.get("client_ids", []))))
    if cfg.train_for(dataset).clients_per_round > clients:
        raise ConfigError(f"train.clients_per_round: {cfg.train_for(dataset).clients_per_round} exceeds the {clients} clients of "
                          f"{folder}; allowed: 1..{clients}")
    return meta


@dataclass(frozen=True)
class RunKey:
    """One run of the main job: a (dataset, algorithm variant, straggler fraction, seed) of a study's grid."""

    dataset: str
    variant: str
    stragglers: float
    seed: int

    @property
    def desc(self) -> str:
        return f"{self.dataset} {self.variant} stragglers={self.stragglers:g} seed={self.seed}"


@dataclass(frozen=True)
class _Planned:
    """A run of ``key`` under a config: its params, and its dataset's folder and metadata."""

    key: RunKey
    params: dict[str, Any]
    meta: dict[str, Any]
    data_dir: Path


def _plan(cfg: Config, data_root: str | Path, key: RunKey, meta: dict[str, Any] | None = None) -> _Planned:
    meta = meta if meta is not None else dataset_meta(cfg, key.dataset, data_root)
    params = run_params(cfg, key.dataset, key.variant, key.stragglers, key.seed)
    return _Planned(key, params, meta, dataset_dir(data_root, key.dataset))  # data/generated/<name>, or data/real/<name>


def plan(cfg: Config, data_root: str | Path, keys: Sequence[RunKey]) -> list[_Planned]:
    """Each run of ``keys`` planned (every dataset's metadata read and checked once)."""
    metas = {ds: dataset_meta(cfg, ds, data_root) for ds in dict.fromkeys(k.dataset for k in keys)}
    return [_plan(cfg, data_root, k, metas[k.dataset]) for k in keys]


def _lookup(params: dict[str, Any], dataset_hash: str, code: str) -> str:
    """A run's line in the index is found by this: what determines its fingerprint, as the readers know it."""
    return json.dumps([params, dataset_hash, code], sort_keys=True)


def read_index(results_root: str | Path) -> dict[str, str]:
    """The train store's index: each finished run's fingerprint by :func:`_lookup` of its settings (the last line
    wins; a line cut short by a crash is skipped). Read once per state of the file."""
    path = train_folder(results_root) / INDEX
    try:
        stat = path.stat()
    except FileNotFoundError:
        return {}
    return _read_index(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _read_index(path: str, mtime_ns: int, size: int) -> dict[str, str]:
    out = {}
    for line in Path(path).read_text().splitlines():
        try:
            entry = json.loads(line)
            out[_lookup(entry["params"], entry["dataset_hash"], entry["code"])] = entry["fingerprint"]
        except (ValueError, KeyError, TypeError):
            continue
    return out


def find_run(cfg: Config, data_root: str | Path, results_root: str | Path, key: RunKey,
             dataset_hash: str | None = None, code: str | None = None) -> dict[str, Any] | None:
    """The finished run of ``key`` under the parameters of ``cfg`` (its :func:`summary`, with ``history``), or None
    when it has not been computed with these settings, data and code, or its dataset is not there: the run the main
    job study recorded with these settings (:func:`recorded`), else the train store's (its index). ``dataset_hash``
    (the dataset's content hash) and ``code`` (code_hash of TRAIN_RUN_CODE) save computing them again."""
    if dataset_hash is None:
        try:
            dataset_hash = read_meta(dataset_dir(data_root, key.dataset))["content_hash"]
        except FileNotFoundError:
            return None
    params = run_params(cfg, key.dataset, key.variant, key.stragglers, key.seed)
    fp = recorded(results_root).get(json.dumps(params, sort_keys=True))  # the main job study's record first
    if fp is None:
        fp = read_index(results_root).get(_lookup(params, dataset_hash, code or code_hash(TRAIN_RUN_CODE)))
    if fp is None:
        return None
    try:
        found = reuse.read(outcome_path(results_root, fp).parent, fp)
    except FileNotFoundError:  # removed by hand: not computed
        return None
    except ValueError as exc:
        raise DataError(f"{outcome_path(results_root, fp)}: unreadable run ({exc}); run it again to compute it anew "
                        f"(`fedbench run` or the train stage: the unreadable file is replaced)") from None
    return summary(found, params, dataset_hash, fp)


@functools.cache
def _dataset(folder: str, dataset: str, content_hash: str):
    """The dataset in ``folder`` (of ``content_hash``: a folder made anew is loaded anew), loaded once per process
    (a Simulation's cached builder; the train stage clears the cache when its call ends: :func:`forget`)."""
    return load(folder, dataset)


@functools.cache
def _model(name: str, feature_shape: tuple[int, ...], num_classes: int, embedding: str | None, embedding_hash: str):
    """Model ``name`` for inputs of ``feature_shape`` (with the frozen word table in folder ``embedding``, of
    ``embedding_hash``, if any): one object for every run of that model and input, so that runs of several datasets
    of one shape share stacks."""
    from fedbench.models import build_model

    return build_model(name, feature_shape, num_classes, None if embedding is None else word_table(embedding))


def forget() -> None:
    """Drop the datasets and models the train stage's runs loaded (their caches), at the end of a call."""
    _dataset.cache_clear()
    _model.cache_clear()


def simulation(cfg: Config, p: _Planned) -> Simulation:
    """The run ``p`` (planned from ``cfg``) as a Simulation of the one runner, named by its key (RunKey.desc)."""
    from fedbench.algorithms import build_algorithm
    from fedbench.engine.simulation import SimulationConfig

    t, algo = cfg.train_for(p.key.dataset), cfg.algorithms[p.key.variant]
    config = SimulationConfig(
        rounds=t.rounds, clients_per_round=t.clients_per_round, local_epochs=t.local_epochs,
        batch_size=t.batch_size, straggler_fraction=p.key.stragglers, sampling=t.sampling,
        straggler_epochs=t.straggler_epochs, seed=p.key.seed, device=t.device,
        # params.yaml's train.eval_every: the dissimilarity's cadence, in the runs that compute it
        dissimilarity_every=t.eval_every if t.computes_dissimilarity(p.key.variant, p.key.stragglers) else 0,
        dissimilarity_samples=t.dissimilarity_samples or None,  # 0: every sample
        checkpoint_every=t.checkpoint_every, capture=t.capture, precision=t.precision,
    )
    embedding = p.meta.get("input", {}).get("embedding")
    model = _model(t.model, tuple(p.meta["feature_shape"]), int(p.meta["num_classes"]),
                   embedding["folder"] if embedding else None, embedding["content_hash"] if embedding else "")
    data = functools.partial(_dataset, str(p.data_dir), p.key.dataset, p.meta["content_hash"])
    return Simulation(p.key.desc, config, data, model, build_algorithm(algo.name, t.lr, **algo.hyper))


class TrainStore:
    """The train stage's store (fedbench.study.runner.Store): each run an outcome file in ``results_root/train/outcomes``
    named by the one fingerprint (fedbench.study.reuse), and a line of the index naming it by the run's settings (the
    module docstring); one process at a time works on a run (a lock beside its outcome), a computing run checkpoints
    beside it, and a finished one is written whole. ``summaries`` holds each run's :func:`summary` (with ``history``
    and ``reused``) as it was read back or computed."""

    def __init__(self, planned: Sequence[_Planned], results_root: str | Path) -> None:
        self.planned = {p.key.desc: p for p in planned}
        self.folder = train_folder(results_root) / reuse.OUTCOMES
        self.index = train_folder(results_root) / INDEX
        self.summaries: dict[str, dict[str, Any]] = {}
        self._code = code_hash(TRAIN_RUN_CODE)
        self._about: dict[str, Any] | None = None  # what computes the runs: asked of git once a store, not once a run
        self._models: dict[int, Any] = {}
        self._indexed = dict(read_index(results_root))  # read once; this store's own lines added as it writes them

    def key(self, sim: Simulation) -> str:
        return reuse.fingerprint(sim, self.planned[sim.name].meta["content_hash"], self._code, self._models)

    def lock(self, sim: Simulation, key: str):
        self.folder.mkdir(parents=True, exist_ok=True)
        return file_lock(self.folder / f".{key}.lock", what=self.planned[sim.name].key.desc)

    def load(self, sim: Simulation, key: str) -> Outcome | None:
        found = reuse.load(self.folder, key)  # an unreadable one says so in one line and is computed again
        if found is None:
            return None
        self._keep(sim, key, found, reused=True)
        return reuse.as_outcome(sim.name, found)

    def checkpoint(self, sim: Simulation, key: str) -> Path:
        return self.folder / f".{key}{reuse.CHECKPOINT}"

    def save(self, sim: Simulation, key: str, outcome: Outcome) -> None:
        if self._about is None:
            self._about = {"versions": versions(), "git_commit": git_commit(RUN_CODE)}
        about = self._about
        reuse.save(self.folder, key, outcome, about)
        found = {f.name: getattr(outcome, f.name) for f in dataclasses.fields(outcome) if f.name != "name"}
        self._keep(sim, key, found | {"about": about}, reused=False)
        if outcome.diverged:
            s = self.summaries[sim.name]
            losses = [row.get("train/loss", float("nan")) for row in outcome.history]
            print(f"fedbench: warning: {self.planned[sim.name].key.desc} diverged at round {s['diverged_at_round']} "
                  f"(training loss {losses[-1]:.4g}, round 0: {losses[0]:.4g}); recorded as diverged (the rule: "
                  "fedbench.engine.metrics.has_diverged)", file=sys.stderr)

    def _keep(self, sim: Simulation, key: str, found: dict[str, Any], reused: bool) -> None:
        """The run's summary, and its index line where the index lacks it."""
        p = self.planned[sim.name]
        dataset_hash = p.meta["content_hash"]
        lookup = _lookup(p.params, dataset_hash, self._code)
        if self._indexed.get(lookup) != key:  # another process may add the same line: the last one wins, all alike
            line = json.dumps({"name": p.key.desc, "fingerprint": key, "params": p.params,
                               "dataset_hash": dataset_hash, "code": self._code}, sort_keys=True)
            with file_lock(self.index.parent / f".{INDEX}.lock", what="the train store's index"):
                with self.index.open("a") as f:
                    f.write(line + "\n")
            self._indexed[lookup] = key
        self.summaries[sim.name] = summary(found, p.params, dataset_hash, key) | {"reused": reused}

    def finished(self, reused: int, total: int) -> None:
        pass  # the stage says it run by run (fedbench.pipeline)


def summary(found: dict[str, Any], params: dict[str, Any], dataset_hash: str, fingerprint: str) -> dict[str, Any]:
    """A run's summary, from its stored outcome ``found`` (fedbench.study.reuse.load's fields): its settings, final
    values, the reporting round (fedbench.divergence.reporting_round: the final model, or the last one before it
    diverged), its best test accuracy, wall time, provenance, and its ``history`` rows."""
    from fedbench.divergence import reporting_round

    history = found["history"]
    losses = np.array([row.get("train/loss", np.nan) for row in history], dtype=np.float64)
    accuracy = np.array([row.get("test/accuracy", np.nan) for row in history], dtype=np.float64)
    at, reason = reporting_round(losses)
    if reason == "diverged":  # the model past the bound predicts nothing useful: read the round before
        at = max(0, at - 1)
    about = found.get("about") or {}
    return {
        "fingerprint": fingerprint, "params": params, "dataset_hash": dataset_hash, "device": found["device"],
        "diverged": found["diverged"], "diverged_at_round": int(history[-1]["round"]) if found["diverged"] else None,
        "param_digest": found["param_digest"], "final": {k: _num(v) for k, v in found["final"].items()},
        "reporting_round": int(at), "reporting_reason": reason, "reporting_test_accuracy": _num(accuracy[at]),
        "best_test_accuracy": _num(np.nanmax(accuracy)) if np.isfinite(accuracy).any() else None,
        "wall_time_s": float(np.nansum([row.get("wall_time_s", np.nan) for row in history])),
        "kernel": found.get("kernel", ""), "stack_size": found.get("stack_size", 1),
        "versions": about.get("versions", {}), "git_commit": about.get("git_commit", "unknown"),
        "history": history,
    }


def run_files(results_root: str | Path, data_root: str | Path, s: dict[str, Any], folder: Path) -> list[Path]:
    """The run of summary ``s`` as the files a person opens (MLflow's artifacts), written into ``folder``:
    ``history.csv`` (one row per evaluation), ``per_device.csv`` (each client's samples and the final model's
    training loss and test accuracy) and ``summary.json``."""
    found = reuse.read(outcome_path(results_root, s["fingerprint"]).parent, s["fingerprint"])
    data = dataset_dir(data_root, s["params"]["dataset"])
    meta = read_meta(data)
    with np.load(data / "arrays.npz") as arrays:  # only the offsets are read
        train, test = np.diff(arrays["train_offsets"]), np.diff(arrays["test_offsets"])
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(s["history"]).to_csv(folder / "history.csv", index=False)
    pd.DataFrame({"client_id": meta["client_ids"], "train_samples": train, "test_samples": test,
                  "train_loss": found["device_train_loss"], "test_accuracy": found["device_accuracy"]}
                 ).to_csv(folder / "per_device.csv", index=False)
    body = {k: v for k, v in s.items() if k not in ("history", "reused")}
    (folder / "summary.json").write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    return [folder / "history.csv", folder / "per_device.csv", folder / "summary.json"]


def _num(v: Any) -> float | None:
    v = float(v)
    return v if np.isfinite(v) else None
