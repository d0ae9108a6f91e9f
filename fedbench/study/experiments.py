"""params.yaml's experiments, one (dataset, algorithm variant, straggler fraction, seed) at a time: the main job's
simulations (fedbench.studies.fedprox_main_job builds its grid from :func:`simulation`), run through the one runner
into the main job study's store and kept in the one record format (issue 50, item 1). What ``fedbench run`` runs and
``fedbench compare``, the track stage, the report and the regression profile read.

- :func:`simulation`: a run under a Config as a Simulation, its knobs :func:`run_params` (every setting that determines
  its numbers, as its record keeps them and MLflow logs them); its fingerprint is the one fingerprint
  (fedbench.study.reuse, STUDY_RUN_CODE), so a run ``fedbench run`` computes is the main job's and the other way round.
- :func:`train_runs`: runs through fedbench.study.runner.run_simulations with the main job's store
  (``results/fedprox_main_job/pipeline/outcomes/``, shared: one process a run, nothing pruned), each finished run's
  record (fedbench.study.record, with its fingerprint) appended to ``results/fedprox_main_job/runs/simulations.jsonl``
  (:data:`RUNS`: runs, not a study run, so no claims.json).
- :func:`find_run`: the finished run of a key under a Config, found by its params in the records (the main job's
  budgets, pipeline winning; then :data:`RUNS`; FedProx's real-data studies) and read from its outcome file, as its
  :func:`summary`: no torch, no model built.

Importing this module imports no torch (the engine is imported when a run is computed).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from fedbench.data.format import read_meta
from fedbench.data.load import load, rebuild_hint, word_table
from fedbench.data.registry import VARIANTS, dataset_dir
from fedbench.errors import ConfigError, DataError
from fedbench.locking import file_lock
from fedbench.study import reuse
from fedbench.study.layout import MAIN_JOB, OUTCOMES, PIPELINE_BUDGET, RESULTS_ROOT, adopt, study_folder
from fedbench.study.record import SIMULATIONS

if TYPE_CHECKING:
    import pandas as pd

    from fedbench.study.runner import Outcome, Simulation

DATA_ROOT = Path("data/generated")  # the generated sets (a real variant's folder is data/real/<name>: dataset_dir)
RUNS = "runs"  # results/fedprox_main_job/runs/: the records of the runs made one experiment at a time


class RunKey(NamedTuple):
    """One run of params.yaml's grid: (dataset, algorithm variant, straggler fraction, seed)."""

    dataset: str
    variant: str
    stragglers: float
    seed: int

    @property
    def desc(self) -> str:
        return f"{self.dataset} {self.variant} stragglers={self.stragglers:g} seed={self.seed}"


def run_params(cfg: Any, dataset: str, variant: str, stragglers: float, seed: int) -> dict[str, Any]:
    """Every setting that determines a run's numbers, flat, as its record keeps them and MLflow logs them."""
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


def dataset_meta(cfg: Any, dataset: str, data_root: str | Path = DATA_ROOT) -> dict[str, Any]:
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
        raise ConfigError(f"train.clients_per_round: {cfg.train_for(dataset).clients_per_round} exceeds the {clients} "
                          f"clients of {folder}; allowed: 1..{clients}")
    return meta


@functools.cache
def _dataset(folder: str, dataset: str, content_hash: str):
    """The dataset in ``folder`` (of ``content_hash``: a folder made anew is loaded anew), loaded once per process."""
    return load(folder, dataset)


@functools.cache
def _model(name: str, feature_shape: tuple[int, ...], num_classes: int, embedding: str | None, embedding_hash: str):
    """Model ``name`` for inputs of ``feature_shape`` (with the frozen word table in folder ``embedding``, of
    ``embedding_hash``, if any): one object for every run of that model and input, so that runs of several datasets
    of one shape share stacks."""
    from fedbench.models import build_model

    return build_model(name, feature_shape, num_classes, None if embedding is None else word_table(embedding))


def forget() -> None:
    """Drop the datasets and models the runs of a call loaded (their caches), at the end of the call."""
    _dataset.cache_clear()
    _model.cache_clear()


