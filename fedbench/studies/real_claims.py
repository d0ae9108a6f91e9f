"""Every paper's headline claim on real data: judged from runs where they exist, ``not-run`` with the command that
fetches the data and runs it, its projected cost and the published value where they do not.

FedProx (Figures 1, 7 and 8) is measured here (:data:`MEASURES`) for each of its real-data studies
(fedbench.studies.fedprox_real: one per study of fedbench.study.paper_profile, and params.yaml's offline
``fedprox_mnist5k``), whose ``measure`` hook calls it when the study runs; the report reads each study's claims.json
(fedbench.studies.entries.fedprox_real_claims). The five-dataset mean and Figures 9-10 at E = 1 read several of those
studies' records. The other papers' real-data
claims are judged by the paper-scale claim studies of fedbench.study.paper_profile.CLAIM_STUDIES
(fedbench/studies/<name>.py, fedbench.studies.real_data), read from ``results/<name>/paper/claims.json`` where
``fedbench paper run NAME`` has run one (else ``results/<name>/BUDGET/`` where it ran at another budget:
fedbench.study.layout.reported_folder), else ``not-run`` with that command and the cost projected from the
measured per-step cost of their models (fedbench.bench.costs). A judged entry carries its measured cost
(device, seconds, hours); a not-run one its projected cost. Each FedProx claim (place in the paper, statement,
published value, rule) is declared once, as data, in fedbench.studies.fedprox_real_data; this module judges them.

Rules, written before any of these runs was looked at (the published number never enters them), are declared as
data in fedbench.studies.fedprox_real_data (each claim's effect, the Rule of each group of its parts and how the parts
combine; its words are generated from them) and judged here with those same Rule objects. The effects:
- accuracy gain at 90% stragglers, per dataset: per seed, test accuracy of FedProx at the paper's best mu minus
  that of FedAvg in points, each the mean of the last 5 evaluations (the sign, as
  fedprox/synthetic-1-1/stragglers-90/accuracy-gain: issue 32 removed the 5-point threshold);
- the five-dataset mean: per seed, the mean of the five datasets' gains (Synthetic(1,1) and the four real ones,
  each as above);
- Figure 8: per seed, FedAvg's dissimilarity minus that of FedProx at the best mu, each the mean over the rounds
  evaluated, no stragglers;
- Figures 9 and 10 (fedbench.studies.fedprox_real_data.PARTIAL_WORK, the E = 1 studies of the partial-work-e1
  profile): per seed, dataset and straggler level (50%, 90%), FedAvg's training loss minus FedProx(mu=0)'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.claims.readings import NAMES, read_accuracy, read_loss
from fedbench.claims.stats import fmt_effect
from fedbench.claims.verdict import Part, fidelity
from fedbench.config import Config
from fedbench.studies.fedprox_curves import (
    ACCURACY_READINGS,
    Curves,
    mean_dissimilarity,
    missing_runs,
    per_seed,
)
from fedbench.studies.fedprox_main_job import ACCURACY_RULE, DISSIMILARITY_RULE, GAIN_RULE, LOSS_RULE
from fedbench.studies.fedprox_real_data import (
    DISSIMILARITY,
    FIVE,
    FIVE_DATASETS,
    GAIN_0_50,
    GAIN_90,
    MNIST5K,
    MNIST5K_STUDY,
    STRAGGLERS_HURT,
    claim_id,
    declaration,
    study_config,
)
from fedbench.studies.paper_entries import headline_entries, paper_study_entries
from fedbench.study.contract import Measurement, StudyRun
from fedbench.study.contract import entry as contract_entry
from fedbench.study.paper_profile import CLAIM_STUDIES, PARTIAL_WORK_E1, STUDIES, PaperStudy, command

STUDY = "real data"


def _study_config(cfg: Config, s: PaperStudy) -> Config:
    """``cfg`` with only study ``s`` (fedbench.studies.fedprox_real_data.study_config)."""
    return study_config(cfg, s)


def runs_of(cfg: Config, s: PaperStudy, results_root: Path, data_root: Path) -> tuple[Config, Curves]:
    """``cfg`` with only study ``s``, and its runs (their summaries in ``Curves.summaries``), found by their settings
    in the records (fedbench.study.experiments.find_run): those its study recorded (results/<study>/<budget>/), or
    the main job's (results/fedprox_main_job/: its budgets, and the runs `fedbench run` made)."""
    from fedbench.study.experiments import load_runs

    only = _study_config(cfg, s)
    hist, summ = load_runs(only, results_root, data_root)
    curves = Curves(hist)
    curves.summaries = summ
    return only, curves


