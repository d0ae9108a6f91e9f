"""Small studies that turn paper statements into claims with verdicts from real runs.

Each module exposes ``run(out_dir, workers=WORKERS) -> list[claim dict]``. A study first declares the list of
simulations it needs (``Simulation``: a name, a SimulationConfig, a dataset builder, a model, an algorithm),
then runs them all through one call of :func:`run_simulations` (fedbench.study.runner: the one runner, the train
stage's too), and only then computes its claims from the outcomes. A study writes its figure(s) as PNG and a record
of every simulation (fedbench.studies.record) into ``out_dir`` and returns one entry per claim with exactly
the keys of fedbench.claims.entry.CLAIM_KEYS. Verdicts come from the rule stated in each entry,
never from the published number. ``run_claim_study`` runs one study (the DVC ``study@NAME`` stage and
``fedbench study run``: fedbench.studies.stage), reusing the simulations it finished before (its
:class:`OutcomeStore`, fedbench.studies.reuse); the ``track`` stage (fedbench.track) logs the results to MLflow.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedbench.claims.entry import plain
from fedbench.data.format import atomic_folder
from fedbench.executors import ExecutorSettings
from fedbench.studies import reuse
from fedbench.studies.record import SIMULATIONS, keep_seconds, keep_simulation_seconds
from fedbench.study.runner import (  # noqa: F401 (the studies' names for the runner's parts)
    EXECUTOR, STORE, WORKERS, Outcome, Simulation, run_simulations, sim_config)

STUDIES_ROOT = Path("reports/studies")


@dataclass
class OutcomeStore:
    """A claim study's finished simulations (the runner's Store: fedbench.study.runner), one outcome file each in
    ``folder`` (fedbench.studies.reuse), and the fingerprints the study has used so far (the others are pruned
    when it finishes). No locks (a study's stage runs once at a time). A computing simulation checkpoints into
    ``folder`` (``.<fingerprint>.checkpoint.pt``, every ``checkpoint_every`` rounds: fedbench.study.runner.sim_config),
    so an interrupted study resumes from the stacks it finished and from its unfinished runs' last checkpoints; a
    traced simulation (``trace``) does not (the models of its earlier rounds are not in a checkpoint)."""

    folder: Path
    used: set[str] = field(default_factory=set)
    reused: int = 0
    computed: int = 0
    _models: dict[int, Any] = field(default_factory=dict, repr=False)
    _data: dict[int, str] = field(default_factory=dict, repr=False)
    _code: str = field(default="", repr=False)

    def key(self, sim: Simulation) -> str:
        data = sim.dataset()
        if id(data) not in self._data:  # a dataset many simulations share is hashed once
            self._data[id(data)] = data.content_hash
        self._code = self._code or reuse.code_hash(reuse.STUDY_RUN_CODE)  # the code: hashed once a study
        key = reuse.fingerprint(sim, self._data[id(data)], self._code, self._models)
        self.used.add(key)
        return key

    def lock(self, sim: Simulation, key: str) -> AbstractContextManager:
        return nullcontext()

    def load(self, sim: Simulation, key: str) -> Outcome | None:
        found = reuse.load(self.folder, key)
        return None if found is None else Outcome(name=sim.name, **found)

    def checkpoint(self, sim: Simulation, key: str) -> Path | None:
        return None if sim.trace else self.folder / f".{key}{reuse.CHECKPOINT}"

    def save(self, sim: Simulation, key: str, outcome: Outcome) -> None:
        reuse.save(self.folder, key, outcome)

    def finished(self, reused: int, total: int) -> None:
        self.reused += reused
        self.computed += total - reused
        print(f"{reused} of {total} simulations reused (fingerprint match in {self.folder})", flush=True)


def command(name: str) -> str:
    """The one command that runs claim study ``name`` at its pipeline budget (fedbench.studies.stage.run_study)."""
    return f"fedbench study run {name}"


def run_claim_study(name: str, root: Path = STUDIES_ROOT, workers: int = WORKERS,
                    budget: str | None = None, executor: ExecutorSettings | None = None,
                    real_root: Path | None = None, seeds: tuple[int, ...] | None = None) -> list[dict[str, Any]]:
    """Run fedbench.studies.<name> into ``root/name`` (atomically: a temporary folder renamed into place), with
    its claims and the seconds it took in ``claims.json`` beside the study's figures and simulation records (a rerun whose
    numbers all match the folder's keeps the folder's seconds: fedbench.studies.record.keep_seconds).
    ``budget`` picks one of the study's declared round budgets (its ``DECLARATION.budgets``), e.g. "paper" for the paper's
    round counts where a study has them. ``executor`` (train.executor: fedbench.executors) is where the study's
    run_simulations calls run their stacks (default: local worker processes). ``real_root`` is where a
    paper-scale study (fedbench.studies.real_data) finds its real variants (default data/real). ``seeds`` replaces
    the study's training seeds (only for a study whose run() takes them)."""
    module = importlib.import_module(f"fedbench.studies.{name}")
    kwargs: dict[str, Any] = {}
    if "workers" in inspect.signature(module.run).parameters:
        kwargs["workers"] = workers
    if budget is not None:
        allowed = list(module.DECLARATION.budgets)
        if budget not in allowed:
            raise ValueError(f"study {name} has no budget {budget!r}; allowed: {', '.join(allowed) or 'none'}")
        kwargs["budget"] = budget
    if seeds is not None:
        if "seeds" not in inspect.signature(module.run).parameters:
            raise ValueError(f"study {name} fixes its seeds (its run() takes no seeds)")
        kwargs["seeds"] = tuple(seeds)
    if real_root is not None:
        if "real_root" not in inspect.signature(module.run).parameters:
            raise ValueError(f"study {name} trains on no real data (its run() takes no real_root)")
        kwargs["real_root"] = Path(real_root)
    store = OutcomeStore(root / name / reuse.OUTCOMES)  # kept where the last run left it (dvc.yaml: persist)
    with atomic_folder(root / name) as tmp:
        t0 = time.perf_counter()
        token, store_token = EXECUTOR.set(executor or ExecutorSettings()), STORE.set(store)
        try:
            claims = module.run(tmp, **kwargs)
        finally:
            EXECUTOR.reset(token)
            STORE.reset(store_token)
        seconds = time.perf_counter() - t0
        reuse.prune(store.folder, store.used)  # the outcomes of runs the study no longer declares
        if store.folder.is_dir():
            os.replace(store.folder, tmp / reuse.OUTCOMES)
        if not (tmp / SIMULATIONS).exists():
            raise RuntimeError(f"study {name} wrote no {SIMULATIONS} (fedbench.studies.record.write_simulations)")
        # seconds that changed while every number stayed the same are not rewritten (record.keep_seconds says why)
        unchanged = keep_simulation_seconds(root / name, tmp)
        body = json.loads(json.dumps(plain({"study": name, "seconds": round(seconds, 1),
                                            "workers": kwargs.get("workers", 1), "budget": budget, "claims": claims}),
                                     allow_nan=False))
        previous = root / name / "claims.json"
        before = json.loads(previous.read_text()) if unchanged and previous.is_file() else None
        body = keep_seconds(before, body)
        (tmp / "claims.json").write_text(json.dumps(body, indent=2, allow_nan=False) + "\n")
    if body == before:
        print(f"{name}: every number as in the previous run, whose recorded seconds are kept ({body['seconds']:g} s; "
              f"this run took {seconds:.1f} s)", flush=True)
    for c in claims:
        print(f"{c['verdict']:>15}  {c['id']}")
    return claims
