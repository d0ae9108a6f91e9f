"""Where every run goes (issue 30, item 4): one root, ``results/``, and in it

    results/<study>/<budget>/     a claim study run at a budget: claims.json, simulations.jsonl, the study's figures,
                                  outcomes/<fingerprint>.json
    results/train/                the former train store (until issue 50), outcomes/<fingerprint>.json and index.jsonl:
                                  read once, its runs moved into the studies' stores
                                  (fedbench.studies.fedprox_main_job.adopt_train_store); nothing writes it now
    results/fedprox_main_job/<budget>/   the main job, a claim study like the others (fedbench.studies.fedprox_main_job)
    results/fedprox_main_job/runs/       the records of the runs `fedbench run` made one experiment at a time (their
                                  outcomes in the pipeline budget's store: fedbench.study.experiments)
    results/fedprox_<dataset>/<budget>/  FedProx's real-data studies (fedbench.studies.fedprox_real: `fedbench paper
                                  run`; MNIST-5k's at pipeline, run by the main_job stage on the main job's runs)
    results/confirm/...           confirmatory runs (fedbench.studies.confirm), in this same layout under a root of
                                  their own, so that they never write over the exploratory ones

A claim study has the same folder whether it is small (generated data, a DVC ``study@NAME`` stage) or paper-scale (real
data, ``fedbench paper run``), and whichever budget it ran at. ``results/`` is not committed: a fresh clone computes
every run. What is committed is the report's copy of each small study's home folder, ``reports/studies/<study>/`` (its
outcomes left out: :func:`publish`).

:func:`adopt_legacy` moves what the earlier layouts left (``reports/studies[-B]/<study>/``, ``runs/studies[-B]/
<study>/``, ``runs/train/``, ``runs/confirm/``) into this one, once, so that a checkout made before it keeps its
finished runs (hours, for a paper-scale study) instead of computing them again. Torch-free: the report and the track
stage import it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from fedbench.study import registry

RESULTS_ROOT = Path("results")
PIPELINE_BUDGET = "pipeline"  # a study's budget where none is named (params.yaml's claim_studies, the driver)
PAPER_BUDGET = "paper"  # a paper-scale study's home budget
OUTCOMES = "outcomes"  # the finished simulations in a study's folder (fedbench.study.reuse)
TRAIN = "train"  # the former train store's folder in a root (read by its one-time move only)
CONFIRM = "confirm"  # the confirmatory runs' root in the results root
MAIN_JOB = "fedprox_main_job"  # the main job, a claim study like the others (fedbench.studies.fedprox_main_job)
RESERVED = (TRAIN, CONFIRM)  # no claim study has these names (tests/study/test_layout.py)

# the earlier layouts (until 2026-11-29): a small study at its home budget in reports/studies/, at budget B in
# reports/studies-B/; a paper-scale one at "paper" in runs/studies/, at B in runs/studies-B/; the train store in
# runs/train/ and confirmatory runs in runs/confirm/
LEGACY_RUNS = Path("runs")
LEGACY_SMALL, LEGACY_PAPER = Path("reports/studies"), LEGACY_RUNS / "studies"


def study_folder(name: str, budget: str | None, root: str | Path = RESULTS_ROOT) -> Path:
    """Claim study ``name`` run at ``budget`` (None: the pipeline budget): ``root/name/budget``."""
    return Path(root) / name / (budget or PIPELINE_BUDGET)


def train_folder(root: str | Path = RESULTS_ROOT) -> Path:
    """The former train store in ``root``: ``root/train`` (its ``outcomes/`` and ``index.jsonl``), removed by issue 50;
    read only by its one-time move into the main job's store (fedbench.studies.fedprox_main_job.adopt_train_store)."""
    return Path(root) / TRAIN


def confirm_root(root: str | Path = RESULTS_ROOT) -> Path:
    """The confirmatory runs' root in ``root``: ``root/confirm`` (fedbench.studies.confirm)."""
    return Path(root) / CONFIRM


def home_budget(cfg: Any, name: str) -> str:
    """The *home* budget of claim study ``name``, whose folder the report reads first: "paper" for a paper-scale
    study (fedbench.study.registry.is_paper_scale), the one params.yaml's claim_studies gives a small study (``cfg``:
    a fedbench.config.Config), "pipeline" for one not listed there."""
    if registry.is_paper_scale(name):
        return PAPER_BUDGET
    listed = cfg.claim_studies.get(name) if cfg is not None else None
    return listed.budget if listed else PIPELINE_BUDGET


def reported_folder(name: str, root: str | Path = RESULTS_ROOT, cfg: Any = None) -> Path:
    """The folder the report reads claim study ``name`` from: its home budget's (:func:`home_budget`); for a
    paper-scale study, where that holds no finished run, the first other budget's folder that does, in the order the
    study declares its budgets, so that a study run only at its fixture budget is reported (each entry's cost names
    the budget it ran at; the fixture budget's entries say stand-in). The home folder where none has run."""
    home = home_budget(cfg, name)
    others = [b for b in registry.budgets(name) if b != home] if registry.is_paper_scale(name) else []
    folders = [study_folder(name, b, root) for b in [home, *others]]
    return next((f for f in folders if (f / "claims.json").exists()), folders[0])


def homes(cfg: Any) -> dict[str, str]:
    """Every claim study's home budget (:func:`home_budget`)."""
    return {name: home_budget(cfg, name) for name in registry.names()}


