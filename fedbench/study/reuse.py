"""Fingerprint reuse, for every simulation (the claim studies' and the train stage's): a simulation whose numbers are
already computed is read back, not rerun.

A simulation's fingerprint (the one fingerprint: ``fedbench run``'s runs have it too, fedbench.study.experiments) hashes
what determines its numbers: its SimulationConfig (how often it checkpoints left out), its algorithm (class and
fields, nested ones included), its model (name, builder arguments, loss, dtypes, init and frozen tensors), whether
the global model is traced, the content of its dataset
(FederatedDataset.content_hash) and the code that runs it (``provenance.STUDY_RUN_CODE``: the engine, algorithms and
models, the data loader and the one runner). An algorithm or model class defined in a study module (fedprox_synthetic's partial
work) adds that module's source, so an edit there recomputes the runs that use it, and only those. The simulation's
name and the study's knobs are labels: not in the fingerprint.

A finished simulation is kept as ``<study folder>/outcomes/<fingerprint>.json``: the full Outcome (every history row,
the final scalars, the traced models and the per-device accuracies and training losses at full float64 precision: JSON writes a float's
shortest exact repr, so a reused run's numbers are bit-identical to a computed one's). Each file is written to a
temporary name and renamed into place when complete, so an interrupted study leaves only whole outcomes (which its
next run reuses) and nothing half-written that looks finished. The folder is not committed (.gitignore): a fresh clone
computes every run.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedbench.provenance import RUN_CODE, STUDY_RUN_CODE, code_hash, file_hash, git_commit
from fedbench.study.layout import OUTCOMES  # the folder of finished simulations inside a study's output folder
from fedbench.study.runner import Outcome, Simulation

FORMAT = 1  # the outcome file's layout: a change here makes every stored outcome stale
ARRAYS = ("models", "device_accuracy", "device_train_loss")  # the Outcome's arrays, stored at float64


def _study_sources(*objects: Any) -> list[str]:
    """The code (fedbench.provenance.file_hash: no comments or docstrings) of each study module
    (fedbench.studies.<name>) that defines the class of one of ``objects`` or of a dataclass field of theirs (a
    wrapped algorithm)."""
    modules = set()
    todo = list(objects)
    while todo:
        obj = todo.pop()
        module = type(obj).__module__
        init = getattr(obj, "init_fn", None)  # a model's init: a function or a functools.partial of one
        while isinstance(init, functools.partial):
            init = init.func
        if init is not None and getattr(init, "__module__", "").startswith("fedbench.studies."):
            modules.add(init.__module__)
        if module.startswith("fedbench.studies."):
            modules.add(module)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            todo += [getattr(obj, f.name) for f in dataclasses.fields(obj) if dataclasses.is_dataclass(getattr(obj, f.name))]
    return [file_hash(sys.modules[m].__file__) for m in sorted(modules)]


def _callable_identity(fn: Any) -> Any:
    """A function by its module and name; a functools.partial by its function and arguments."""
    if isinstance(fn, functools.partial):
        return {"func": _callable_identity(fn.func), "args": repr(fn.args), "keywords": repr(sorted(fn.keywords.items()))}
    return f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}"


def _model_identity(model: Any) -> dict[str, Any]:
    frozen = {}
    for key, tensor in sorted(getattr(model, "frozen", {}).items()):
        array = tensor.detach().cpu().contiguous().numpy()
        frozen[key] = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode() + array.tobytes()).hexdigest()[:16]
    init = getattr(model, "init_fn", None)
    return {"name": getattr(model, "name", type(model).__name__), "config": repr(getattr(model, "config", model)),
            "loss": getattr(model, "loss", None), "input_dtype": str(getattr(model, "input_dtype", None)),
            "eval_dtype": str(getattr(model, "eval_dtype", None)),
            "init": None if init is None else _callable_identity(init), "frozen": frozen}


def fingerprint(sim: Any, data_hash: str, code: str | None = None, models: dict[int, Any] | None = None) -> str:
    """Identity of the numbers of ``sim`` (a Simulation): its
    settings, its data (``data_hash``) and the code that computes them (``code``, default STUDY_RUN_CODE's hash).
    ``models`` memoizes the models' identities by object (a model's frozen tensors are hashed once per call)."""
    models = {} if models is None else models
    if id(sim.model) not in models:
        models[id(sim.model)] = _model_identity(sim.model)
    config = dataclasses.replace(sim.config, checkpoint_every=0)  # how often it checkpoints changes no number
    blob = {"format": FORMAT, "config": repr(config), "algorithm": repr(sim.algorithm),
            "model": models[id(sim.model)], "trace": sim.trace, "data": data_hash,
            "code": code or code_hash(STUDY_RUN_CODE), "study_code": _study_sources(sim.algorithm, sim.model)}
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def save(folder: Path, key: str, outcome: Any, about: dict[str, Any] | None = None) -> None:
    """``outcome`` (an Outcome) as ``folder/<key>.json``, complete or not at all (a temporary file
    renamed into place); ``about``: what computed it (versions, commit), kept beside its numbers."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    body = {"format": FORMAT, "history": outcome.history, "final": outcome.final, "diverged": outcome.diverged,
            "param_digest": outcome.param_digest, "device": outcome.device, "seconds": outcome.seconds,
            "kernel": outcome.kernel, "stack_size": outcome.stack_size,
            **{k: None if getattr(outcome, k) is None else np.asarray(getattr(outcome, k), dtype=np.float64)
               for k in ARRAYS}, **({"about": about} if about is not None else {})}
    fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(body, f, default=_plain)  # NaN and infinities as JSON's NaN/Infinity: read back exactly
        os.replace(tmp, folder / f"{key}.json")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(folder: Path, key: str) -> dict[str, Any]:
    """The fields of the Outcome stored under ``key`` in ``folder`` (all but its name), and ``about`` (what computed
    it, as :func:`save` was told; None where it was not). FileNotFoundError where there is none; ValueError saying
    why where the file is unreadable."""
    import numpy as np

    path = folder / f"{key}.json"
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ValueError(f"{type(exc).__name__}: {exc.strerror or exc}") from None
    try:
        body = json.loads(text)
    except ValueError as exc:  # a file cut short by a crash, or overwritten
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise ValueError(f"format {body.get('format') if isinstance(body, dict) else None!r}, expected {FORMAT}")
    missing = [k for k in ("history", "final", "diverged", "param_digest", "device", "seconds", *ARRAYS)
               if k not in body]
    if missing:
        raise ValueError(f"no {', '.join(missing)}")
    try:
        arrays = {k: None if body[k] is None else np.asarray(body[k], dtype=np.float64)
                  for k in ARRAYS}
    except (TypeError, ValueError) as exc:
        raise ValueError(f"its arrays: {exc}") from None
    return {"history": body["history"], "final": body["final"], "diverged": body["diverged"],
            "param_digest": body["param_digest"], "device": body["device"], "seconds": body["seconds"],
            "kernel": body.get("kernel", ""), "stack_size": body.get("stack_size", 1), **arrays,
            "about": body.get("about")}