def simulation(cfg: Any, key: Sequence, meta: dict[str, Any], data_root: str | Path = DATA_ROOT) -> Simulation:
    """Run ``key`` (dataset, variant, stragglers, seed) under ``cfg`` (its dataset's ``meta``: :func:`dataset_meta`)
    as a Simulation of the one runner, named by :attr:`RunKey.desc`, its settings (:func:`run_params`) its knobs. An
    algorithm ``cfg`` cannot build is a ConfigError naming its variant."""
    from fedbench.algorithms import build_algorithm
    from fedbench.engine.simulation import SimulationConfig
    from fedbench.study.runner import Simulation

    key = RunKey(*key)
    t, algo = cfg.train_for(key.dataset), cfg.algorithms[key.variant]
    try:
        algorithm = build_algorithm(algo.name, t.lr, **algo.hyper)
    except ValueError as exc:
        raise ConfigError(f"algorithms.{key.variant}: {exc}") from None
    config = SimulationConfig(
        rounds=t.rounds, clients_per_round=t.clients_per_round, local_epochs=t.local_epochs,
        batch_size=t.batch_size, straggler_fraction=key.stragglers, sampling=t.sampling,
        straggler_epochs=t.straggler_epochs, seed=key.seed, device=t.device,
        # params.yaml's train.eval_every: the dissimilarity's cadence, in the runs that compute it
        dissimilarity_every=t.eval_every if t.computes_dissimilarity(key.variant, key.stragglers) else 0,
        dissimilarity_samples=t.dissimilarity_samples or None,  # 0: every sample
        checkpoint_every=t.checkpoint_every, capture=t.capture, precision=t.precision,
    )
    embedding = meta.get("input", {}).get("embedding")
    model = _model(t.model, tuple(meta["feature_shape"]), int(meta["num_classes"]),
                   embedding["folder"] if embedding else None, embedding["content_hash"] if embedding else "")
    data = functools.partial(_dataset, str(dataset_dir(data_root, key.dataset)), key.dataset, meta["content_hash"])
    return Simulation(key.desc, config, data, model, algorithm, run_params(cfg, *key))


def record(sim: Simulation, outcome: Outcome) -> dict[str, Any]:
    """A run's record: its history, final values and the settings that determine it (:func:`run_params`)."""
    from fedbench.study.record import record as record_of

    return record_of(sim.name, sim.knobs, outcome)


def study_runs(cfg: Any, studies: Sequence[str] | None = None) -> dict[RunKey, str]:
    """Every run of the named studies (default: all of params.yaml's), each once, with the first study listing it."""
    out: dict[RunKey, str] = {}
    for name, ds, variant, f in cfg.cells(studies or None):
        for seed in cfg.train.seeds:
            out.setdefault(RunKey(ds, variant, float(f), seed), name)
    return out


def study_cells(cfg: Any) -> list[tuple[str, str, float]]:
    """The main job's (dataset, variant, straggler fraction) cells, each once (Config.cells without the study)."""
    return list(dict.fromkeys(cell[1:] for cell in cfg.cells()))


def store(results_root: str | Path = RESULTS_ROOT) -> reuse.OutcomeStore:
    """The main job study's store (its pipeline budget's ``outcomes/``, shared: StudyDeclaration.keeps_outcomes)."""
    return _Store(study_folder(MAIN_JOB, PIPELINE_BUDGET, results_root) / OUTCOMES, shared=True)


@dataclass
class _Store(reuse.OutcomeStore):
    """The main job's OutcomeStore, noting what computed each run it read back (``loaded``: its ``about``, by name)."""

    loaded: dict[str, dict[str, Any]] = field(default_factory=dict)

    def load(self, sim: Simulation, key: str) -> Outcome | None:
        found = reuse.load(self.folder, key)
        if found is None:
            return None
        self.loaded[sim.name] = found.get("about") or {}
        return reuse.as_outcome(sim.name, found)


