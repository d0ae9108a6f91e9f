"""What Mime's real-data studies share (Karimireddy et al., "Mime", 2020; talk slides, Figure 3): the arms, the
sampling, the evaluation protocol, the readings, the parts of a claim (one arm minus another, per seed) and the
figure, held once (issue 30: the duplication mime_emnist ~ mime_fashion), and the EMNIST-62 setting with the hooks
(fedbench.study.contract) of every study on it (:class:`Femnist`): fedbench.studies.mime_emnist (the SGDm panel's
ordering) and its variant fedbench.studies.mime_emnist_adam (the Adam panel and the server-only baselines, other arms
and claims on the same data) each hold their declaration and a :class:`Femnist` setting, and take these hooks.
fedbench.studies.mime_fashion (Fashion-MNIST, logistic regression, each arm's step selected) is the stand-in for
mime_emnist's claim; its own hooks add the step selection.

- Arms (:func:`arms`): Mime and MimeLite on SGDm (beta = MOMENTUM, undampened: m <- g + beta m) and FedAvg with server
  momentum (FedAvgM: the same beta, server step 1), the baseline.
- Sampling: users drawn with probability n_k / n and averaged with equal weights (the simple means of Mime's
  Algorithm 1), so every simulation runs with ``sampling="proportional"`` (:func:`simulation`).
- Evaluation (:data:`EVALUATION`; the slides state none): FedJAX's EMNIST protocol (google/fedjax
  experiments/fed_avg/fed_avg.EMNIST_CONV.flags: ``eval_frequency=5``): the accuracy on every user's own test
  images, pooled, every EVAL_EVERY = 5 rounds from round 0 and on the final model; no training-loss evaluation.
- Readings (:func:`accuracy`): a run's test accuracy curve at the protocol's rounds (0 from the round it diverged
  on), read by fedbench.claims.readings.read_curve (best, the mean of the last 5, final); a budget cut reads the
  evaluations up to it.
- The parts (:func:`differences`): per judged seed, one arm minus another, in points (the ordering claim: Mime minus
  FedAvgM and MimeLite minus FedAvgM, each greater than 0, :data:`ORDERING_RULE`, which both of its studies declare).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.claims.stats import fmt_effect
from fedbench.claims.verdict import Part, Rule
from fedbench.engine.evaluation import EvalSpec
from fedbench.study.contract import Measurement, StudyRun
from fedbench.study.declaration import Arm, Claim

BASELINE = "FedAvgM"
ORDERING_RULE = Rule("greater", 0.0, "accuracy points")  # each part of the ordering claim (both studies declare it)
MOMENTUM = 0.9  # SGDm beta
EVAL_EVERY = 5  # FedJAX's EMNIST eval_frequency; and the final model
EVALUATION = (EvalSpec("test", metrics=("test/loss", "test/accuracy"), every=EVAL_EVERY),)
MOMENTUM_NOTE = (f"SGDm with beta = {MOMENTUM:g}, undampened (m <- g + beta m): Mime's and MimeLite's base optimizer "
                 "and FedAvgM's server momentum (server step 1)")
SCOPE_NOTE = "SGDm only: the figure's Adam panel and CIFAR-100 are not part of this claim"
READINGS = ("best", "tail", "final")  # EMNIST-62's readings (best the primary); mime_fashion has its own
READING_NAMES = {"best": "best evaluation", "tail": "mean of the last 5 evaluations", "final": "final model"}
FEDAVG = (BASELINE, "FedAdam")  # the FedAvg arms, dashed in the figures (server-only baselines dotted)


def arms(lr: float | None = None) -> tuple[Arm, ...]:
    """Mime, MimeLite and FedAvgM on SGDm; ``lr`` their one local step (None: each run gives its own)."""
    step = {} if lr is None else {"lr": lr}
    return (Arm("Mime", "mime", step | {"variant": "mime", "base": "sgdm", "momentum": MOMENTUM}),
            Arm("MimeLite", "mime", step | {"variant": "mimelite", "base": "sgdm", "momentum": MOMENTUM}),
            Arm(BASELINE, "fedavg_momentum", step | {"beta": MOMENTUM, "server_lr": 1.0}))


def algorithm(arm: Arm, *lr: float) -> Any:
    """``arm``'s algorithm from its declared settings (fedbench.algorithms.build_algorithm), at step ``lr`` where
    its settings name none."""
    from fedbench.algorithms import build_algorithm

    return build_algorithm(arm.algorithm, *lr, **arm.settings)


def simulation(name: str, variant: str, real_root: str | Path, model: Any, alg: Any, knobs: dict[str, Any],
               **config: Any) -> Any:
    """One run on real variant ``variant``: users sampled by size and averaged with equal weights, the protocol's
    evaluations, no dissimilarity; ``config`` the rest of its fedbench.study.runner.sim_config (rounds, local work,
    seed, device)."""
    from fedbench.study.runner import Simulation, sim_config
    from fedbench.studies.real_data import load_real

    dataset = functools.partial(load_real, variant, str(real_root))
    cfg = sim_config(sampling="proportional", evaluations=EVALUATION, dissimilarity_every=0, **config)
    return Simulation(name, cfg, dataset, model, alg, knobs)


def curve(outcome, rounds: int, budget: float = 1.0, every: int = EVAL_EVERY) -> np.ndarray:
    """A run's test accuracy (%) at the protocol's rounds (fedbench.claims.readings.evaluation_rounds): 0 from the
    round it diverged on and where it never got (fedbench.claims.readings.accuracy_at)."""
    from fedbench.claims.readings import accuracy_at, evaluation_rounds

    dead = int(outcome.history[-1]["round"]) if outcome.diverged else None
    return accuracy_at(outcome.at_rounds("test/accuracy"), evaluation_rounds(rounds, every, budget), dead)


def accuracy(outcome, reading: str, rounds: int, budget: float = 1.0, every: int = EVAL_EVERY) -> float:
    """A run's test accuracy (%) under ``reading`` (best, tail: the mean of the last 5, final;
    fedbench.claims.readings.read_curve), read by round at the protocol's evaluations."""
    from fedbench.claims.readings import read_curve

    return read_curve(curve(outcome, rounds, budget, every), reading)