def publish(cfg: Any, root: str | Path = RESULTS_ROOT, out: str | Path = "reports/studies") -> list[Path]:
    """The report's copy of each of ``cfg``'s claim studies (params.yaml claim_studies) that has run at its budget:
    ``out/<study>/`` gets the files of ``root/<study>/<budget>/`` (its claims.json, simulations.jsonl and figures;
    not its outcomes), replacing the folder whole. A record or claims.json whose numbers equal the copy's already
    there keeps that copy's seconds (fedbench.study.record.keep_seconds), so that a rerun or a fresh clone's
    ``make repro`` leaves the committed files byte-identical and ``git diff reports/`` shows only numbers that
    changed. The folders written."""
    from fedbench.data.format import atomic_folder
    from fedbench.study.record import drop_fingerprints, keep_folder_seconds

    written = []
    for name, declared in cfg.claim_studies.items():
        source, target = study_folder(name, declared.budget, root), Path(out) / name
        if not (source / "claims.json").is_file():
            continue
        with atomic_folder(target) as tmp:
            for f in sorted(p for p in source.iterdir() if p.is_file()):
                shutil.copy2(f, tmp / f.name)
            drop_fingerprints(tmp)  # they name the code too: a committed record changes only with its numbers
            keep_folder_seconds(target, tmp)
        written.append(target)
    return written


def _move(source: Path, target: Path, legacy: Path, what: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    print(f"{legacy}/: {what} moved to {target}/ (the results layout, fedbench.study.layout)", flush=True)


def adopt(cfg: Any, root: str | Path = RESULTS_ROOT) -> list[Path]:
    """:func:`adopt_legacy` into ``root`` where it is the working tree's ``results/`` (a test's or a confirmatory
    root is its own), with ``cfg``'s home budgets: done before anything trains (fedbench.study.experiments.train_runs,
    a study's run, a confirmation) and before the track stage and ``fedbench compare`` read ``results/`` (the report,
    which runs after the main_job and track stages in ``dvc repro``, only reads)."""
    return adopt_legacy(homes(cfg), RESULTS_ROOT) if Path(root) == RESULTS_ROOT else []


def adopt_legacy(homes: dict[str, str], root: str | Path = RESULTS_ROOT, base: str | Path = ".") -> list[Path]:
    """Move the folders of the earlier layout under ``base`` into ``root`` where ``root`` lacks them: each study's
    folder at a budget B (``reports/studies-B/<study>``, ``runs/studies-B/<study>``) whole; a paper-scale study's
    home folder (``runs/studies/<study>``, budget "paper") whole; a small study's home folder
    (``reports/studies/<study>``, budget ``homes[study]``, else pipeline) by copying its files and moving its
    ``outcomes/``, since its files are also the committed report. A folder is adopted where it holds a finished
    run (claims.json) or finished simulations (outcomes/: a run cut short); ``reports/studies/<study>`` only where it
    holds outcomes (on a fresh clone it holds the committed files alone: nothing ran there). Anything the new layout
    already has is left alone. Then ``runs/train`` and ``runs/confirm`` whole, to ``root/train`` and
    ``root/confirm``, where ``root`` lacks them (a folder of fingerprint-named runs: where both exist, the earlier
    one is left, and its runs are computed again when asked for). The folders created, each printed as one line."""
    base, root = Path(base), Path(root)
    adopted = []
    for legacy, home in ((base / LEGACY_SMALL, None), (base / LEGACY_PAPER, PAPER_BUDGET)):
        for parent in sorted(legacy.parent.glob(legacy.name + "*")):
            budget = parent.name[len(legacy.name) + 1:] if parent.name != legacy.name else home
            if not parent.is_dir() or (parent.name != legacy.name and not parent.name.startswith(legacy.name + "-")):
                continue
            for folder in sorted(p for p in parent.iterdir() if p.is_dir()):
                target = study_folder(folder.name, budget or homes.get(folder.name), root)
                # what is kept: a finished run (claims.json), or finished simulations (a run cut short); in
                # reports/studies/<study>, the committed files alone are the report's copy, no run to adopt
                finished = (folder / "claims.json").is_file() and budget is not None
                if target.exists() or not (finished or (folder / OUTCOMES).is_dir()):
                    continue
                if budget is not None:
                    _move(folder, target, folder, "the study's run")
                else:  # reports/studies/<study>: the committed copy stays where it is
                    tmp = target.with_name(f".{target.name}.adopting")
                    shutil.rmtree(tmp, ignore_errors=True)
                    tmp.mkdir(parents=True)
                    for f in folder.iterdir():
                        if f.is_file():
                            shutil.copy2(f, tmp / f.name)
                    os.replace(folder / OUTCOMES, tmp / OUTCOMES)
                    _move(tmp, target, folder, "its finished simulations (and a copy of its records)")
                adopted.append(target)
    for source, target, what in ((train_folder(base / LEGACY_RUNS), train_folder(root), "the train store"),
                                 (confirm_root(base / LEGACY_RUNS), confirm_root(root), "the confirmatory runs")):
        if source.is_dir() and not target.exists():
            _move(source, target, source, what)
            adopted.append(target)
    try:
        (base / LEGACY_RUNS).rmdir()  # the earlier root, where nothing else is left in it
    except OSError:
        pass
    return adopted
