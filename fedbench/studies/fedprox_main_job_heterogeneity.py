"""The main job's FedProx claims on heterogeneity (Figure 2: FedAvg's loss and dissimilarity grow with it, FedProx
helps) and on IID data (Figure 5: stragglers and partial work change little), each a function from the runs
(fedbench.studies.fedprox_curves.Curves) and the declared claim to its Measurement; declared in
fedbench.studies.fedprox_main_job, measured here as fedbench.studies.fedprox_main_job_claims measures Figures 1 and
7's, judged by the one driver (fedbench.study.contract).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedbench.config import Config
from fedbench.claims.readings import NAMES, read_accuracy, read_loss
from fedbench.claims.stats import fmt_effect, fmt_number
from fedbench.claims.verdict import Part
from fedbench.studies.fedprox_curves import (ACCURACY_READINGS, FIG2, FIG5, HETERO, LOSS_READINGS, PAPER_ROUNDS,
                                             REGISTERED_AFTER_RUNS, TITLES, Curves, entry_fields, mean_dissimilarity,
                                             missing_runs, missing_why, per_seed)
from fedbench.study.contract import Measurement
from fedbench.study.declaration import Claim


def heterogeneity_hurts(cfg: Config, curves: Curves, claim: Claim) -> Measurement:
    seeds, rounds = cfg.train.seeds, cfg.train.rounds
    rule = claim.rule_for()
    parts = ([Part(f"FedAvg {TITLES[b]} - {TITLES[a]}", rule) for a, b in zip(HETERO, HETERO[1:])]
             + [Part(f"FedAvg - FedProx(mu=1) on {TITLES[d]}", rule) for d in HETERO[1:]])
    fields = entry_fields(cfg, list(HETERO),
                          ["mu = 1 for every dataset (the paper tunes mu per dataset; 1 is its best for Synthetic(1,1))"],
                          {"path": FIG2, "panel": "top row (training loss)"})
    cells = [(d, v, 0.0) for d in HETERO for v in ("fedavg", "fedprox_mu1")]
    missing = missing_runs(curves, cells, seeds)
    if missing:
        return Measurement(entry=fields, not_run=missing_why(missing))

    def loss(d, v, s, reading, budget):
        return read_loss(curves.series(d, v, 0.0, s, "train/loss"), reading, rounds, budget)

    def measure(reading, budget):
        a = [[loss(b, "fedavg", s, reading, budget) - loss(a, "fedavg", s, reading, budget) for s in seeds]
             for a, b in zip(HETERO, HETERO[1:])]
        b = [[loss(d, "fedavg", s, reading, budget) - loss(d, "fedprox_mu1", s, reading, budget) for s in seeds]
             for d in HETERO[1:]]
        return a + b

    fields["reproduced"] = {"unit": "training loss, mean of the last 5 evaluations",
                            **{d: {v: per_seed([loss(d, v, s, "tail", 1.0) for s in seeds])
                                   for v in ("fedavg", "fedprox_mu1")} for d in HETERO}}
    means = {d: float(np.mean([loss(d, "fedavg", s, "tail", 1.0) for s in seeds])) for d in HETERO}

    def observed(result):
        return ("FedAvg's loss by dataset (seed means): " + ", ".join(f"{TITLES[d]} {fmt_number(m)}"
                                                                     for d, m in means.items())
                + "; " + "; ".join(f"{p['part']}: {fmt_effect(p)} ({p['verdict']})" for p in result["parts"]))
    return Measurement(parts, measure, "tail", LOSS_READINGS, reading_names=NAMES, entry=fields, observed=observed)


def dissimilarity_tracks_loss(cfg: Config, curves: Curves, claim: Claim) -> Measurement:
    seeds, rounds = cfg.train.seeds, cfg.train.rounds
    rule = claim.rule_for()
    parts = ([Part(f"FedAvg {TITLES[b]} - {TITLES[a]}", rule) for a, b in zip(HETERO, HETERO[1:])]
             + [Part(f"FedAvg - FedProx(mu=1) on {TITLES[d]}", rule) for d in HETERO[1:]])
    fields = entry_fields(cfg, list(HETERO), [], {"path": FIG2, "panel": "bottom row (variance of local gradients)"})
    cells = [(d, v, 0.0) for d in HETERO for v in ("fedavg", "fedprox_mu1")]
    missing = missing_runs(curves, cells, seeds)
    if missing:
        return Measurement(entry=fields, not_run=missing_why(missing))

    def dis(d, v, s, reading, budget):
        return mean_dissimilarity(curves.series(d, v, 0.0, s, "train/dissimilarity"), rounds, budget, reading)

    def measure(reading, budget):
        a = [[dis(b, "fedavg", s, reading, budget) - dis(a, "fedavg", s, reading, budget) for s in seeds]
             for a, b in zip(HETERO, HETERO[1:])]
        b = [[dis(d, "fedavg", s, reading, budget) - dis(d, "fedprox_mu1", s, reading, budget) for s in seeds]
             for d in HETERO[1:]]
        return a + b

    rho = []
    for s in seeds:
        d_s = pd.Series({d: dis(d, "fedavg", s, "mean", 1.0) for d in HETERO})
        l_s = pd.Series({d: read_loss(curves.series(d, "fedavg", 0.0, s, "train/loss"), "tail", rounds) for d in HETERO})
        rho.append(float(d_s.rank().corr(l_s.rank())))
    fields["reproduced"] = {"unit": "mean dissimilarity over the evaluated rounds",
                            **{d: {v: per_seed([dis(d, v, s, "mean", 1.0) for s in seeds])
                                   for v in ("fedavg", "fedprox_mu1")} for d in HETERO},
                            "spearman_dissimilarity_vs_loss_per_seed": [round(r, 4) for r in rho]}

    def observed(result):
        return ("; ".join(f"{p['part']}: {fmt_effect(p)} ({p['verdict']})" for p in result["parts"])
                + ". Spearman of FedAvg's dissimilarity and loss over the datasets, per seed: "
                + ", ".join(f"{r:.2f}" for r in rho))
    return Measurement(parts, measure, "mean", ("mean", "final"),
                       reading_names={"mean": "mean over rounds", "final": "final round"}, entry=fields,
                       observed=observed)


def iid_robust(cfg: Config, curves: Curves, claim: Claim) -> Measurement:
    seeds, rounds = cfg.train.seeds, cfg.train.rounds
    configured = sorted({f for st in cfg.studies.values() if "synthetic_iid" in st.datasets and "fedavg" in st.algorithms
                         for f in st.stragglers})
    levels = [f for f in (0.1, 0.5, 0.9) if f in configured]
    parts = [Part(f"{int(round(f * 100))}% stragglers", claim.rule_for()) for f in levels]
    fields = entry_fields(cfg, ["synthetic_iid"],
                          [] if 0.1 in levels else ["10% stragglers (shown in the paper's Figure 5) is not run"],
                          {"path": FIG5, "panel": "FedAvg's training loss at each straggler level"})
    rule_fields = {"levels": ", ".join(p.label for p in parts) or "none"}
    cells = [("synthetic_iid", "fedavg", f) for f in (0.0, *levels)]
    missing = missing_runs(curves, cells, seeds) if levels else ["no straggler level configured for synthetic_iid"]
    if missing:
        return Measurement(entry=fields, rule_fields=rule_fields, not_run=missing_why(missing))

    def loss(f, s, reading, budget):
        return read_loss(curves.series("synthetic_iid", "fedavg", f, s, "train/loss"), reading, rounds, budget)

    def measure(reading, budget):
        return [[100 * (loss(f, s, reading, budget) / loss(0.0, s, reading, budget) - 1) for s in seeds] for f in levels]

    fields["reproduced"] = {"unit": "FedAvg's training loss, mean of the last 5 evaluations",
                            **{f"{int(round(f * 100))}% stragglers": per_seed([loss(f, s, "tail", 1.0) for s in seeds])
                               for f in (0.0, *levels)}}

    def observed(result):
        return ("; ".join(f"{p['part']}: loss {fmt_effect(p)} vs 0%" for p in result["parts"])
                + f" (read after {rounds} rounds; the paper's Figure 5 runs {PAPER_ROUNDS})")
    return Measurement(parts, measure, "tail", LOSS_READINGS, reading_names=NAMES, entry=fields,
                       rule_fields=rule_fields, observed=observed)


def iid_partial_work_no_effect(cfg: Config, curves: Curves, claim: Claim) -> Measurement:
    seeds, rounds = cfg.train.seeds, cfg.train.rounds
    configured = sorted({f for st in cfg.studies.values() if "synthetic_iid" in st.datasets
                         and {"fedavg", "fedprox_mu0"} <= set(st.algorithms) for f in st.stragglers})
    levels = [f for f in (0.1, 0.5, 0.9) if f in configured]
    loss_rule, acc_rule = claim.rule_for("each loss part"), claim.rule_for("each accuracy part")
    parts = ([Part(f"loss at {int(round(f * 100))}% stragglers", loss_rule) for f in levels]
             + [Part(f"accuracy at {int(round(f * 100))}% stragglers", acc_rule) for f in levels])
    fields = entry_fields(
        cfg, ["synthetic_iid"],
        [REGISTERED_AFTER_RUNS] + ([] if 0.1 in levels else ["10% stragglers (shown in Figure 5) is not run"]),
        {"path": FIG5, "panel": "FedAvg's training loss at each straggler level (FedProx(mu=0)'s curves are not "
                                "drawn)"})
    cells = [("synthetic_iid", v, f) for v in ("fedavg", "fedprox_mu0") for f in levels]
    missing = missing_runs(curves, cells, seeds) if levels else ["no straggler level configured for synthetic_iid"]
    if missing:
        return Measurement(entry=fields, not_run=missing_why(missing))

    def loss(v, f, s, reading, budget):
        return read_loss(curves.series("synthetic_iid", v, f, s, "train/loss"), reading, rounds, budget)

    def acc(v, f, s, reading, budget):
        return 100 * read_accuracy(curves.series("synthetic_iid", v, f, s, "train/loss"),
                                   curves.series("synthetic_iid", v, f, s, "test/accuracy"), reading, rounds, budget)

    def measure(reading, budget):
        return ([[100 * (loss("fedavg", f, s, reading, budget) / loss("fedprox_mu0", f, s, reading, budget) - 1)
                  for s in seeds] for f in levels]
                + [[acc("fedavg", f, s, reading, budget) - acc("fedprox_mu0", f, s, reading, budget) for s in seeds]
                   for f in levels])

    fields["reproduced"] = {
        "unit": "training loss and test accuracy (%), mean of the last 5 evaluations, Synthetic-IID",
        **{f"{int(round(f * 100))}% stragglers": {
            v: {"loss": per_seed([loss(v, f, s, "tail", 1.0) for s in seeds]),
                "accuracy": per_seed([acc(v, f, s, "tail", 1.0) for s in seeds])}
            for v in ("fedavg", "fedprox_mu0")} for f in levels}}
    return Measurement(parts, measure, "tail", ACCURACY_READINGS, reading_names=NAMES, entry=fields, observed=lambda result:
                       "; ".join(f"{p['part']}: FedAvg vs FedProx(mu=0) {fmt_effect(p)}" for p in result["parts"]))
