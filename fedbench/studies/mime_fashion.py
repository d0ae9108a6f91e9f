"""Mime and MimeLite vs FedAvg with server momentum on full Fashion-MNIST (Karimireddy et al., "Mime", 2020; talk
slides, Figure 3, SGDm panel): the ordering claim of fedbench.studies.mime_emnist on a dataset this machine has
(Debian's dataset-fashion-mnist, issue 22), labelled stand-in and kept out of the headline tally.

Why Fashion-MNIST stands in for EMNIST-62: 28 x 28 grey images split over clients with a strong label skew, which
is the client drift Mime's correction targets; its split (fashion_mnist_fedproxvr: FedProxVR's 100 users of two
labels each with power-law sizes, 75/25 train/test per user) is a published federated split of this very data.
What could differ: 10 classes, not 62; a synthetic two-label skew with power-law sizes, not the natural writer
split (3,500 writers, each with many classes); a convex model (multinomial logistic regression), not a network,
so the non-convex drift Mime was shown on is absent; and our budget (200 rounds) and step sizes, where the slides
give none.

Setting, fixed before any run (the slides give no numbers, split, rounds or rates; paper-setups.md section 2.3):
- data: fashion_mnist_fedproxvr (100 users, 2 labels each, FedProxVR's power law, 75/25 split, data seed 0);
  test accuracy pooled over every user's test data;
- model: mclr (784 -> 10);
- 10 users a round, sampled with probability n_k / n and averaged with equal weights (the simple means of Mime's
  Algorithm 1, as mime_synthetic and mime_emnist);
- K = 10 local steps of batch 10 for every user (Algorithm 1's fixed K; mime_synthetic's), 200 rounds;
- SGDm with beta = 0.9, undampened: Mime's and MimeLite's base optimizer, FedAvgM's server momentum (server step 1);
- step sizes: each arm's local step is selected from the budget's lr_grid (0.003-0.3, a factor ~3 apart; the
  declaration's knob) by its test accuracy (mean of the last 5 evaluations) on its tuning_seeds (100, 101),
  disjoint from the judged seeds (0-4) and from the confirm seeds (1000 up), by fedbench.claims.selection: the
  best mean wins only by more than the spread between the tuning seeds, else the smallest step tied with it; a
  choice at an end of the grid widens it (the grid's ratio, at most 2 steps a side) until it is interior, or
  the entry says it stays at the edge. Until 2026-11-28 (issue 32: on CUDA the one tuning seed chose 0.1 for
  Mime, on the CPU 0.01) the step was the best mean on one tuning seed (100), ties to the smaller step;
- evaluation (DECLARATION.evaluation, every budget's): the slides state none. Ours is mime_emnist's, FedJAX's
  EMNIST protocol (google/fedjax experiments/fed_avg/fed_avg.EMNIST_CONV.flags: ``eval_frequency=5``): the
  accuracy on every user's own test images, pooled, every EVAL_EVERY = 5 rounds from round 0 and on the final
  model; no training-loss evaluation (no reading needs one; divergence is caught from the cohort's own losses,
  fedbench.engine.evaluation). Readings read those evaluations by round (fedbench.claims.readings: accuracy_at,
  read_curve);
- readings: the mean test accuracy of the last 5 evaluations (rounds 180-200; primary, as the tuning), the best
  and the final (sensitivity).

Cuts made for this machine before the first run (registered; the study had never run): the evaluation above
replaces an evaluation of every user's training and test data every round (91% of the projected 0.56 CPU-hours);
the grid loses 0.001 (put back by the widening where an arm's choice sits at 0.003) (with beta = 0.9 an effective step of 0.01,
too slow to move logistic regression far in 200 rounds of 10 steps; the tuning table says where each arm sits).
Measured here (2 cores shared with other jobs): about 0.1 s of CPU a round for Mime and MimeLite, 0.04 s for
FedAvgM, so the 45 runs (and 2 more an arm for each step the widening adds) are about 8 CPU-minutes.

What it shares with fedbench.studies.mime_emnist (the arms, the sampling, the evaluation protocol, the readings,
the parts and the figure) is fedbench.studies.mime_real; its hooks add the step selection: :func:`simulations`
names the tuning runs (the grid, then each widening :func:`tune` asks for) before the judged runs at the steps chosen.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.study.scale import Scale
from fedbench.claims.fidelity import data_label
from fedbench.claims.papers import MIME_PAPER
from fedbench.claims.selection import Selection, rule_text, select_all
from fedbench.claims.verdict import Part
from fedbench.study.contract import Measurement, StudyRun
from fedbench.studies import mime_real as shared
from fedbench.studies.mime_real import BASELINE, EVAL_EVERY, MOMENTUM, ORDERING_RULE, accuracy, curve, real_root
from fedbench.study.declaration import Claim, StudyDeclaration
from fedbench.studies.real_data import build, load_real

MODEL = "mclr"
ROUNDS, CLIENTS_PER_ROUND = 200, 10
LOCAL_STEPS, BATCH = 10, 10  # Algorithm 1's fixed K for every user (mime_synthetic's)
READINGS = ("tail", "best", "final")
READING_NAMES = {"tail": "mean of the last 5 evaluations", "best": "best evaluation", "final": "final round"}


@dataclass(frozen=True)
class Budget:
    """One scale of the study: rounds, users a round, judged and tuning seeds, the step-size grid, where it runs."""

    rounds: int
    clients_per_round: int
    seeds: tuple[int, ...]
    tuning_seeds: tuple[int, ...]  # step-size selection only (two or more), disjoint from the judged seeds
    lr_grid: tuple[float, ...]
    device: str

    def __post_init__(self):
        if len(self.tuning_seeds) < 2 or set(self.tuning_seeds) & set(self.seeds):
            raise ValueError(f"tuning seeds {self.tuning_seeds}: two or more, apart from the judged {self.seeds}")


BUDGETS = {
    "paper": Budget(ROUNDS, CLIENTS_PER_ROUND, seeds=(0, 1, 2, 3, 4), tuning_seeds=(100, 101),
                    lr_grid=(0.003, 0.01, 0.03, 0.1, 0.3), device="auto"),
    "fixture": Budget(rounds=2, clients_per_round=2, seeds=(0, 1), tuning_seeds=(100, 101), lr_grid=(0.01, 0.1),
                      device="cpu"),
}

# fashion_mnist_fedproxvr: 47,421 images over 100 users (the build), 75% train; the test quarter evaluated
USERS, IMAGES, TRAIN_FRACTION = 100, 47421, 0.75
_N = IMAGES * TRAIN_FRACTION / USERS
_P = BUDGETS["paper"]
_RUNS = len(_P.tuning_seeds) * len(_P.lr_grid) + len(_P.seeds)  # per arm, before any widening of its grid
SELECTION = rule_text(_P.tuning_seeds, "the same reading")
_FULL = math.ceil(_N / BATCH)

WHY = ("stand-in: full Fashion-MNIST (Debian's dataset-fashion-mnist) split by FedProxVR's two-label power law "
       "(fashion_mnist_fedproxvr, 100 users) with logistic regression, for EMNIST-62 with a network; could differ: "
       "10 classes not 62, a synthetic two-label skew not the natural writer split, a convex model (no non-convex "
       "drift), and our 200 rounds and tuned steps where the slides give none")


def assumptions(seeds: tuple[int, ...]) -> list[str]:
    """The setting's assumptions, naming the judged training ``seeds`` (the declared ones, or a confirmatory block's)."""
    return [
        WHY,
        (f"{CLIENTS_PER_ROUND} users a round sampled with probability n_k / n and averaged with equal weights (Mime's "
         "Algorithm 1 means)"),
        f"K = {LOCAL_STEPS} local steps of batch {BATCH} for every user, {ROUNDS} rounds",
        (f"local step of each arm selected on the grid {', '.join(f'{x:g}' for x in _P.lr_grid)} by the mean test "
         f"accuracy of the last 5 evaluations on tuning seeds {', '.join(map(str, _P.tuning_seeds))} (a margin of the "
         "spread between them, else the smaller step; the grid widened at an edge: fedbench.claims.selection); judged "
         f"on seeds {', '.join(map(str, seeds))}"),
        (f"evaluation (the slides state none): FedJAX's EMNIST protocol (eval_frequency=5, as mime_emnist): test accuracy "
         f"on every user's test images every {EVAL_EVERY} rounds and on the final model; no training-loss evaluation"),
        shared.MOMENTUM_NOTE,
        shared.SCOPE_NOTE,
    ]


ASSUMPTIONS = assumptions(_P.seeds)

# The study as data (fedbench.study.declaration): the arms (each at its own step of the budget's grid, the knob),
# the paper budget's judged seeds, the budgets, the protocol and the claim with the arms its rule reads.
# data_seeds=(): the registered not-run entry names none; a judged entry records the split's data seed 0.
DECLARATION = StudyDeclaration(
    name="mime_fashion", paper=MIME_PAPER,
    dataset="fashion_mnist_fedproxvr: full Fashion-MNIST, 100 users of two labels, FedProxVR's power law, 75/25 split",
    variants=("fashion_mnist_fedproxvr",),
    arms=shared.arms(), seeds=_P.seeds, data_seeds=(), budgets=BUDGETS,
    knobs={"lr": _P.lr_grid, "tuning_seeds": _P.tuning_seeds}, evaluation=shared.EVALUATION,
    # local work in minibatch-gradient units: every arm's K steps; Mime and MimeLite also the full local gradient at
    # x (about n_k / 10 batches); Mime also grad f_i(x; zeta) on every minibatch
    scales=tuple(Scale(MODEL, _RUNS, _P.rounds, _P.clients_per_round, _N, 1, BATCH, IMAGES * (1 - TRAIN_FRACTION),
                       eval_every=EVAL_EVERY, local_steps=steps)
                 for steps in (2 * LOCAL_STEPS + _FULL, LOCAL_STEPS + _FULL, LOCAL_STEPS)),
    claims=(
    Claim(
        id="mime/fashion-mnist/ordering", where="talk slides, Figure 3 (stand-in data)",
        claim_text="With momentum, Mime and MimeLite reach a higher test accuracy than FedAvg with server momentum "
                   "(the EMNIST-62 ordering of Figure 3, on Fashion-MNIST).",
        published={"value": None, "unit": "test accuracy", "scope": "EMNIST-62, SGDm (Figure 3); here Fashion-MNIST",
                   "statement": "ordering only; no numbers are available in our copy (slides)"},
        effect=("per judged seed (0-4), effect = test accuracy (pooled over every user's test images, mean of the "
                "last 5 evaluations, every 5 rounds and the final model) of Mime minus that of FedAvg with server "
                "momentum, in points, and the same for MimeLite; each arm at its own step of the grid 0.003-0.3, "
                + SELECTION),
        rules=(("each part", ORDERING_RULE),),
        reads=("Mime", "MimeLite", BASELINE), rounds_paper=None, fidelity=data_label("fashion_mnist", MIME_PAPER),
        note="; ".join(ASSUMPTIONS)),
))


def algorithm(method: str, lr: float) -> Any:
    """Arm ``method``'s algorithm at local step ``lr``, built from its declared settings."""
    return shared.algorithm(DECLARATION.arm(method), lr)


