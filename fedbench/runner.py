"""The train stage's runs: each experiment (dataset, algorithm variant, straggler fraction, seed) of params.yaml's
studies as a Simulation of the one runner (fedbench.study.runner), and its record, a run folder (:class:`RunFolders`,
the runner's store for these runs).

A run's folder is ``runs/<dataset>/<variant>/stragglers-<f>/seed-<s>-<fingerprint>/``: the fingerprint is the
identity of everything that determines the run's numbers (its settings, its data's content hash and the code,
:func:`fingerprint`), so runs of other parameters (a ``dvc exp run -S train.rounds=4`` variation) get folders of
their own and never overwrite each other; going back to earlier parameters finds their runs again and reuses
them. Readers (the report, the track stage, ``fedbench show``) compute the fingerprint of the parameters in force
and read that folder (:func:`find_run`), so they see only the runs of those parameters.

It holds ``history.csv`` (one row per round), ``per_device.csv`` (final per-device metrics)
and ``summary.json`` (written last: a folder without it is incomplete). Runs checkpoint every few rounds
into ``<folder>.checkpoint.pt`` and pick up from there when restarted with the same settings; a finished
run whose fingerprint matches is not run again. One process at a time works on a run (a lock beside its
folder), so the same run started twice at once is computed once and reused by the other.

A run whose loss leaves the engine's bound (fedbench.engine.metrics.has_diverged) is a result: it stops, is
recorded ``diverged`` with the round it diverged at, and a warning is printed; its final metrics may be null.

Importing this module imports no torch (the engine is imported when a run is computed), so the tracking and
report stages that read run folders stay light.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import fedbench
from fedbench.config import Config
from fedbench.data.format import atomic_folder, load_dataset, read_meta
from fedbench.errors import ConfigError, DataError
from fedbench.locking import file_lock
from fedbench.provenance import RUN_CODE, code_hash, git_commit
from fedbench.data.registry import VARIANTS, dataset_dir
from fedbench.study.runner import Outcome, Simulation

SUMMARY = "summary.json"
DATA_ROOT = Path("data/generated")
RUNS_ROOT = Path("runs")


def run_folder(root: str | Path, dataset: str, variant: str, stragglers: float, seed: int, fingerprint: str) -> Path:
    """Where the run of these settings with this fingerprint lives (see the module docstring)."""
    return Path(root) / dataset / variant / f"stragglers-{float(stragglers)}" / f"seed-{seed}-{fingerprint}"


def run_params(cfg: Config, dataset: str, variant: str, stragglers: float, seed: int) -> dict[str, Any]:
    """Every setting that determines a run's numbers, flat, as logged to MLflow."""
    algo = cfg.algorithms[variant]
    t = cfg.train_for(dataset)  # the train section with the overrides of the study listing the dataset
    return {
        "dataset": dataset, "algorithm": algo.name, "variant": variant, **{f"algo.{k}": v for k, v in algo.hyper.items()},
        "straggler_fraction": stragglers, "seed": seed, "model": t.model, "rounds": t.rounds,
        "clients_per_round": t.clients_per_round, "local_epochs": t.local_epochs, "batch_size": t.batch_size,
        "lr": t.lr, "sampling": t.sampling, "straggler_epochs": t.straggler_epochs,
        "data.seed": cfg.data.seed, "data.num_devices": cfg.data.num_devices,
        "data.train_fraction": cfg.data.train_fraction,
        # a sampled dissimilarity changes that metric's numbers; recorded only where a study asks for one
        **({"dissimilarity_samples": t.dissimilarity_samples} if t.dissimilarity_samples else {}),
        # a captured loop may move CUDA numbers in the last bits (fedbench.engine.capture); recorded where it is on
        **({"capture": t.capture} if t.capture != "none" else {}),
    }


