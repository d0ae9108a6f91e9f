"""Delta-FL vs FedAvg on real data (Pillutla, Laguel, Malick, Harchaoui, arXiv 2002.11223, section 5, Tables 2
and 3; appendix C): the 90th percentile and the mean of the test-device misclassification error of the final
model, on the paper's five dataset-model pairs, FedAvg and Delta-FL at conformity levels theta = 0.8, 0.5, 0.1.

Data (fedbench.data, params.yaml data.variants): the authors' by-user splits, test devices are other users
(test-only clients: the engine never selects them and evaluates them at every evaluation):
    EMNIST linear / ConvNet   femnist_deltafl          865 train / 865 test writers; per run seed the authors keep
                                                        int(0.5 x 865) = 432 of each (numpy seeded with the run
                                                        seed: fedbench.data.datasets.femnist.deltafl_subsample)
    Sent140 linear            sent140_deltafl_linear   438 / 439 users, mean GloVe 50d features
    Sent140 RNN               sent140_deltafl          the same users, 20 GloVe 50d tokens
    Shakespeare RNN           shakespeare_deltafl      544 / 545 roles, 20-character windows, 53 symbols
Models: deltafl_emnist_linear, deltafl_emnist_cnn, deltafl_sent140_linear, deltafl_sent140_lstm,
deltafl_shakespeare_gru (fedbench.models; the authors' architectures).

Settings (paper-setups.md 4.5, the paper's appendix C.2 and the authors' scripts), chosen once, before any run: one
:data:`PAIRS` row a pair (rounds, devices a round, a constant learning rate, batch; one local epoch for every pair).
Delta-FL is the authors' practical Algorithm 2 as coded (fedbench.algorithms.DeltaFL, weighting "filter": each
selected device reports its loss, the devices at or above the n_i-weighted (1 - theta)-quantile are kept and
averaged with weights n_i; the quantile recomputed every round). FedAvg is fedbench.algorithms.FedAvg (uniform
selection, n_i-weighted average). Both use the same rates ("tuned for FedAvg only and reused", section 5). Every
setting the paper leaves open, and every departure, is in the declaration's deviations.

Evaluation (:func:`evaluations`: the protocol is the pair's, so the declaration's ``evaluation`` is empty), the
authors' protocol (simplicial-fl models/scripts/exp/*: ``eval_every``; paper-setups.md 4.5): the training loss on
every training device and the per-device test accuracy on every test device every ``Pair.eval_every`` rounds
(EMNIST linear 50, EMNIST ConvNet 10, Sent140 linear 20, Sent140 RNN 25, Shakespeare 10), also at rounds 5, 10,
15, 20 and 75 (EXTRA_ROUNDS), and on the final model, which is what Tables 2 and 3 read.

Reading (fixed before any run; fedbench.studies.delta_fl_devices): a run's test devices are the dataset's test-only
clients (EMNIST: the 432 drawn for the run's seed; Sent140: 439; Shakespeare: 545), each device's error under the
final model counted once; the 90th percentile (numpy's interpolated one, the authors') and the plain mean of them.

Figures 4, 5 and 6 are claims on the same runs (no run is added: the projected cost is Tables 2 and 3's): FedAvg
and Delta-FL at the level theta* that the Table 2 claim selects per pair.
- Figure 4 (histograms of the test-device error): Delta-FL's upper tail is thinner. Read as the share of test
  devices whose final-model error exceeds FedAvg's 90th percentile (the same seed's), under FedAvg minus under
  Delta-FL (:func:`tail_share_effect`).
- Figure 5 (scatter of each training device's loss against its size): Delta-FL reduces the variance of the loss
  over the training devices. Read as the variance over the training devices of the final model's loss on each
  (:func:`loss_variance`), FedAvg's minus Delta-FL's; whether the effect is "more pronounced on the neural
  networks" is reported, not judged.
- Figure 6 (training loss against secure aggregation calls): competitive convergence. The calls are counted per
  round as the paper does (:data:`SECURE_AGGREGATION_CALLS`), so Delta-FL is read after as many calls as FedAvg
  makes in its round budget (:func:`aggregation_round`).
Their readings, fixed before any run (the rules decide as the ones registered for these claims; where they are
silent): a training device is a client of the dataset that is not test-only, its loss the mean over its training
samples under the final model (the engine's per-device loss: fedbench.engine.metrics.Evaluation.device_train_loss),
each device counted once, the variance the plain one (numpy's, ddof 0); "mean training loss" is the engine's
``train/loss``, the mean over every training sample (the paper's mean over training devices weighted by n_i). A
diverged run reads as error 1 on every test device (fedbench.studies.delta_fl_devices), as an infinite loss
variance, and as an infinite training loss from the round it diverged in.

The module: the study as data (:data:`DECLARATION`), its runs (:func:`simulations`, each recorded with its
test-device errors: :func:`record`), the readings of the finished runs (:class:`Devices`), one measurement per claim
(:data:`MEASURES`, through :func:`measure`) and :func:`figure`: the hooks the one driver calls
(fedbench.study.contract).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fedbench.claims import readings
from fedbench.claims.papers import DELTA_FL_PAPER
from fedbench.claims.readings import device_percentile
from fedbench.claims.stats import fmt_effect
from fedbench.claims.verdict import Part, Rule
from fedbench.studies.delta_fl_devices import error_record, read_p90, subsampled, test_device_errors
from fedbench.studies.delta_fl_pairs import PAIRS, Pair, pair
from fedbench.studies.real_data import REAL_ROOT, load_real
from fedbench.study.contract import Measurement, StudyRun
from fedbench.study.declaration import Arm, Claim, StudyDeclaration
from fedbench.study.scale import Scale

if TYPE_CHECKING:
    from fedbench.data.format import FederatedDataset
    from fedbench.study.runner import Outcome, Simulation
THETAS = (0.8, 0.5, 0.1)  # Tables 2 and 3's three levels (the authors' README loop: nonconformity 0.2, 0.5, 0.9)
WEIGHTING = "filter"  # the authors' code: keep F_i >= the quantile, weights n_i (fedbench.algorithms.delta_fl)
MEAN_MARGIN = 2.0  # error points: "on par" (Table 3)
P90_RULE = Rule("greater", 0.0, "error points")  # each pair of the Table 2 claim: the sign
MEAN_RULE = Rule("at_most", MEAN_MARGIN, "error points")  # each pair of the Table 3 claim: one-sided "on par"
FEDAVG = "fedavg"
EXTRA_ROUNDS = (5, 10, 15, 20, 75)  # the authors' main.py also evaluates at these rounds (and the final one)
SUBSAMPLE_FRACTION = 0.5  # the authors' setup_clients(subsample_fraction=0.5), EMNIST only
# the by-user splits' seeds (params.yaml data.variants: sampling_seed 0, split_seed 1, the authors' Random(0) and
# Random(1)); EMNIST's per-run user draw uses the training seed
DATA_SEEDS = (0, 1)


# Secure aggregation calls a round, by algorithm: appendix C.2.2, "Both FedAvg and Algorithm 2 require one call to
# secure aggregation per iteration" (Algorithm 2 as stated: each device reveals its loss, the quantile is the server's;
# appendix B.1's private variant computes the quantile with several more calls and is not what Figure 6 runs)
SECURE_AGGREGATION_CALLS = {"fedavg": 1, "delta_fl": 1}
CONVERGENCE_MARGIN = 10.0  # % training loss: "competitive", as registered
# each pair's rule, by claim (Figures 4, 5, 6): what the claims declare
TAILS_RULE = Rule("greater", 0.0, "points of test devices")
VARIANCE_RULE = Rule("greater", 0.0, "loss variance")
CONVERGENCE_RULE = Rule("at_most", CONVERGENCE_MARGIN, "% training loss")
NEURAL = ("emnist_cnn", "sent140_rnn", "shakespeare_rnn")  # the neural-network pairs (Figure 5's "more pronounced")
FIGURE = "delta_fl_real_figures.png"  # Figures 4-6, drawn into the study's folder (the report copies it)
FIGURES = ("delta-fl/real/thinner-upper-tails", "delta-fl/real/train-loss-variance",
           "delta-fl/real/competitive-convergence")


@dataclass(frozen=True)
class Budget:
    """A scale the study runs at: the device, the training seeds, the rounds (None: each pair's paper rounds),
    whether EMNIST's per-seed user subsample is drawn, and the pairs it runs."""

    device: str
    seeds: tuple[int, ...]
    rounds: int | None
    subsample: bool
    pairs: tuple[str, ...] = tuple(p.key for p in PAIRS)


BUDGETS = {
    # the paper's rounds and 5 seeds (section 5: "averaged over 5 different random seeds"; the authors' seeds 1-5)
    "paper": Budget(device="auto", seeds=(1, 2, 3, 4, 5), rounds=None, subsample=True),
    # the test suite's: fixture-sized variants (3 FEMNIST writers: no subsample), 3 rounds, two seeds, every pair
    "fixture": Budget(device="cpu", seeds=(0, 1), rounds=3, subsample=False),
}
_P = BUDGETS["paper"]


# The study as data (fedbench.study.declaration): FedAvg and Delta-FL (the filter-then-average), swept over the
# dataset-model pairs (each with its paper settings: rounds, cohort, rate, batch, the authors' evaluation cadence) and
# the conformity levels theta; the paper budget's seeds; the claims with the arms their rules read. evaluation=():
# the protocol is the pair's (evaluations(p)), not one for the study. data_seeds=(): the registered not-run entries
# name none; a judged entry records the by-user splits' DATA_SEEDS.
DECLARATION = StudyDeclaration(
    name="delta_fl_real", paper=DELTA_FL_PAPER,
    dataset="the authors' by-user splits of FEMNIST, Sent140 (GloVe features and tokens) and Shakespeare; test "
            "devices are other users",
    variants=tuple(dict.fromkeys(p.variant for p in PAIRS)),
    arms=(Arm(FEDAVG, "fedavg", {}), Arm("delta_fl", "delta_fl", {"weighting": WEIGHTING})),
    knobs={"pair": PAIRS, "theta": THETAS},
    deviations=(
        ("constant local learning rates at the paper's initial values: the engine has no learning-rate schedule; the "
         "paper halves the rate every 400 rounds (EMNIST ConvNet) and every 200 rounds (Sent140 RNN, Shakespeare). "
         "Both algorithms get the same rates, as in the paper"),
        ("no l2 regulariser on the linear models (the authors tune lambda in 1e-10..1e-5 per algorithm and theta on "
         "held-out training devices; their scripts use 1e-9 to 1e-6): the engine trains the plain loss"),
        ("minibatch 10 (16 for EMNIST ConvNet and Shakespeare) as the paper says; the authors' linear and Sent140 RNN "
         "scripts pass no batch size and run main.py's default 32"),
        ("Sent140 linear runs 2,000 rounds for both algorithms (the authors' Delta-FL scripts; their FedAvg script has "
         "1,000): the paper fixes one budget per dataset, and the longer one can only help FedAvg converge"),
        ("Delta-FL is the authors' filter-then-average (weighting 'filter'); the paper's Algorithm 2 reweighting formula "
         "is stripped from our copy. Updates with a non-finite norm are not rejected and nothing stops a run early "
         "(the authors stop at 3 x the initial loss); a run the engine marks diverged reads as error 1 everywhere"),
        ("EMNIST's per-seed user draw is numpy's RandomState(seed) over the clients in the dataset's sorted order, "
         "the authors' over their JSON files' order: the same seed picks other writers"),
        ("evaluation as the authors' scripts: every 10 to 50 rounds (per pair), at rounds 5, 10, 15, 20, 75 and the final "
         "one; the sensitivity readings at a cut before the final round read the last evaluation up to the cut"),
    ),
    seeds=_P.seeds, data_seeds=(), budgets=BUDGETS, evaluation=(),
    scales=tuple(Scale(p.model, (1 + len(THETAS)) * len(_P.seeds), p.rounds, p.clients_per_round, p.client_samples,
                       1, p.batch_size, p.eval_samples, eval_every=p.eval_every, eval_rounds=EXTRA_ROUNDS)
                 for p in PAIRS),
    claims=(
    Claim(
        id="delta-fl/real/p90-error", where="section 5, Table 2",
        claim_text="For EMNIST (linear and ConvNet), Sent140 (linear and RNN) and Shakespeare (RNN), Delta-FL at some "
                   "conformity level theta has a lower 90th percentile of test-device error than FedAvg.",
        published={"value": None, "unit": "90th percentile of test-device error", "scope": "five dataset-model pairs",
                   "statement": "numbers missing: our copy of the paper has Table 2's numbers stripped; direction "
                                "only ('for all datasets, the 90th percentile of the test error is smaller for "
                                "Delta-FL than for FedAvg at some value of theta')"},
        effect=("per pair: theta* = the level among 0.8, 0.5, 0.1 whose 90th-percentile test-device error, "
                "averaged over the seeds, is lowest (Table 2 compares seed means; a tie goes to the higher "
                "theta); per seed, effect = FedAvg's 90th-percentile error minus Delta-FL(theta*)'s, in "
                "error points, at the final round. The error of a test device is 1 - its accuracy on all "
                "its samples; test devices are the run's test-only clients (EMNIST: the 432 drawn for the "
                "seed; Sent140: 439; Shakespeare: 545), each counted once (unweighted); the percentile is "
                "numpy's linear interpolation; a diverged run reads as error 1"),
        rules=(("each pair", P90_RULE),),
        notes=("Rule history: the pending rule took the lowest theta per seed; sharpened before any run to "
               "one theta per pair chosen on the seed means, since a per-seed minimum over three noisy "
               "levels is biased toward a positive effect by the very noise being judged. theta* is still "
               "chosen on the test devices, as the paper's 'at some theta'"),
        reads=(FEDAVG, "delta_fl"), rounds_paper=None, fidelity="paper-scale",
        note="rounds per pair 3000/1000/2000/600/400 (EMNIST linear/ConvNet, Sent140 linear/RNN, Shakespeare); "
             "constant learning rates (no schedule in the engine), no l2 on the linear models, Delta-FL as the "
             "authors' filter-then-average"),
    Claim(
        id="delta-fl/real/mean-error-on-par", where="section 5, Table 3",
        claim_text="Delta-FL's mean test-device error is comparable to FedAvg's on the same five dataset-model pairs.",
        published={"value": None, "unit": "mean test-device error", "scope": "five dataset-model pairs",
                   "statement": "numbers missing: our copy of the paper has Table 3's numbers stripped; direction "
                                "only ('Delta-FL is on par with FedAvg on the mean ..., and sometimes even better')"},
        effect=("per pair, with theta* of the Table 2 entry (delta-fl/real/p90-error): per seed, effect = "
                "Delta-FL(theta*)'s mean test-device error minus FedAvg's, in error points, at the final "
                "round; the mean is unweighted over the same test devices (appendix C.2.3: 'the "
                "(unweighted) mean misclassification error')"),
        rules=(("each pair", MEAN_RULE),),
        notes=("One-sided ('on par, and sometimes even better'). Sensitivity: the n_i-weighted mean (the "
               "authors' print_metrics, np.average with test sample weights; the engine's pooled test "
               "accuracy)"),
        reads=(FEDAVG, "delta_fl"), rounds_paper=None, fidelity="paper-scale",
        note="its runs are the Table 2 entry's (delta-fl/real/p90-error)"),
    Claim(
        id=FIGURES[0], where="section 5, Figure 4",
        claim_text="Delta-FL exhibits thinner upper tails of the test-device misclassification error than FedAvg.",
        published={"value": None, "unit": "% of test devices", "scope": "five dataset-model pairs",
                   "statement": "'Delta-FL exhibits thinner upper tails on the error, which shows an improved "
                                "performance on devices which do not conform with the population' (histograms, no "
                                "numbers)"},
        effect="per seed and dataset-model pair, at the conformity level delta_fl_real selects (theta*), "
               "effect = the share of test devices whose final-model error exceeds FedAvg's 90th percentile "
               "under FedAvg minus that share under Delta-FL, in points",
        rules=(("each pair", TAILS_RULE),),
        notes="The paper's 5 seeds",
        reads=("fedavg", "delta_fl"), rounds_paper=None, fidelity="paper-scale",
        note="its runs are the Table 2 entry's (delta-fl/real/p90-error); FedAvg's 90th percentile is the same seed's, "
             "'exceeds' is strictly greater"),
    Claim(
        id=FIGURES[1], where="section 5, Figure 5",
        claim_text="Delta-FL reduces the variance of the loss over the training devices (more so on the neural "
                   "networks).",
        published={"value": None, "unit": "variance of the training-device loss", "scope": "five dataset-model pairs",
                   "statement": "'Delta-FL reduces the variance of the loss on the train devices ... Both effects are "
                                "more pronounced on the neural network models' (scatter plots, no numbers)"},
        effect="per seed and pair, at theta*, the variance over training devices of the final model's "
               "training loss under FedAvg minus that under Delta-FL",
        rules=(("each pair", VARIANCE_RULE),),
        notes="The paper's 5 seeds; 'more pronounced on the neural networks' reported, not judged",
        reads=("fedavg", "delta_fl"), rounds_paper=None, fidelity="paper-scale",
        note="its runs are the Table 2 entry's; a device's loss is its mean over its training samples, every training "
             "device counted once, the variance numpy's (ddof 0)"),
    Claim(
        id=FIGURES[2], where="section 5, Figure 6",
        claim_text="Measured in secure aggregation calls, Delta-FL converges about as fast as FedAvg, with FedAvg's "
                   "hyperparameters.",
        published={"value": None, "unit": "% training loss", "scope": "five dataset-model pairs",
                   "statement": "'Delta-FL is competitive with FedAvg in convergence rate, despite using the same "
                                "hyperparameters which were tuned for FedAvg' (curves, no numbers)"},
        effect="per seed and pair, at theta*, effect = 100 (Delta-FL's mean training loss / FedAvg's - 1), "
               "both read after the number of secure aggregation calls FedAvg makes in its round budget "
               "(Delta-FL's calls per round as its Algorithm 2 counts them)",
        rules=(("each pair", CONVERGENCE_RULE),),
        notes="The paper's 5 seeds; 'competitive' registered as at most 10% worse (the margin fedbench reads "
              "'rather robust' with)",
        reads=("fedavg", "delta_fl"), rounds_paper=None, fidelity="paper-scale",
        note="its runs are the Table 2 entry's; one secure aggregation call a round for both algorithms (appendix "
             "C.2.2), so both are read at the pair's final round; the mean training loss is the engine's train/loss "
             "(over every training sample: the devices weighted by n_i)"),
))


# ---- the runs ----------------------------------------------------------------------------------------------------

def dataset_builder(p: Pair, budget: Budget, seed: int, real_root: Path):
    """The zero-argument cached builder of pair ``p``'s data for run seed ``seed``."""
    if p.subsample and budget.subsample:
        return functools.partial(subsampled, p.variant, str(real_root), seed, SUBSAMPLE_FRACTION)
    return functools.partial(load_real, p.variant, str(real_root))


def algorithm_name(theta: float | None) -> str:
    return FEDAVG if theta is None else f"delta_fl/theta={theta:g}"


def evaluations(p: Pair) -> tuple:
    """The authors' protocol for pair ``p``: training loss and per-device test accuracy every ``p.eval_every``
    rounds, at EXTRA_ROUNDS and on the final model."""
    from fedbench.engine.evaluation import EvalSpec

    return (EvalSpec("train", metrics=("train/loss",), every=p.eval_every, rounds=EXTRA_ROUNDS),
            EvalSpec("test", every=p.eval_every, rounds=EXTRA_ROUNDS))


def simulations(run: StudyRun) -> dict[tuple[str, float | None, int], Simulation]:
    """Every run at the budget: (pair key, theta or None for FedAvg, seed) -> Simulation."""
    from fedbench.algorithms import DeltaFL, FedAvg
    from fedbench.studies.real_data import build
    from fedbench.study.runner import Simulation, sim_config

    budget, real_root = run.budget, Path(run.real_root or REAL_ROOT)
    out, delta = {}, run.declaration.arm("delta_fl")
    for key in budget.pairs:
        p = pair(key)
        model = build(p.model, load_real(p.variant, str(real_root)))
        for seed in budget.seeds:
            data = dataset_builder(p, budget, seed, real_root)
            # the authors' min(clients per round, training devices): only the fixture-sized data has fewer
            k = min(p.clients_per_round, len(data().train_clients))
            cfg = sim_config(rounds=budget.rounds or p.rounds, clients_per_round=k, local_epochs=1,
                             batch_size=p.batch_size, seed=seed, device=budget.device, evaluations=evaluations(p),
                             dissimilarity_every=0)
            knobs = {"pair": p.key, "variant": p.variant, "user_subsample": bool(p.subsample and budget.subsample)}
            for theta in (None, *THETAS):
                alg = FedAvg(lr=p.lr) if theta is None else DeltaFL(lr=p.lr, theta=theta, **delta.settings)
                name = f"{p.key}/{algorithm_name(theta)}/seed={seed}"
                out[(p.key, theta, seed)] = Simulation(name, cfg, data, model, alg, knobs)
    return out


record = error_record  # a run's record carries its final model's test-device errors (p90, mean, count)


# ---- readings (the per-test-device ones: fedbench.studies.delta_fl_devices) -------------------------------------

def best_theta(p90_by_theta: dict[float, list[float]]) -> float:
    """The level with the lowest mean over seeds of the 90th-percentile error (Table 2 compares seed means); a tie
    goes to the level listed first in THETAS."""
    return min(THETAS, key=lambda t: (float(np.mean(p90_by_theta[t])), THETAS.index(t)))


def tail_share_effect(fedavg_errors: Sequence[float], delta_errors: Sequence[float]) -> float:
    """Points: the share of test devices whose error exceeds FedAvg's 90th percentile under FedAvg minus that share
    under Delta-FL (both over the same test devices)."""
    fedavg, delta = np.asarray(fedavg_errors, dtype=np.float64), np.asarray(delta_errors, dtype=np.float64)
    if fedavg.shape != delta.shape or not len(fedavg):
        raise ValueError(f"test-device errors: {len(fedavg)} under FedAvg and {len(delta)} under Delta-FL; allowed: "
                         "the same devices, at least one")
    p90 = device_percentile(fedavg)
    return 100.0 * (float(np.mean(fedavg > p90)) - float(np.mean(delta > p90)))


def training_losses(ds: FederatedDataset, outcome: Outcome) -> np.ndarray:
    """The final model's loss on each training device (the clients that are not test-only, in dataset order); inf
    on every device for a diverged run. A device not evaluated (NaN) is an error: the reading would drop it; an
    infinite loss is a reading (its variance is infinite)."""
    devices = np.flatnonzero(~np.asarray(ds.test_only))
    if outcome.diverged:
        return np.full(len(devices), math.inf)
    if outcome.device_train_loss is None:
        raise ValueError(f"{outcome.name}: no per-device training loss (its final evaluation skipped the train split)")
    loss = np.asarray(outcome.device_train_loss, dtype=np.float64)[devices]
    if not len(loss) or np.any(np.isnan(loss)):
        raise ValueError(f"{outcome.name}: a training device has no loss (or there is no training device)")
    return loss


def loss_variance(losses: Sequence[float]) -> float:
    """The plain variance (ddof 0) of the training devices' losses; inf where one is not finite (a diverged run)."""
    v = np.asarray(losses, dtype=np.float64)
    return float(np.var(v)) if np.all(np.isfinite(v)) else math.inf


def aggregation_round(rounds: int) -> int:
    """The round after which Delta-FL has made as many secure aggregation calls as FedAvg makes in ``rounds`` rounds
    (rounded down: never more calls than FedAvg's)."""
    return rounds * SECURE_AGGREGATION_CALLS["fedavg"] // SECURE_AGGREGATION_CALLS["delta_fl"]


def loss_ratio_effect(fedavg_loss: float, delta_loss: float) -> float:
    """100 (Delta-FL's training loss / FedAvg's - 1); NaN when both diverged (no reading), +inf when Delta-FL alone
    did, -100 when FedAvg alone did; against a FedAvg loss of 0 (a loss is >= 0): 0 if Delta-FL's is 0 too, else
    +inf."""
    if math.isinf(fedavg_loss) and math.isinf(delta_loss):
        return math.nan
    if fedavg_loss == 0:
        return 0.0 if delta_loss == 0 else math.inf
    return 100.0 * (delta_loss / fedavg_loss - 1.0)


def train_loss_at(outcome: Outcome, rounds: int, reading: str, budget: float) -> float:
    """The run's training loss read at the cut (fedbench.claims.readings.read_at_cut), inf if it diverged by then."""
    dead = int(outcome.history[-1]["round"]) if outcome.diverged else None
    return readings.read_at_cut(outcome.at_rounds("train/loss"), rounds, reading, budget, diverged_at=dead,
                                diverged=math.inf)


@dataclass(frozen=True)
class Devices:
    """A run of the study as its claims read it, by run key (pair key, theta or None for FedAvg, seed): the pairs and
    seeds of its budget, each run's test-device errors and 90th percentile, theta* per pair and the table of
    Tables 2 and 3."""

    run: StudyRun

    @property
    def pairs(self) -> list[Pair]:
        return [pair(k) for k in self.run.budget.pairs]

    @property
    def seeds(self) -> tuple[int, ...]:
        return self.run.budget.seeds

    def rounds(self, p: Pair) -> int:
        """The rounds run of pair ``p`` (the budget's, else the paper's)."""
        return self.run.budget.rounds or p.rounds

    @property
    def reduced(self) -> bool:
        """Whether the budget runs fewer rounds than the paper's shortest pair."""
        b = self.run.budget
        return b.rounds is not None and b.rounds < min(p.rounds for p in self.pairs)

    @property
    def paper_budget(self) -> float:
        return min(p.rounds for p in self.pairs) / self.run.budget.rounds if self.reduced else 1.0

    def dataset(self, key: tuple) -> FederatedDataset:
        return self.run.simulations[key].dataset()

    @functools.cached_property
    def errors(self) -> dict[tuple, np.ndarray]:
        """Each run's test-device errors under its final model."""
        return {k: test_device_errors(self.dataset(k), o) for k, o in self.run.outcomes.items()}

    def p90(self, p: Pair, theta: float | None, seed: int, reading: str = "final", frac: float = 1.0) -> float:
        """A run's 90th-percentile test-device error (fedbench.studies.delta_fl_devices.read_p90)."""
        key = (p.key, theta, seed)
        return read_p90(self.errors[key], self.run.outcomes[key], self.rounds(p), reading, frac)

    def star(self, p: Pair, reading: str = "final", frac: float = 1.0) -> float:
        """theta* of pair ``p`` read with ``reading`` at the cut ``frac`` (:func:`best_theta`)."""
        return best_theta({t: [self.p90(p, t, s, reading, frac) for s in self.seeds] for t in THETAS})

    @functools.cached_property
    def stars(self) -> dict[str, float]:
        """theta* per pair, at the final round."""
        return {p.key: self.star(p) for p in self.pairs}

    def key(self, p: Pair, delta: bool, seed: int) -> tuple:
        """The run of FedAvg (``delta`` False) or Delta-FL(theta*) on pair ``p`` and seed ``seed``."""
        return (p.key, self.stars[p.key] if delta else None, seed)

    @functools.cached_property
    def table(self) -> dict[str, dict[str, Any]]:
        """Per pair and algorithm, the 90th percentile and the mean of the test-device error per seed (points,
        3 decimals), theta* and the number of test devices."""
        def per_seed(p: Pair, t: float | None, what: Callable[[np.ndarray], float]) -> list[float]:
            return [round(100 * what(self.errors[(p.key, t, s)]), 3) for s in self.seeds]
        return {p.key: {algorithm_name(t): {"p90": per_seed(p, t, device_percentile),
                                            "mean": per_seed(p, t, lambda e: float(e.mean()))}
                        for t in (None, *THETAS)} | {"theta_star": self.stars[p.key],
                                                     "test_devices": len(self.errors[(p.key, None, self.seeds[0])])}
                for p in self.pairs}

    def seed_mean(self, p: Pair, t: float | None, what: str) -> float:
        return float(np.mean(self.table[p.key][algorithm_name(t)][what]))

    @property
    def ending(self) -> str:
        """The end of Tables 2 and 3's observed texts: the runs that diverged, and the fixture budget's note."""
        diverged = sorted(self.run.simulations[k].name for k, o in self.run.outcomes.items() if o.diverged)
        return (f". Diverged runs (read as error 1): {', '.join(diverged)}" if diverged else "") + (
            f". Fixture budget: {self.run.budget.rounds} rounds on fixture-sized data, every pair"
            if self.run.budget_name == "fixture" else "")

    def panel(self, file: str, row: str) -> dict[str, str]:
        return {"path": f"figures/{self.run.declaration.name}/{file}", "panel": row}


# ---- the measurements, one a claim (fedbench.study.contract) ------------------------------------------------------

TABLE_NAMES = readings.NAMES | {"final": "final round", "tail": "mean of the last 5 rounds' p90",
                                "weighted": "final round, n_i-weighted mean (authors' code)"}
FINAL_MODEL = readings.NAMES | {"final": "final model"}
TABLES = "delta_fl_real.png"  # Tables 2 and 3's figure, drawn into the study's folder


def _effect(part: Part, values: list[float]) -> str:
    """The effect the entry reports for one part's per-seed values (its rule's estimate and interval, as the
    verdict reads them), as the observed text quotes it."""
    return fmt_effect(part.rule.counted().effect(values))


def _parts(d: Devices, claim: Claim) -> list[Part]:
    """One part a pair, each with the claim's rule."""
    return [Part(p.label, claim.rule_for()) for p in d.pairs]


def p90_error(d: Devices, claim: Claim) -> Measurement:
    """Table 2: per pair and seed, FedAvg's 90th-percentile test-device error minus Delta-FL(theta*)'s."""
    def effects(reading: str, frac: float) -> list[list[float]]:
        out = []
        for p in d.pairs:
            t = d.star(p, reading, frac)
            out.append([100 * (d.p90(p, None, s, reading, frac) - d.p90(p, t, s, reading, frac)) for s in d.seeds])
        return out
    parts = _parts(d, claim)
    observed = "; ".join(
        f"{p.label}: FedAvg {d.seed_mean(p, None, 'p90'):.2f}, " + ", ".join(
            f"theta={t:g} {d.seed_mean(p, t, 'p90'):.2f}" for t in THETAS)
        + f" (theta* = {d.stars[p.key]:g}; effect {_effect(part, values)})"
        for p, part, values in zip(d.pairs, parts, effects("final", 1.0)))
    return Measurement(parts, effects, "final", ("final", "tail"), paper_budget=d.paper_budget,
                       reading_names=TABLE_NAMES, entry={
                           "figure": d.panel(TABLES, "top row: 90th-percentile test-device error"),
                           "observed": f"90th-percentile test-device error (points, mean of {len(d.seeds)} seeds) at "
                                       "the final round: " + observed + d.ending,
                           "reproduced": {"unit": "test-device error (points), per seed", "table": d.table}})


def mean_error_on_par(d: Devices, claim: Claim) -> Measurement:
    """Table 3: per pair and seed, Delta-FL(theta*)'s mean test-device error minus FedAvg's (sensitivity: the
    engine's pooled, n_i-weighted, test error)."""
    pooled = {k: 1.0 if o.diverged else 1.0 - float(o.final["test/accuracy"]) for k, o in d.run.outcomes.items()}

    def effects(reading: str, frac: float) -> list[list[float]]:
        mean = (lambda k: float(d.errors[k].mean())) if reading == "final" else pooled.__getitem__
        return [[100 * (mean(d.key(p, True, s)) - mean(d.key(p, False, s))) for s in d.seeds] for p in d.pairs]
    parts = _parts(d, claim)
    observed = "; ".join(
        f"{p.label}: FedAvg {d.seed_mean(p, None, 'mean'):.2f}, Delta-FL(theta*={d.stars[p.key]:g}) "
        f"{d.seed_mean(p, d.stars[p.key], 'mean'):.2f} (effect {_effect(part, values)})"
        for p, part, values in zip(d.pairs, parts, effects("final", 1.0)))
    return Measurement(parts, effects, "final", ("final", "weighted"), budgets=(1.0,), reading_names=TABLE_NAMES,
                       entry={
                           "figure": d.panel(TABLES, "bottom row: mean test-device error"),
                           "observed": f"mean test-device error (points, unweighted, mean of {len(d.seeds)} seeds) at "
                                       "the final round: " + observed + d.ending,
                           "reproduced": {"unit": "test-device error (points), per seed", "theta_star": d.stars,
                                          "table": {k: {a: v["mean"] if isinstance(v, dict) else v
                                                        for a, v in row.items()} for k, row in d.table.items()}}})


def _star(d: Devices, p: Pair) -> str:
    return f"theta* = {d.stars[p.key]:g}"


def thinner_upper_tails(d: Devices, claim: Claim) -> Measurement:
    """Figure 4: per pair and seed, the share of test devices above FedAvg's 90th percentile under FedAvg minus
    under Delta-FL(theta*)."""
    def tails(reading: str, frac: float) -> list[list[float]]:
        return [[tail_share_effect(d.errors[d.key(p, False, s)], d.errors[d.key(p, True, s)]) for s in d.seeds]
                for p in d.pairs]

    def above(p: Pair, delta: bool, s: int) -> float:  # % of test devices above FedAvg's 90th percentile
        fedavg_p90 = device_percentile(d.errors[d.key(p, False, s)])
        return round(100 * float(np.mean(d.errors[d.key(p, delta, s)] > fedavg_p90)), 3)

    shares = {p.key: {who: [above(p, delta, s) for s in d.seeds] for who, delta in (("fedavg", False),
                                                                                    ("delta_fl", True))}
              for p in d.pairs}
    parts = _parts(d, claim)
    observed = "; ".join(
        f"{p.label} ({_star(d, p)}): FedAvg {np.mean(shares[p.key]['fedavg']):.2f}%, Delta-FL "
        f"{np.mean(shares[p.key]['delta_fl']):.2f}% (effect {_effect(part, values)})"
        for p, part, values in zip(d.pairs, parts, tails("final", 1.0)))
    return Measurement(parts, tails, "final", budgets=(1.0,), reading_names=FINAL_MODEL, entry={
        "figure": d.panel(FIGURE, "top row: histograms of the test-device error (Figure 4)"),
        "observed": f"share of test devices above FedAvg's 90th percentile (%, mean of {len(d.seeds)} seeds), final "
                    "model: " + observed,
        "reproduced": {"unit": "% of test devices, per seed", "theta_star": d.stars, "table": shares}})


def train_loss_variance(d: Devices, claim: Claim) -> Measurement:
    """Figure 5: per pair and seed, the variance of the training devices' final loss under FedAvg minus under
    Delta-FL(theta*); the reduction relative to FedAvg's, by kind of model, reported."""
    variance = {k: loss_variance(training_losses(d.dataset(k), d.run.outcomes[k]))
                for p in d.pairs for s in d.seeds for k in (d.key(p, False, s), d.key(p, True, s))}

    def variances(reading: str, frac: float) -> list[list[float]]:
        return [[variance[d.key(p, False, s)] - variance[d.key(p, True, s)] for s in d.seeds] for p in d.pairs]

    table = {p.key: {who: [float(f"{variance[d.key(p, delta, s)]:.6g}") for s in d.seeds]
                     for who, delta in (("fedavg", False), ("delta_fl", True))} for p in d.pairs}
    mean = {p.key: {who: float(np.mean(v)) for who, v in table[p.key].items()} for p in d.pairs}
    relative = {k: 100 * (1 - m["delta_fl"] / m["fedavg"]) if 0 < m["fedavg"] < math.inf else math.nan
                for k, m in mean.items()}
    by_kind = {kind: [relative[p.key] for p in d.pairs if (p.key in NEURAL) == neural]
               for kind, neural in (("neural networks", True), ("linear models", False))}
    pronounced = "; ".join(f"{kind}: {np.mean(v):.1f}%" for kind, v in by_kind.items() if v)
    parts = _parts(d, claim)
    observed = "; ".join(
        f"{p.label} ({_star(d, p)}): FedAvg {mean[p.key]['fedavg']:.4g}, Delta-FL {mean[p.key]['delta_fl']:.4g} "
        f"(effect {_effect(part, values)})" for p, part, values in zip(d.pairs, parts, variances("final", 1.0)))
    return Measurement(parts, variances, "final", budgets=(1.0,), reading_names=FINAL_MODEL, entry={
        "figure": d.panel(FIGURE, "middle row: training-device loss against its samples, first seed (Figure 5)"),
        "observed": f"variance of the training devices' loss (mean of {len(d.seeds)} seeds), final model: {observed}. "
                    f"Reduction relative to FedAvg's, mean over the pairs (reported, not judged): {pronounced}",
        "reproduced": {"unit": "loss variance, per seed", "theta_star": d.stars, "table": table,
                       "relative_reduction_pct": {k: round(v, 3) for k, v in relative.items()}}})


def competitive_convergence(d: Devices, claim: Claim) -> Measurement:
    """Figure 6: per pair and seed, 100 (Delta-FL(theta*)'s training loss / FedAvg's - 1), Delta-FL read after as
    many secure aggregation calls as FedAvg makes in its rounds."""
    def convergence(reading: str, frac: float) -> list[list[float]]:
        out = []
        for p in d.pairs:
            fedavg_round = readings.cut_round(d.rounds(p), frac)
            out.append([loss_ratio_effect(train_loss_at(d.run.outcomes[d.key(p, False, s)], fedavg_round, reading, 1.0),
                                          train_loss_at(d.run.outcomes[d.key(p, True, s)],
                                                        aggregation_round(fedavg_round), reading, 1.0))
                        for s in d.seeds])
        return out
    parts = _parts(d, claim)
    observed = "; ".join(
        f"{p.label} ({_star(d, p)}, FedAvg at round {d.rounds(p)}, Delta-FL at round "
        f"{aggregation_round(d.rounds(p))}): effect {_effect(part, values)}"
        for p, part, values in zip(d.pairs, parts, convergence("final", 1.0)))
    return Measurement(parts, convergence, "final", ("final", "tail"), paper_budget=d.paper_budget,
                       reading_names=readings.NAMES | {"final": "after FedAvg's calls in its round budget"}, entry={
                           "figure": d.panel(FIGURE, "bottom row: training loss against secure aggregation calls "
                                                     "(Figure 6)"),
                           "observed": "training loss of Delta-FL relative to FedAvg's after the same number of secure "
                                       f"aggregation calls ({SECURE_AGGREGATION_CALLS['fedavg']} a round for FedAvg, "
                                       f"{SECURE_AGGREGATION_CALLS['delta_fl']} for Delta-FL; mean of {len(d.seeds)} "
                                       "seeds): " + observed,
                           "reproduced": {"unit": "% training loss, per seed", "theta_star": d.stars,
                                          "secure_aggregation_calls_per_round": dict(SECURE_AGGREGATION_CALLS)}})


MEASURES = {"delta-fl/real/p90-error": p90_error, "delta-fl/real/mean-error-on-par": mean_error_on_par,
            FIGURES[0]: thinner_upper_tails, FIGURES[1]: train_loss_variance, FIGURES[2]: competitive_convergence}


def measure(claim: Claim, run: StudyRun) -> Measurement:
    """Claim ``claim``'s measurement (:data:`MEASURES`), with what every entry of the study reports: its scale at the
    budget run, its seeds, the by-user splits' data seeds and, where the budget cuts the rounds, stand-in fidelity."""
    d = Devices(run)
    b = run.budget
    scale = {"study": run.declaration.name, "budget": run.budget_name, "variants": list(run.declaration.variants),
             "seeds": list(b.seeds), "thetas": list(THETAS), "weighting": WEIGHTING, "device": b.device,
             "pairs": {p.key: {"variant": p.variant, "model": p.model, "rounds": d.rounds(p), "rounds_paper": p.rounds,
                               "clients_per_round": p.clients_per_round, "lr": p.lr, "batch_size": p.batch_size,
                               "local_epochs": 1,
                               "user_subsample": SUBSAMPLE_FRACTION if p.subsample and b.subsample else None}
                       for p in d.pairs}}
    common = {"scale": scale, "training_seeds": list(b.seeds), "data_seeds": list(DATA_SEEDS),
              "fidelity": "stand-in" if d.reduced else claim.fidelity}
    m = MEASURES[claim.id](d, claim)
    return dataclasses.replace(m, entry=common | m.entry)


# ---- the figures ---------------------------------------------------------------------------------------------------

def figure(run: StudyRun, out: Path) -> None:
    """Tables 2 and 3 (:data:`TABLES`) and Figures 4-6 (:data:`FIGURE`), into the study's folder ``out``."""
    d = Devices(run)
    draw_tables(d, out / TABLES)
    draw_figures(d, out / FIGURE)


def draw_tables(d: Devices, path: Path) -> None:
    """Per pair: the 90th percentile (top) and the mean (bottom) of the test-device error of each algorithm, the
    seed mean as a bar and every seed as a dot."""
    from fedbench.plotting import pyplot, save_figure

    algs, pairs = (None, *THETAS), d.pairs
    fig, axes = pyplot().subplots(2, len(pairs), figsize=(3.2 * len(pairs), 6), squeeze=False)
    for j, p in enumerate(pairs):
        for i, (what, fn) in enumerate((("90th percentile", device_percentile),
                                         ("mean", lambda e: float(np.mean(e))))):
            ax = axes[i][j]
            for x, t in enumerate(algs):
                vals = [100 * fn(d.errors[(p.key, t, s)]) for s in d.seeds]
                ax.bar(x, np.mean(vals), color="tab:red" if t is None else "tab:blue", alpha=0.6)
                ax.scatter([x] * len(vals), vals, color="k", s=8, zorder=3)
            ax.set_xticks(range(len(algs)), ["FedAvg", *(f"θ={t:g}" for t in THETAS)], fontsize=8)
            ax.set_title(f"{p.label}: {what}", fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{what} of test-device error (%)")
    save_figure(fig, path, dpi=110)


def draw_figures(d: Devices, path: Path) -> None:
    """Figures 4-6 as the paper draws them, a column per pair: the test-device errors of every seed pooled, as
    histograms (top); each training device's final loss against its number of samples, first seed (middle); the
    seed mean of the training loss against the secure aggregation calls, at the rounds every seed evaluated
    (bottom). FedAvg red, Delta-FL(theta*) blue; a diverged run's devices are left out of the middle row."""
    from fedbench.plotting import pyplot, save_figure

    pairs = d.pairs
    fig, axes = pyplot().subplots(3, len(pairs), figsize=(3.4 * len(pairs), 9), squeeze=False)
    for j, p in enumerate(pairs):
        for delta, color, label in ((False, "tab:red", "FedAvg"), (True, "tab:blue", f"Delta-FL θ={d.stars[p.key]:g}")):
            keys = [d.key(p, delta, s) for s in d.seeds]
            axes[0][j].hist(100 * np.concatenate([d.errors[k] for k in keys]), bins=20, range=(0, 100), alpha=0.5,
                            color=color, label=label)
            ds = d.dataset(keys[0])
            loss = training_losses(ds, d.run.outcomes[keys[0]])
            sizes = ds.train.sizes[np.flatnonzero(~np.asarray(ds.test_only))]
            axes[1][j].scatter(sizes[np.isfinite(loss)], loss[np.isfinite(loss)], s=5, alpha=0.5, color=color)
            curves = [d.run.outcomes[k].at_rounds("train/loss") for k in keys]
            shared = sorted(set.intersection(*(set(c) for c in curves)))
            calls = SECURE_AGGREGATION_CALLS["delta_fl" if delta else "fedavg"]
            axes[2][j].plot([r * calls for r in shared], [np.mean([c[r] for c in curves]) for r in shared],
                            color=color, label=label)
        axes[0][j].set_title(p.label, fontsize=9)
        axes[0][j].set_xlabel("test-device error (%)", fontsize=8)
        axes[1][j].set_xlabel("training samples on the device", fontsize=8)
        axes[2][j].set_xlabel("secure aggregation calls", fontsize=8)
        axes[0][j].legend(fontsize=7)
    axes[0][0].set_ylabel("test devices (all seeds)")
    axes[1][0].set_ylabel("final training loss")
    axes[2][0].set_ylabel("training loss (seed mean)")
    save_figure(fig, path, dpi=110)
