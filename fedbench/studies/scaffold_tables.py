"""What SCAFFOLD's Table 3-5 studies share (Karimireddy et al., ICML 2020, section 7.1): the EMNIST study
(fedbench.studies.scaffold_emnist) and its Fashion-MNIST stand-in (fedbench.studies.scaffold_fashion) run the same
setup on different data, so this module holds, once, what their declarations and run() have in common. Each study
keeps its own declaration (DECLARATION: arms, seeds, budgets, claims), its cells, its measures and its figure.

- Local work: "1 epoch for local update methods corresponds to 5 local steps (0.2 batch size)": a client's batch is
  ceil(n_k / 5) (:func:`batch_size`), E epochs are 5 E steps; "SGD (1 epoch)" is large-batch minibatch SGD, one
  epoch of gradients at the server model.
- The arms: SCAFFOLD option II with eta_g = 1 (c and c_i started at zero), FedAvg, SGD (fedbench.algorithms.
  minibatch_sgd); an arm's settings are its algorithm's hyperparameters (:func:`algorithm`).
- Evaluation (:data:`EVALUATION`, the paper states none; each study lists it among its deviations): the global
  model's accuracy on the dataset's global test set after every round (rounds-to-target read to the round, as
  Tables 3 and 4 report it) and on the final model; no training loss, no per-device metric.
- Step sizes: every cell (one algorithm in one table cell) runs each step of its budget's grid on the tuning seeds
  (two or more, disjoint from the judged seeds and from the confirm seeds, 1000 up); :func:`select_steps` picks
  the step by fedbench.claims.selection (rule: :func:`selection_rule`): rounds-to-target cells by their rounds to
  the target (lower is better; a cell none of whose tuning runs reaches the target within the rounds run, by its
  best accuracy: its rounds cannot tell its steps apart), best-accuracy cells by their best accuracy; the best
  mean wins only by more than the spread between the tuning seeds, else the smallest step tied with it; a choice
  at an end of the grid widens that cell's grid (the grid's ratio, at most 2 steps a side, the new steps' tuning
  runs of every cell in one batch) until it is interior, or the entry says it stays at the edge. The judged seeds
  then run each cell at its step (:func:`run_tables`: the phases, one record each, written once). Until
  2026-11-28 (issue 32) the step was the best mean, ties to the higher mean best accuracy then the smaller step,
  with no margin and no widening.
- Readings (fedbench.claims.readings): rounds to the target, first evaluation at it (primary) or the first of
  HOLD held (sensitivity); best accuracy (primary) and the mean of the last 5 (sensitivity); a budget cut reads
  the curves up to round(fraction R) (:class:`Runs`).
- Entries (fedbench.studies.scaffold_table_claims, with the verdicts both studies share): the study's declared claim with its scale and deviations, data seed 0, each cell's
  selection (the step, the grid, the per-seed tuning readings, why) and the cells whose choice stayed at an end of
  its grid listed (``selected_at_grid_edge``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedbench.claims.readings import best_of, rounds_to_target, tail_of
from fedbench.claims.selection import Selection, rule_text, select_all
from fedbench.engine.evaluation import EvalSpec
from fedbench.study.declaration import Arm, StudyDeclaration

STEPS_PER_EPOCH = 5  # "1 epoch ... corresponds to 5 local steps (0.2 batch size)"
SGD_EPOCHS = 1  # "SGD (1 epoch)": one epoch of minibatch gradients at the server model = the full local gradient
SAMPLED = 0.20  # "20% of clients are sampled each round"
ETA_G = 1.0
ACCURACY = "global_test/accuracy"
EVALUATION = (EvalSpec("global_test", every=1),)  # the global test set every round, and the final model
HOLD = 5  # evaluations the "held" reading needs at or above the target
ROUNDS_READINGS = {"first": "first evaluation at the target", "held": f"first of {HOLD} evaluations at the target"}
ACCURACY_READINGS = {"best": "best evaluation", "tail": "mean of the last 5 evaluations"}

# the arms both studies run, by the names their cells, records and figures use; settings: the algorithm's
# hyperparameters as section 7.1 gives them
SCAFFOLD = Arm("scaffold", "scaffold", {"eta_g": ETA_G, "control_variate": "II"})
FEDAVG = Arm("fedavg", "fedavg", {})
SGD = Arm("sgd", "minibatch_sgd", {})


@dataclass(frozen=True)
class Budget:
    """A scale a table study runs at: rounds, judged seeds, tuning seeds, the step-size grid, where it runs ("auto":
    the GPU when there is one) and the tables it runs (None: every one the study has; a table not run is a not-run
    entry)."""

    rounds: int
    seeds: tuple[int, ...]
    tuning_seeds: tuple[int, ...]
    lr_grid: tuple[float, ...]
    device: str
    tables: tuple[int, ...] | None = None

    def __post_init__(self):
        if len(self.tuning_seeds) < 2 or set(self.tuning_seeds) & set(self.seeds):
            raise ValueError(f"tuning seeds {self.tuning_seeds}: two or more (the selection's margin is their spread), "
                             f"apart from the judged {self.seeds}")

    def runs_table(self, table: int) -> bool:
        return self.tables is None or table in self.tables


def selection_rule(seeds: Sequence[int], target: float | None) -> str:
    """The selection rule as a claim states it: by rounds to ``target`` (None: by best accuracy) on ``seeds``."""
    if target is None:
        return rule_text(seeds, "the best test accuracy over the rounds run")
    return (rule_text(seeds, f"rounds to {target:g}", higher_is_better=False)
            + f"; a cell none of whose tuning runs reaches {target:g} within the rounds run is selected by its best "
              "test accuracy (higher is better) by the same rule")


def select_steps(cells: Sequence[Any], curves: dict[tuple[Any, float, int], Sequence[float]], budget: Budget,
                 target_of: Callable[[Any], float | None],
                 evaluate: Callable[[list[tuple[Any, float]]], None] | None = None) -> dict[Any, Selection]:
    """Each cell's selection (fedbench.claims.selection.select_all) from the tuning runs' test-accuracy curves
    (by cell, step, tuning seed): by rounds to ``target_of(cell)`` (lower is better; by the best accuracy where no
    tuning run of the cell's grid reaches it), or, for a cell whose target is None, by the best accuracy.
    ``evaluate(pairs)`` runs the tuning runs of the (cell, step) pairs a widening adds and puts their curves in
    ``curves``; None: no widening."""
    def read(c: Any, grid: tuple[float, ...]) -> tuple[dict[float, list[float]], bool]:
        best = {lr: [best_of(curves[(c, lr, s)], budget.rounds) for s in budget.tuning_seeds] for lr in grid}
        target = target_of(c)
        if target is None:
            return best, True
        reached = {lr: [float(rounds_to_target(curves[(c, lr, s)], target, budget.rounds))
                        for s in budget.tuning_seeds] for lr in grid}
        if all(r >= budget.rounds for v in reached.values() for r in v):
            return best, True  # never reached: rounds cannot tell the steps apart
        return reached, False

    return select_all({c: budget.lr_grid for c in cells}, read, evaluate)


class Runs:
    """The judged runs' test-accuracy curves by (cell, seed) at the cells' selected steps (``steps``, chosen on
    the tuning seeds; ``selections``: how), and their readings at a budget cut ``fraction`` of the rounds run."""

    def __init__(self, curves: dict[tuple[Any, int], list[float]], steps: dict[Any, float], budget: Budget,
                 selections: dict[Any, Selection] | None = None, declaration: StudyDeclaration | None = None):
        self.curves, self.steps, self.budget = curves, steps, budget
        self.selections = selections or {}
        self.declaration = declaration  # the study's on the seeds judged (StudyDeclaration.on_seeds); None: its own

    def rounds(self, fraction: float) -> int:
        return max(1, round(fraction * self.budget.rounds))

    def reached(self, cell: Any, target: float, reading: str, fraction: float) -> list[float]:
        """Per judged seed, rounds to ``target`` ("first" or "held"; never: the rounds of the cut)."""
        r = self.rounds(fraction)
        return [float(rounds_to_target(self.curves[(cell, s)], target, r, HOLD if reading == "held" else 1))
                for s in self.budget.seeds]

    def accuracy(self, cell: Any, reading: str, fraction: float) -> list[float]:
        """Per judged seed, the best ("best") or tail ("tail") accuracy."""
        r = self.rounds(fraction)
        read = tail_of if reading == "tail" else best_of
        return [read(self.curves[(cell, s)], r) for s in self.budget.seeds]

    def tuned_rounds(self, cell: Any, target: float, reading: str, fraction: float) -> tuple[float, list[float]]:
        """(the cell's selected step, per-seed rounds to ``target`` at it)."""
        return self.steps[cell], self.reached(cell, target, reading, fraction)

    def tuned_accuracy(self, cell: Any, reading: str, fraction: float) -> tuple[float, list[float]]:
        return self.steps[cell], self.accuracy(cell, reading, fraction)


def mean(v: Sequence[float]) -> float:
    return sum(v) / len(v)


def fmt_rounds(x: float, rounds: int, decimals: int = 0) -> str:
    """Mean rounds to a target as the tables print them: "R+" for never."""
    return f"{rounds}+" if x >= rounds else f"{x:.{decimals}f}"


def paper_scales(cells: Sequence[Any], budget: Budget, train_images: int, evaluated: int) -> tuple[Any, ...]:
    """The runs of ``budget`` (the paper's) as fedbench.study.scale.Scale, for the projected cost: per cell, every
    step of the grid on the tuning seeds, then the selected step on the judged seeds; STEPS_PER_EPOCH steps of batch
    ceil(n / 5) an epoch on clients of n = ``train_images`` / clients (costs prices a step of batch B);
    ``evaluated`` samples every round. A cell has ``model``, ``clients``, ``sampled`` and ``epochs``."""
    from fedbench.study.scale import Scale

    runs_per_cell = len(budget.tuning_seeds) * len(budget.lr_grid) + len(budget.seeds)  # before any widening
    by_key: dict[tuple, int] = {}
    for c in cells:
        n = train_images / c.clients
        key = (c.model, max(1, round(c.sampled * c.clients)), n, c.epochs, math.ceil(n / STEPS_PER_EPOCH))
        by_key[key] = by_key.get(key, 0) + runs_per_cell
    return tuple(Scale(model, runs, budget.rounds, k, n, e, b, evaluated, eval_every=1,
                       local_steps=STEPS_PER_EPOCH * e) for (model, k, n, e, b), runs in by_key.items())


# ------------------------------------------------------------------------------------------------------ the runs
@functools.cache
def dataset(variant_name: str, real_root: str):
    """Real variant ``variant_name`` (its test images the global test set), refused without one. Cached: the runs
    sharing a variant share one copy."""
    from fedbench.studies.real_data import load_real

    ds = load_real(variant_name, real_root)
    if ds.global_test is None:
        raise ValueError(f"{variant_name}: no global test set (built by an older fedbench? rebuild it with "
                         f"`fedbench data prepare {variant_name}`)")
    return ds


def batch_size(ds) -> int:
    """ceil(n_k / 5) of the largest client: one epoch is at most 5 steps for every client, exactly 5 on equal ones."""
    return max(1, math.ceil(int(ds.train.sizes.max()) / STEPS_PER_EPOCH))


@functools.cache
def model(name: str, classes: int):
    """One model object per architecture (runs of one model may share a stack), on 784 inputs."""
    from fedbench.models import build_model

    return build_model(name, (784,), classes)


def algorithm(arm: Arm, lr: float):
    """Arm ``arm``'s algorithm at step ``lr`` (its settings are the algorithm's hyperparameters)."""
    from fedbench.algorithms import build_algorithm

    return build_algorithm(arm.algorithm, lr, **arm.settings)


def simulations(d: StudyDeclaration, cells: Sequence[Any], budget: Budget, real_root: Path, classes: int,
                knobs: Callable[[Any], dict[str, Any]], steps: dict[Any, float] | None = None,
                widen: Sequence[tuple[Any, float]] | None = None) -> list:
    """The tuning runs (``steps`` None: every cell at every step of the grid on the tuning seeds; ``widen``: only
    the (cell, step) pairs a widening of the grids adds, on the tuning seeds) or the judged runs (every cell at its
    step in ``steps`` on the judged seeds), named phase/cell/lr/seed. A cell has ``label()``,
    ``variant``, ``method`` (an arm of ``d``), ``epochs``, ``sampled`` and ``model``; ``knobs(cell)`` are its
    records' parameters. Runs that differ only in seed (and in their data) share a stack."""
    from fedbench.study.runner import Simulation, sim_config

    phase = "tuning" if steps is None else "judged"
    if widen is not None:
        pairs = [(c, [lr for cc, lr in widen if cc == c]) for c in dict.fromkeys(c for c, _ in widen)]
    else:
        pairs = [(c, budget.lr_grid if steps is None else (steps[c],)) for c in cells]
    seeds = budget.tuning_seeds if steps is None else budget.seeds
    sims = []
    for c, grid in pairs:
        builder = functools.partial(dataset, c.variant, str(real_root))
        ds = builder()
        k = max(1, round(c.sampled * ds.num_clients))
        for lr in grid:
            for seed in seeds:
                cfg = sim_config(rounds=budget.rounds, clients_per_round=k, local_epochs=c.epochs,
                                 local_steps=STEPS_PER_EPOCH * c.epochs, batch_size=batch_size(ds), seed=seed,
                                 device=budget.device, evaluations=d.evaluation, dissimilarity_every=0)
                sims.append(Simulation(
                    name=f"{phase}/{c.label()}/lr={lr:g}/seed={seed}", config=cfg, dataset=builder,
                    model=model(c.model, classes), algorithm=algorithm(d.arm(c.method), lr),
                    knobs=knobs(c) | {"phase": phase}))
    return sims


def run_tables(out_dir: str | Path, declaration: StudyDeclaration, budget: str, workers: int, cells: Sequence[Any],
               declare: Callable[..., list], real_root: str | Path, record_target: Callable[[Any], float],
               select_target: Callable[[Any], float | None], seeds: Sequence[int] | None = None):
    """Run a table study at ``budget`` into ``out_dir`` in phases, its data under ``real_root``: the tuning runs
    (``declare(b, real_root)``), each cell's step selected from them (:func:`select_steps`, ``select_target``; the
    tuning runs of the steps a widening adds: ``declare(b, real_root, widen=pairs)``), then the judged runs
    (``declare(b, real_root, steps)``); one record each (the accuracy curve, rounds to ``record_target(cell)`` and the best accuracy), written once.
    ``cells``: every cell the study has (the records' names are read back to them). ``seeds``: the judged seeds
    instead of the budget's (a confirmatory run's frozen block: fedbench.study.runs.open_seeded; the tuning seeds,
    and so the selected steps, stay). Returns (the budget, the study's fedbench.study.runs.StudyRuns, the judged
    :class:`Runs`, whose ``declaration`` is ``declaration`` on the judged seeds)."""
    from fedbench.study.record import sim_record
    from fedbench.study.runs import open_seeded

    b, study, d = open_seeded(out_dir, declaration, budget, workers, seeds)
    by_label = {c.label(): c for c in cells}

    def cell_of(sim) -> Any:
        return by_label[sim.name.split("/", 1)[1].rsplit("/lr=", 1)[0]]

    def curves_of(sims, outcomes) -> dict[tuple[Any, float, int], list[float]]:
        return {(cell_of(sim), sim.algorithm.lr, sim.config.seed): o.series(ACCURACY)
                for sim, o in zip(sims, outcomes)}  # by round: every round is evaluated

    def record(sim, o):
        acc, target = o.series(ACCURACY), record_target(cell_of(sim))
        return sim_record(sim, o, keys=("round", ACCURACY),
                          metrics={f"study/rounds_to_{target:g}": rounds_to_target(acc, target, b.rounds),
                                   "study/best_accuracy": best_of(acc, b.rounds)})

    real_root = Path(real_root)
    tuning_sims = declare(b, real_root)
    curves = curves_of(tuning_sims, study.run_list(tuning_sims, record))

    def evaluate(pairs: list[tuple[Any, float]]) -> None:
        sims = declare(b, real_root, widen=pairs)
        curves.update(curves_of(sims, study.run_list(sims, record)))

    selections = select_steps([c for c in cells if b.runs_table(c.table)], curves, b, select_target, evaluate)
    steps = {c: sel.step for c, sel in selections.items()}
    judged_sims = declare(b, real_root, steps)
    judged = study.run_list(judged_sims, record)
    study.write()
    runs = Runs({(c, seed): acc for (c, _, seed), acc in curves_of(judged_sims, judged).items()}, steps, b,
                selections, d)
    return b, study, runs
