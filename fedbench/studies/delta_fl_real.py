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
Figures 4-6 (the upper tail of the test-device error, the variance of the training-device loss, the training loss
after as many secure aggregation calls) are claims on the same runs: fedbench.studies.delta_fl_real_claims.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fedbench.claims.papers import DELTA_FL_PAPER
from fedbench.claims.readings import device_percentile
from fedbench.claims.verdict import Rule
from fedbench.study.runner import WORKERS
from fedbench.studies.delta_fl_devices import error_record, history_p90, subsampled, test_device_errors
from fedbench.studies.delta_fl_pairs import PAIRS, Pair, pair
from fedbench.studies.delta_fl_real_claims import CLAIMS as FIGURE_CLAIMS, figure_entries
from fedbench.studies.real_data import REAL_ROOT, load_real
from fedbench.study.declaration import Arm, Claim, StudyDeclaration
from fedbench.study.scale import Scale

if TYPE_CHECKING:
    from fedbench.study.runner import Simulation

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
    *FIGURE_CLAIMS,  # Figures 4-6, on the same runs (fedbench.studies.delta_fl_real_claims)
))


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


def simulations(budget: Budget, real_root: Path) -> dict[tuple[str, float | None, int], Simulation]:
    """Every run: (pair key, theta or None for FedAvg, seed) -> Simulation."""
    from fedbench.algorithms import DeltaFL, FedAvg
    from fedbench.study.runner import Simulation, sim_config
    from fedbench.studies.real_data import build

    out, delta = {}, DECLARATION.arm("delta_fl")
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


# ---- readings (the per-test-device ones: fedbench.studies.delta_fl_devices) -------------------------------

def best_theta(p90_by_theta: dict[float, list[float]]) -> float:
    """The level with the lowest mean over seeds of the 90th-percentile error (Table 2 compares seed means); a tie
    goes to the level listed first in THETAS."""
    return min(THETAS, key=lambda t: (float(np.mean(p90_by_theta[t])), THETAS.index(t)))


