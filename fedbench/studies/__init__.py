"""Small studies that turn paper statements into claims with verdicts from real runs.

Each module exposes ``run(out_dir, workers=WORKERS) -> list[claim dict]``. A study first declares the list of
simulations it needs (``Simulation``: a name, a SimulationConfig, a dataset builder, a model, an algorithm),
then runs them all through one call of :func:`run_simulations`, and only then computes its claims from the
outcomes: every study's runs go through that one function, so how runs execute (worker processes today, many
runs as one tensor program later) is decided in one place. A study writes its figure(s) as PNG and a record of
every simulation (fedbench.studies.record) into ``out_dir`` and returns one entry per claim with exactly
the keys of fedbench.claims.entry.CLAIM_KEYS. Verdicts come from the rule stated in each entry,
never from the published number. ``run_claim_study`` runs one study (the DVC ``study@NAME`` stage and
``fedbench study run``: fedbench.studies.stage), reusing the simulations it finished before (fedbench.studies.reuse);
the ``track`` stage (fedbench.track) logs the results to MLflow.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedbench.claims.entry import plain
from fedbench.data.format import atomic_folder
from fedbench.executors import ExecutorSettings, open_executor
from fedbench.studies import reuse
from fedbench.studies.record import SIMULATIONS, keep_seconds, keep_simulation_seconds

if TYPE_CHECKING:
    import numpy as np

    from fedbench.data.format import FederatedDataset
    from fedbench.engine.simulation import SimulationConfig

STUDIES_ROOT = Path("reports/studies")
WORKERS = 2  # worker processes of run_simulations (the pipeline's machines have 2 cores)
# where run_simulations runs its stacks when not told: the executor run_claim_study was given (a study's run()
# passes only workers), else local worker processes
EXECUTOR: ContextVar[ExecutorSettings] = ContextVar("fedbench_studies_executor", default=ExecutorSettings())


@dataclass
class OutcomeStore:
    """Where run_simulations reads and writes finished simulations (fedbench.studies.reuse), and the fingerprints
    the study has used so far (the others are pruned when it finishes)."""

    folder: Path
    used: set[str] = field(default_factory=set)
    reused: int = 0
    computed: int = 0


# the store run_claim_study opened for the study it runs (None: a study's run() called directly; nothing is reused)
STORE: ContextVar[OutcomeStore | None] = ContextVar("fedbench_studies_store", default=None)

def sim_config(**fields: Any) -> SimulationConfig:
    """A SimulationConfig with the studies' defaults, ``fields`` on top: on the CPU (the studies are small),
    the gradient dissimilarity evaluated in round 0 and on the final model only (dissimilarity_every) and no
    checkpoints (checkpoint_every)."""
    from fedbench.engine.simulation import SimulationConfig  # here: importing fedbench.studies needs no torch

    return SimulationConfig(**{"device": "cpu", "dissimilarity_every": 10**9, "checkpoint_every": 10**9, **fields})


@dataclass(frozen=True)
class Simulation:
    """One run a study declares. ``dataset`` is a zero-argument builder of the run's FederatedDataset that
    caches what it builds (a top-level ``functools.cache`` function, or a ``functools.partial`` of one), so that
    runs sharing data share one copy and worker processes inherit it. ``knobs`` are the study's own settings
    of the run, recorded with its params. ``trace`` keeps the global model after every round (small models
    only)."""

    name: str
    config: SimulationConfig
    dataset: Callable[[], FederatedDataset]
    model: Any
    algorithm: Any
    knobs: dict[str, Any] = field(default_factory=dict)
    trace: bool = False


@dataclass(frozen=True)
class Outcome:
    """What a Simulation gave: the engine's per-evaluation ``history`` rows, the ``final`` evaluation's scalars,
    whether it diverged, the final parameters' digest, the device, the traced models [rounds, P] (float64) when
    asked for, the seconds it took, the final model's test accuracy on each client [N] (NaN for a client
    without test data: Delta-FL's per-device error) and its training loss on each client [N] (NaN for a client
    without training data, or where the final evaluation skipped the train split: Delta-FL's Figure 5)."""

    name: str
    history: list[dict[str, float]]
    final: dict[str, float]
    diverged: bool
    param_digest: str
    device: str
    models: np.ndarray | None
    seconds: float
    device_accuracy: np.ndarray | None = None
    device_train_loss: np.ndarray | None = None

    def series(self, key: str) -> list[float]:
        """``key`` by round: element r is its value at round r (the model w_r; the final model at ``rounds``), NaN
        at a round where it was not evaluated; up to the last round that evaluated it. With the default protocol
        (every round) this is every row's value in order."""
        values = self.at_rounds(key)
        if not values:
            return []
        out = [math.nan] * (max(values) + 1)
        for r, v in values.items():
            out[r] = v
        return out

    def at_rounds(self, key: str) -> dict[int, float]:
        """``key`` at the rounds that evaluated it, {round: value} in round order (the history rows holding it)."""
        return {int(row["round"]): float(row[key]) for row in self.history if key in row}