def runs_folder(results_root: str | Path = RESULTS_ROOT) -> Path:
    """Where the records of the runs made one experiment at a time go: ``results_root/fedprox_main_job/runs``."""
    return Path(results_root) / MAIN_JOB / RUNS


def train(cfg: Any, dataset: str, variant: str, stragglers: float, data_root: Path = DATA_ROOT,
          results_root: Path = RESULTS_ROOT, each: Callable[[RunKey, dict[str, Any]], None] | None = None,
          progress: bool = True) -> list[dict[str, Any]]:
    """Run every seed of one (dataset, variant, stragglers) experiment (stacked); ``each`` as in :func:`train_runs`."""
    keys = [RunKey(dataset, variant, float(stragglers), s) for s in cfg.train.seeds]
    return train_runs(cfg, keys, data_root, results_root, each, progress)


def train_runs(cfg: Any, keys: Sequence[Sequence], data_root: Path = DATA_ROOT, results_root: Path = RESULTS_ROOT,
               each: Callable[[RunKey, dict[str, Any]], None] | None = None,
               progress: bool = True) -> list[dict[str, Any]]:
    """Run (or read back) ``keys`` as the main job's simulations through the one runner
    (fedbench.study.runner.run_simulations, stacked and spread over ``train.workers`` processes or Ray tasks:
    ``train.executor``) in the main job's store (:func:`store`), each finished run's record appended to
    :func:`runs_folder`'s simulations.jsonl and its one line printed. Returns the :func:`summary` of each key, in
    order. ``each`` (run key, summary) is called here with each run once its stack finishes (the runs read back, at
    once), e.g. `fedbench run` logging it to MLflow."""
    from fedbench.executors import ExecutorSettings
    from fedbench.study.runner import run_simulations

    keys = list(dict.fromkeys(RunKey(*k) for k in keys))
    metas = {ds: dataset_meta(cfg, ds, data_root) for ds in dict.fromkeys(k.dataset for k in keys)}
    named = {k.desc: k for k in keys}
    sims = {k.desc: simulation(cfg, k, metas[k.dataset], data_root) for k in keys}
    adopt(cfg, results_root)  # the earlier layout's runs/, moved into results/ before the store reads it
    kept = store(results_root)
    summaries: dict[str, dict[str, Any]] = {}

    def finished(outcomes: list[Outcome]) -> None:
        records = []
        for o in outcomes:
            sim, key, fingerprint = sims[o.name], named[o.name], kept.fingerprints()[o.name]
            reused = o.name in kept.loaded
            about = kept.loaded[o.name] if reused else kept._about or {}
            s = summary(_fields(o) | {"about": about}, sim.knobs, metas[key.dataset]["content_hash"], fingerprint)
            summaries[o.name] = s | {"reused": reused}
            records.append(record(sim, o) | {"fingerprint": fingerprint})
            if o.diverged and not reused:
                losses = [row.get("train/loss", float("nan")) for row in o.history]
                print(f"fedbench: warning: {o.name} diverged at round {s['diverged_at_round']} (training loss "
                      f"{losses[-1]:.4g}, round 0: {losses[0]:.4g}); recorded as diverged (the rule: "
                      "fedbench.engine.metrics.has_diverged)", file=sys.stderr)
            print(_one_line(summaries[o.name]), file=sys.stderr)
            if each is not None:
                each(key, summaries[o.name])
        _append(runs_folder(results_root), records)

    try:
        run_simulations(list(sims.values()), cfg.train.workers, ExecutorSettings.of(cfg.train), kept, progress,
                        finished)
    finally:
        forget()  # the datasets and models it loaded
    return [summaries[k.desc] for k in keys]