def fingerprint(params: dict[str, Any], dataset_hash: str) -> str:
    """Identity of a run's numbers: its settings, its data and the code that computes them (RUN_CODE)."""
    blob = json.dumps({"params": params, "dataset": dataset_hash, "code": code_hash(RUN_CODE)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _regenerate(dataset: str) -> str:
    return f"regenerate it: fedbench generate {dataset} (or dvc repro -f generate@{dataset})"


def dataset_meta(cfg: Config, dataset: str, data_root: str | Path = DATA_ROOT) -> dict[str, Any]:
    """The metadata of the dataset a run of ``cfg`` would train on, checked against ``cfg``: the settings a run
    records (data.seed, data.num_devices, data.train_fraction) must be the ones the data was made with, and
    the data must have at least train.clients_per_round clients. Raises DataError (one line) otherwise."""
    folder = dataset_dir(data_root, dataset)
    try:
        meta = read_meta(folder)
    except FileNotFoundError:
        raise DataError(f"{folder}: no dataset there (no meta.json); {_regenerate(dataset)}") from None
    except (OSError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise DataError(f"{folder}/meta.json is unreadable ({type(exc).__name__}: {exc}); {_regenerate(dataset)}") from None
    if meta.get("name") != dataset:
        raise DataError(f"{folder} holds dataset {meta.get('name')!r}, not {dataset!r}; {_regenerate(dataset)}")
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


def _load_dataset(folder: Path, dataset: str):
    """The dataset in ``folder``; a missing or corrupt file is one DataError line saying how to regenerate."""
    import zipfile

    try:
        return load_dataset(folder)
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        what = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{folder}: the dataset files are missing or corrupt ({type(exc).__name__}: {what}); "
                        f"{_regenerate(dataset)}") from None


def load_run(folder: Path, fingerprint: str | None = None) -> dict[str, Any] | None:
    """The finished run in ``folder``: its summary with the ``history`` rows added, as the train stage returns
    it. None if the folder holds no finished run, or (given ``fingerprint``) one with another fingerprint.
    A corrupt summary or history raises DataError naming the file."""
    path = folder / SUMMARY
    if not path.exists():
        return None
    try:
        summary = json.loads(path.read_text())
        if fingerprint is not None and summary.get("fingerprint") != fingerprint:
            return None
        summary["history"] = pd.read_csv(folder / "history.csv").to_dict("records")
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"{folder}: unreadable run files ({type(exc).__name__}: {str(exc)[:200]}); delete the folder "
                        "and rerun to compute it again") from None
    return summary


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
    """A run of ``key`` under a config: its params, fingerprint and folder, and its dataset's folder and metadata."""

    key: RunKey
    params: dict[str, Any]
    fingerprint: str
    folder: Path
    meta: dict[str, Any]
    data_dir: Path


def _plan(cfg: Config, data_root: str | Path, out_root: str | Path, key: RunKey,
          meta: dict[str, Any] | None = None) -> _Planned:
    meta = meta if meta is not None else dataset_meta(cfg, key.dataset, data_root)
    params = run_params(cfg, key.dataset, key.variant, key.stragglers, key.seed)
    fp = fingerprint(params, meta["content_hash"])
    return _Planned(key, params, fp, run_folder(out_root, key.dataset, key.variant, key.stragglers, key.seed, fp),
                    meta, dataset_dir(data_root, key.dataset))  # data/generated/<name>, or data/real/<name>


def plan(cfg: Config, data_root: str | Path, out_root: str | Path, keys: Sequence[RunKey]) -> list[_Planned]:
    """Each run of ``keys`` planned (every dataset's metadata read and checked once)."""
    metas = {ds: dataset_meta(cfg, ds, data_root) for ds in dict.fromkeys(k.dataset for k in keys)}
    return [_plan(cfg, data_root, out_root, k, metas[k.dataset]) for k in keys]


def find_run(cfg: Config, data_root: str | Path, runs_root: str | Path, key: RunKey,
             dataset_hash: str | None = None) -> dict[str, Any] | None:
    """The finished run of ``key`` under the parameters of ``cfg`` (its summary with ``history``, as
    :func:`load_run`), or None when it has not been computed or its dataset is not there. ``dataset_hash``
    (the dataset's content hash) saves reading its metadata again."""
    if dataset_hash is None:
        try:
            dataset_hash = read_meta(dataset_dir(data_root, key.dataset))["content_hash"]
        except FileNotFoundError:
            return None
    fp = fingerprint(run_params(cfg, key.dataset, key.variant, key.stragglers, key.seed), dataset_hash)
    return load_run(run_folder(runs_root, key.dataset, key.variant, key.stragglers, key.seed, fp), fp)


@functools.cache
def _dataset(folder: str, dataset: str, content_hash: str):
    """The dataset in ``folder`` (of ``content_hash``: a folder made anew is loaded anew), loaded once per process
    (a Simulation's cached builder; the train stage clears the cache when its call ends: :func:`forget`)."""
    return _load_dataset(Path(folder), dataset)


@functools.cache
def _model(name: str, feature_shape: tuple[int, ...], num_classes: int, embedding: str | None, embedding_hash: str):
    """Model ``name`` for inputs of ``feature_shape`` (with the frozen word table in folder ``embedding``, of
    ``embedding_hash``, if any): one object for every run of that model and input, so that runs of several datasets
    of one shape share stacks."""
    from fedbench.models import build_model

    return build_model(name, feature_shape, num_classes, None if embedding is None else _table(embedding))


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
        dissimilarity_every=t.eval_every,  # params.yaml's train.eval_every: the dissimilarity's cadence
        dissimilarity_samples=t.dissimilarity_samples or None,  # 0: every sample
        checkpoint_every=t.checkpoint_every, capture=t.capture,
    )
    embedding = p.meta.get("input", {}).get("embedding")
    model = _model(t.model, tuple(p.meta["feature_shape"]), int(p.meta["num_classes"]),
                   embedding["folder"] if embedding else None, embedding["content_hash"] if embedding else "")
    data = functools.partial(_dataset, str(p.data_dir), p.key.dataset, p.meta["content_hash"])
    return Simulation(p.key.desc, config, data, model, build_algorithm(algo.name, t.lr, **algo.hyper))