class ModelTrace:
    """Callback keeping the global model after every round (small models only: it copies to the CPU)."""

    def __init__(self) -> None:
        self.models: list = []

    def on_model(self, round_: int, theta) -> None:
        self.models.append(theta.detach().double().cpu().numpy().copy())


def _simulate_stack(model: Any, specs: list) -> list:
    """fedbench.engine.simulation.simulate_stack (imported here so that importing fedbench.studies needs no torch)."""
    from fedbench.engine.simulation import simulate_stack

    return simulate_stack(model, specs)


def _run_stack(sims: list[Simulation]) -> list[Outcome]:
    """Simulations that share a stack, run as one (a top-level function, so worker processes can run it); each
    outcome's ``seconds`` is its share of the stack's time."""
    import numpy as np

    from fedbench.engine.simulation import RunSpec
    from fedbench.parallel import one_torch_thread

    one_torch_thread()  # one thread per stack fixes the order of float sums, in a worker or in the caller alike
    traces = [ModelTrace() if sim.trace else None for sim in sims]
    specs = [RunSpec(sim.config, sim.dataset(), sim.algorithm, callbacks=(t,) if t else ()) for sim, t in zip(sims, traces)]
    t0 = time.perf_counter()
    results = _simulate_stack(sims[0].model, specs)
    seconds = (time.perf_counter() - t0) / len(sims)
    return [Outcome(name=sim.name, history=r.history, final=r.final.scalars(), diverged=bool(r.diverged),
                    param_digest=r.param_digest, device=r.device, models=np.array(t.models) if t else None,
                    seconds=seconds, device_accuracy=np.asarray(r.final.device_test_accuracy, dtype=np.float64),
                    device_train_loss=np.asarray(r.final.device_train_loss, dtype=np.float64))
            for sim, r, t in zip(sims, results, traces)]


