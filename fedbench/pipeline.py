"""What the DVC generate and train stages do, as library functions (the stage scripts in pipelines/ only parse
arguments). The study stage is fedbench.studies.run_claim_study, the track stage fedbench.track."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fedbench.config import Config, ConfigError, check_stragglers
from fedbench.data.format import save_dataset
from fedbench.data.registry import dataset_dir
from fedbench.errors import DataError
from fedbench.data.synthetic import SYNTHETIC_DATASETS, generate_synthetic
from fedbench.locking import file_lock
from fedbench.executors import ExecutorSettings, open_executor
from fedbench.runner import DATA_ROOT, RUNS_ROOT, RunKey, dataset_meta, run_stack

__all__ = ["DATA_ROOT", "RUNS_ROOT", "check_cell", "ensure_dataset", "generate", "study_runs", "train", "train_runs"]


def generate(cfg: Config, name: str, root: Path = DATA_ROOT) -> Path:
    """Generate one synthetic dataset into ``root/name`` (atomically)."""
    alpha, beta, iid = SYNTHETIC_DATASETS[name]
    ds = generate_synthetic(alpha, beta, iid, num_devices=cfg.data.num_devices, seed=cfg.data.seed,
                            train_fraction=cfg.data.train_fraction)
    folder = save_dataset(ds, root / name)
    print(f"{name}: {ds.num_clients} devices, {int(ds.train.sizes.sum())} train / {int(ds.test.sizes.sum())} "
          f"test samples, hash {ds.content_hash[:12]} -> {folder}")
    return folder


def ensure_dataset(cfg: Config, name: str, root: Path = DATA_ROOT) -> Path:
    """``root/name``, generated first if it is not there; processes that ask at once generate it once. A real
    variant (data/real/<name>) is built by `fedbench data prepare`, not here."""
    from fedbench.data.registry import VARIANTS

    if name in VARIANTS:
        folder = dataset_dir(root, name)
        if not (folder / "meta.json").exists():
            raise ConfigError(f"--dataset {name!r} is not built yet; run `fedbench data prepare {name}` (or `dvc repro`)")
        return folder
    folder = Path(root) / name
    with file_lock(Path(root) / f".{name}.lock", what=f"dataset {name}"):
        if not (folder / "meta.json").exists():
            generate(cfg, name, root)
    return folder


def check_cell(cfg: Config, variant: str, stragglers: float, where: str = "--stragglers") -> None:
    """Everything about one (variant, stragglers) cell that can fail before any work: the straggler fraction
    against train, and the algorithm's own checks (those that involve two hyperparameters). Imports torch."""
    from fedbench.algorithms import build_algorithm

    check_stragglers(cfg.train, stragglers, where)
    algo = cfg.algorithms[variant]
    try:
        build_algorithm(algo.name, cfg.train.lr, **algo.hyper)
    except ValueError as exc:
        raise ConfigError(f"algorithms.{variant}: {exc}") from None


def train(cfg: Config, dataset: str, variant: str, stragglers: float, data_root: Path = DATA_ROOT,
          runs_root: Path = RUNS_ROOT, each: Callable[[RunKey, dict[str, Any]], None] | None = None,
          progress: bool = True) -> list[dict[str, Any]]:
    """Run every seed of one (dataset, variant, stragglers) cell (stacked); ``each`` as in :func:`train_runs`."""
    keys = [RunKey(dataset, variant, float(stragglers), s) for s in cfg.train.seeds]
    return train_runs(cfg, keys, data_root, runs_root, each, progress)


def study_runs(cfg: Config, studies: Sequence[str] | None = None) -> dict[RunKey, str]:
    """Every run of the named studies (default: all of params.yaml's), each once, with the first study listing it."""
    out: dict[RunKey, str] = {}
    for name in studies or list(cfg.studies):
        if name not in cfg.studies:
            raise ConfigError(f"study {name!r} is not in studies; allowed: {', '.join(cfg.studies)}")
        s = cfg.studies[name]
        for ds in s.datasets:
            for variant in s.algorithms:
                for f in s.stragglers:
                    for seed in cfg.train.seeds:
                        out.setdefault(RunKey(ds, variant, float(f), seed), name)
    return out


def train_runs(cfg: Config, keys: Sequence[RunKey], data_root: Path = DATA_ROOT, runs_root: Path = RUNS_ROOT,
               each: Callable[[RunKey, dict[str, Any]], None] | None = None,
               progress: bool = True) -> list[dict[str, Any]]:
    """Run (or reuse) ``keys``: the runs not finished yet are grouped into stacks (fedbench.engine.stacking: runs
    of one algorithm class, one model and the same settings but seed and stragglers, cut to keep
    ``train.workers`` processes equally busy) and the stacks run in parallel processes (or as Ray tasks:
    ``train.executor``, fedbench.executors). Returns the summaries in the order of ``keys``. ``each`` (a sink:
    run key, summary) is called here with each run once its stack finishes, e.g. `fedbench run` logging it to MLflow
    (fedbench.track.track_cell)."""
    keys = list(dict.fromkeys(keys))
    for k in keys:
        check_cell(cfg, k.variant, k.stragglers)
    for ds in dict.fromkeys(k.dataset for k in keys):
        dataset_meta(cfg, ds, data_root)  # data made with these settings, or one line saying how to remake it
    with open_executor(ExecutorSettings.of(cfg.train), cfg.train.workers) as executor:
        return _train_on(executor, cfg, keys, data_root, runs_root, each, progress)


