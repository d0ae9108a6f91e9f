"""What the DVC generate stage does, as library functions (pipelines/generate.py only parses arguments), and the
checks ``fedbench run`` makes before it generates data. The runs are the main job's simulations
(fedbench.study.experiments), the study stage fedbench.study.output.run_claim_study, the track stage fedbench.track."""

from __future__ import annotations

from pathlib import Path

from fedbench.config import Config, ConfigError, check_stragglers
from fedbench.data.format import save_dataset
from fedbench.data.registry import dataset_dir
from fedbench.data.synthetic import synthetic
from fedbench.locking import file_lock
from fedbench.study.experiments import DATA_ROOT

__all__ = ["DATA_ROOT", "check_cell", "ensure_dataset", "generate"]


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