def _measured(curves: Curves) -> dict[str, Any]:
    """What the study's runs cost: their devices and summed wall time (stacked runs: each its share)."""
    summ = curves.summaries
    seconds = float(summ["wall_time_s"].sum()) if len(summ) else 0.0
    devices = sorted(set(summ["device"])) if len(summ) else []
    return {"device": ", ".join(devices), "seconds": round(seconds, 1), "hours": round(seconds / 3600, 3),
            "runs": len(summ), "measured": True}


def _cost(cfg: Config, s: PaperStudy) -> dict[str, Any]:
    from fedbench.studies.real_data import study_cost  # the one figure every place quotes

    return study_cost(s.scales(len(cfg.train.seeds)), s.name)


def _fields(cfg: Config, s: PaperStudy, figure_panel: str) -> dict[str, Any]:
    """The entry fields of a claim of study ``s`` (its statement and rule come from the study's declaration,
    fedbench.studies.fedprox_real_data): its scale, seeds and fidelity from ``cfg`` (the config with only ``s``)."""
    t = cfg.train_for(s.variant) if s.name in cfg.studies else dataclasses.replace(cfg.train, **s.study()["train"])
    deviations = [s.scale_note] if s.scale_note else []
    deviations += [f"{len(cfg.train.seeds)} training seeds where the paper shows one run",
                   "stragglers run U{1..E-1} epochs as in the authors' code (the paper says uniform in [1, E])"]
    fid = fidelity("paper", t.rounds, s.rounds, len(cfg.train.seeds)) if s.fidelity == "paper-scale" else s.fidelity
    return {"scale": {"dataset": s.variant, "model": t.model, "rounds": t.rounds, "clients_per_round":
                      t.clients_per_round, "local_epochs": t.local_epochs, "batch_size": t.batch_size, "lr": t.lr,
                      "mu": s.mu, "study": s.name},
            "deviations": deviations, "figure": {"path": f"figures/{s.name}.png", "panel": figure_panel},
            "fidelity": fid, "rounds_run": t.rounds, "training_seeds": list(cfg.train.seeds), "data_seeds": [0]}


def _not_run(cfg: Config, fields: dict[str, Any], s: PaperStudy, missing: list[str]) -> Measurement:
    cost = _cost(cfg, s)
    why = (f"not run: missing runs of study {s.name} ({'; '.join(missing[:3])}{'; ...' if len(missing) > 3 else ''}); "
           f"`{command(s.name)}` fetches its data and runs it (projected {cost['hours']:g} h on {cost['device']})")
    return Measurement(
        entry=fields | {"figure": None}, not_run=(why, f"running `{command(s.name)}` ({cost['basis']})"),
        also={"command": command(s.name), "cost": cost})


def _accuracy(curves: Curves, s: PaperStudy, variant: str, seed: int, reading: str, rounds: int,
              budget: float) -> float:
    return 100 * read_accuracy(curves.series(s.variant, variant, 0.9, seed, "train/loss"),
                               curves.series(s.variant, variant, 0.9, seed, "test/accuracy"), reading, rounds, budget)


