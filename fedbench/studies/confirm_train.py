"""Confirmatory runs of the claims judged from the train stage's runs (issue 32, item 1), for ``fedbench claims
confirm`` (fedbench.studies.confirm): the main job's FedProx claims (params.yaml ``studies`` stragglers and
heterogeneity, fedbench.studies.fedprox_main_job) and the offline MNIST-5k claims of "real data" (params.yaml
``fedprox_mnist5k``, fedbench.studies.fedprox_real_data).

A group's confirmatory run is its study's own (the main job's, or the MNIST-5k study's) with one change:
``train.seeds`` replaced by the frozen block. Its runs (the one driver, the same record and fingerprints) go into
``ROOT/<folder>/<study>/pipeline/``, a root of their own, so they never mix with the exploratory runs (each run is an
outcome file named by its fingerprint, which covers every setting and the seed, so an interrupted confirmation resumes
there and a finished one is only read back). The
data stays where the train stage made it (data/). The entries are judged by the very functions that judge the
exploratory runs for the report (:data:`JUDGES`: fedbench.studies.fedprox_main_job_claims and
fedbench.studies.real_claims), read from the confirmation's own runs root.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedbench.config import Config
from fedbench.studies.fedprox_main_job import DECLARATION as MAIN_JOB, MAIN_STUDIES
from fedbench.studies.fedprox_real_data import MNIST5K, MNIST5K_STUDY, declaration
from fedbench.study import registry as studies

# the report's judging of a group's runs: (config, runs root, data root) -> its claim entries
Judge = Callable[[Config, Path, Path], list[dict[str, Any]]]


@dataclasses.dataclass(frozen=True)
class TrainGroup:
    name: str  # the study claims.json gives its entries (fedbench.report.build: "main job", "real data")
    folder: str  # its confirmatory runs: ROOT/<folder>/
    studies: tuple[str, ...]  # the params.yaml studies whose runs its claims read
    ids: tuple[str, ...]  # the claims it judges (the rest of a study "real data" is judged elsewhere)


GROUPS_MAIN = "main job"  # the group whose confirmatory run is the main job study's (fedbench.studies.fedprox_main_job)
GROUPS = {g.name: g for g in (
    TrainGroup("main job", "main-job", MAIN_STUDIES, tuple(c.id for c in MAIN_JOB.claims)),
    TrainGroup("real data", "real-data", (MNIST5K,), tuple(c.id for c in declaration(MNIST5K_STUDY).claims)),
)}


def group_of(entry: dict[str, Any]) -> str:
    """The confirmation group of a claim entry: its study; for a claim of a train group's study that the group does not
    judge (a paper-scale study's "real data" entry), the claim study that ran it where the study registry has it (its
    confirmatory run is that study's, fedbench.studies.stage.run_study: e.g. mime_fashion), else "<study>: <the study
    named>", which has no runner here."""
    study = entry.get("study") or ""
    group = GROUPS.get(study)
    if group is None or entry["id"] in group.ids:
        return study
    ran = (entry.get("scale") or {}).get("study") or "other"
    return ran if ran in studies.names() else f"{study}: {ran}"


def confirm_config(cfg: Config, seeds: list[int], workers: int) -> Config:
    """``cfg`` with the frozen ``seeds`` as train.seeds and ``workers`` worker processes (no number changes with it)."""
    return dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, seeds=tuple(seeds), workers=workers))


def runs_of(cfg: Config, group: TrainGroup) -> list:
    """Every run of the group's studies on ``cfg``'s train.seeds (fedbench.pipeline.study_runs)."""
    from fedbench.pipeline import study_runs

    return list(study_runs(cfg, group.studies))


def run_group(cfg: Config, group: TrainGroup, where: Path, data_root: Path, judge: Judge) -> list[dict[str, Any]]:
    """Train the group's runs on ``cfg`` (its seeds the frozen block: :func:`confirm_config`) into the runs root
    ``where`` (ROOT/<folder>/), the synthetic data generated into ``data_root`` where it is missing (a real variant
    must be built: one line saying how), and return the entries ``judge`` reads from them. Each group runs its study
    by the one driver into ``where/<study>/pipeline/``, whose record the judge reads (fedbench.runner.find_run): the
    main job's (fedbench.studies.fedprox_main_job on its params.yaml studies only), the real-data group's the MNIST-5k
    study (fedbench.studies.fedprox_real)."""
    from fedbench.executors import ExecutorSettings
    from fedbench.pipeline import ensure_dataset
    from fedbench.study.layout import MAIN_JOB, study_folder
    from fedbench.study.output import run_claim_study

    keys = runs_of(cfg, group)
    for ds in dict.fromkeys(k.dataset for k in keys):
        ensure_dataset(cfg, ds, data_root)
    # each group's study, run by the one driver on the block (issue 50): the main job's on its params.yaml studies
    # only, the real-data group's the MNIST-5k study (fedbench.studies.fedprox_real)
    name = MAIN_JOB if group.name == GROUPS_MAIN else MNIST5K
    only = dataclasses.replace(cfg, studies={s: cfg.studies[s] for s in group.studies})
    run_claim_study(name, study_folder(name, None, where), workers=cfg.train.workers,
                    executor=ExecutorSettings.of(cfg.train), real_root=Path(data_root), config=only)
    return judge(cfg, Path(where), Path(data_root))


def measured_seconds(cfg: Config, group: TrainGroup, runs_csv: Path) -> tuple[float, int] | None:
    """The summed wall time (s) and the number of the group's exploratory runs in ``runs_csv`` (reports/runs.csv:
    the train stage's runs, each stacked run with its share of its stack's time); None where the file or the runs
    are not there."""
    cells = {(k.dataset, k.variant, float(k.stragglers), k.seed) for k in runs_of(cfg, group)}
    try:
        with open(runs_csv, newline="") as f:
            rows = [r for r in csv.DictReader(f)
                    if (r["dataset"], r["variant"], float(r["stragglers"]), int(r["seed"])) in cells]
    except (OSError, KeyError, ValueError):
        return None
    return (sum(float(r["wall_time_s"]) for r in rows), len(rows)) if rows else None


def judge_main_job(cfg: Config, results_root: Path, data_root: Path) -> list[dict[str, Any]]:
    """The main job's claims (fedbench.studies.fedprox_main_job_claims) from the runs under ``results_root`` of ``cfg``'s
    train.seeds."""
    from fedbench.studies.fedprox_main_job import evaluate_claims
    from fedbench.studies.train_runs import load_runs

    hist, summ = load_runs(cfg, results_root, data_root)
    return evaluate_claims(cfg, hist, summ)


def judge_real_data(cfg: Config, results_root: Path, data_root: Path) -> list[dict[str, Any]]:
    """The real-data entries (fedbench.studies.real_claims) from the runs under ``results_root``: the MNIST-5k ones are
    judged where its runs are there; the others read runs a confirmation does not make and stay not-run."""
    from fedbench.studies.real_claims import evaluate

    return evaluate(cfg, results_root, data_root)


# each group's judging, keyed by the study claims.json gives its entries (fedprox_curves.STUDY,
# real_claims.STUDY)
JUDGES: dict[str, Judge] = {"main job": judge_main_job, "real data": judge_real_data}
