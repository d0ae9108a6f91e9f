"""What FedProxVR's two real-data studies share (fedbench.studies.fedproxvr_mnist: the slides' Table 2 on MNIST;
fedbench.studies.fedproxvr_fashion: Tables 1 and 2 on Fashion-MNIST): the slides' tables, an arm as a simulation
(FedAvg, or FedProxVR with the SVRG or SARAH estimator), the reading (best test accuracy pooled over every user's test
images), one table's measurement (:class:`Table`: each VR method minus FedAvg, per seed, and what an entry reports of
it), the figure, and the hooks both studies are run by (:class:`TableStudy`, fedbench.study.contract). Not a study,
and neither study builds on the other: each keeps its declaration and a TableStudy of its settings (how a table's
tau, batch and step become a run, which tables a budget runs) and its entries' own fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fedbench.claims.papers import FEDPROXVR_PAPER
from fedbench.claims.verdict import Part, Rule
from fedbench.engine.evaluation import DEFAULT_EVALUATIONS
from fedbench.study.contract import Measurement
from fedbench.study.declaration import Arm, Claim, StudyDeclaration
from fedbench.study.scale import Scale

if TYPE_CHECKING:
    from fedbench.study.contract import StudyRun
    from fedbench.study.runner import Outcome, Simulation

PAPER_ROUNDS = 1000  # the authors' Numb_Glob_I; the tables' T: 895-995
READINGS = ("best", "tail", "final")
READING_NAMES = {"best": "best evaluation", "tail": "mean of the last 5", "final": "final round"}
BASELINE = "FedAvg"  # every table's first row; the VR methods are judged against it
# each VR method's part (its accuracy minus FedAvg's): the rule both studies' claims declare (Table.parts reads it)
GAIN_RULE = Rule("greater", 0.0, "accuracy points")

PUBLISHED_TABLE_1 = [  # copied from the slides (convex task)
    {"algorithm": "FedAvg", "tau": 10, "beta": 10, "mu": 0, "B": 16, "T": 983, "accuracy": 84.02},
    {"algorithm": "FedProxVR (SVRG)", "tau": 20, "beta": 10, "mu": 0.1, "B": 32, "T": 895, "accuracy": 84.12},
    {"algorithm": "FedProxVR (SARAH)", "tau": 20, "beta": 5, "mu": 0.1, "B": 32, "T": 965, "accuracy": 84.21},
]
PUBLISHED_TABLE_2 = [  # copied from the slides (non-convex task; dataset and model not stated)
    {"algorithm": "FedAvg", "tau": 20, "beta": 10, "mu": 0, "B": 16, "T": 995, "accuracy": 93.52},
    {"algorithm": "FedProxVR (SVRG)", "tau": 20, "beta": 10, "mu": 0.01, "B": 16, "T": 970, "accuracy": 94.06},
    {"algorithm": "FedProxVR (SARAH)", "tau": 20, "beta": 9, "mu": 0.01, "B": 32, "T": 958, "accuracy": 93.75},
]


def declaration(name: str, dataset: str, variant: str, arms: tuple[Arm, ...], budgets: dict[str, Any],
                scales: tuple[Scale, ...], claims: tuple[Claim, ...]) -> StudyDeclaration:
    """A FedProxVR real-data study's declaration (fedbench.study.declaration) with what both share: the paper, the
    paper budget's training seeds, no data seed (the registered not-run entries name none) and the authors'
    protocol, every round on all users (their eval_every = 1; fedbench.engine.evaluation.DEFAULT_EVALUATIONS)."""
    return StudyDeclaration(name=name, paper=FEDPROXVR_PAPER, dataset=dataset, variants=(variant,), arms=arms,
                            seeds=budgets["paper"].seeds, data_seeds=(), budgets=budgets,
                            evaluation=DEFAULT_EVALUATIONS, scales=scales, claims=claims)


def simulation(name: str, method: str, dataset: Callable[[], Any], model: str, knobs: dict[str, Any], *, lr: float,
               mu: float, tau: int, fedavg_work: dict[str, int], vr: dict[str, float] | None = None,
               **config: Any) -> Simulation:
    """Run ``name`` of arm ``method``: FedAvg with ``fedavg_work`` (its local epochs or steps), or FedProxVR with
    estimator ``method`` (SVRG, SARAH: the full-gradient step, then tau - 1 minibatch steps) and the fields ``vr``;
    ``config``: the run's SimulationConfig fields (rounds, users a round, batch, seed, device, evaluations)."""
    from fedbench.algorithms.fedavg import FedAvg
    from fedbench.algorithms.fedproxvr import FedProxVR
    from fedbench.study.runner import Simulation, sim_config
    from fedbench.studies.real_data import build

    if method == BASELINE:
        cfg = sim_config(**fedavg_work, **config)
        algorithm: Any = FedAvg(lr=lr)
    else:
        cfg = sim_config(local_steps=tau - 1, **config)
        algorithm = FedProxVR(lr=lr, mu=mu, tau=tau, estimator=method.lower(), **(vr or {}))
    return Simulation(name, cfg, dataset, build(model, dataset()), algorithm, knobs)