def differences(acc: Callable[[str, int, str, float], float], pairs: Sequence[tuple[str, str]],
                seeds: Sequence[int]) -> Callable[[str, float], list[list[float]]]:
    """The values of parts ``pairs`` ((arm, against) each) read with ``reading`` at ``budget``: per seed, ``acc(arm,
    seed, reading, budget)`` minus the same of ``against``, in points."""
    return lambda reading, budget: [[acc(a, s, reading, budget) - acc(b, s, reading, budget) for s in seeds]
                                    for a, b in pairs]


def effects(parts: Sequence[Part], values: Callable[[str, float], list[list[float]]], reading: str) -> str:
    """Each part's effect read with ``reading`` over every round run, as an entry's observed text states them
    ("Mime - FedAvgM +1.2 [+0.3, +2.1] accuracy points; ...")."""
    return "; ".join(f"{p.label} {fmt_effect(p.rule.counted().effect(v))}" for p, v in zip(parts, values(reading, 1.0)))


def draw(path: Path, rounds: int, panels: Sequence[tuple[str, dict[str, np.ndarray]]]) -> None:
    """Mean test-accuracy curves at the protocol's evaluations of ``rounds`` rounds, one panel per (title, {name:
    curve}) of ``panels`` (the FedAvg arms dashed, the server-only baselines dotted)."""
    from fedbench.claims.readings import evaluation_rounds
    from fedbench.plotting import pyplot, save_figure

    fig, axes = pyplot().subplots(1, len(panels), figsize=(6.5 if len(panels) == 1 else 11, 4), sharey=True,
                                  squeeze=False)
    for ax, (title, curves) in zip(axes[0], panels):
        for name, acc in curves.items():
            style = ":" if name.startswith("server-only") else "--" if name.startswith(FEDAVG) else "-"
            ax.plot(evaluation_rounds(rounds, EVAL_EVERY), acc, style, label=name)
        ax.set(xlabel="round", title=title)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("test accuracy (%), mean over seeds")
    save_figure(fig, path, dpi=120)


