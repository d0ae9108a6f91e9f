"""FedProxVR vs FedAvg on synthetic data (Dinh et al., ICPP 2020; talk slides, "Experiments" and
"Comparisons with FedAvg", Table 1; the mu study says "Synthetic: 100 users, beta = 7, tau = 20").

Setting, fixed before any run: Synthetic(0, 0) with 100 users (the authors' 100-user generator lives in
their data/synthetic_0_0 folder; which (alpha, beta) the slides use is not stated), FedProx's power law
for the device sizes, 75% train / 25% test (slides), multinomial logistic regression, every user in every
round (slides: "for all devices in parallel"). Step sizes eta = 1/(beta L) with L = max_i ||x_i~||^2 / 2
over the training samples (x~ = [x, 1]): the smoothness constant of every per-sample loss, which is what
the slides' assumption (1) asks of L (softmax cross-entropy has Hessian <= ||x~||^2 / 2 I).

- FedProxVR, SVRG and SARAH: beta = 7, tau = 20, mu = 0.1 and minibatch B = 32 (Table 1's values for both).
- FedAvg: Table 1's row, beta = 10 (eta = 1/(10 L)), tau = 10 read as 10 local epochs (in the authors'
  code the same option counts epochs for FedAvg and single-batch iterations for the VR methods), B = 16.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedbench.algorithms.fedavg import FedAvg
from fedbench.algorithms.fedproxvr import FedProxVR
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine.simulation import simulate
from fedbench.models import build_model
from fedbench.studies import claim, sim_config
from fedbench.studies.record import params, record, write_simulations

PAPER = ("FedProxVR: Dinh, Tran, Nguyen, Bao, Zomaya, Zhou. Federated Learning with Proximal Stochastic Variance "
         "Reduced Gradient Algorithms. ICPP 2020 (talk slides)")

NUM_USERS = 100
TRAIN_FRACTION = 0.75
DATA_SEED = 0
ROUNDS = 40  # the slides' runs reach T = 895-983 rounds; 40 keeps this study near a minute on 2 CPU cores
SEEDS = (0,)
VR = {"beta": 7.0, "tau": 20, "mu": 0.1, "batch_size": 32}
FEDAVG = {"beta": 10.0, "local_epochs": 10, "batch_size": 16}
MARGIN = 1.0  # accuracy points: "matches"
STILL_MOVING = 0.01  # relative change of the training loss over the last 10 rounds

PUBLISHED_TABLE_1 = [  # copied from the slides (convex task; dataset not stated)
    {"algorithm": "FedAvg", "tau": 10, "beta": 10, "mu": 0, "B": 16, "T": 983, "accuracy": 84.02},
    {"algorithm": "FedProxVR (SVRG)", "tau": 20, "beta": 10, "mu": 0.1, "B": 32, "T": 895, "accuracy": 84.12},
    {"algorithm": "FedProxVR (SARAH)", "tau": 20, "beta": 5, "mu": 0.1, "B": 32, "T": 965, "accuracy": 84.21},
]
UNKNOWN = {"dataset of Table 1": "unknown (the slides do not say; synthetic, MNIST or Fashion-MNIST)",
           "(alpha, beta) of the synthetic data": "unknown", "users per round": "unknown (slides: all devices)",
           "L in eta = 1/(beta L)": "unknown (the formula itself is not verified)",
           "meaning of T": "unknown (round of the best accuracy, or the run length)", "seeds": "unknown"}


def smoothness(x: np.ndarray) -> float:
    """max_i ||[x_i, 1]||^2 / 2: every sample's softmax cross-entropy is L-smooth with this L."""
    return float(0.5 * ((x.astype(np.float64) ** 2).sum(1) + 1.0).max())