def accuracy(outcome: Outcome, reading: str, rounds: int, budget: float = 1.0) -> float:
    """A run's test accuracy (%) under ``reading`` (fedbench.claims.readings: best, tail, final)."""
    from fedbench.claims.readings import read_accuracy

    return 100 * read_accuracy(outcome.series("train/loss"), outcome.series("test/accuracy"), reading, rounds, budget)


def method_of(arm: str) -> str:
    """FedAvg, SVRG or SARAH: the method of arm ``<method>`` or ``<model>/<method>``."""
    return arm.rsplit("/", 1)[-1]


def real_root(run: StudyRun) -> str:
    """Where the run finds its real variants (default fedbench.studies.real_data.REAL_ROOT)."""
    from fedbench.studies.real_data import REAL_ROOT

    return str(REAL_ROOT if run.real_root is None else run.real_root)


@dataclass(frozen=True)
class Table:
    """One table as run: its ``claim`` (which reads FedAvg's arm, then the VR methods') and the ``run``, whose outcomes
    are keyed (claim id, method, seed) as :meth:`TableStudy.simulations` names them."""

    claim: Claim
    run: StudyRun

    @property
    def methods(self) -> list[str]:
        return [method_of(a) for a in self.claim.reads]

    def accuracy(self, method: str, seed: int, reading: str = "best", budget: float = 1.0) -> float:
        return accuracy(self.run.outcomes[(self.claim.id, method, seed)], reading, self.run.rounds, budget)

    def parts(self) -> list[Part]:
        """Each VR method minus FedAvg, by the rule the claim declares (GAIN_RULE)."""
        return [Part(f"{m} - {BASELINE}", self.claim.rule_for()) for m in self.methods if m != BASELINE]

    def gains(self, reading: str, budget: float) -> list[list[float]]:
        """Per part, per seed: the VR method's accuracy minus FedAvg's, both read with ``reading`` at ``budget``."""
        return [[self.accuracy(m, s, reading, budget) - self.accuracy(BASELINE, s, reading, budget)
                 for s in self.run.seeds] for m in self.methods if m != BASELINE]

    def best(self) -> dict[str, list[float]]:
        """Each method's best accuracy per seed."""
        return {m: [self.accuracy(m, s) for s in self.run.seeds] for m in self.methods}

    def observed(self, seeds: str, slides: str) -> str:
        """What the entry observed: each method's best accuracy (mean over ``seeds``, e.g. "5 seeds"), the
        ``slides``' values, and each VR method's effect (its part's rule's, of the same per-seed values)."""
        from fedbench.claims.stats import fmt_effect

        best = ", ".join(f"{m} {np.mean(v):.2f}%" for m, v in self.best().items())
        effects = "; ".join(f"{p.label} {fmt_effect(p.rule.counted().effect(v))}"
                            for p, v in zip(self.parts(), self.gains("best", 1.0)))
        return f"best test accuracy (mean of {seeds}): {best} ({slides}); VR - FedAvg: {effects}"

    def reproduced(self) -> dict[str, Any]:
        """Each method's best accuracy per seed."""
        return {"unit": f"best test accuracy (%) within {self.run.rounds} rounds",
                **{m: [round(v, 3) for v in vs] for m, vs in self.best().items()}}

    def curves(self) -> dict[str, np.ndarray]:
        """Each method's test accuracy (%) by round, the mean over the seeds."""
        return {m: np.mean([100 * np.array(self.run.outcomes[(self.claim.id, m, s)].series("test/accuracy"))
                            for s in self.run.seeds], 0) for m in self.methods}