def plan_runs(cfg: Any, keys: Sequence[Sequence], data_root: Path, results_root: Path,
              workers: int) -> tuple[list[list[RunKey]], list[RunKey]]:
    """The runs of ``keys`` still to compute grouped into the stacks that will run them (as the one runner cuts
    them: fedbench.study.runner.plan_pieces), and the runs already finished (same fingerprint), only read back."""
    from fedbench.study.runner import plan_pieces

    keys = [RunKey(*k) for k in keys]
    metas = {ds: dataset_meta(cfg, ds, data_root) for ds in dict.fromkeys(k.dataset for k in keys)}
    sims = [simulation(cfg, k, metas[k.dataset], data_root) for k in keys]
    kept = store(results_root)
    todo = [i for i, sim in enumerate(sims) if not (kept.folder / f"{kept.key(sim)}.json").is_file()]
    try:
        pieces = plan_pieces(sims, todo, workers) if todo else []
    finally:
        forget()
    return [[keys[i] for i in piece] for piece in pieces], [keys[i] for i in range(len(sims)) if i not in todo]


def _fields(outcome: Outcome) -> dict[str, Any]:
    return {f.name: getattr(outcome, f.name) for f in dataclasses.fields(outcome) if f.name != "name"}


def _append(folder: Path, records: list[dict[str, Any]]) -> None:
    """``records`` appended to ``folder``'s simulations.jsonl, one process at a time (a lock beside it); a line a crash
    cut short is ended first, so that the next record is a line of its own (readers skip the fragment)."""
    if not records:
        return
    path = folder / SIMULATIONS
    with file_lock(folder / f".{SIMULATIONS}.lock", what=f"the records in {folder}"), path.open("ab+") as f:
        if f.seek(0, 2):
            f.seek(-1, 2)
            if f.read(1) != b"\n":
                f.write(b"\n")
        f.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode())


# -- reading: a run found by its params in the records ------------------------------------------------------------

def _folders(results_root: str | Path) -> list[tuple[Path, Path]]:
    """(record folder, its outcomes folder) of every record of params.yaml-style runs in ``results_root``, the one
    that wins last: FedProx's real-data studies (fedbench.studies.fedprox_real) at each budget they ran, then
    :data:`RUNS` (the main job's store), then the main job's budgets, its pipeline budget last."""
    from fedbench.study.registry import FEDPROX_REAL

    def budgets(name: str) -> list[Path]:
        root = Path(results_root) / name
        found = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != RUNS) \
            if root.is_dir() else []
        return sorted(found, key=lambda p: p.name == PIPELINE_BUDGET)

    out = [(f, f / OUTCOMES) for name in FEDPROX_REAL for f in budgets(name)]
    out.append((runs_folder(results_root), study_folder(MAIN_JOB, PIPELINE_BUDGET, results_root) / OUTCOMES))
    return out + [(f, f / OUTCOMES) for f in budgets(MAIN_JOB)]


def recorded(results_root: str | Path) -> dict[str, tuple[str, Path]]:
    """Each recorded run's (fingerprint, outcomes folder) by its params (as JSON, keys sorted), the records read in
    :func:`_folders`' order (the last one wins), each file once per state."""
    out: dict[str, tuple[str, Path]] = {}
    for folder, outcomes in _folders(results_root):
        path = folder / SIMULATIONS
        if path.is_file():
            stat = path.stat()
            out |= {params: (fp, outcomes) for params, fp in _recorded(str(folder), stat.st_mtime_ns, stat.st_size)}
    return out


@functools.lru_cache(maxsize=32)
def _recorded(folder: str, mtime_ns: int, size: int) -> tuple[tuple[str, str], ...]:
    out = []
    for line in (Path(folder) / SIMULATIONS).read_text().splitlines():
        try:
            r = json.loads(line)
            out.append((json.dumps(r["params"], sort_keys=True), r["fingerprint"]))
        except (ValueError, KeyError, TypeError):  # a line a crash cut short; a record composed of several runs
            continue
    return tuple(out)