def _run(name: str, ds, model, algorithm, batch_size: int, seed: int, local_epochs: int = 1,
         local_steps: int = 0) -> tuple[list[dict[str, float]], dict[str, Any]]:
    """The run's history and its record (fedbench.studies.record)."""
    cfg = sim_config(rounds=ROUNDS, clients_per_round=ds.num_clients, local_epochs=local_epochs,
                     local_steps=local_steps, batch_size=batch_size, seed=seed)
    result = simulate(cfg, ds, model, algorithm)
    knobs = {"method": name, "dataset": "synthetic_0_0", "users": NUM_USERS, "data_seed": DATA_SEED}
    return result.history, record(f"{name}/seed={seed}", params(cfg, algorithm, **knobs), result)


def verdict(mean_best: dict[str, float], moving: dict[str, list[bool]]) -> str:
    """The rule of the entry: mean_best = best test accuracy (%) per method, moving = whether each run's
    training loss was still changing by more than STILL_MOVING over its last 10 rounds."""
    ok = {k: mean_best[k] >= mean_best["FedAvg"] - MARGIN for k in ("SVRG", "SARAH")}
    if all(ok.values()):
        return "reproduced"
    settled_below = [k for k in ok if not ok[k] and not any(moving[k])]
    return "not-reproduced" if settled_below else "inconclusive"


def _moving(loss: list[float]) -> bool:
    return len(loss) > 10 and abs(loss[-1] - loss[-11]) > STILL_MOVING * abs(loss[-11])


def figure(path: Path, histories: dict[str, list[dict[str, float]]]) -> None:
    from fedbench.report.figures import pyplot, save_figure

    fig, axes = pyplot().subplots(1, 2, figsize=(10, 3.8))
    for (name, hist), style in zip(histories.items(), ("-", "-", "--")):
        axes[0].plot([r["train/loss"] for r in hist], style, label=name)
        axes[1].plot([100 * r["test/accuracy"] for r in hist], style, label=name)
    axes[0].set(xlabel="round", ylabel="training loss", title=f"Synthetic(0,0), {NUM_USERS} users (seed {SEEDS[0]})")
    axes[1].set(xlabel="round", ylabel="test accuracy (%)")
    axes[1].axhline(PUBLISHED_TABLE_1[0]["accuracy"], color="grey", ls=":", lw=0.8)
    axes[1].text(0, PUBLISHED_TABLE_1[0]["accuracy"], " slides' Table 1 (dataset unknown)", fontsize=7, va="bottom")
    axes[0].legend()
    save_figure(fig, path, dpi=120)


