"""What SCAFFOLD's Table 3-5 studies share (Karimireddy et al., ICML 2020, section 7.1): the EMNIST study
(fedbench.studies.scaffold_emnist) and its Fashion-MNIST stand-in (fedbench.studies.scaffold_fashion) run the same
setup on different data, so this module holds, once, what their declarations have in common and the hooks both
are run by (:class:`TableStudy`: fedbench.study.contract's simulations, measure, figure and record). Each study
module holds only its declaration (DECLARATION: arms, seeds, budgets, claims) and its settings (a TableStudy: its
cells, targets, and the texts of its entries).

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
  then run each cell at its step (:meth:`TableStudy.simulations`: the phases, one record each). Until
  2026-11-28 (issue 32) the step was the best mean, ties to the higher mean best accuracy then the smaller step,
  with no margin and no widening.
- Readings (fedbench.claims.readings): rounds to the target, first evaluation at it (primary) or the first of
  HOLD held (sensitivity); best accuracy (primary) and the mean of the last 5 (sensitivity); a budget cut reads
  the curves up to round(fraction R) (:class:`Runs`).
- Entries (fedbench.studies.scaffold_table_claims, with the measurements both studies share): the study's declared
  claim with its scale and deviations, data seed 0, each cell's selection (the step, the grid, the per-seed tuning
  readings, why) and the cells whose choice stayed at an end of its grid listed (``selected_at_grid_edge``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedbench.claims.readings import best_of, rounds_to_target, tail_of
from fedbench.claims.selection import Selection, rule_text, select_all
from fedbench.engine.evaluation import EvalSpec
from fedbench.study.declaration import Arm, Claim

if TYPE_CHECKING:  # annotations only: the study modules import no torch until they run
    from fedbench.study.contract import Measurement, StudyRun
    from fedbench.study.runner import Outcome, Simulation

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


@dataclass(frozen=True)
class Cell:
    """One algorithm in one cell of a table: the runs that differ only in step size and seed, on the variant
    ``{data}_scaffold_n{clients}_s{similarity}`` (100 clients; 400 in Table 4 and the slides' client-count figure)."""

    data: str  # the dataset the study's variants are named after ("emnist", "fashion_mnist")
    table: int  # 3, 4 or 5; 6: the slides' client-count figure
    method: str  # an arm of the study
    epochs: int
    similarity: int
    sampled: float = SAMPLED

    @property
    def clients(self) -> int:
        return 400 if self.table in (4, 6) else 100

    @property
    def model(self) -> str:
        return "scaffold_mlp" if self.table == 5 else "mclr"

    @property
    def variant(self) -> str:
        return f"{self.data}_scaffold_n{self.clients}_s{self.similarity}"

    def label(self) -> str:
        return (f"table{self.table}/{self.method}/E={self.epochs}/s={self.similarity}"
                + (f"/sampled={100 * self.sampled:g}%" if self.table in (4, 6) else ""))


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
                 selections: dict[Any, Selection] | None = None):
        self.curves, self.steps, self.budget = curves, steps, budget
        self.selections = selections or {}

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


class Widening(Exception):
    """The step selection needs the tuning runs of ``pairs`` (cell, step) that a widening of the grids adds."""

    def __init__(self, pairs: list[tuple[Cell, float]]):
        super().__init__(f"tuning runs of {len(pairs)} new steps")
        self.pairs = pairs


