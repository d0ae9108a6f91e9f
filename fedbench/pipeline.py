"""What the DVC generate and train stages do, as library functions (the stage scripts in pipelines/ only parse
arguments). The study stage is fedbench.study.output.run_claim_study, the track stage fedbench.track."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fedbench.config import Config, ConfigError, check_stragglers
from fedbench.data.format import save_dataset
from fedbench.data.registry import dataset_dir
from fedbench.data.synthetic import synthetic
from fedbench.locking import file_lock
from fedbench.executors import ExecutorSettings
from fedbench.runner import DATA_ROOT, INDEX, RunKey, TrainStore, forget, plan, simulation
from fedbench.study.layout import RESULTS_ROOT, adopt, train_folder

__all__ = ["DATA_ROOT", "RESULTS_ROOT", "check_cell", "ensure_dataset", "generate", "study_runs", "train", "train_runs"]


def generate(cfg: Config, name: str, root: Path = DATA_ROOT) -> Path:
    """Generate one synthetic dataset into ``root/name`` (atomically)."""
    ds = synthetic(name, cfg.data.seed, cfg.data.num_devices, cfg.data.train_fraction)
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
          results_root: Path = RESULTS_ROOT, each: Callable[[RunKey, dict[str, Any]], None] | None = None,
          progress: bool = True) -> list[dict[str, Any]]:
    """Run every seed of one (dataset, variant, stragglers) cell (stacked); ``each`` as in :func:`train_runs`."""
    keys = [RunKey(dataset, variant, float(stragglers), s) for s in cfg.train.seeds]
    return train_runs(cfg, keys, data_root, results_root, each, progress)


def study_runs(cfg: Config, studies: Sequence[str] | None = None) -> dict[RunKey, str]:
    """Every run of the named studies (default: all of params.yaml's), each once, with the first study listing it."""
    out: dict[RunKey, str] = {}
    for name, ds, variant, f in cfg.cells(studies or None):
        for seed in cfg.train.seeds:
            out.setdefault(RunKey(ds, variant, f, seed), name)
    return out


def train_runs(cfg: Config, keys: Sequence[RunKey], data_root: Path = DATA_ROOT, results_root: Path = RESULTS_ROOT,
               each: Callable[[RunKey, dict[str, Any]], None] | None = None,
               progress: bool = True) -> list[dict[str, Any]]:
    """Run (or reuse) ``keys`` through the one runner (fedbench.study.runner.run_simulations, as the claim studies'
    runs), each run a Simulation (fedbench.runner.simulation) kept in the train store (fedbench.runner.TrainStore):
    the runs not finished yet are grouped into stacks (runs of one algorithm or one stacking form, FedAvg's with
    FedProx's; one model and the same settings but seed and stragglers; cut to keep ``train.workers`` processes
    equally busy) and the stacks run in parallel processes (or as Ray tasks: ``train.executor``,
    fedbench.executors). Returns the summaries in the order of ``keys``. ``each`` (a sink: run key, summary) is called here with each run once its stack finishes (the runs read
    back, at once), e.g. `fedbench run` logging it to MLflow (fedbench.track.track_cell)."""
    from fedbench.study.runner import run_simulations

    keys = list(dict.fromkeys(keys))
    for k in keys:
        check_cell(cfg, k.variant, k.stragglers)
    planned = plan(cfg, data_root, keys)  # data made with these settings, or one line saying how to remake it
    adopt(cfg, results_root)  # the earlier layout's runs/train/, moved into results/ before the store reads it
    end_cut_line(train_folder(results_root) / INDEX)
    store = TrainStore(planned, results_root)

    def finished(outcomes) -> None:
        for o in outcomes:
            summary = store.summaries[o.name]
            print(_one_line(summary), file=sys.stderr)
            if each is not None:
                each(store.planned[o.name].key, summary)

    try:
        run_simulations([simulation(cfg, p) for p in planned], cfg.train.workers, ExecutorSettings.of(cfg.train), store,
                        progress, finished)
    finally:
        forget()  # the datasets and models it loaded
    return [store.summaries[k.desc] for k in keys]


def end_cut_line(index: Path) -> None:
    """The train store's index ended with a newline where a crash cut its last line short, so that the next line
    appended is a line of its own (glued to the fragment, no reader could parse it and its run was not found until
    it was indexed again). The fragment stays, skipped by every reader as before."""
    if not index.is_file() or index.stat().st_size == 0:
        return
    with file_lock(index.parent / f".{INDEX}.lock", what="the train store's index"), index.open("rb+") as f:
        f.seek(-1, 2)
        if f.read(1) != b"\n":
            f.write(b"\n")


def plan_runs(cfg: Config, keys: Sequence[RunKey], data_root: Path, results_root: Path,
              workers: int) -> tuple[list[list[RunKey]], list[RunKey]]:
    """The runs of ``keys`` still to compute grouped into the stacks that will run them (as the one runner cuts
    them: fedbench.study.runner.plan_pieces), and the runs already finished (same fingerprint), which are only read back."""
    from fedbench.study.runner import plan_pieces

    planned = plan(cfg, data_root, keys)
    store = TrainStore(planned, results_root)
    sims = [simulation(cfg, p) for p in planned]
    todo = [i for i, sim in enumerate(sims) if store.load(sim, store.key(sim)) is None]
    try:
        pieces = plan_pieces(sims, todo, workers) if todo else []
    finally:
        forget()
    return [[planned[i].key for i in piece] for piece in pieces], [planned[i].key for i in range(len(sims))
                                                                    if i not in todo]


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