def measure_gain_at_90(cfg: Config, s: PaperStudy, curves: Curves) -> Measurement:
    """Figure 7 at 90% stragglers: per seed, FedProx(best mu)'s test accuracy - FedAvg's (``cfg``: only ``s``)."""
    seeds, rounds = cfg.train.seeds, cfg.train_for(s.variant).rounds
    e = _fields(cfg, s, "test accuracy at 90% stragglers")
    missing = missing_runs(curves, [(s.variant, v, 0.9) for v in ("fedavg", s.best_variant)], seeds)
    if missing:
        return _not_run(cfg, e, s, missing)

    def values(reading: str, budget: float) -> list[list[float]]:
        return [[_accuracy(curves, s, s.best_variant, x, reading, rounds, budget)
                 - _accuracy(curves, s, "fedavg", x, reading, rounds, budget) for x in seeds]]

    prox = [_accuracy(curves, s, s.best_variant, x, "tail", rounds, 1.0) for x in seeds]
    avg = [_accuracy(curves, s, "fedavg", x, "tail", rounds, 1.0) for x in seeds]
    e["reproduced"] = {"unit": f"test accuracy (%), mean of the last 5 evaluations, {s.title}, 90% stragglers",
                       s.best_variant: per_seed(prox), "fedavg": per_seed(avg)}
    return Measurement(
        parts=[Part("90% stragglers", GAIN_RULE)], values=values, reading="tail", readings=ACCURACY_READINGS,
        reading_names=NAMES, entry=e, also={"cost": _measured(curves)},
        observed=lambda result: (f"FedProx(mu={s.mu:g}) {np.mean(prox):.1f}% vs FedAvg {np.mean(avg):.1f}% at 90% "
                                 f"stragglers (mean of the last 5 rounds): gain {fmt_effect(result['effect'])}"))


def measure_dissimilarity(cfg: Config, s: PaperStudy, curves: Curves) -> Measurement:
    """Figure 8: per seed, FedAvg's mean dissimilarity - FedProx(best mu)'s, no stragglers."""
    seeds, rounds = cfg.train.seeds, cfg.train_for(s.variant).rounds
    e = _fields(cfg, s, "variance of local gradients, 0% stragglers")
    missing = missing_runs(curves, [(s.variant, v, 0.0) for v in ("fedavg", s.best_variant)], seeds)
    if missing:
        return _not_run(cfg, e, s, missing)

    def dis(variant: str, seed: int, reading: str, budget: float) -> float:
        return mean_dissimilarity(curves.series(s.variant, variant, 0.0, seed, "train/dissimilarity"), rounds, budget,
                                  reading)

    def values(reading: str, budget: float) -> list[list[float]]:
        return [[dis("fedavg", x, reading, budget) - dis(s.best_variant, x, reading, budget) for x in seeds]]

    e["reproduced"] = {"unit": "mean dissimilarity over the evaluated rounds",
                       **{v: per_seed([dis(v, x, "mean", 1.0) for x in seeds]) for v in ("fedavg", s.best_variant)}}
    return Measurement(
        parts=[Part("no stragglers", DISSIMILARITY_RULE)], values=values, reading="mean", readings=("mean", "final"),
        reading_names={"mean": "mean over rounds", "final": "final round"}, entry=e, also={"cost": _measured(curves)},
        observed=lambda result: f"FedAvg - FedProx(mu={s.mu:g}): {fmt_effect(result['effect'])}")


REGISTERED_AFTER_RUNS = ("the runs were computed before this rule was registered (the rule was written from the paper's "
                         "text without reading our values)")  # MNIST-5k's: the other studies have not run


def _loss(curves: Curves, s: PaperStudy, variant: str, f: float, seed: int, reading: str, rounds: int,
          budget: float) -> float:
    return read_loss(curves.series(s.variant, variant, f, seed, "train/loss"), reading, rounds, budget)