def as_outcome(name: str, found: dict[str, Any]) -> Outcome:
    """The Outcome named ``name`` of fields ``found`` (:func:`read`'s: its ``about`` is not part of an Outcome)."""
    return Outcome(name=name, **{k: v for k, v in found.items() if k != "about"})


def load(folder: Path, key: str) -> dict[str, Any] | None:
    """:func:`read`, for a store about to compute what it lacks: None if there is no such outcome, or if the file is
    unreadable: then one line on stderr names it and why, and the simulation is recomputed (its file replaced when it
    finishes)."""
    try:
        return read(folder, key)
    except FileNotFoundError:
        return None  # not computed yet: nothing to say
    except ValueError as exc:
        return _corrupt(folder / f"{key}.json", str(exc))


def _corrupt(path: Path, reason: str) -> None:
    """Say in one line (stderr) that the stored outcome ``path`` cannot be used and is recomputed; None."""
    print(f"fedbench: outcome {path} was corrupt ({reason}); recomputing", file=sys.stderr, flush=True)
    return None


CHECKPOINT = ".checkpoint.pt"  # a computing simulation's checkpoint: .<fingerprint>.checkpoint.pt (OutcomeStore)


def prune(folder: Path, keep: Iterable[str]) -> int:
    """Remove the stored outcomes of ``folder`` whose fingerprint is not in ``keep`` (and stray temporary files,
    and checkpoints of fingerprints not in ``keep``); the number of outcomes removed."""
    keep = set(keep)
    removed = 0
    for path in folder.glob("*.json") if folder.is_dir() else ():
        if path.stem not in keep:
            path.unlink()
            removed += 1
    for path in folder.glob(".*.tmp") if folder.is_dir() else ():
        path.unlink()
    for path in folder.glob(f".*{CHECKPOINT}") if folder.is_dir() else ():
        if path.name[1:-len(CHECKPOINT)] not in keep:
            path.unlink()
    return removed