@dataclass(frozen=True)
class TableStudy:
    """What one SCAFFOLD table study sets (the EMNIST study and its stand-ins differ only here), and the hooks both
    are run by (fedbench.study.contract: :meth:`simulations`, :meth:`measure`, :meth:`figure`, and :meth:`record`),
    which read the rest from the run: its declaration (arms, the knobs "epochs" and "similarity" of Table 3,
    "table4_sampled"), its budget (rounds, seeds, grid, the tables it runs) and its outcomes.

    ``classes``: the models' outputs; ``cells``: every cell of the study, in the order they run; ``targets``: by
    table, the test accuracy its rounds are read to (in each run's record; the step selection's too, but for Table
    5, which selects by best accuracy); ``claims``: the table each claim reads, by claim id (6: the slides'
    client-count figure); ``knobs``: the Cell fields each record names; ``observed`` and ``panels``: by table, what
    an entry's observation ends with and its figure's panel (``{rounds}``: the rounds run, ``{seed}``: the first
    judged seed); ``scale``, ``deviations`` and ``fidelity``: an entry's, at a budget; ``title``: the figure's;
    ``budget_rule``: the verdicts apply the budget rule (the claim's paper rounds over the rounds run), else they
    are never extrapolated; ``decimals``: of Table 3's mean rounds in the observation; ``not_run``: (why, what runs
    it, ``{rounds}``) for a table the budget leaves out."""

    classes: int
    cells: tuple[Cell, ...]
    targets: dict[int, float]
    labels: dict[str, str]
    claims: dict[str, int]
    knobs: tuple[str, ...]
    judged_similarity: tuple[int, ...]
    observed: dict[int, str]
    panels: dict[int, str]
    scale: Callable[[Budget], dict[str, Any]]
    deviations: Callable[[Budget], list[str]]
    fidelity: Callable[[Any, Budget], str]
    title: str
    budget_rule: bool = False
    decimals: int = 0
    not_run: tuple[str, str] | None = None

    def cell(self, table: int, method: str, similarity: int, epochs: int | None = None,
             sampled: float = SAMPLED) -> Cell:
        """The cell of ``table`` for ``method`` at ``similarity``, ``epochs`` where the table has several (SGD: its
        one) and ``sampled``."""
        return next(c for c in self.cells if (c.table, c.method, c.similarity, c.sampled) == (
            table, method, similarity, sampled) and (epochs is None or method == "sgd" or c.epochs == epochs))

    def select_target(self, c: Cell) -> float | None:
        """The target a cell's step is selected by; None: Table 5's cells, by their best accuracy."""
        return None if c.table == 5 else self.targets[c.table]

    def simulations(self, run: StudyRun) -> dict[str, Simulation]:
        """The tuning runs (each cell of the tables the budget runs at every step of its grid, on the tuning seeds);
        once they have run, those that each widening of the grids adds (:meth:`selections`); then the judged runs
        (each cell at its selected step, on the judged seeds)."""
        b = run.budget
        tuning = self._runs(run, [(c, b.lr_grid) for c in self.cells if b.runs_table(c.table)], "tuning")
        if not tuning.keys() <= run.outcomes.keys():
            return tuning
        try:
            selections = self.selections(run)
        except Widening as widening:
            cells = dict.fromkeys(c for c, _ in widening.pairs)
            return self._runs(run, [(c, [lr for cc, lr in widening.pairs if cc == c]) for c in cells], "tuning")
        return self._runs(run, [(c, (s.step,)) for c, s in selections.items()], "judged")

    def _runs(self, run: StudyRun, pairs: Sequence[tuple[Cell, Sequence[float]]], phase: str) -> dict[str, Simulation]:
        """Each cell's runs at each of its steps, on the tuning or the judged seeds (``phase``), by name
        (phase/cell/lr/seed). Runs that differ only in seed (and in their data) share a stack."""
        from fedbench.studies.real_data import REAL_ROOT
        from fedbench.study.runner import Simulation, sim_config

        d, b = run.declaration, run.budget
        root = str(REAL_ROOT if run.real_root is None else run.real_root)
        sims = {}
        for c, steps in pairs:
            builder = functools.partial(dataset, c.variant, root)
            ds = builder()
            cohort = max(1, round(c.sampled * ds.num_clients))
            for lr in steps:
                for seed in b.tuning_seeds if phase == "tuning" else b.seeds:
                    name = f"{phase}/{c.label()}/lr={lr:g}/seed={seed}"
                    cfg = sim_config(rounds=b.rounds, clients_per_round=cohort, local_epochs=c.epochs,
                                     local_steps=STEPS_PER_EPOCH * c.epochs, batch_size=batch_size(ds), seed=seed,
                                     device=b.device, evaluations=d.evaluation, dissimilarity_every=0)
                    sims[name] = Simulation(name=name, config=cfg, dataset=builder, model=model(c.model, self.classes),
                                            algorithm=algorithm(d.arm(c.method), lr),
                                            knobs={k: getattr(c, k) for k in self.knobs} | {"phase": phase})
        return sims

    def record(self, sim: Simulation, outcome: Outcome) -> dict[str, Any]:
        """A run's record: its test accuracy every round, rounds to its table's target and its best accuracy."""
        from fedbench.study.record import sim_record

        acc, target, rounds = outcome.series(ACCURACY), self.targets[sim.knobs["table"]], sim.config.rounds
        return sim_record(sim, outcome, keys=("round", ACCURACY),
                          metrics={f"study/rounds_to_{target:g}": rounds_to_target(acc, target, rounds),
                                   "study/best_accuracy": best_of(acc, rounds)})

    def _curves(self, run: StudyRun, phase: str) -> dict[tuple[Cell, float, int], list[float]]:
        """The test-accuracy curves of the ``phase`` runs finished so far, by (cell, step, seed)."""
        by_label = {c.label(): c for c in self.cells}
        return {(by_label[name.split("/", 1)[1].rsplit("/lr=", 1)[0]], sim.algorithm.lr, sim.config.seed):
                run.outcomes[name].series(ACCURACY)  # by round: every round is evaluated
                for name, sim in run.simulations.items() if name.startswith(f"{phase}/")}

    def selections(self, run: StudyRun) -> dict[Cell, Selection]:
        """Each cell's step selection (:func:`select_steps`) from the tuning runs; a widening whose tuning runs have
        not run yet raises :class:`Widening` naming them."""
        b, curves = run.budget, self._curves(run, "tuning")

        def evaluate(pairs: list[tuple[Cell, float]]) -> None:
            if any((c, lr, s) not in curves for c, lr in pairs for s in b.tuning_seeds):
                raise Widening(pairs)

        return select_steps([c for c in self.cells if b.runs_table(c.table)], curves, b, self.select_target, evaluate)

    def runs(self, run: StudyRun) -> Runs:
        """The judged runs' curves at the cells' selected steps."""
        selections = self.selections(run)
        return Runs({(c, seed): acc for (c, _, seed), acc in self._curves(run, "judged").items()},
                    {c: s.step for c, s in selections.items()}, run.budget, selections)

    def figure(self, run: StudyRun, out: Path) -> None:
        """One panel per table the budget runs: test accuracy by round at 0% similarity and 5 epochs (SGD: 1), each
        method at its selected step on the first judged seed (Tables 3 and 5); rounds to the target against the
        share of clients sampled (Table 4, with the client-count figure's cells as stars)."""
        from fedbench.plotting import pyplot, save_figure

        runs, b = self.runs(run), run.budget
        shown = [t for t in (3, 4, 5) if b.runs_table(t) and any(c.table == t for c in self.cells)]
        fig, axes = pyplot().subplots(1, len(shown), figsize=(5 * len(shown), 4), squeeze=False)
        for ax, t in zip(axes[0], shown):
            if t == 4:
                self._sampling_panel(ax, runs)
                continue
            for c in self.cells:
                if c.table == t and c.similarity == 0 and c.epochs == (SGD_EPOCHS if c.method == "sgd" else 5):
                    ax.plot(runs.curves[(c, b.seeds[0])], label=f"{self.labels[c.method]} (step {runs.steps[c]:g})")
            if t == 3:
                ax.axhline(self.targets[3], color="grey", ls=":", lw=0.8)
            ax.set(title=f"Table {t}: {'logistic regression' if t == 3 else '2-layer network'}, 0% similarity, "
                         "5 epochs", xlabel="round", ylabel="test accuracy")
            ax.legend(fontsize=7)
        fig.suptitle(self.title, fontsize=10)
        save_figure(fig, out / f"{run.declaration.name}.png", dpi=120)

    def _sampling_panel(self, ax, runs: Runs) -> None:
        four = [c for c in self.cells if c.table == 4]
        for s, style in zip(self.judged_similarity, ("-", "--")):
            for m in ("scaffold", "fedavg"):
                cells = [c for c in four if (c.method, c.similarity) == (m, s)]
                ax.plot([100 * c.sampled for c in cells], [mean(runs.reached(c, self.targets[4], "first", 1.0))
                                                           for c in cells], style, marker="o",
                        label=f"{self.labels[m]}, {s}% sim.")
        for c, marker in zip([c for c in self.cells if c.table == 6], ("*", "X")):
            ax.plot([100 * c.sampled], [mean(runs.reached(c, self.targets[6], "first", 1.0))], marker, ms=10, ls="",
                    label=f"{self.labels[c.method]}, {round(c.sampled * c.clients)} clients, {c.epochs} epoch (slides)")
        ax.axhline(runs.budget.rounds, color="grey", ls=":", lw=0.8, label="never (counts as the rounds run)")
        ax.set(title="Table 4: 400 clients, 5 epochs (stars: 1 epoch)", xlabel="% of clients sampled",
               ylabel=f"rounds to {self.targets[4]} (mean)", xscale="log")
        ax.legend(fontsize=7)