def run_simulations(simulations: Sequence[Simulation], workers: int = WORKERS,
                    executor: ExecutorSettings | None = None) -> list[Outcome]:
    """Run every simulation and return their outcomes in order. Simulations of one model that may share a stack
    (fedbench.engine.simulation.stack_key: the same settings but seed, stragglers and availability, one algorithm
    class) run as stacked runs, their numbers the same as alone; the stacks are cut to keep ``workers`` forked
    processes equally busy (fedbench.engine.stacking), every dataset built once here first so the workers share
    it; or, with the ``ray`` executor (``executor``, default the one run_claim_study was given:
    fedbench.executors), as Ray tasks cut for the cluster. Names must be unique (they name the records and the
    MLflow runs). Under run_claim_study, a simulation whose fingerprint (settings, data, code: fedbench.studies.reuse)
    matches an outcome the study kept is read back instead (its ``seconds`` those of the run that computed it), and
    each computed stack is kept as soon as it finishes, so changing one arm reruns that arm only and an interrupted
    study resumes."""
    from fedbench.engine.simulation import RunSpec, check_spec, stack_key
    from fedbench.engine.stacking import plan_stacks

    names = [s.name for s in simulations]
    if len(set(names)) != len(names):
        raise ValueError(f"simulation names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    sims = list(simulations)
    specs = [RunSpec(sim.config, sim.dataset(), sim.algorithm) for sim in sims]  # datasets built before the fork
    for sim, spec in zip(sims, specs):  # a protocol the data cannot serve: refused before any run starts
        try:
            check_spec(spec)
        except (ValueError, TypeError) as err:
            raise ValueError(f"simulation {sim.name}: {err}") from None
    store = STORE.get()
    by_name: dict[str, Outcome] = {}
    key_of: dict[str, str] = {}
    if store is not None:  # fingerprint reuse: a finished simulation with the same fingerprint is read back
        code, data_hash, model_ids = reuse.code_hash(reuse.STUDY_RUN_CODE), {}, {}
        for sim, spec in zip(sims, specs):
            if id(spec.dataset) not in data_hash:  # a dataset many simulations share is hashed once
                data_hash[id(spec.dataset)] = spec.dataset.content_hash
            digest = data_hash[id(spec.dataset)]
            key_of[sim.name] = reuse.fingerprint(sim, digest, code, model_ids)
            if (found := reuse.load(store.folder, key_of[sim.name])) is not None:
                by_name[sim.name] = Outcome(name=sim.name, **found)
        store.used |= set(key_of.values())
        store.reused += len(by_name)
        store.computed += len(sims) - len(by_name)
        print(f"{len(by_name)} of {len(sims)} simulations reused (fingerprint match in {store.folder})", flush=True)

    def keep(stack: list[Outcome]) -> None:  # as each stack finishes: an interrupted study keeps it
        for o in stack:
            if store is not None:
                reuse.save(store.folder, key_of[o.name], o)

    todo = [i for i, sim in enumerate(sims) if sim.name not in by_name]
    if todo:
        device = next((sims[i].config.device for i in todo if sims[i].config.device != "cpu"), "cpu")
        with open_executor(executor or EXECUTOR.get(), workers) as ex:
            model_of = {id(specs[i]): sims[i].model for i in todo}
            pieces = plan_stacks([specs[i] for i in todo], ex.slots(device),
                                 key=lambda spec: (model_of[id(spec)], stack_key(spec)),
                                 model_of=lambda spec: model_of[id(spec)])  # on CUDA: stacks cut to the free memory
            pieces = [[todo[j] for j in piece] for piece in pieces]
            outcomes = ex.map(_run_stack, [[sims[i] for i in piece] for piece in pieces], device, each=keep,
                              names=[", ".join(sims[i].name for i in piece) for piece in pieces])
        by_name |= {o.name: o for stack in outcomes for o in stack}
    return [by_name[name] for name in names]


def command(name: str) -> str:
    """The one command that runs claim study ``name`` at its pipeline budget (fedbench.studies.stage.run_study)."""
    return f"fedbench study run {name}"


def run_claim_study(name: str, root: Path = STUDIES_ROOT, workers: int = WORKERS,
                    budget: str | None = None, executor: ExecutorSettings | None = None,
                    real_root: Path | None = None, seeds: tuple[int, ...] | None = None) -> list[dict[str, Any]]:
    """Run fedbench.studies.<name> into ``root/name`` (atomically: a temporary folder renamed into place), with
    its claims and the seconds it took in ``claims.json`` beside the study's figures and simulation records (a rerun whose
    numbers all match the folder's keeps the folder's seconds: fedbench.studies.record.keep_seconds).
    ``budget`` picks one of the study's declared round budgets (its ``BUDGETS``), e.g. "paper" for the paper's
    round counts where a study has them. ``executor`` (train.executor: fedbench.executors) is where the study's
    run_simulations calls run their stacks (default: local worker processes). ``real_root`` is where a
    paper-scale study (fedbench.studies.real_data) finds its real variants (default data/real). ``seeds`` replaces
    the study's training seeds (only for a study whose run() takes them)."""
    module = importlib.import_module(f"fedbench.studies.{name}")
    kwargs: dict[str, Any] = {}
    if "workers" in inspect.signature(module.run).parameters:
        kwargs["workers"] = workers
    if budget is not None:
        allowed = list(getattr(module, "BUDGETS", {}))
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