def measure_gain_at_0_50(cfg: Config, s: PaperStudy, curves: Curves) -> Measurement:
    """Figure 7 at 0% and 50% stragglers: 'FedProx improves the test accuracy on all datasets' (direction only)."""
    seeds, rounds = cfg.train.seeds, cfg.train_for(s.variant).rounds
    levels = (0.0, 0.5)
    e = _fields(cfg, s, "test accuracy at 0% and 50% stragglers")
    e["deviations"] = [REGISTERED_AFTER_RUNS, *e["deviations"]] if s.name == MNIST5K else e["deviations"]
    missing = missing_runs(curves, [(s.variant, v, f) for v in ("fedavg", s.best_variant) for f in levels], seeds)
    if missing:
        return _not_run(cfg, e, s, missing)

    def acc(variant: str, f: float, x: int, reading: str, budget: float) -> float:
        return 100 * read_accuracy(curves.series(s.variant, variant, f, x, "train/loss"),
                                   curves.series(s.variant, variant, f, x, "test/accuracy"), reading, rounds, budget)

    def values(reading: str, budget: float) -> list[list[float]]:
        return [[acc(s.best_variant, f, x, reading, budget) - acc("fedavg", f, x, reading, budget) for x in seeds]
                for f in levels]

    e["reproduced"] = {"unit": f"test accuracy (%), mean of the last 5 evaluations, {s.title}",
                       **{f"{int(f * 100)}% stragglers": {v: per_seed([acc(v, f, x, "tail", 1.0) for x in seeds])
                                                          for v in (s.best_variant, "fedavg")} for f in levels}}
    return Measurement(
        parts=[Part(f"{int(f * 100)}% stragglers", ACCURACY_RULE) for f in levels], values=values, reading="tail",
        readings=ACCURACY_READINGS, reading_names=NAMES, entry=e, also={"cost": _measured(curves)},
        observed=lambda result: "; ".join(f"{p['part']}: FedProx(mu={s.mu:g}) - FedAvg {fmt_effect(p)}"
                                          for p in result["parts"]))


def measure_stragglers_hurt(cfg: Config, s: PaperStudy, curves: Curves) -> Measurement:
    """Figure 1: 'on all the datasets ... larger heterogeneity results in worse convergence (FedAvg)'."""
    seeds, rounds = cfg.train.seeds, cfg.train_for(s.variant).rounds
    steps = ((0.0, 0.5), (0.5, 0.9))
    e = _fields(cfg, s, "training loss, FedAvg")
    e["deviations"] = [REGISTERED_AFTER_RUNS, *e["deviations"]] if s.name == MNIST5K else e["deviations"]
    missing = missing_runs(curves, [(s.variant, "fedavg", f) for f in (0.0, 0.5, 0.9)], seeds)
    if missing:
        return _not_run(cfg, e, s, missing)

    def values(reading: str, budget: float) -> list[list[float]]:
        return [[_loss(curves, s, "fedavg", b, x, reading, rounds, budget)
                 - _loss(curves, s, "fedavg", a, x, reading, rounds, budget) for x in seeds] for a, b in steps]

    e["reproduced"] = {"unit": f"FedAvg's training loss, mean of the last 5 evaluations, {s.title}",
                       **{f"{int(f * 100)}% stragglers": per_seed([_loss(curves, s, "fedavg", f, x, "tail", rounds, 1.0)
                                                                   for x in seeds]) for f in (0.0, 0.5, 0.9)}}
    return Measurement(
        parts=[Part(f"FedAvg {int(b * 100)}% - {int(a * 100)}% stragglers", LOSS_RULE) for a, b in steps],
        values=values, reading="tail", readings=("tail", "final", "best"), reading_names=NAMES, entry=e,
        also={"cost": _measured(curves)},
        observed=lambda result: "; ".join(f"{p['part']}: {fmt_effect(p)}" for p in result["parts"]))


# each claim of a study, by its kind (fedbench.studies.fedprox_real's measure hook reads it)
MEASURES = {GAIN_90: measure_gain_at_90, DISSIMILARITY: measure_dissimilarity, GAIN_0_50: measure_gain_at_0_50,
            STRAGGLERS_HURT: measure_stragglers_hurt}