# the EMNIST-62 studies (mime_emnist, mime_emnist_adam): LEAF's FEMNIST FedAvg runs, 1 epoch of LEAF's default batch,
# LEAF's CNN at LEAF's FEMNIST rate (paper_experiments/femnist.sh), their scales and the data's size
LEAF_EPOCHS, LEAF_BATCH = 1, 10
FEMNIST_MODEL = "leaf_femnist_cnn"
FEMNIST_LR = 0.004
# femnist_leaf: 3,500 writers, 805,263 images, 90% train; the test images evaluated every EVAL_EVERY rounds
WRITERS, IMAGES, TRAIN_FRACTION = 3500, 805263, 0.9
MEAN_WRITER_IMAGES = IMAGES * TRAIN_FRACTION / WRITERS  # mean training images of a writer (~207)
EPOCH_STEPS = math.ceil(MEAN_WRITER_IMAGES / LEAF_BATCH)  # local minibatch steps of one epoch


@dataclass(frozen=True)
class FemnistBudget:
    """One scale of an EMNIST-62 study: rounds, writers a round, seeds, the model and where it runs."""

    rounds: int
    clients_per_round: int
    seeds: tuple[int, ...]
    device: str
    model: str = FEMNIST_MODEL


FEMNIST_BUDGETS = {
    "paper": FemnistBudget(rounds=500, clients_per_round=35, seeds=(0, 1, 2, 3, 4), device="auto"),
    # the test suite's: LEAF's CNN (6.6M parameters) takes about 40 s here for 2 rounds of 6 runs on 2 shared cores,
    # so the fixture trains the Delta-FL EMNIST ConvNet (115k parameters, the same 28x28 input and 62 classes)
    "fixture": FemnistBudget(rounds=2, clients_per_round=2, seeds=(0, 1), device="cpu", model="deltafl_emnist_cnn"),
}


def femnist_simulation(declaration: Any, method: str, seed: int, budget: Any, real_root: str | Path) -> Any:
    """Arm ``method`` of an EMNIST-62 study's ``declaration`` on femnist_leaf with ``budget.model``: writers sampled
    by size and averaged with equal weights, LEAF's epoch of batch 10, the arm's algorithm from its settings."""
    from fedbench.studies.real_data import build, load_real

    variant = declaration.variants[0]
    return simulation(f"{method}/seed={seed}", variant, real_root, build(budget.model, load_real(variant, str(real_root))),
                      algorithm(declaration.arm(method)), {"method": method, "dataset": variant, "model": budget.model},
                      rounds=budget.rounds, clients_per_round=budget.clients_per_round, local_epochs=LEAF_EPOCHS,
                      batch_size=LEAF_BATCH, seed=seed, device=budget.device)