def run(out_dir: str | Path) -> list[dict[str, Any]]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    ds = generate_synthetic(0.0, 0.0, num_devices=NUM_USERS, seed=DATA_SEED, train_fraction=TRAIN_FRACTION)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    lip = smoothness(ds.train.x)
    best: dict[str, list[float]] = {"FedAvg": [], "SVRG": [], "SARAH": []}
    moving: dict[str, list[bool]] = {k: [] for k in best}
    final_loss: dict[str, list[float]] = {k: [] for k in best}
    first_histories = {}
    records = []
    for seed in SEEDS:
        runs = {
            "FedAvg": _run("FedAvg", ds, model, FedAvg(lr=1.0 / (FEDAVG["beta"] * lip)), FEDAVG["batch_size"], seed,
                           local_epochs=FEDAVG["local_epochs"]),
            # the full-gradient step gives w^(1); tau - 1 minibatch steps give w^(2..tau)
            **{name: _run(name, ds, model, FedProxVR(lr=1.0 / (VR["beta"] * lip), beta=VR["beta"], smoothness=lip,
                                                     tau=VR["tau"], mu=VR["mu"], estimator=est),
                          VR["batch_size"], seed, local_steps=VR["tau"] - 1)
               for name, est in (("SVRG", "svrg"), ("SARAH", "sarah"))},
        }
        for name, (hist, rec) in runs.items():
            loss = [r["train/loss"] for r in hist]
            best[name].append(100 * max(r["test/accuracy"] for r in hist))
            moving[name].append(_moving(loss))
            final_loss[name].append(loss[-1])
            records.append(rec)
        if seed == SEEDS[0]:
            first_histories = {name: hist for name, (hist, _) in runs.items()}
    figure(out / "fedproxvr_synthetic.png", first_histories)
    write_simulations(out, records)

    mean = {k: float(np.mean(v)) for k, v in best.items()}
    still = [k for k in best if any(moving[k])]
    observed = (f"best test accuracy within {ROUNDS} rounds: FedAvg {mean['FedAvg']:.2f}%, SVRG {mean['SVRG']:.2f}%, "
                f"SARAH {mean['SARAH']:.2f}% (slides: 84.02 / 84.12 / 84.21 on an unstated dataset after ~900-1000 "
                f"rounds); training loss after {ROUNDS} rounds: "
                + ", ".join(f"{k} {np.mean(v):.3f}" for k, v in final_loss.items())
                + (f"; still decreasing by more than {int(STILL_MOVING * 100)}% over the last 10 rounds: "
                   + ", ".join(still) if still else "; all settled")
                + f". L = {lip:.1f}, so eta = {1 / (VR['beta'] * lip):.2e} (VR) and {1 / (FEDAVG['beta'] * lip):.2e} "
                  f"(FedAvg)")
    entry = {
        "id": "fedproxvr/synthetic/matches-or-beats-fedavg",
        "paper": PAPER,
        "where": "talk slides, 'Comparisons with FedAvg', Table 1 (convex task); setting of the mu study "
                 "('Synthetic: 100 users, beta = 7, tau = 20')",
        "claim": "FedProxVR with the SVRG and with the SARAH estimator reaches at least FedAvg's test accuracy.",
        "published": {"value": PUBLISHED_TABLE_1, "unit": "test accuracy (%) at the best hyperparameters",
                      "unknown": UNKNOWN},
        "reproduced": {"value": {k: round(v, 2) for k, v in mean.items()},
                       "unit": f"best test accuracy (%) within {ROUNDS} rounds, mean over seeds",
                       "per_seed": {k: [round(x, 2) for x in v] for k, v in best.items()},
                       "final_training_loss": {k: [round(x, 4) for x in v] for k, v in final_loss.items()},
                       "still_decreasing": {k: v for k, v in moving.items()}},
        "rule": (f"best pooled test accuracy over the {ROUNDS + 1} evaluations of each run, mean over seeds. "
                 f"reproduced: SVRG and SARAH each >= FedAvg - {MARGIN:g} point; not-reproduced: a VR method is "
                 f"more than {MARGIN:g} point below FedAvg and its training loss has settled (changed by less than "
                 f"{int(STILL_MOVING * 100)}% over its last 10 rounds, so more rounds would not close the gap); "
                 "inconclusive otherwise"),
        "verdict": verdict(mean, moving),
        "scale": {"dataset": "synthetic_0_0", "users": NUM_USERS, "users_per_round": NUM_USERS,
                  "train_fraction": TRAIN_FRACTION, "data_seed": DATA_SEED, "rounds": ROUNDS, "seeds": list(SEEDS),
                  "smoothness_L": round(lip, 3), "fedproxvr": {**VR, "engine_local_steps": VR["tau"] - 1},
                  "fedavg": FEDAVG, "model": "mclr"},
        "deviations": [
            (f"{ROUNDS} rounds instead of the ~900-1000 of the slides' table (CPU budget of the pipeline); "
             f"{len(SEEDS)} seed"),
            ("Table 1's dataset is not stated; we use Synthetic(0,0) with 100 users, the setting of the slides' mu "
             "study, and beta = 7 for both VR methods as that study does (Table 1 tunes beta per method: 10 and 5)"),
            ("eta = 1/(beta L) with L the per-sample smoothness bound; the authors' L is unknown (their code takes a "
             "raw learning rate)"),
            ("random output iterate t' in 1..tau as the slides' Algorithm 1; the authors' code returns the last "
             "iterate after tau minibatch steps"),
            "minibatches are the engine's per-epoch permutations (the authors draw each batch at random)",
            "data is our seeded draw of the FedProx generator law (75/25 split), not the authors' files",
        ],
        "observed": observed,
    }
    return [claim(**entry)]