def simulation(method: str, lr: float, seed: int, budget: Budget, real_root: str | Path,
               phase: str = "judged") -> Any:
    """One arm at step ``lr`` on fashion_mnist_fedproxvr, users sampled by size and averaged with equal weights;
    ``phase`` ("tuning" or "judged") names it."""
    variant = DECLARATION.variants[0]
    return shared.simulation(f"{phase}/{method}/lr={lr:g}/seed={seed}", variant, real_root, _model(str(real_root)),
                             algorithm(method, lr),
                             {"method": method, "dataset": variant, "model": MODEL, "phase": phase},
                             rounds=budget.rounds, clients_per_round=budget.clients_per_round,
                             local_steps=LOCAL_STEPS, batch_size=BATCH, seed=seed, device=budget.device)


@functools.cache
def _model(real_root: str):
    """One model object for every run (so that runs differing only in seed share a stack)."""
    return build(MODEL, load_real(DECLARATION.variants[0], real_root))


def tune(run: Callable[[list[tuple[str, float, int]]], dict[tuple[str, float, int], Any]],
         budget: Budget) -> tuple[dict[str, Selection], dict[tuple[str, float, int], Any]]:
    """Each arm's step (fedbench.claims.selection.select_all) from its tuning runs on ``budget``'s grid and tuning
    seeds, read by the primary reading; ``run(jobs)`` runs the (arm, step, tuning seed) jobs given (the whole grid
    first, then the steps each widening adds) and returns their outcomes. The selections, and every tuning
    outcome by job."""
    methods = [a.name for a in DECLARATION.arms]
    outcomes: dict[tuple[str, float, int], Any] = {}

    def evaluate(pairs: list[tuple[str, float]]) -> None:
        outcomes.update(run([(m, lr, s) for s in budget.tuning_seeds for m, lr in pairs]))

    def read(m: str, grid: tuple[float, ...]) -> tuple[dict[float, list[float]], bool]:
        return {lr: [accuracy(outcomes[(m, lr, s)], "tail", budget.rounds) for s in budget.tuning_seeds]
                for lr in grid}, True

    evaluate([(m, lr) for m in methods for lr in budget.lr_grid])
    return select_all({m: budget.lr_grid for m in methods}, read, evaluate), outcomes


