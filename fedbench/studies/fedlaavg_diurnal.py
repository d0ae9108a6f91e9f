"""FedLaAvg vs FedAvg under diurnal availability with label-skewed clients (Yan et al., arXiv 2002.07399 v1,
section 5, Table 2: best test accuracy within 70,000 rounds on CIFAR-10, FedLaAvg 60.98% vs FedAvg 56.75% under
intermittent availability), at reduced scale on synthetic data (the CIFAR-10 claim itself,
fedlaavg/cifar10/ica-gain, is the paper-scale study fedbench.studies.fedlaavg_cifar10).

Stand-in for the CIFAR-10 setup (section 5.1 and the authors' code, setups 5.4), everything else kept:
- data: a 10-class Gaussian mixture in R^60 (class means ~ N(0, 0.3^2 I), unit noise), 600 training and 100
  test points per class, drawn once (data seed 0); a softmax regression model (fedbench's mclr) instead of the
  CNN;
- clients: N = 100, each holding one class (10 clients per class), the class's samples cut with weights
  5 + N(0, 1) clipped to [3, 7] (the authors' utils/partition.py); each client's test points are its share of
  its class's 100;
- availability: the diurnal pattern with P = 10, beta = 0.5 (the authors' defaults): clients of classes 0-4
  for 10 rounds, then classes 5-9 for int(0.5 * 10) = 5 rounds;
- K = 10 clients per round (gamma = 0.1), C = 10 local steps of batch 5 (the authors' defaults), constant
  learning rate 0.05 for both algorithms, ROUNDS rounds, seeds 0-4 (selection, minibatches, init);
- FedAvg selects K available clients uniformly (the engine's draw) and averages their models with weights
  n_k; FedLaAvg selects the K available clients absent the longest and steps with the average of all N latest
  accumulated gradients (loss scaled by N p_i).
Sequential SGD (K C = 100 steps of batch 5 per round on the pooled data) is run as the paper's reference,
and both algorithms also under full availability (the paper's FCA column), as context for the verdict (these
three on the first seed only, to keep the study under a minute on two cores; runs go to two processes).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fedbench.availability import AvailabilityConfig
from fedbench.data.format import FederatedDataset, Split
from fedbench.claims.readings import NAMES, peak_to_trough, read_accuracy
from fedbench.claims.stats import fmt_effect
from fedbench.claims.verdict import Part, Rule
from fedbench.seeding import rng
from fedbench.claims.papers import FEDLAAVG_PAPER
from fedbench.study.contract import Measurement, StudyRun
from fedbench.study.runner import Simulation, sim_config
from fedbench.study.declaration import Arm, Claim, StudyDeclaration

if TYPE_CHECKING:  # annotations only: importing the study imports no torch (fedbench.study.registry)
    from fedbench.engine.simulation import SimulationConfig

NUM_CLASSES = 10
DIM = 60
CLASS_SPREAD = 0.3  # class means ~ N(0, CLASS_SPREAD^2 I)
TRAIN_PER_CLASS, TEST_PER_CLASS = 600, 100
CLIENTS_PER_CLASS = 10
PERIOD, BETA = 10, 0.5
K, C, BATCH = 10, 10, 5
LR = 0.05
ROUNDS = 600
PAPER_ROUNDS = 70000  # Table 2: best within 70,000 rounds
GAIN_RULE = Rule("greater", 0.0, "accuracy points")  # the sign (issue 32: the 1-point threshold of the second version
# was this project's, not the paper's)

PUBLISHED_ICA = {"fedavg": 56.75, "fedlaavg": 60.98}
CONTEXT = ("fedavg_fca", "fedlaavg_fca", "sequential")  # run on the first seed only, read by no rule
# The study as data (fedbench.study.declaration): the comparison arms run on every seed, the context arms on the
# first; the driver runs it on other seeds where given (params.yaml claim_studies.<group>.fedlaavg_diurnal.seeds).
DECLARATION = StudyDeclaration(
    name="fedlaavg_diurnal", paper=FEDLAAVG_PAPER,
    dataset=f"{NUM_CLASSES}-class Gaussian mixture in R^{DIM}, one class per client, {NUM_CLASSES * CLIENTS_PER_CLASS} "
            "clients (CIFAR-10 stand-in)",
    arms=(Arm("fedavg", "fedavg", {"lr": LR, "availability": "diurnal"}),
          Arm("fedlaavg", "fedlaavg", {"lr": LR, "availability": "diurnal"}),
          Arm("fedavg_fca", "fedavg", {"lr": LR, "availability": "always"}),
          Arm("fedlaavg_fca", "fedlaavg", {"lr": LR, "availability": "always"}),
          Arm("sequential", "sequential_sgd", {"lr": LR, "availability": "always"})),
    seeds=(0, 1, 2, 3, 4), budgets={"pipeline": ROUNDS}, data_seeds=(0,), fresh_data=True,
    claims=(Claim(
        id="fedlaavg/synthetic/diurnal-gain", where="section 5.2, Table 2 (ICA column), Figure 2",
        claim_text="Under diurnal intermittent availability with label-skewed clients, FedLaAvg reaches a higher best "
                   "test accuracy than FedAvg (small synthetic stand-in for the CIFAR-10 +4.23 points).",
        published={"value": round(PUBLISHED_ICA["fedlaavg"] - PUBLISHED_ICA["fedavg"], 2), "unit": "accuracy points",
                   "scope": "CIFAR-10, CNN, best within 70,000 rounds",
                   "statement": f"FedLaAvg {PUBLISHED_ICA['fedlaavg']}% vs FedAvg {PUBLISHED_ICA['fedavg']}% (Table 2, "
                                "ICA); ours is a synthetic stand-in, so only the sign and rough size compare"},
        effect="per seed, gain = best test accuracy of FedLaAvg - that of FedAvg (points, the paper's Table 2 reading)",
        rules=(("", GAIN_RULE),),
        notes="The sign: the published +4.23 is CIFAR-10's. Rule history: the first version asked for a gain in every "
              "seed and a mean of at least 1 point, the second for the interval above 0 and reaching +1 point; the 1 "
              "point was this project's choice, so issue 32 made it the sign",
        reads=("fedavg", "fedlaavg"), rounds_paper=PAPER_ROUNDS, fidelity="stand-in"),))


def dataset(seed: int = 0) -> FederatedDataset:
    """One class per client, N = CLIENTS_PER_CLASS * NUM_CLASSES clients (client k holds class k // 10)."""
    g = rng(seed, -1, "data")
    means = g.normal(0.0, CLASS_SPREAD, size=(NUM_CLASSES, DIM))
    parts = rng(seed, -1, "partition")
    train_x, train_y, test_x, test_y = [], [], [], []
    for c in range(NUM_CLASSES):
        x = (means[c] + g.normal(size=(TRAIN_PER_CLASS, DIM))).astype(np.float32)
        xt = (means[c] + g.normal(size=(TEST_PER_CLASS, DIM))).astype(np.float32)
        weights = np.clip(5.0 + parts.normal(size=CLIENTS_PER_CLASS), 3.0, 7.0)
        cuts = np.round(np.cumsum(weights / weights.sum()) * TRAIN_PER_CLASS).astype(int)[:-1]
        test_cuts = np.linspace(0, TEST_PER_CLASS, CLIENTS_PER_CLASS + 1).astype(int)[1:-1]
        for xs, xts in zip(np.split(x, cuts), np.split(xt, test_cuts)):
            train_x.append(xs)
            train_y.append(np.full(len(xs), c, np.int64))
            test_x.append(xts)
            test_y.append(np.full(len(xts), c, np.int64))
    n = NUM_CLASSES * CLIENTS_PER_CLASS
    return FederatedDataset(name="fedlaavg-one-class-gaussian", client_ids=tuple(f"c{k:03d}" for k in range(n)),
                            train=Split.from_clients(train_x, train_y, (DIM,)),
                            test=Split.from_clients(test_x, test_y, (DIM,)), num_classes=NUM_CLASSES,
                            source={"study": "fedlaavg/synthetic/diurnal-gain", "seed": seed})


@functools.cache
def _shared_dataset(data_seed: int = 0) -> FederatedDataset:
    """dataset(data_seed), built once per process (simulations() builds it before forking, so the workers share
    it)."""
    return dataset(data_seed)


def config(seed: int, availability: AvailabilityConfig) -> SimulationConfig:
    return sim_config(evaluations=DECLARATION.evaluation,
                      rounds=ROUNDS, clients_per_round=K, local_steps=C, batch_size=BATCH, seed=seed,
                      availability=availability)


@functools.cache
def _pooled_dataset(data_seed: int = 0) -> FederatedDataset:
    """The clients' data pooled into one client, for sequential SGD."""
    from fedbench.algorithms.sequential_sgd import pool_clients

    return pool_clients(_shared_dataset(data_seed))


def simulation(name: str, seed: int, declaration: StudyDeclaration = DECLARATION) -> Simulation:
    """One run of the study: arm ``name`` of DECLARATION (its algorithm and availability) with ``seed``, on the
    mixture ``declaration`` gives the seed (the declared draw, or a confirmatory block's own), its record labelled as
    the declaration labels it."""
    from fedbench.algorithms import FedAvg, FedLaAvg, SequentialSGD
    from fedbench.algorithms.sequential_sgd import sequential_config
    from fedbench.models import build_model

    data_seed = declaration.data_seed(seed)
    ds = _shared_dataset(data_seed)
    shared, pooled = functools.partial(_shared_dataset, data_seed), functools.partial(_pooled_dataset, data_seed)
    label = {"method": name, **declaration.data_label(seed)}
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    arm = DECLARATION.arm(name)
    availability = (AvailabilityConfig(model="diurnal", period=PERIOD, beta=BETA)  # groups by majority label
                    if arm.settings["availability"] == "diurnal" else AvailabilityConfig())
    lr = arm.settings["lr"]
    if arm.algorithm == "sequential_sgd":
        return Simulation(f"{name}/seed={seed}", sequential_config(config(seed, availability)), pooled, model,
                          SequentialSGD(lr=lr), label)
    algorithm = {"fedlaavg": FedLaAvg, "fedavg": FedAvg}[arm.algorithm](lr=lr)
    return Simulation(f"{name}/seed={seed}", config(seed, availability), shared, model, algorithm, label)


def simulations(run: StudyRun) -> dict[tuple[str, int], Simulation]:
    """The comparison on every seed; the context runs (full availability, sequential SGD) on the first seed."""
    seeds = run.seeds
    jobs = [(name, s) for s in seeds for name in run.declaration.claim("fedlaavg/synthetic/diurnal-gain").reads]
    jobs += [(name, seeds[0]) for name in CONTEXT]
    return {(name, seed): simulation(name, seed, run.declaration) for name, seed in jobs}


def curves(run: StudyRun) -> dict[str, dict[int, np.ndarray]]:
    """Each arm's test accuracy (%) per round, by seed."""
    out: dict[str, dict[int, np.ndarray]] = {}
    for (name, seed), outcome in run.outcomes.items():
        out.setdefault(name, {})[seed] = 100 * np.array(outcome.series("test/accuracy"))
    return out


DEVIATIONS = [
    ("synthetic Gaussian-mixture data and softmax regression instead of CIFAR-10 and the CNN (CIFAR-10 is not "
     "wired into fedbench yet); N = 100 clients instead of 1000; 600 rounds instead of 70,000"),
    ("constant learning rate 0.05 for every method (the paper tunes an exponentially decayed rate per "
     "experiment; its values are stripped from our copy); chosen once before any comparison was run"),
    ("FedAvg is fedbench's (n_k-weighted mean of local models, unscaled loss); the authors' FedAvg baseline "
     "uses the N p_i-scaled loss and a plain mean (equal here up to the partition's size spread)"),
    "best test accuracy over the evaluated rounds (every round), pooled over the clients' test points",
    "sequential SGD starts a fresh permutation of the pooled data every round",
]


def measure(claim: Claim, run: StudyRun) -> Measurement:
    """Per seed, FedLaAvg's best test accuracy minus FedAvg's; the context runs and the last periods' mean and
    peak-to-trough reported beside it."""
    seeds = run.seeds

    def acc(name: str, seed: int, reading: str, budget: float) -> float:
        out = run.outcomes[name, seed]
        return 100 * read_accuracy(out.series("train/loss"), out.series("test/accuracy"), reading, ROUNDS, budget)

    def values(reading: str, budget: float) -> list[list[float]]:
        return [[acc("fedlaavg", s, reading, budget) - acc("fedavg", s, reading, budget) for s in seeds]]

    per_seed = curves(run)
    best = {name: {s: float(c.max()) for s, c in by_seed.items()} for name, by_seed in per_seed.items()}
    tail = 4 * (PERIOD + int(BETA * PERIOD))  # the last four availability periods
    tail_mean = {name: float(np.mean([c[-tail:].mean() for c in per_seed[name].values()]))
                 for name in ("fedavg", "fedlaavg")}
    tail_range = {name: float(np.mean([peak_to_trough(c, tail) for c in per_seed[name].values()]))
                  for name in ("fedavg", "fedlaavg")}

    def mean(name):
        return float(np.mean(list(best[name].values())))

    scale = {"clients": NUM_CLASSES * CLIENTS_PER_CLASS, "clients_per_round": K, "local_steps": C, "batch_size": BATCH,
             "lr": LR, "rounds": ROUNDS, "period": PERIOD, "beta": BETA, "model": "mclr",
             "data": f"{NUM_CLASSES}-class Gaussian mixture in R^{DIM}, {TRAIN_PER_CLASS}/{TEST_PER_CLASS} "
                     "train/test points per class, one class per client"}
    gain = claim.rule_for().counted().effect(values("best", 1.0)[0])  # the effect judged (one part), for the text
    observed = (f"best test accuracy, mean of {len(seeds)} seeds: FedLaAvg {mean('fedlaavg'):.2f}% vs FedAvg "
                f"{mean('fedavg'):.2f}% under diurnal availability (gain {fmt_effect(gain)}); seed {seeds[0]} only: "
                f"full availability FedLaAvg {mean('fedlaavg_fca'):.2f}% vs FedAvg {mean('fedavg_fca'):.2f}%, sequential "
                f"SGD {mean('sequential'):.2f}%. Over the last {tail} rounds (context, not the rule): mean accuracy "
                f"FedLaAvg {tail_mean['fedlaavg']:.2f}% vs FedAvg {tail_mean['fedavg']:.2f}%, peak-to-trough FedLaAvg "
                f"{tail_range['fedlaavg']:.2f} vs FedAvg {tail_range['fedavg']:.2f} points"
                + (" (FedAvg oscillates more with the availability pattern, as the paper's Figure 2 describes)"
                   if tail_range["fedavg"] > tail_range["fedlaavg"] else "")
                + f". Published (CIFAR-10): {PUBLISHED_ICA['fedlaavg']} vs {PUBLISHED_ICA['fedavg']} (+4.23)")
    figure = {"path": "studies/fedlaavg_diurnal/fedlaavg_diurnal.png", "panel": "test accuracy under diurnal "
                                                                                 "availability (solid lines)"}
    entry = dict(
        reproduced={"unit": "best test accuracy (%)",
                    "fedlaavg_best": [round(best["fedlaavg"][s], 2) for s in seeds],
                    "fedavg_best": [round(best["fedavg"][s], 2) for s in seeds],
                    "full_availability_first_seed": {"fedlaavg_best": round(mean("fedlaavg_fca"), 2),
                                                     "fedavg_best": round(mean("fedavg_fca"), 2)},
                    "sequential_sgd_best_first_seed": round(mean("sequential"), 2)},
        scale=scale, deviations=DEVIATIONS, figure=figure, fidelity="stand-in", rounds_run=ROUNDS,
        rounds_paper=PAPER_ROUNDS, observed=observed)
    return Measurement([Part("diurnal availability", claim.rule_for())], values, "best", ("best", "tail", "final"),
                       reading_names=NAMES | {"best": "best round"}, entry=entry)


def figure(run: StudyRun, out: Path) -> None:
    _figure(out / "fedlaavg_diurnal.png", curves(run), len(run.seeds))


def _figure(path: Path, curves, seeds: int) -> None:
    from fedbench.plotting import pyplot, save_figure

    fig, ax = pyplot().subplots(figsize=(8, 4.2))
    styles = {"fedavg": ("FedAvg (ICA)", "tab:red", "-"), "fedlaavg": ("FedLaAvg (ICA)", "tab:blue", "-"),
              "fedavg_fca": ("FedAvg (FCA, seed 0)", "tab:red", ":"),
              "fedlaavg_fca": ("FedLaAvg (FCA, seed 0)", "tab:blue", ":"),
              "sequential": ("sequential SGD (seed 0)", "k", "--")}
    for name, (label, color, ls) in styles.items():
        stack = np.vstack(list(curves[name].values()))
        ax.plot(np.arange(stack.shape[1]), stack.mean(0), color=color, ls=ls, lw=1, label=label)
    ax.set_xlabel("round")
    ax.set_ylabel(f"test accuracy (%), ICA: mean of {seeds} seeds")
    ax.set_title(f"Diurnal availability P={PERIOD}, beta={BETA}: one-class clients, N=100, K={K}, C={C}")
    ax.legend(fontsize=8)
    save_figure(fig, path, dpi=120)
