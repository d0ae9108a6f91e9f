"""A claim study run into its output folder (issue 30: the framework's choreography around the one driver,
fedbench.study.contract.drive; where that folder is: fedbench.study.layout): its
``claims.json`` with the seconds it took, its figures and simulation records (fedbench.study.record), and its finished
simulations kept for reuse by fingerprint (fedbench.study.reuse.OutcomeStore), written whole or not at all. What the
DVC ``study@NAME`` stage and ``fedbench study run`` do through fedbench.studies.stage.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

from fedbench.claims.entry import plain
from fedbench.executors import ExecutorSettings
from fedbench.study import reuse
from fedbench.study.contract import drive, follows_contract
from fedbench.study.layout import RESULTS_ROOT, study_folder
from fedbench.study.record import SIMULATIONS, add_fingerprints, keep_folder_seconds
from fedbench.study.runner import EXECUTOR, STORE, WORKERS


def command(name: str) -> str:
    """The one command that runs claim study ``name`` at its pipeline budget (fedbench.studies.stage.run_study)."""
    return f"fedbench study run {name}"


def replace_keeping(folder: Path, new: Path, kept: str) -> None:
    """``folder`` replaced by ``new`` (written whole), ``folder/kept`` (the outcome store: every simulation finished
    so far) carried over into it. Each step is a rename, and a stop between them is undone before it goes on, so the
    folder is the old one or the new one and the finished simulations are never lost (a temporary folder holding
    them was removed with it before)."""
    store, old = folder / kept, folder.with_name(f".{folder.name}.old")
    moved = swapped = False
    try:
        if store.is_dir():
            os.replace(store, new / kept)
            moved = True
        if folder.exists():
            shutil.rmtree(old, ignore_errors=True)  # left by a process killed here before
            os.replace(folder, old)
            swapped = True
        os.replace(new, folder)
    except BaseException:
        if swapped and not folder.exists():
            os.replace(old, folder)
        if moved and not store.exists():
            os.replace(new / kept, store)
        raise
    shutil.rmtree(old, ignore_errors=True)


def run_claim_study(name: str, folder: Path | None = None, workers: int = WORKERS,
                    budget: str | None = None, executor: ExecutorSettings | None = None,
                    real_root: Path | None = None, seeds: tuple[int, ...] | None = None,
                    data_seeds: tuple[int, ...] | None = None, config: Any = None) -> list[dict[str, Any]]:
    """Run fedbench.studies.<name> into ``folder`` (default ``results/<name>/<budget>``: fedbench.study.layout;
    atomically: a temporary folder renamed into place, :func:`replace_keeping`), with
    its claims and the seconds it took in ``claims.json`` beside the study's figures and simulation records (a rerun whose
    numbers all match the folder's keeps the folder's seconds: fedbench.study.record.keep_seconds).
    ``budget`` picks one of the study's declared round budgets (its ``DECLARATION.budgets``), e.g. "paper" for the paper's
    round counts where a study has them. ``executor`` (train.executor: fedbench.executors) is where the study's
    run_simulations calls run their stacks (default: local worker processes). ``real_root`` is where a
    paper-scale study (fedbench.studies.real_data) finds its real variants (default data/real). ``seeds`` replaces
    the study's training seeds (a deterministic study takes none), ``data_seeds`` its data seeds, one per training
    seed (a confirmatory block of a study that draws its data: fedbench.study.contract.seeded); ``config``:
    params.yaml's Config, for a study whose grid it sets (the main job: StudyRun.config). The study runs through the one driver
    (fedbench.study.contract.drive: its declaration and three hooks)."""
    from fedbench.study import registry

    module = registry.module(name) if name in registry.FEDPROX_REAL else importlib.import_module(f"fedbench.studies.{name}")
    if not follows_contract(module):
        raise ValueError(f"study {name}: its module states no simulations, measure and figure (fedbench.study.contract)")
    return _run_into(name, folder, budget, executor, workers, lambda out: drive(
        module, out, budget, seeds, workers, Path(real_root) if real_root is not None else None, data_seeds, config),
        keep=module.DECLARATION.keeps_outcomes)


def _run_into(name: str, folder: Path | None, budget: str | None, executor: ExecutorSettings | None, workers: int,
              run: Callable[[Path], list[dict[str, Any]]], keep: bool = False) -> list[dict[str, Any]]:
    """``run(out)`` (a study run into a fresh folder ``out``: its claims) with the study's outcome store and
    executor, then ``folder`` replaced by ``out`` with its claims.json (:func:`run_claim_study`); the outcomes the
    run did not use are pruned unless the study keeps them all in a store it shares (``keep``:
    StudyDeclaration.keeps_outcomes; each simulation then locked while computed: fedbench.study.reuse.OutcomeStore)."""
    folder = study_folder(name, budget, RESULTS_ROOT) if folder is None else Path(folder)
    store = reuse.OutcomeStore(folder / reuse.OUTCOMES, shared=keep)  # kept where the last run left it (persist)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the result is an ordinary folder
        t0 = time.perf_counter()
        token, store_token = EXECUTOR.set(executor or ExecutorSettings()), STORE.set(store)
        try:
            claims = run(tmp)
        finally:
            EXECUTOR.reset(token)
            STORE.reset(store_token)
        seconds = time.perf_counter() - t0
        if not store.shared:
            reuse.prune(store.folder, store.used)  # the outcomes of runs the study no longer declares
        if not (tmp / SIMULATIONS).exists():
            raise RuntimeError(f"study {name} wrote no {SIMULATIONS} (fedbench.study.record.write_simulations)")
        add_fingerprints(tmp, store.fingerprints())  # each record named by its simulation's one fingerprint
        body = json.loads(json.dumps(plain({"study": name, "seconds": round(seconds, 1),
                                            "workers": workers, "budget": budget, "claims": claims}),
                                     allow_nan=False))
        (tmp / "claims.json").write_text(json.dumps(body, indent=2, allow_nan=False) + "\n")
        # seconds that changed while every number stayed the same are not rewritten (record.keep_seconds says why)
        kept = keep_folder_seconds(folder, tmp)
        recorded = json.loads((tmp / "claims.json").read_text())["seconds"]
        replace_keeping(folder, tmp, reuse.OUTCOMES)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # the finished simulations stay in folder's outcomes/
        raise
    if kept:
        print(f"{name}: every number as in the previous run, whose recorded seconds are kept ({recorded:g} s; "
              f"this run took {seconds:.1f} s)", flush=True)
    for c in claims:
        print(f"{c['verdict']:>15}  {c['id']}")
    return claims