def versions() -> dict[str, str]:
    """The versions of what computes a simulation (fedbench, torch, numpy, pandas, Python): kept with its outcome."""
    import numpy as np
    import pandas as pd
    import torch

    import fedbench

    return {"fedbench": fedbench.__version__, "torch": torch.__version__, "numpy": np.__version__,
            "pandas": pd.__version__, "python": sys.version.split()[0]}


@dataclass
class OutcomeStore:
    """A claim study's finished simulations (the runner's Store: fedbench.study.runner), one outcome file each in
    ``folder`` (this module), and the fingerprints the study has used so far (the others are pruned
    when it finishes, unless the store is ``shared``). A ``shared`` store (the main job's: its variations and
    ``fedbench study run`` beside its stage use one store; StudyDeclaration.keeps_outcomes) keeps every outcome and
    lets one process at a time work on a simulation (a lock beside its outcome, as the train store had), so the same
    simulation started twice at once is computed once and read back by the other; a study's own store needs no lock (its
    stage runs once at a time). Each outcome keeps what computed it (``about``: versions and the commit of the run code,
    asked once a store). A computing simulation checkpoints into
    ``folder`` (``.<fingerprint>.checkpoint.pt``, every ``checkpoint_every`` rounds: fedbench.study.runner.sim_config),
    so an interrupted study resumes from the stacks it finished and from its unfinished runs' last checkpoints; a
    traced simulation (``trace``) does not (the models of its earlier rounds are not in a checkpoint)."""

    folder: Path
    shared: bool = False
    used: set[str] = field(default_factory=set)
    names: dict[str, set[str]] = field(default_factory=dict)  # each simulation's name: the fingerprints it had
    reused: int = 0
    computed: int = 0
    _models: dict[int, Any] = field(default_factory=dict, repr=False)
    _data: dict[int, str] = field(default_factory=dict, repr=False)
    _code: str = field(default="", repr=False)
    _about: dict[str, Any] | None = field(default=None, repr=False)

    def key(self, sim: Simulation) -> str:
        data = sim.dataset()
        if id(data) not in self._data:  # a dataset many simulations share is hashed once
            self._data[id(data)] = data.content_hash
        self._code = self._code or code_hash(STUDY_RUN_CODE)  # the code: hashed once a study
        key = fingerprint(sim, self._data[id(data)], self._code, self._models)
        self.used.add(key)
        self.names.setdefault(sim.name, set()).add(key)
        return key

    def fingerprints(self) -> dict[str, str]:
        """The fingerprint of each simulation the study ran, by its name (a name two different simulations had is
        left out: a record of that name could be either)."""
        return {name: next(iter(keys)) for name, keys in self.names.items() if len(keys) == 1}

    def lock(self, sim: Simulation, key: str) -> AbstractContextManager:
        from fedbench.locking import file_lock

        return file_lock(self.folder / f".{key}.lock", what=sim.name) if self.shared else nullcontext()

    def load(self, sim: Simulation, key: str) -> Outcome | None:
        found = load(self.folder, key)
        return None if found is None else as_outcome(sim.name, found)

    def checkpoint(self, sim: Simulation, key: str) -> Path | None:
        return None if sim.trace else self.folder / f".{key}{CHECKPOINT}"

    def save(self, sim: Simulation, key: str, outcome: Outcome) -> None:
        if self._about is None:
            self._about = {"versions": versions(), "git_commit": git_commit(RUN_CODE)}
        save(self.folder, key, outcome, self._about)

    def finished(self, reused: int, total: int) -> None:
        self.reused += reused
        self.computed += total - reused
        print(f"{reused} of {total} simulations reused (fingerprint match in {self.folder})", flush=True)
