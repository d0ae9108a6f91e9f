"""What Mime's two real-data studies share (Karimireddy et al., "Mime", 2020; talk slides, Figure 3, SGDm panel):
fedbench.studies.mime_emnist (FEMNIST, LEAF's CNN, one step for every arm) and its stand-in
fedbench.studies.mime_fashion (Fashion-MNIST, logistic regression, each arm's step selected) judge the same
ordering claim with the same arms, evaluation protocol and readings, so this module holds them once (issue 30: the
duplication mime_emnist ~ mime_fashion). Each study keeps its own declaration, budgets, local work and entry.
fedbench.studies.mime_emnist_adam (the Adam panel and the server-only baselines on FEMNIST) takes its SGDm settings,
baseline, simulation, evaluation protocol and readings from here too; its own rules are in mime_emnist_adam_claims.

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
- The rule (:func:`judge_ordering`): per judged seed, Mime minus FedAvgM and MimeLite minus FedAvgM, in points; each
  part greater than 0 (:data:`ORDERING_RULE`, which both studies' claims declare).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.claims.verdict import Rule
from fedbench.engine.evaluation import EvalSpec
from fedbench.study.declaration import Arm

BASELINE = "FedAvgM"
ORDERING_RULE = Rule("greater", 0.0, "accuracy points")  # each part of the ordering claim (both studies declare it)
MOMENTUM = 0.9  # SGDm beta
EVAL_EVERY = 5  # FedJAX's EMNIST eval_frequency; and the final model
EVALUATION = (EvalSpec("test", metrics=("test/loss", "test/accuracy"), every=EVAL_EVERY),)
MOMENTUM_NOTE = (f"SGDm with beta = {MOMENTUM:g}, undampened (m <- g + beta m): Mime's and MimeLite's base optimizer "
                 "and FedAvgM's server momentum (server step 1)")
SCOPE_NOTE = "SGDm only: the figure's Adam panel and CIFAR-100 are not part of this claim"


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


def judge_ordering(acc: Callable[[str, int, str, float], float], methods: Sequence[str], seeds: Sequence[int],
                   primary: str, readings: Sequence[str], reading_names: dict[str, str]) -> dict[str, Any]:
    """The ordering claim's verdict (fedbench.claims.verdict.judge): per seed, each arm of ``methods`` but the
    baseline minus FedAvgM (``acc(method, seed, reading, budget)``, in points), each part greater than 0
    (:data:`ORDERING_RULE`)."""
    from fedbench.claims.verdict import Part, judge

    others = [m for m in methods if m != BASELINE]
    parts = [Part(f"{m} - {BASELINE}", ORDERING_RULE) for m in others]
    return judge(parts, lambda r, bud: [[acc(m, s, r, bud) - acc(BASELINE, s, r, bud) for s in seeds] for m in others],
                 primary, readings, reading_names=reading_names)


def figure(path: Path, rounds: int, curves: dict[str, np.ndarray], title: str) -> None:
    """The arms' mean test-accuracy curves at the protocol's evaluations of ``rounds`` rounds (the baseline dashed)."""
    from fedbench.claims.readings import evaluation_rounds
    from fedbench.plotting import pyplot, save_figure

    fig, ax = pyplot().subplots(1, 1, figsize=(6.5, 4))
    for (name, acc), style in zip(curves.items(), ("-", "-", "--")):
        ax.plot(evaluation_rounds(rounds, EVAL_EVERY), acc, style, label=name)
    ax.set(xlabel="round", ylabel="test accuracy (%), mean over seeds", title=title)
    ax.legend(fontsize=8)
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


def run_femnist(out_dir: str | Path, declaration: Any, budget: str, workers: int, real_root: str | Path,
                seeds: tuple[int, ...] | None = None) -> tuple:
    """Every (arm, seed) of an EMNIST-62 study at ``budget``, on training ``seeds`` if given (a confirmatory run's
    frozen block: fedbench.study.runs.open_seeded), each recorded with its best test accuracy: (the budget, the
    study's runs, the arms' names, the outcomes by (arm, seed), the declaration on the seeds run)."""
    from fedbench.study.record import sim_record
    from fedbench.study.runs import open_seeded

    b, study, declaration = open_seeded(out_dir, declaration, budget, workers, seeds)
    methods = [a.name for a in declaration.arms]
    runs = study.run_jobs([(m, s) for s in b.seeds for m in methods],
                          lambda m, s: femnist_simulation(declaration, m, s, b, real_root),
                          lambda sim, o: sim_record(sim, o, keys=("round", "test/accuracy"), metrics={
                              "study/best_test_accuracy": accuracy(o, "best", b.rounds)}))
    study.write()
    return b, study, methods, runs, declaration