def find_run(cfg: Any, data_root: str | Path, results_root: str | Path, key: Sequence,
             dataset_hash: str | None = None) -> dict[str, Any] | None:
    """The finished run of ``key`` under the parameters of ``cfg`` (its :func:`summary`, with ``history``), or None
    where no record names a run of these settings, its outcome file is gone, or its dataset is not in ``data_root``
    (``dataset_hash``, its content hash, saves reading it)."""
    key = RunKey(*key)
    if dataset_hash is None:
        try:
            dataset_hash = read_meta(dataset_dir(data_root, key.dataset))["content_hash"]
        except FileNotFoundError:
            return None
    params = run_params(cfg, *key)
    found = recorded(results_root).get(json.dumps(params, sort_keys=True))
    if found is None:
        return None
    fingerprint, outcomes = found
    try:
        body = reuse.read(outcomes, fingerprint)
    except FileNotFoundError:  # removed by hand: not computed
        return None
    except ValueError as exc:
        raise DataError(f"{outcomes / fingerprint}.json: unreadable run ({exc}); run it again to compute it anew "
                        "(`fedbench run`: the unreadable file is replaced)") from None
    return summary(body, params, dataset_hash, fingerprint) | {"outcome": str(outcomes / f"{fingerprint}.json")}


def outcome_path(results_root: str | Path, fingerprint: str) -> Path:
    """The outcome file of the finished run ``fingerprint``: in the first store of :func:`_folders` that holds it,
    else where the main job's store would keep it."""
    stores = [outcomes for _, outcomes in reversed(_folders(results_root))]
    return next((s / f"{fingerprint}.json" for s in stores if (s / f"{fingerprint}.json").is_file()),
                stores[0] / f"{fingerprint}.json")


def summary(found: dict[str, Any], params: dict[str, Any], dataset_hash: str, fingerprint: str) -> dict[str, Any]:
    """A run's summary, from its stored outcome ``found`` (fedbench.study.reuse.read's fields): its settings, final
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


def load_runs(cfg: Any, results_root: Path, data_root: Path,
              found: list[dict] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(history, summaries) of every finished run of the configured studies under ``cfg`` (:func:`find_run`: runs of
    other settings are not read); each run's summary with its ``name`` is appended to ``found`` where given."""
    import pandas as pd

    histories, summaries = [], []
    hashes: dict[str, str | None] = {}
    for ds, variant, f in study_cells(cfg):
        if ds not in hashes:
            try:
                hashes[ds] = read_meta(dataset_dir(data_root, ds))["content_hash"]
            except FileNotFoundError:
                hashes[ds] = None
        for seed in cfg.train.seeds if hashes[ds] is not None else ():
            key = RunKey(ds, variant, float(f), seed)
            s = find_run(cfg, data_root, results_root, key, hashes[ds])
            if s is None:
                continue
            if found is not None:
                found.append(s | {"name": key.desc})
            histories.append(pd.DataFrame(s["history"]).assign(dataset=ds, variant=variant, stragglers=f, seed=seed,
                                                               diverged=s["diverged"]))
            summaries.append({"dataset": ds, "variant": variant, "stragglers": f, "seed": seed,
                              "final_loss": s["final"]["train/loss"], "final_accuracy": s["final"]["test/accuracy"],
                              "reporting_round": s["reporting_round"], "reporting_reason": s["reporting_reason"],
                              "reporting_accuracy": s["reporting_test_accuracy"], "best_accuracy": s["best_test_accuracy"],
                              "diverged": s["diverged"], "wall_time_s": s["wall_time_s"], "device": s["device"]})
    hist = pd.concat(histories, ignore_index=True) if histories else pd.DataFrame()
    return hist, pd.DataFrame(summaries)


def _one_line(s: dict[str, Any]) -> str:
    p = s["params"]
    took = "reused" if s["reused"] else f"{s['wall_time_s']:.0f}s"
    head = RunKey(p["dataset"], p["variant"], float(p["straggler_fraction"]), int(p["seed"])).desc
    if s["diverged"]:
        return (f"{head}: DIVERGED at round {s.get('diverged_at_round')}; test accuracy "
                f"{_fmt(s['reporting_test_accuracy'])} at round {s['reporting_round']}, before it ({took})")
    return (f"{head}: final loss {_fmt(s['final']['train/loss'])}, test accuracy "
            f"{_fmt(s['final']['test/accuracy'])} ({took})")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _num(v: Any) -> float | None:
    v = float(v)
    return v if np.isfinite(v) else None