class _Needs(Exception):
    """The tuning runs (arm, step, tuning seed) the step selection needs next and that have not run (its args)."""


def selections(run: StudyRun) -> dict[str, Selection]:
    """Each arm's step (:func:`tune`) from the tuning runs finished so far; :class:`_Needs` naming the tuning runs it
    needs next where they have not run."""
    def finished(jobs: list[tuple[str, float, int]]) -> dict[tuple[str, float, int], Any]:
        if missing := [job for job in jobs if ("tuning", *job) not in run.outcomes]:
            raise _Needs(*missing)
        return {job: run.outcomes[("tuning", *job)] for job in jobs}

    return tune(finished, run.budget)[0]


def simulations(run: StudyRun) -> dict[tuple[str, str, float, int], Any]:
    """The tuning runs first (each arm's grid on the tuning seeds, then each widening the selection asks for), then,
    once every arm's step is selected, each arm at its step on the judged seeds."""
    try:
        steps = {m: sel.step for m, sel in selections(run).items()}
    except _Needs as needs:
        return {("tuning", *job): simulation(*job, run.budget, real_root(run), "tuning") for job in needs.args}
    return {("judged", m, steps[m], s): simulation(m, steps[m], s, run.budget, real_root(run))
            for s in run.seeds for m in steps}