def _train_on(executor, cfg: Config, keys: list[RunKey], data_root: Path, runs_root: Path,
              each: Callable[[RunKey, dict[str, Any]], None] | None, progress: bool) -> list[dict[str, Any]]:
    """train_runs on ``executor`` (fedbench.executors), open for this stage."""
    workers = executor.slots(cfg.train.device)  # local: train.workers, 1 on a GPU (in turn); ray: the cluster's
    pieces, reused = plan_runs(cfg, keys, data_root, runs_root, workers)
    done: dict[RunKey, dict[str, Any]] = {}

    def finished(summaries: list[dict[str, Any]]) -> None:
        for s in summaries:
            key = _key(s)
            done[key] = s
            print(_one_line(s), file=sys.stderr)
            if each is not None:
                each(key, s)

    if reused:  # read back here (under their locks): nothing to compute, no worker or cluster needed
        finished(run_stack(cfg, data_root, runs_root, reused, progress=False))
    jobs = [(cfg, data_root, runs_root, piece, worker_bars(progress, executor), i % max(1, workers))
            for i, piece in enumerate(pieces)]
    if jobs:
        executor.map(_stack_star, jobs, cfg.train.device, each=finished, progress=progress,
                     names=[", ".join(k.desc for k in piece) for piece in pieces])
    return [done[k] for k in keys]


def worker_bars(progress: bool, executor) -> bool:
    """Whether the workers draw their progress bars: bars at one position per worker move the cursor with escape
    codes, which a log that is not a terminal (DVC's, a file) keeps as raw ``[A``; there, only each run's closing
    line is written."""
    return progress and executor.worker_progress and sys.stderr.isatty()


def plan_runs(cfg: Config, keys: Sequence[RunKey], data_root: Path, runs_root: Path,
              workers: int) -> tuple[list[list[RunKey]], list[RunKey]]:
    """The runs of ``keys`` still to compute grouped into the stacks that will run them, costliest first, and
    the runs already finished (same fingerprint), which are only read back."""
    from fedbench.algorithms import build_algorithm
    from fedbench.engine.simulation import RunSpec, SimulationConfig, stack_key
    from fedbench.engine.stacking import plan_stacks
    from fedbench.runner import _load_dataset, _plan, load_run

    todo, reused = [], []
    for k in keys:
        p = _plan(cfg, data_root, runs_root, k)
        try:
            finished = load_run(p.folder, p.fingerprint) is not None
        except DataError:
            finished = False
        (reused if finished else todo).append(k)
    if not todo:
        return [], reused
    datasets = {ds: _load_dataset(dataset_dir(data_root, ds), ds) for ds in dict.fromkeys(k.dataset for k in todo)}
    specs = [RunSpec(SimulationConfig(rounds=t.rounds, clients_per_round=t.clients_per_round, local_epochs=t.local_epochs,
                                      batch_size=t.batch_size, straggler_fraction=k.stragglers, sampling=t.sampling,
                                      straggler_epochs=t.straggler_epochs, seed=k.seed, device=t.device),
                     datasets[k.dataset], build_algorithm(cfg.algorithms[k.variant].name, t.lr,
                                                          **cfg.algorithms[k.variant].hyper))
             for k in todo for t in [cfg.train_for(k.dataset)]]  # each dataset's study settings
    model_of = {id(s): cfg.train_for(k.dataset).model for s, k in zip(specs, todo)}
    pieces = plan_stacks(specs, workers, key=lambda s: (model_of[id(s)], stack_key(s)))
    return [[todo[i] for i in piece] for piece in pieces], reused


def _key(summary: dict[str, Any]) -> RunKey:
    p = summary["params"]
    return RunKey(p["dataset"], p["variant"], float(p["straggler_fraction"]), int(p["seed"]))


def _stack_star(a: tuple) -> list[dict[str, Any]]:
    return run_stack(*a[:4], progress=a[4], position=a[5])


def _one_line(s: dict[str, Any]) -> str:
    p = s["params"]
    took = "reused" if s["reused"] else f"{s['wall_time_s']:.0f}s"
    head = f"{p['dataset']} {p['variant']} stragglers={p['straggler_fraction']:g} seed={p['seed']}"
    if s["diverged"]:
        return (f"{head}: DIVERGED at round {s.get('diverged_at_round')}; test accuracy "
                f"{_fmt(s['reporting_test_accuracy'])} at round {s['reporting_round']}, before it ({took})")
    return (f"{head}: final loss {_fmt(s['final']['train/loss'])}, test accuracy "
            f"{_fmt(s['final']['test/accuracy'])} ({took})")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