class RunFolders:
    """The train stage's store (fedbench.study.runner.Store): each run in its folder under ``out_root`` (the module
    docstring), named by :func:`fingerprint`; one process at a time works on a run (a lock beside its folder), a
    computing run checkpoints beside its folder, and a finished one is written whole (atomic_folder). ``summaries``
    holds each run's summary (with ``history`` and ``reused``) as it was read back or written."""

    def __init__(self, planned: Sequence[_Planned]) -> None:
        self.planned = {p.key.desc: p for p in planned}
        self.summaries: dict[str, dict[str, Any]] = {}

    def key(self, sim: Simulation) -> str:
        return str(self.planned[sim.name].folder)

    def lock(self, sim: Simulation, key: str):
        p = self.planned[sim.name]
        p.folder.parent.mkdir(parents=True, exist_ok=True)
        return file_lock(p.folder.parent / f".{p.folder.name}.lock", what=p.key.desc)

    def load(self, sim: Simulation, key: str) -> Outcome | None:
        p = self.planned[sim.name]
        try:
            summary = load_run(p.folder, p.fingerprint)
        except DataError as exc:  # the run is computed again and its folder replaced
            print(f"fedbench: warning: {exc}; computing it again", file=sys.stderr)
            return None
        if summary is None:
            return None
        summary["reused"] = True
        self.summaries[sim.name] = summary
        return Outcome(sim.name, summary["history"], summary["final"], summary["diverged"], summary["param_digest"],
                       summary["device"], None, summary["wall_time_s"], kernel=summary.get("kernel", ""),
                       stack_size=summary.get("stack_size", 1))

    def checkpoint(self, sim: Simulation, key: str) -> Path:
        p = self.planned[sim.name]
        return p.folder.parent / f".{p.folder.name}.checkpoint.pt"

    def save(self, sim: Simulation, key: str, outcome: Outcome) -> None:
        summary = _write_result(self.planned[sim.name], sim.dataset(), outcome)
        self.summaries[sim.name] = summary

    def finished(self, reused: int, total: int) -> None:
        pass  # the stage says it run by run (fedbench.pipeline)


def _embedding(ds):
    """The frozen word table a token dataset refers to (its ``input.embedding`` folder, as the partition stage
    recorded it), as a tensor; None for other inputs."""
    ref = ds.input.embedding
    return None if ref is None else _table(ref.folder)


def _table(folder: str):
    """The word table of the embedding artifact in ``folder``, as a tensor."""
    import torch

    from fedbench.data.datasets.glove import load_embedding

    return torch.from_numpy(load_embedding(Path(folder))[1])


def _write_result(p: _Planned, ds, result: Outcome) -> dict[str, Any]:
    """Write the computed run ``result`` (of dataset ``ds``) into its folder; its summary, with ``history``."""
    from fedbench.divergence import reporting_round

    history = pd.DataFrame(result.history)
    losses = history["train/loss"].to_numpy()
    at, reason = reporting_round(losses)
    if reason == "diverged":  # the model past the bound predicts nothing useful: read the round before
        at = max(0, at - 1)
    diverged_at = int(history["round"].iloc[-1]) if result.diverged else None
    if result.diverged:
        print(f"fedbench: warning: {p.key.desc} diverged at round {diverged_at} (training loss {losses[-1]:.4g}, "
              f"round 0: {losses[0]:.4g}); recorded as diverged (the rule: fedbench.engine.metrics.has_diverged)",
              file=sys.stderr)
    per_device = pd.DataFrame({
        "client_id": ds.client_ids,
        "train_samples": ds.train.sizes, "test_samples": ds.test.sizes,
        "train_loss": result.device_train_loss, "test_accuracy": result.device_accuracy,
    })
    summary = {
        "fingerprint": p.fingerprint, "params": p.params, "dataset_hash": p.meta["content_hash"], "device": result.device,
        "diverged": result.diverged, "diverged_at_round": diverged_at, "param_digest": result.param_digest,
        "final": {k: _num(v) for k, v in result.final.items()},
        "reporting_round": int(at), "reporting_reason": reason,
        "reporting_test_accuracy": _num(history["test/accuracy"].iloc[at]),
        "best_test_accuracy": _num(history["test/accuracy"].max()),
        "wall_time_s": float(history["wall_time_s"].sum()),
        "kernel": result.kernel, "stack_size": result.stack_size,
        "versions": versions(), "git_commit": git_commit(RUN_CODE),
    }
    _write_run(p.folder, history, per_device, summary)
    summary["history"] = history.to_dict("records")
    summary["reused"] = False
    return summary


def _num(v: Any) -> float | None:
    v = float(v)
    return v if np.isfinite(v) else None


def versions() -> dict[str, str]:
    import torch

    return {"fedbench": fedbench.__version__, "torch": torch.__version__, "numpy": np.__version__,
            "pandas": pd.__version__, "python": sys.version.split()[0]}


def _write_run(folder: Path, history: pd.DataFrame, per_device: pd.DataFrame, summary: dict) -> None:
    with atomic_folder(folder) as tmp:
        history.to_csv(tmp / "history.csv", index=False)
        per_device.to_csv(tmp / "per_device.csv", index=False)
        (tmp / SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
