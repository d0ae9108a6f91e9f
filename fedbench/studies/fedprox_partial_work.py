"""FedProx Figures 9 and 10 on the real datasets, judged (``fedprox/real/partial-work-e1``, declared in
fedbench.studies.fedprox_real_data.PARTIAL_WORK): with E = 1, keeping the stragglers' partial work (FedProx, mu = 0)
against dropping them (FedAvg), one part per dataset (the four studies of the paper profile's ``partial-work-e1``
profile) and straggler level, from the E = 1 studies' runs fedbench.studies.real_claims hands it (their records:
fedbench.studies.fedprox_real), measured here (:func:`measurement`) and judged by the one driver's rule
(fedbench.study.contract.entry).

The rule, registered before any run (fedbench/claims/registry.json): per seed, dataset and level (50%, 90%), FedAvg's
training loss - FedProx(mu=0)'s, each the mean of the last 5 evaluations (a diverged run: infinite); each part
reproduced if its 95% interval lies above 0, not-reproduced if below; reproduced if every part is.
"""

from __future__ import annotations

from typing import Any

from fedbench.claims.readings import NAMES, read_loss
from fedbench.claims.stats import fmt_effect
from fedbench.claims.verdict import Part, fidelity
from fedbench.config import Config
from fedbench.studies.fedprox_curves import Curves, missing_runs, per_seed
from fedbench.studies.fedprox_main_job import LOSS_RULE
from fedbench.studies.fedprox_real_data import PARTIAL_WORK, PARTIAL_WORK_ID
from fedbench.study.contract import Measurement
from fedbench.study.paper_profile import PARTIAL_WORK_STRAGGLERS, STUDIES, PaperStudy, command

ARMS = ("fedavg", "fedprox_mu0")  # dropped, kept


def entry(cfg: Config, runs: dict[str, tuple[Config, Curves]], costs: dict[str, dict[str, Any]],
          measured: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The claim's entry from ``runs`` (study name -> the config of that study alone and its runs, in the profile's
    order), judged by the one driver's rule (fedbench.study.contract.entry of :func:`measurement`)."""
    from fedbench.study.contract import StudyRun
    from fedbench.study.contract import entry as contract_entry

    run = StudyRun(PARTIAL_WORK, "paper", PARTIAL_WORK.budget("paper"), config=cfg)
    return contract_entry(run, PARTIAL_WORK.claim(PARTIAL_WORK_ID), measurement(cfg, runs, costs, measured))


def measurement(cfg: Config, runs: dict[str, tuple[Config, Curves]], costs: dict[str, dict[str, Any]],
                measured: dict[str, dict[str, Any]]) -> Measurement:
    """The claim measured on ``runs``: its eight parts (dataset x 50%, 90%) where every study has every run, else
    not-run with the commands of the studies whose runs are missing and their summed projected cost (``costs``: study
    name -> fedbench.studies.real_data.study_cost's). ``measured``: study name -> what its runs cost (a judged entry's
    cost). Its registration declared no seeds (the rule states 5), so the not-run entry states none and the judged one
    the seeds it ran."""
    studies = [STUDIES[n] for n in runs]
    seeds, levels = cfg.train.seeds, PARTIAL_WORK_STRAGGLERS
    rounds = {s.name: runs[s.name][0].train_for(s.variant).rounds for s in studies}
    scale = {"studies": [s.name for s in studies], "datasets": [s.variant for s in studies],
             "models": [s.model for s in studies], "lr": [s.lr for s in studies],
             "rounds": [rounds[s.name] for s in studies], "local_epochs": 1, "straggler_epochs": "minibatches",
             "stragglers": list(levels), "clients_per_round": 10, "batch_size": 10}
    deviations = [PARTIAL_WORK.claim(PARTIAL_WORK_ID).note,
                  f"{len(seeds)} training seeds where the paper shows one run"]
    missing = [s.name for s in studies
               if missing_runs(runs[s.name][1], [(s.variant, v, f) for v in ARMS for f in levels], seeds)]
    if missing:
        hours = sum(costs[n]["hours"] for n in missing)
        device = costs[missing[0]]["device"]
        cmd = " && ".join(command(n) for n in missing)
        cost = {"device": device, "seconds": round(sum(costs[n]["seconds"] for n in missing), 1),
                "hours": round(hours, 2), "per_study_hours": {n: costs[n]["hours"] for n in missing},
                "basis": "; ".join(f"{n}: {costs[n]['basis']}" for n in missing)}
        return Measurement(
            entry={"scale": scale, "deviations": deviations, "figure": None, "fidelity": "reconstructed",
                   "rounds_run": None, "training_seeds": [], "data_seeds": []},
            not_run=((f"not run: missing the runs of {', '.join(missing)}; `{cmd}` fetches their data and runs "
                      f"them (projected {hours:g} h on {device})"), f"running `{cmd}`"),
            also={"command": cmd, "cost": cost})

    def loss(s: PaperStudy, variant: str, f: float, x: int, reading: str, budget: float) -> float:
        return read_loss(runs[s.name][1].series(s.variant, variant, f, x, "train/loss"), reading, rounds[s.name],
                         budget)

    def values(reading: str, budget: float) -> list[list[float]]:
        return [[loss(s, "fedavg", f, x, reading, budget) - loss(s, "fedprox_mu0", f, x, reading, budget)
                 for x in seeds] for s in studies for f in levels]

    # registered with each dataset's paper rounds (rounds_paper None); a study run short of its paper's rounds states
    # the shortest (its rounds of its paper's), which labels it (and is a change of the registered runs)
    short = min(studies, key=lambda s: rounds[s.name] / s.rounds)
    run, paper = ((min(rounds.values()), None) if rounds[short.name] >= short.rounds
                  else (rounds[short.name], short.rounds))
    reproduced = {"unit": "training loss, mean of the last 5 evaluations, E = 1",
                  **{f"{s.title}, {int(f * 100)}% stragglers": {v: per_seed([loss(s, v, f, x, "tail", 1.0)
                                                                             for x in seeds]) for v in ARMS}
                     for s in studies for f in levels}}
    spent = list(measured.values())
    seconds = sum(m["seconds"] for m in spent)
    return Measurement(
        parts=[Part(f"{s.title}, {int(f * 100)}% stragglers", LOSS_RULE) for s in studies for f in levels],
        values=values, reading="tail", readings=("tail", "final", "best"), reading_names=NAMES,
        entry={"scale": scale, "deviations": deviations, "figure": None,
               "fidelity": fidelity("reconstructed", run, paper, len(seeds)), "rounds_run": run, "rounds_paper": paper,
               "training_seeds": list(seeds), "data_seeds": [0], "reproduced": reproduced},
        observed=lambda result: "; ".join(f"{p['part']}: FedAvg - FedProx(mu=0) {fmt_effect(p)}"
                                          for p in result["parts"]),
        also={"cost": {"device": ", ".join(sorted({m["device"] for m in spent} - {""})), "seconds": round(seconds, 1),
                       "hours": round(seconds / 3600, 3), "runs": sum(m["runs"] for m in spent), "measured": True}})
