"""What FedProxVR's two real-data studies share (fedbench.studies.fedproxvr_mnist: the slides' Table 2 on MNIST;
fedbench.studies.fedproxvr_fashion: Tables 1 and 2 on Fashion-MNIST): the slides' tables, an arm as a simulation
(FedAvg, or FedProxVR with the SVRG or SARAH estimator), the reading (best test accuracy pooled over every user's test
images), the judgement of one table (each VR method minus FedAvg, per seed), what an entry reports of it, and the
figure. Not a study, and neither study builds on the other: each keeps its declaration, its settings (how a table's
tau, batch and step become a run) and its entries; this module is the logic they would otherwise both copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fedbench.claims.papers import FEDPROXVR_PAPER
from fedbench.claims.verdict import Rule
from fedbench.engine.evaluation import DEFAULT_EVALUATIONS
from fedbench.study.declaration import Arm, Claim, StudyDeclaration
from fedbench.study.scale import Scale

if TYPE_CHECKING:
    from fedbench.study.runner import Outcome, Simulation

PAPER_ROUNDS = 1000  # the authors' Numb_Glob_I; the tables' T: 895-995
READINGS = ("best", "tail", "final")
READING_NAMES = {"best": "best evaluation", "tail": "mean of the last 5", "final": "final round"}
BASELINE = "FedAvg"  # every table's first row; the VR methods are judged against it
# each VR method's part (its accuracy minus FedAvg's): the rule both studies' claims declare and judge_table judges by
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


def record(rounds: int) -> Callable[[Simulation, Outcome], dict[str, Any]]:
    """A run's record (fedbench.study.record.sim_record) with its best test accuracy as the study's metric."""
    from fedbench.study.record import sim_record

    return lambda sim, o: sim_record(sim, o, metrics={"study/best_test_accuracy": accuracy(o, "best", rounds)})


def judge_table(run_of: Callable[[str, int], Outcome], methods: Sequence[str], seeds: Sequence[int],
                rounds: int) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """One table judged (fedbench.claims.verdict.judge): per seed, each VR method's best test accuracy minus FedAvg's
    (``methods``: FedAvg first; ``run_of(method, seed)``: the run); and each method's best accuracy per seed."""
    from fedbench.claims.verdict import Part, judge

    def acc(m: str, s: int, reading: str, bud: float) -> float:
        return accuracy(run_of(m, s), reading, rounds, bud)

    vr = [m for m in methods if m != BASELINE]
    parts = [Part(f"{m} - {BASELINE}", GAIN_RULE) for m in vr]
    result = judge(parts, lambda r, bud: [[acc(m, s, r, bud) - acc(BASELINE, s, r, bud) for s in seeds] for m in vr],
                   "best", READINGS, paper_budget=PAPER_ROUNDS / rounds, reading_names=READING_NAMES)
    return result, {m: [acc(m, s, "best", 1.0) for s in seeds] for m in methods}


def observed(best: dict[str, list[float]], result: dict[str, Any], seeds: str, slides: str) -> str:
    """What a table's entry observed: each method's best accuracy (mean over ``seeds``, e.g. "5 seeds"), the
    ``slides``' values, and each VR method's effect."""
    from fedbench.claims.stats import fmt_effect

    return (f"best test accuracy (mean of {seeds}): " + ", ".join(f"{m} {np.mean(v):.2f}%" for m, v in best.items())
            + f" ({slides}); VR - FedAvg: " + "; ".join(f"{p['part']} {fmt_effect(p)}" for p in result["parts"]))


def reproduced(best: dict[str, list[float]], rounds: int) -> dict[str, Any]:
    """An entry's reproduced values: each method's best accuracy per seed."""
    return {"unit": f"best test accuracy (%) within {rounds} rounds", **{m: [round(v, 3) for v in best[m]] for m in best}}


def mean_curves(run_of: Callable[[str, int], Outcome], methods: Sequence[str],
                seeds: Sequence[int]) -> dict[str, np.ndarray]:
    """Each method's test accuracy (%) by round, the mean over ``seeds``."""
    return {m: np.mean([100 * np.array(run_of(m, s).series("test/accuracy")) for s in seeds], 0) for m in methods}


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