@dataclass(frozen=True)
class Femnist:
    """An EMNIST-62 study's setting beyond its declaration, and its hooks (fedbench.study.contract), which read it:
    each claim's parts (``pairs``, by claim id: (arm, against) each, judged with the claim's rule), the step sizes
    and optimizer settings its entries' scale states (``steps``), what it assumes where the slides are silent (its
    entries' deviations) and its figure's ``panels`` (the end of a panel's title, the arms it draws). Every (arm,
    seed) runs once (:func:`femnist_simulation`) and is read by its best test accuracy."""

    pairs: dict[str, tuple[tuple[str, str], ...]]
    steps: dict[str, Any]
    assumptions: tuple[str, ...]
    panels: tuple[tuple[str, tuple[str, ...]], ...]

    def simulations(self, run: StudyRun) -> dict[tuple[str, int], Any]:
        """Every arm on every judged seed, seed by seed."""
        return {(a.name, s): femnist_simulation(run.declaration, a.name, s, run.budget, real_root(run))
                for s in run.seeds for a in run.declaration.arms}

    @staticmethod
    def record(sim: Any, outcome: Any) -> dict[str, Any]:
        """A run's record: its test accuracy by round and its best test accuracy."""
        from fedbench.study.record import sim_record

        return sim_record(sim, outcome, keys=("round", "test/accuracy"), metrics={
            "study/best_test_accuracy": accuracy(outcome, "best", sim.config.rounds)})

    def measure(self, claim: Claim, run: StudyRun) -> Measurement:
        """Claim ``claim``'s parts (its ``pairs``) per seed by best test accuracy (the other readings and budgets
        the sensitivity), and its entry: the arms it reads at their best, the scale and the setting's assumptions."""
        from fedbench.studies.real_data import load_real

        b, d = run.budget, run.declaration

        def acc(m, s, reading, bud):
            return accuracy(run.outcomes[(m, s)], reading, b.rounds, bud)

        pairs = self.pairs[claim.id]
        parts = [Part(f"{a} - {against}", claim.rule_for()) for a, against in pairs]
        values = differences(acc, pairs, b.seeds)
        best = {m: [acc(m, s, "best", 1.0) for s in b.seeds] for m in claim.reads}
        observed = ("best test accuracy (mean of seeds): " + ", ".join(f"{m} {np.mean(best[m]):.2f}%" for m in claim.reads)
                    + "; " + effects(parts, values, "best"))
        variant = d.variants[0]
        scale = {"study": d.name, "budget": run.budget_name, "variant": variant, "model": b.model,
                 "writers": load_real(variant, str(real_root(run))).num_clients,
                 "writers_per_round": b.clients_per_round, "sampling": "proportional (equal-weight means)",
                 "rounds": b.rounds, "local_epochs": LEAF_EPOCHS, "batch_size": LEAF_BATCH, **self.steps,
                 "eval": f"test accuracy every {EVAL_EVERY} rounds and the final model, all writers", "device": b.device}
        fixture = (f"{b.rounds} rounds, {b.clients_per_round} writers a round and model {b.model}: the test suite's "
                   "fixture scale")
        return Measurement(parts, values, "best", READINGS, reading_names=READING_NAMES, entry=dict(
            scale=scale, deviations=([fixture] if run.budget_name != "paper" else []) + list(self.assumptions),
            figure={"path": f"figures/{d.name}/{d.name}.png", "panel": "test accuracy"}, fidelity=claim.fidelity,
            rounds_run=b.rounds, training_seeds=list(b.seeds), observed=observed,
            reproduced={"unit": f"best test accuracy (%) within {b.rounds} rounds",
                        **{m: [round(v, 3) for v in best[m]] for m in claim.reads}}))

    def figure(self, run: StudyRun, out: Path) -> None:
        """The arms' mean test-accuracy curves, one panel per entry of ``panels``."""
        from fedbench.studies.real_data import load_real

        b, d = run.budget, run.declaration
        curves = {a.name: np.mean([curve(run.outcomes[(a.name, s)], b.rounds) for s in b.seeds], 0) for a in d.arms}
        head = f"{d.variants[0]} ({load_real(d.variants[0], str(real_root(run))).num_clients} writers), {b.model}"
        draw(out / f"{d.name}.png", b.rounds, [(f"{head}, {title}", {m: curves[m] for m in names})
                                               for title, names in self.panels])


def real_root(run: StudyRun) -> Path:
    """Where the study's real variants are (data/real unless the run names a folder)."""
    from fedbench.studies.real_data import REAL_ROOT

    return Path(REAL_ROOT) if run.real_root is None else run.real_root