def on_runs(cfg: Config, s: PaperStudy, kind: str, curves: Curves) -> dict[str, Any]:
    """Claim ``kind`` of study ``s`` judged on ``curves`` under ``cfg`` (the config with only ``s``), exactly as the
    one driver judges it on the study's own runs (fedbench.study.contract.entry): for runs read from elsewhere (the
    main job's record, the train store until its move)."""
    decl = declaration(s)
    run = StudyRun(decl, next(iter(decl.budgets)), s.rounds, config=cfg)
    return contract_entry(run, decl.claim(claim_id(s, kind)), MEASURES[kind](cfg, s, curves))


def _on_store(kind: str) -> Callable[[Config, PaperStudy, Path, Path], dict[str, Any]]:
    def judged_on_store(cfg: Config, s: PaperStudy, results_root: Path, data_root: Path) -> dict[str, Any]:
        only, curves = runs_of(cfg, s, results_root, data_root)
        return on_runs(only, s, kind, curves)

    judged_on_store.__doc__ = f"Claim {kind} of study ``s`` judged on its runs in ``results_root`` (:func:`on_runs`)."
    return judged_on_store


gain_at_90, dissimilarity, gain_at_0_50, stragglers_hurt = (_on_store(k) for k in MEASURES)


def five_dataset_mean(cfg: Config, results_root: Path, data_root: Path) -> dict[str, Any]:
    """The abstract's +22 points: the mean gain over Synthetic(1,1) (the main job) and the four real datasets, their
    runs read from ``results_root`` (:func:`measure_five_dataset_mean`, judged by the one driver's rule)."""
    run = StudyRun(FIVE_DATASETS, "paper", FIVE_DATASETS.budget("paper"), config=cfg)
    parts = {n: runs_of(cfg, STUDIES[n], results_root, data_root) for n in FIVE}
    return contract_entry(run, FIVE_DATASETS.claim(FIVE_DATASETS_ID),
                          measure_five_dataset_mean(cfg, parts, lambda: main_job_curves(cfg, results_root, data_root)))


FIVE_DATASETS_ID = "fedprox/five-datasets/mean-accuracy-gain"


def main_job_curves(cfg: Config, results_root: Path, data_root: Path) -> Curves:
    """The main job's runs under ``cfg`` in ``results_root`` (its records: fedbench.study.experiments.find_run)."""
    from fedbench.study.experiments import load_runs

    return Curves(load_runs(cfg, results_root, data_root)[0])


