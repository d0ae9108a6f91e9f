"""Delta-FL's Figures 4, 5 and 6 (Pillutla, Laguel, Malick, Harchaoui, arXiv 2002.11223, section 5) as claims of
fedbench.studies.delta_fl_real, judged on the runs its Tables 2 and 3 claims already make (no run is added: the
projected cost is the study's): FedAvg and Delta-FL at the level theta* that the Table 2 claim selects per pair.

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

Readings, fixed before any run (the rules decide as the ones registered for these claims; each is declared as
data, its words generated since issue 30; where they are silent): a training device is a client of the dataset that is not test-only, its loss the mean over its training
samples under the final model (the engine's per-device loss: fedbench.engine.metrics.Evaluation.device_train_loss),
each device counted once, the variance the plain one (numpy's, ddof 0); "mean training loss" is the engine's
``train/loss``, the mean over every training sample (the paper's mean over training devices weighted by n_i). A
diverged run reads as error 1 on every test device (fedbench.studies.delta_fl_devices), as an infinite loss
variance, and as an infinite training loss from the round it diverged in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fedbench.claims.readings import cut_round, device_percentile, read_at_cut
from fedbench.claims.verdict import Rule
from fedbench.study.declaration import Claim

if TYPE_CHECKING:
    from fedbench.data.format import FederatedDataset
    from fedbench.study.runner import Outcome
    from fedbench.studies.delta_fl_pairs import Pair

# Secure aggregation calls a round, by algorithm: appendix C.2.2, "Both FedAvg and Algorithm 2 require one call to
# secure aggregation per iteration" (Algorithm 2 as stated: each device reveals its loss, the quantile is the server's;
# appendix B.1's private variant computes the quantile with several more calls and is not what Figure 6 runs)
SECURE_AGGREGATION_CALLS = {"fedavg": 1, "delta_fl": 1}
CONVERGENCE_MARGIN = 10.0  # % training loss: "competitive", as registered
# each pair's rule, by claim (Figures 4, 5, 6): what the claims declare and figure_entries judges with
TAILS_RULE = Rule("greater", 0.0, "points of test devices")
VARIANCE_RULE = Rule("greater", 0.0, "loss variance")
CONVERGENCE_RULE = Rule("at_most", CONVERGENCE_MARGIN, "% training loss")
NEURAL = ("emnist_cnn", "sent140_rnn", "shakespeare_rnn")  # the neural-network pairs (Figure 5's "more pronounced")
FIGURE = "delta_fl_real_figures.png"  # drawn into the study's folder (the report copies it to figures/delta_fl_real/)
FIGURES = ("delta-fl/real/thinner-upper-tails", "delta-fl/real/train-loss-variance",
           "delta-fl/real/competitive-convergence")

CLAIMS = (
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
)


# ---- readings ---------------------------------------------------------------------------------------------------

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
    return read_at_cut(outcome.at_rounds("train/loss"), rounds, reading, budget, diverged_at=dead, diverged=math.inf)


# ---- the three entries ------------------------------------------------------------------------------------------

def figure_entries(d: Any, pairs: Sequence[Pair], seeds: Sequence[int], stars: dict[str, float],
                   outcomes: dict, datasets: Callable[[tuple], FederatedDataset], errors: dict,
                   rounds: dict[str, int], paper_budget: float, common: dict[str, Any],
                   out: Path | None = None) -> list[dict[str, Any]]:
    """The Figures 4-6 entries of study declaration ``d``: run key (pair key, theta or None for FedAvg, seed) ->
    ``outcomes``, ``datasets(key)`` its data and ``errors`` its test-device errors; ``stars`` theta* per pair;
    ``rounds`` the rounds run per pair; ``paper_budget`` the paper's rounds over the rounds run (> 1 at a cut
    budget); ``common`` the fields every entry of the study carries; ``out``: the study's folder, where
    :func:`draw` puts the figure (None: no figure)."""
    from fedbench.claims.readings import NAMES
    from fedbench.claims.stats import fmt_effect
    from fedbench.claims.verdict import Part, judge

    def key(p: Pair, delta: bool, s: int) -> tuple:
        return (p.key, stars[p.key] if delta else None, s)

    def tails(reading: str, frac: float) -> list[list[float]]:
        return [[tail_share_effect(errors[key(p, False, s)], errors[key(p, True, s)]) for s in seeds] for p in pairs]

    variance = {k: loss_variance(training_losses(datasets(k), outcomes[k]))
                for p in pairs for s in seeds for k in (key(p, False, s), key(p, True, s))}

    def variances(reading: str, frac: float) -> list[list[float]]:
        return [[variance[key(p, False, s)] - variance[key(p, True, s)] for s in seeds] for p in pairs]

    def convergence(reading: str, frac: float) -> list[list[float]]:
        out = []
        for p in pairs:
            fedavg_round = cut_round(rounds[p.key], frac)
            out.append([loss_ratio_effect(train_loss_at(outcomes[key(p, False, s)], fedavg_round, reading, 1.0),
                                          train_loss_at(outcomes[key(p, True, s)], aggregation_round(fedavg_round),
                                                        reading, 1.0)) for s in seeds])
        return out

    names = NAMES | {"final": "final model"}
    tails_result = judge([Part(p.label, TAILS_RULE) for p in pairs], tails,
                         "final", budgets=(1.0,), reading_names=names)
    variance_result = judge([Part(p.label, VARIANCE_RULE) for p in pairs], variances, "final",
                            budgets=(1.0,), reading_names=names)
    conv_result = judge([Part(p.label, CONVERGENCE_RULE) for p in pairs],
                        convergence, "final", ("final", "tail"), paper_budget=paper_budget,
                        reading_names=NAMES | {"final": "after FedAvg's calls in its round budget"})

    def star(p: Pair) -> str:
        return f"theta* = {stars[p.key]:g}"

    def mean_of(values) -> float:
        return float(np.mean(values))

    def above(p: Pair, delta: bool, s: int) -> float:  # % of test devices above FedAvg's 90th percentile
        return round(100 * float(np.mean(errors[key(p, delta, s)] > device_percentile(errors[key(p, False, s)]))), 3)

    shares = {p.key: {who: [above(p, delta, s) for s in seeds] for who, delta in (("fedavg", False), ("delta_fl", True))}
              for p in pairs}
    observed_tails = "; ".join(
        f"{p.label} ({star(p)}): FedAvg {mean_of(shares[p.key]['fedavg']):.2f}%, Delta-FL "
        f"{mean_of(shares[p.key]['delta_fl']):.2f}% (effect {fmt_effect(part)})"
        for p, part in zip(pairs, tails_result["parts"]))
    var_table = {p.key: {who: [float(f"{variance[key(p, delta, s)]:.6g}") for s in seeds]
                         for who, delta in (("fedavg", False), ("delta_fl", True))} for p in pairs}
    relative = {p.key: 100 * (1 - mean_of(var_table[p.key]["delta_fl"]) / mean_of(var_table[p.key]["fedavg"]))
                if 0 < mean_of(var_table[p.key]["fedavg"]) < math.inf else math.nan for p in pairs}
    by_kind = {kind: [relative[p.key] for p in pairs if (p.key in NEURAL) == neural]
               for kind, neural in (("neural networks", True), ("linear models", False))}
    pronounced = "; ".join(f"{kind}: {mean_of(v):.1f}%" for kind, v in by_kind.items() if v)
    observed_var = "; ".join(
        f"{p.label} ({star(p)}): FedAvg {mean_of(var_table[p.key]['fedavg']):.4g}, Delta-FL "
        f"{mean_of(var_table[p.key]['delta_fl']):.4g} (effect {fmt_effect(part)})"
        for p, part in zip(pairs, variance_result["parts"]))
    observed_conv = "; ".join(
        f"{p.label} ({star(p)}, FedAvg at round {rounds[p.key]}, Delta-FL at round {aggregation_round(rounds[p.key])}): "
        f"effect {fmt_effect(part)}" for p, part in zip(pairs, conv_result["parts"]))
    n = len(seeds)
    path = f"figures/{d.name}/{FIGURE}"
    if out is not None:
        draw(Path(out) / FIGURE, pairs, seeds, stars, key, outcomes, datasets, errors)

    def panel(row: str) -> dict[str, str] | None:
        return {"path": path, "panel": row} if out is not None else None

    return [
        d.judged(FIGURES[0], tails_result, figure=panel("top row: histograms of the test-device error (Figure 4)"),
                 observed=f"share of test devices above FedAvg's 90th percentile (%, mean of {n} seeds), final model: "
                          + observed_tails,
                 reproduced={"unit": "% of test devices, per seed", "theta_star": stars, "table": shares}, **common),
        d.judged(FIGURES[1], variance_result,
                 figure=panel("middle row: training-device loss against its samples, first seed (Figure 5)"),
                 observed=f"variance of the training devices' loss (mean of {n} seeds), final model: {observed_var}. "
                          f"Reduction relative to FedAvg's, mean over the pairs (reported, not judged): {pronounced}",
                 reproduced={"unit": "loss variance, per seed", "theta_star": stars, "table": var_table,
                             "relative_reduction_pct": {k: round(v, 3) for k, v in relative.items()}}, **common),
        d.judged(FIGURES[2], conv_result,
                 figure=panel("bottom row: training loss against secure aggregation calls (Figure 6)"),
                 observed=f"training loss of Delta-FL relative to FedAvg's after the same number of secure aggregation "
                          f"calls ({SECURE_AGGREGATION_CALLS['fedavg']} a round for FedAvg, "
                          f"{SECURE_AGGREGATION_CALLS['delta_fl']} for Delta-FL; mean of {n} seeds): " + observed_conv,
                 reproduced={"unit": "% training loss, per seed", "theta_star": stars,
                             "secure_aggregation_calls_per_round": dict(SECURE_AGGREGATION_CALLS)}, **common),
    ]


def draw(path: Path, pairs: Sequence[Pair], seeds: Sequence[int], stars: dict[str, float], key: Callable,
         outcomes: dict, datasets: Callable[[tuple], FederatedDataset], errors: dict) -> None:
    """Figures 4-6 as the paper draws them, a column per pair: the test-device errors of every seed pooled, as
    histograms (top); each training device's final loss against its number of samples, first seed (middle); the
    seed mean of the training loss against the secure aggregation calls, at the rounds every seed evaluated
    (bottom). FedAvg red, Delta-FL(theta*) blue; a diverged run's devices are left out of the middle row."""
    from fedbench.plotting import pyplot, save_figure

    fig, axes = pyplot().subplots(3, len(pairs), figsize=(3.4 * len(pairs), 9), squeeze=False)
    for j, p in enumerate(pairs):
        for delta, color, label in ((False, "tab:red", "FedAvg"), (True, "tab:blue", f"Delta-FL θ={stars[p.key]:g}")):
            keys = [key(p, delta, s) for s in seeds]
            axes[0][j].hist(100 * np.concatenate([errors[k] for k in keys]), bins=20, range=(0, 100), alpha=0.5,
                            color=color, label=label)
            ds = datasets(keys[0])
            loss = training_losses(ds, outcomes[keys[0]])
            sizes = ds.train.sizes[np.flatnonzero(~np.asarray(ds.test_only))]
            axes[1][j].scatter(sizes[np.isfinite(loss)], loss[np.isfinite(loss)], s=5, alpha=0.5, color=color)
            curves = [outcomes[k].at_rounds("train/loss") for k in keys]
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