def record(sim: Any, outcome: Any) -> dict[str, Any]:
    """A run's record, with its test accuracy read as the tuning and the claim read it (the last 5 evaluations)."""
    from fedbench.study.record import sim_record

    return sim_record(sim, outcome, metrics={"study/tail_test_accuracy": accuracy(outcome, "tail", sim.config.rounds)})


def measure(claim: Claim, run: StudyRun) -> Measurement:
    """The ordering's parts (each arm but FedAvgM minus FedAvgM, per judged seed) by the mean of the last 5
    evaluations of each arm at its selected step; the entry states the selection, the steps and where they sit."""
    b, d = run.budget, run.declaration
    chosen = selections(run)
    steps = {m: sel.step for m, sel in chosen.items()}
    methods = list(steps)

    def acc(m, s, reading, bud):
        return accuracy(run.outcomes[("judged", m, steps[m], s)], reading, b.rounds, bud)

    pairs = [(m, BASELINE) for m in methods if m != BASELINE]
    parts = [Part(f"{m} - {BASELINE}", claim.rule_for()) for m, _ in pairs]
    values = shared.differences(acc, pairs, b.seeds)
    tail = {m: [acc(m, s, "tail", 1.0) for s in b.seeds] for m in methods}
    edge = [m for m in methods if not chosen[m].interior]
    widened = [f"{m} to {', '.join(f'{x:g}' for x in chosen[m].added)}" for m in methods if chosen[m].added]
    observed = ("test accuracy, mean of the last 5 evaluations and of the seeds (selected step): "
                + ", ".join(f"{m} {np.mean(tail[m]):.2f}% (step {steps[m]:g})" for m in methods) + "; "
                + shared.effects(parts, values, "tail")
                + (f". Grid widened: {'; '.join(widened)}" if widened else "")
                + (f". Step still at an end of the grid: {', '.join(edge)} (a wider grid could change it)"
                   if edge else ""))
    fixture = f"{b.rounds} rounds and {b.clients_per_round} users a round on fixture-sized data: the test suite's"
    variant = d.variants[0]
    # the claim's fidelity (stand-in) at every budget; the split's data seed 0 (the declaration names none: above)
    return Measurement(parts, values, "tail", READINGS, reading_names=READING_NAMES, entry=dict(
        scale={"study": d.name, "budget": run.budget_name, "variant": variant, "model": MODEL,
               "users": load_real(variant, str(real_root(run))).num_clients, "users_per_round": b.clients_per_round,
               "sampling": "proportional (equal-weight means)", "rounds": b.rounds, "local_steps": LOCAL_STEPS,
               "batch_size": BATCH, "lr_grid": list(b.lr_grid), "tuning_seeds": list(b.tuning_seeds),
               "steps": steps, "momentum": MOMENTUM, "fedavgm_server_lr": 1.0,
               "eval": f"test images of every user, every {EVAL_EVERY} rounds and the final model", "device": b.device},
        deviations=([fixture] if run.budget_name != "paper" else []) + assumptions(b.seeds),
        figure={"path": f"figures/{d.name}/{d.name}.png", "panel": "test accuracy"}, fidelity=claim.fidelity,
        rounds_run=b.rounds, training_seeds=list(b.seeds), data_seeds=[0], observed=observed,
        reproduced={"unit": "test accuracy (%), mean of the last 5 evaluations", "steps": steps,
                    "selected_at_grid_edge": edge, "tuning": {m: chosen[m].record(3) for m in methods},
                    **{m: [round(v, 3) for v in tail[m]] for m in methods}}))


def figure(run: StudyRun, out: Path) -> None:
    """Each arm's mean test-accuracy curve at its selected step."""
    b, d = run.budget, run.declaration
    steps = {m: sel.step for m, sel in selections(run).items()}
    curves = {f"{m} (step {lr:g})": np.mean([curve(run.outcomes[("judged", m, lr, s)], b.rounds) for s in b.seeds], 0)
              for m, lr in steps.items()}
    users = load_real(d.variants[0], str(real_root(run))).num_clients
    shared.draw(out / f"{d.name}.png", b.rounds,
                [(f"{d.variants[0]} ({users} users), {MODEL}, SGDm {MOMENTUM:g}", curves)])