def measure_five_dataset_mean(cfg: Config, parts: dict[str, tuple[Config, Curves]],
                              main_curves: Callable[[], Curves]) -> Measurement:
    """The five-dataset mean measured: per seed, the mean of Synthetic(1,1)'s gain (``main_curves()``, read only where
    every real dataset has run) and each real dataset's (``parts``: study name -> its config alone and its runs);
    not-run with the commands of the studies whose runs are missing and their summed projected cost."""
    studies = [STUDIES[n] for n in FIVE]
    fields = {"scale": {"datasets": ["synthetic_1_1", *(s.variant for s in studies)],
                        "studies": ["main job (stragglers)", *FIVE]},
              "deviations": ["each dataset's own deviations (its entries)"], "figure": None,
              "fidelity": fidelity("paper", None, None, len(cfg.train.seeds)), "rounds_run": None,
              "training_seeds": list(cfg.train.seeds), "data_seeds": [0]}
    missing = [n for n, (_, c) in parts.items()
               if missing_runs(c, [(STUDIES[n].variant, v, 0.9) for v in ("fedavg", STUDIES[n].best_variant)],
                               cfg.train.seeds)]
    if missing:
        costs = [_cost(cfg, STUDIES[n]) for n in missing]
        hours = sum(c["hours"] for c in costs)
        cmd = " && ".join(command(n) for n in missing)
        cost = {"device": costs[0]["device"], "seconds": round(sum(c["seconds"] for c in costs), 1),
                "hours": round(hours, 2), "per_study_hours": {n: c["hours"] for n, c in zip(missing, costs)}}
        why = (f"not run: missing the runs of {', '.join(missing)}; `{cmd}` fetches their data and runs them "
               f"(projected {hours:g} h on {costs[0]['device']})")
        return Measurement(entry=fields, also={"command": cmd, "cost": cost},
                           not_run=(why, f"running `{cmd}`; the Synthetic(1,1) part comes from the main job"))
    main = main_curves()
    seeds = cfg.train.seeds

    def values(reading: str, budget: float) -> list[list[float]]:
        means = []
        for x in seeds:
            gains = []
            if not main.has("synthetic_1_1", "fedprox_mu1", 0.9, x) or not main.has("synthetic_1_1", "fedavg", 0.9, x):
                gains.append(float("nan"))
            else:
                acc = [100 * read_accuracy(main.series("synthetic_1_1", v, 0.9, x, "train/loss"),
                                           main.series("synthetic_1_1", v, 0.9, x, "test/accuracy"), reading,
                                           cfg.train.rounds, budget) for v in ("fedprox_mu1", "fedavg")]
                gains.append(acc[0] - acc[1])
            for n, (only, c) in parts.items():
                s, r = STUDIES[n], only.train_for(STUDIES[n].variant).rounds
                gains.append(_accuracy(c, s, s.best_variant, x, reading, r, budget)
                             - _accuracy(c, s, "fedavg", x, reading, r, budget))
            means.append(float(np.mean(gains)))
        return [means]

    return Measurement(parts=[Part("mean of five datasets", GAIN_RULE)], values=values, reading="tail",
                       readings=ACCURACY_READINGS, reading_names=NAMES, entry=fields,
                       observed=lambda result: f"mean gain over the five datasets: {fmt_effect(result['effect'])}")


def partial_work_e1(cfg: Config, results_root: Path, data_root: Path) -> dict[str, Any]:
    """Figures 9 and 10 at E = 1 on the four real datasets (fedbench.studies.fedprox_partial_work judges it) from the
    runs of the partial-work-e1 profile's studies, each priced as ``fedbench paper list`` prices it."""
    from fedbench.studies.fedprox_partial_work import entry

    runs = {n: runs_of(cfg, STUDIES[n], results_root, data_root) for n in PARTIAL_WORK_E1}
    return entry(cfg, runs, {n: _cost(cfg, STUDIES[n]) for n in PARTIAL_WORK_E1},
                 {n: _measured(c) for n, (_, c) in runs.items()})


def on_train_store(cfg: Config, results_root: Path, data_root: Path) -> list[dict[str, Any]]:
    """The real-data entries judged from the train store's runs (``results_root/train/``): the offline MNIST-5k study,
    each FedProx dataset, the five-dataset mean, Figures 9-10 at E = 1 (the old path, held equal to the studies' records
    by tests)."""
    out = []
    per_study = (gain_at_90, dissimilarity, gain_at_0_50, stragglers_hurt)
    if MNIST5K in cfg.studies:
        out += [fn(cfg, MNIST5K_STUDY, results_root, data_root) for fn in per_study]
    for s in STUDIES.values():
        out += [] if s.partial_work else [fn(cfg, s, results_root, data_root) for fn in per_study]
    return out + [five_dataset_mean(cfg, results_root, data_root), partial_work_e1(cfg, results_root, data_root)]


def from_records(results_root: Path) -> list[dict[str, Any]]:
    """The other papers' real-data entries: each paper-scale claim study's, read from its folder in ``results_root``
    (fedbench.study.layout) or declared not-run, and the headlines no command judges yet."""
    return [e for name in CLAIM_STUDIES for e in paper_study_entries(name, results_root)] + headline_entries()


def evaluate(cfg: Config, results_root: Path, data_root: Path) -> list[dict[str, Any]]:
    """Every real-data entry: :func:`on_train_store`'s, then :func:`from_records`'."""
    return on_train_store(cfg, results_root, data_root) + from_records(results_root)