@dataclass(frozen=True)
class TableStudy:
    """What a FedProxVR table study sets (fedproxvr_mnist and fedproxvr_fashion differ only here), and the hooks both
    are run by (fedbench.study.contract: :meth:`simulations`, :meth:`record`, :meth:`measure`, :meth:`figure`).

    ``simulation(arm, seed, budget, real_root)``: an arm's run; ``entry(table)``: a judged table's entry fields of
    its own (scale, deviations, figure, observed); ``title(claim, budget)``: its figure panel's title; ``tables``:
    the claims (tables) a budget runs, by id (None: every declared one); ``not_run(claim)``: the measurement of a
    table the budget leaves out."""

    name: str
    simulation: Callable[[str, int, Any, str], Simulation]
    entry: Callable[[Table], dict[str, Any]]
    title: Callable[[Claim, Any], str]
    tables: Callable[[Any], Sequence[str]] | None = None
    not_run: Callable[[Claim], Measurement] | None = None

    def run_tables(self, run: StudyRun) -> list[Claim]:
        """The declared claims whose table the run's budget runs."""
        ids = None if self.tables is None else self.tables(run.budget)
        return [c for c in run.declaration.claims if ids is None or c.id in ids]

    def simulations(self, run: StudyRun) -> dict[tuple[str, str, int], Simulation]:
        """Every arm each table reads, on every seed, by (claim id, method, seed), table by table, seed-major."""
        return {(c.id, method_of(a), s): self.simulation(a, s, run.budget, real_root(run))
                for c in self.run_tables(run) for s in run.seeds for a in c.reads}

    @staticmethod
    def record(sim: Simulation, outcome: Outcome) -> dict[str, Any]:
        """A run's record (fedbench.study.record.sim_record) with its best test accuracy as the study's metric."""
        from fedbench.study.record import sim_record

        best = accuracy(outcome, "best", sim.config.rounds)
        return sim_record(sim, outcome, metrics={"study/best_test_accuracy": best})

    def measure(self, claim: Claim, run: StudyRun) -> Measurement:
        """Each VR method minus FedAvg per seed (best accuracy; the mean of the last 5 and the final round the
        sensitivity), with the study's entry fields; a table the budget leaves out is not run (``not_run``)."""
        if self.not_run is not None and claim not in self.run_tables(run):
            return self.not_run(claim)
        table = Table(claim, run)
        return Measurement(table.parts(), table.gains, "best", READINGS, paper_budget=PAPER_ROUNDS / run.rounds,
                           reading_names=READING_NAMES, entry={
                               "fidelity": "stand-in" if run.budget_name == "fixture" else claim.fidelity,
                               "training_seeds": list(run.seeds), "reproduced": table.reproduced(),
                               **self.entry(table)})

    def figure(self, run: StudyRun, out: Path) -> None:
        """One panel per table run: each method's test accuracy, mean over seeds, with the slides' values dotted."""
        figure(out / f"{self.name}.png", {self.title(c, run.budget): (Table(c, run).curves(), c.published["table"])
                                          for c in self.run_tables(run)})


def figure(path: Path, panels: dict[str, tuple[dict[str, np.ndarray], list[dict[str, Any]]]]) -> None:
    """One panel per table run (title: (curves, the slides' rows)): each method's test accuracy, mean over seeds,
    with the slides' values dotted."""
    from fedbench.plotting import pyplot, save_figure

    fig, axes = pyplot().subplots(1, len(panels), figsize=(6.5 * len(panels), 4), squeeze=False)
    for ax, (title, (curves, published)) in zip(axes[0], panels.items()):
        for (name, acc), style in zip(curves.items(), ("-", "-", "--")):
            ax.plot(acc, style, label=name)
        for row in published:
            ax.axhline(row["accuracy"], color="grey", ls=":", lw=0.6)
        ax.set(xlabel="round", ylabel="test accuracy (%), mean over seeds", title=title)
        ax.legend(fontsize=8)
    save_figure(fig, path, dpi=120)