def run(out_dir: str | Path, workers: int = WORKERS, budget: str = "paper", real_root: str | Path = REAL_ROOT,
        seeds: tuple[int, ...] | None = None) -> list[dict[str, Any]]:
    """The claims judged at ``budget`` (BUDGETS), on training ``seeds`` if given (a confirmatory run's frozen block,
    fedbench.studies.confirm)."""
    from fedbench.claims.readings import NAMES
    from fedbench.claims.stats import fmt_effect
    from fedbench.claims.verdict import Part, judge
    from fedbench.study.runs import open_seeded

    b, study, d = open_seeded(out_dir, DECLARATION, budget, workers, seeds)
    out = study.out
    sims = simulations(b, Path(real_root))
    outcomes = study.run(sims, error_record)
    study.write()
    errors = {k: test_device_errors(sims[k].dataset(), o) for k, o in outcomes.items()}
    pooled = {k: 1.0 if o.diverged else 1.0 - float(o.final["test/accuracy"]) for k, o in outcomes.items()}
    pairs = [pair(k) for k in b.pairs]
    rounds = {p.key: b.rounds or p.rounds for p in pairs}

    def p90_of(p: Pair, theta: float | None, seed: int, reading: str, frac: float) -> float:
        if reading == "final" and frac == 1.0:
            return device_percentile(errors[(p.key, theta, seed)])
        return history_p90(outcomes[(p.key, theta, seed)], rounds[p.key], reading, frac)

    def theta_star(p: Pair, reading: str = "final", frac: float = 1.0) -> float:
        return best_theta({t: [p90_of(p, t, s, reading, frac) for s in b.seeds] for t in THETAS})

    def p90_effects(reading: str, frac: float) -> list[list[float]]:
        out_ = []
        for p in pairs:
            t = theta_star(p, reading, frac)
            out_.append([100 * (p90_of(p, None, s, reading, frac) - p90_of(p, t, s, reading, frac)) for s in b.seeds])
        return out_

    def mean_effects(reading: str, frac: float) -> list[list[float]]:
        mean = (lambda k: float(errors[k].mean())) if reading == "final" else pooled.__getitem__
        return [[100 * (mean((p.key, theta_star(p), s)) - mean((p.key, None, s))) for s in b.seeds] for p in pairs]

    paper_rounds = min(p.rounds for p in pairs)
    rounds_run = b.rounds or None
    reduced = b.rounds is not None and b.rounds < paper_rounds
    paper_budget = paper_rounds / b.rounds if reduced else 1.0
    names = NAMES | {"final": "final round", "tail": "mean of the last 5 rounds' p90",
                     "weighted": "final round, n_i-weighted mean (authors' code)"}
    p90_result = judge([Part(p.label, P90_RULE) for p in pairs], p90_effects, "final",
                       ("final", "tail"), paper_budget=paper_budget, reading_names=names)
    mean_result = judge([Part(p.label, MEAN_RULE) for p in pairs], mean_effects,
                        "final", ("final", "weighted"), budgets=(1.0,), reading_names=names)
    stars = {p.key: theta_star(p) for p in pairs}
    table = {p.key: {algorithm_name(t): {"p90": [round(100 * device_percentile(errors[(p.key, t, s)]), 3)
                                                 for s in b.seeds],
                                         "mean": [round(100 * float(errors[(p.key, t, s)].mean()), 3)
                                                  for s in b.seeds]}
                     for t in (None, *THETAS)} | {"theta_star": stars[p.key],
                                                  "test_devices": len(errors[(p.key, None, b.seeds[0])])}
             for p in pairs}
    diverged = sorted(sims[k].name for k, o in outcomes.items() if o.diverged)
    figure(out / f"{d.name}.png", pairs, b.seeds, errors)
    def seed_mean(p: Pair, t: float | None, what: str) -> float:
        return float(np.mean(table[p.key][algorithm_name(t)][what]))

    observed_p90 = "; ".join(
        f"{p.label}: FedAvg {seed_mean(p, None, 'p90'):.2f}, " + ", ".join(
            f"theta={t:g} {seed_mean(p, t, 'p90'):.2f}" for t in THETAS)
        + f" (theta* = {stars[p.key]:g}; effect {fmt_effect(part)})"
        for p, part in zip(pairs, p90_result["parts"]))
    observed_mean = "; ".join(
        f"{p.label}: FedAvg {seed_mean(p, None, 'mean'):.2f}, Delta-FL(theta*={stars[p.key]:g}) "
        f"{seed_mean(p, stars[p.key], 'mean'):.2f} (effect {fmt_effect(part)})"
        for p, part in zip(pairs, mean_result["parts"]))
    tail = (f". Diverged runs (read as error 1): {', '.join(diverged)}" if diverged else "") + (
        f". Fixture budget: {b.rounds} rounds on fixture-sized data, every pair" if budget == "fixture" else "")
    scale = {"study": d.name, "budget": budget, "variants": list(d.variants), "seeds": list(b.seeds),
             "thetas": list(THETAS), "weighting": WEIGHTING, "device": b.device,
             "pairs": {p.key: {"variant": p.variant, "model": p.model, "rounds": rounds[p.key],
                               "rounds_paper": p.rounds, "clients_per_round": p.clients_per_round, "lr": p.lr,
                               "batch_size": p.batch_size, "local_epochs": 1,
                               "user_subsample": SUBSAMPLE_FRACTION if p.subsample and b.subsample else None}
                       for p in pairs}}
    figure_path = f"figures/{d.name}/{d.name}.png"
    # the claims' fidelity (paper-scale) unless the budget cuts the rounds
    common = {"scale": scale, "rounds_run": rounds_run, "training_seeds": list(b.seeds),
              "data_seeds": list(DATA_SEEDS)} | ({"fidelity": "stand-in"} if reduced else {})
    p90_entry = d.judged(
        "delta-fl/real/p90-error", p90_result, figure={"path": figure_path, "panel": "top row: 90th-percentile test-device error"},
        observed=f"90th-percentile test-device error (points, mean of {len(b.seeds)} seeds) at the final round: "
                 + observed_p90 + tail,
        reproduced={"unit": "test-device error (points), per seed", "table": table}, **common)
    mean_entry = d.judged(
        "delta-fl/real/mean-error-on-par", mean_result, figure={"path": figure_path, "panel": "bottom row: mean test-device error"},
        observed=f"mean test-device error (points, unweighted, mean of {len(b.seeds)} seeds) at the final round: "
                 + observed_mean + tail,
        reproduced={"unit": "test-device error (points), per seed", "theta_star": stars,
                    "table": {k: {a: v["mean"] if isinstance(v, dict) else v for a, v in row.items()}
                              for k, row in table.items()}}, **common)
    figures = figure_entries(d, pairs, b.seeds, stars, outcomes, lambda k: sims[k].dataset(), errors, rounds,
                             paper_budget, common, out)
    return [p90_entry, mean_entry, *figures]


def figure(path: Path, pairs: list[Pair], seeds: tuple[int, ...], errors: dict) -> None:
    """Per pair: the 90th percentile (top) and the mean (bottom) of the test-device error of each algorithm, the
    seed mean as a bar and every seed as a dot."""
    from fedbench.plotting import pyplot, save_figure

    algs = (None, *THETAS)
    fig, axes = pyplot().subplots(2, len(pairs), figsize=(3.2 * len(pairs), 6), squeeze=False)
    for j, p in enumerate(pairs):
        for i, (what, fn) in enumerate((("90th percentile", device_percentile),
                                         ("mean", lambda e: float(np.mean(e))))):
            ax = axes[i][j]
            for x, t in enumerate(algs):
                vals = [100 * fn(errors[(p.key, t, s)]) for s in seeds]
                ax.bar(x, np.mean(vals), color="tab:red" if t is None else "tab:blue", alpha=0.6)
                ax.scatter([x] * len(vals), vals, color="k", s=8, zorder=3)
            ax.set_xticks(range(len(algs)), ["FedAvg", *(f"θ={t:g}" for t in THETAS)], fontsize=8)
            ax.set_title(f"{p.label}: {what}", fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{what} of test-device error (%)")
    save_figure(fig, path, dpi=110)
