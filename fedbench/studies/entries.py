"""Every claim entry the report renders, gathered in one place from the studies' records (the report judges nothing:
fedbench.report.build only renders what this returns):

- the main job's, read from its study's record (fedbench.studies.fedprox_main_job:
  ``results/fedprox_main_job/pipeline/claims.json``), or its declared claims not-run where it has not run;
- FedProx's on real data: each of its real-data studies' (fedbench.studies.fedprox_real), read from the study's own
  record (``results/<study>/<budget>/claims.json``), or its declared claims measured on no runs (not-run) where it has
  not run; then the two claims over several of those studies (the five-dataset mean, Figures 9-10 at E = 1), measured
  here, at report time, on the runs their records name (:func:`fedprox_real_claims`: fedbench.studies.real_claims
  through fedbench.study.experiments.load_runs; no study owns them, so no driver judges them yet);
- the other real data's: the paper-scale claim studies' read from their records, the claims no command judges yet
  (fedbench.studies.real_claims.from_records);
- each claim study's of params.yaml ``claim_studies``, read from its ``claims.json``, or, where it has not run, its
  declared claims not-run with the command that runs it (:func:`study_claims`);

each with its registration (fedbench.claims.registry.status: registered, changed, frozen, confirmed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from fedbench.claims import registry as rules_registry
from fedbench.claims.fidelity import relabelled
from fedbench.config import Config
from fedbench.errors import read_json
from fedbench.studies import real_claims
from fedbench.studies.fedprox_curves import STUDY as MAIN_STUDY
from fedbench.studies.real_data import in_current_words
from fedbench.studies.stage import measured
from fedbench.study.experiments import load_runs
from fedbench.study.layout import MAIN_JOB, PIPELINE_BUDGET, RESULTS_ROOT, reported_folder, study_folder
from fedbench.study.output import command as study_command
from fedbench.study.registry import declaration


def measured_cost(m: dict[str, Any] | None) -> str:
    """What a claim study cost where it was measured (its MEASURED: fedbench.studies.stage.measured), as words; ""
    if unknown."""
    return (f"{m['seconds']:,} s wall at the {m['budget']} budget, {m['workers']} workers on {m['device']}, "
            f"measured {m['date']}") if m else ""


def not_run_entries(name: str, why: str, would_change: str, budget: str = "pipeline") -> list[dict[str, Any]]:
    """The claims study ``name`` declares (its module's ``DECLARATION``, fedbench.study.declaration) as not-run
    entries saying ``why`` and what would run them, naming no runs or seeds; each rule as it reads at ``budget``
    (its fields filled from the declaration's rule_fields, as a run at that budget fills them)."""
    from fedbench.claims.entry import not_run

    study = declaration(name)  # each labelled as its run at ``budget`` would be (StudyDeclaration.not_run_label)
    return [not_run(study.entry(c.id, study.rule_fields.get(budget), scale={"study": name}, deviations=[],
                                figure=None, fidelity=study.not_run_label(c.id, budget),
                                rounds_run=study.rounds(budget),  # what it would run (not_run then states none)
                                training_seeds=[], data_seeds=[]), why, would_change)
            for c in study.claims]


def study_claims(cfg: Config, results_root: Path = RESULTS_ROOT) -> list[dict[str, Any]]:
    """Claims of the configured claim studies, read from the ``claims.json`` of each one's folder at its params.yaml
    budget (``results_root/NAME/BUDGET/``: fedbench.study.layout). A study that has not run gives its
    declared claims not-run (fedbench.studies.entries.not_run_entries), saying what runs it: ``dvc repro`` for a default
    study, ``fedbench study run NAME`` and what it cost where it was measured for an opt-in one (params.yaml
    claim_studies.opt_in: no DVC stage runs it)."""
    out = []
    for name, declared in cfg.claim_studies.items():
        path = study_folder(name, declared.budget, results_root) / "claims.json"
        if path.exists():
            out += [in_current_words(c) | {"study": name, "fidelity": relabelled(c["fidelity"], c["rounds_run"],
                                                                                c["rounds_paper"])}
                    for c in read_json(path, "claims", f"run the study again to write it anew: {study_command(name)}")
                    ["claims"]]  # labelled by the current rules, stated in the current words of its registered rule
            continue
        m = measured(name)
        if declared.default:
            why, would_change = f"study {name} has not run (no {path})", f"running the study (dvc repro study@{name})"
        else:
            cost = measured_cost(m)
            why = (f"not run: study {name} is opt-in (params.yaml claim_studies.opt_in: `dvc repro` does not run it); "
                   f"`{study_command(name)}` runs it" + (f" ({cost})" if cost else ""))
            would_change = f"running `{study_command(name)}`, then `dvc repro` (the report then judges it as usual)"
        entries = not_run_entries(name, why, would_change, declared.budget)
        opt_in = {} if declared.default else {"command": study_command(name), "cost": None if m is None else dict(m)}
        out += [e | {"study": name} | opt_in for e in entries]
    return out


def main_job_claims(cfg: Config, results_root: Path = RESULTS_ROOT) -> list[dict[str, Any]]:
    """The main job's entries, read from its study's record at the pipeline budget (what the DVC stage ``main_job``
    runs), each tagged with the report's study "main job"; where it has not run, each declared claim measured on no
    runs under ``cfg`` (params.yaml): not-run, saying what runs it, its rule as a run under ``cfg`` states it (a rule
    field such as Synthetic-IID's straggler levels filled from the config, so that a verdict computed elsewhere under
    the same rule is kept by the report)."""
    from fedbench.study.contract import entry, seeded
    from fedbench.study.registry import module

    path = study_folder(MAIN_JOB, PIPELINE_BUDGET, results_root) / "claims.json"
    if path.exists():
        claims = read_json(path, "claims", "run it anew: dvc repro main_job")["claims"]
    else:
        study = module(MAIN_JOB)
        run = seeded(study.DECLARATION, PIPELINE_BUDGET, config=cfg)  # nothing run: every claim's runs missing
        would = "running the main job (`dvc repro main_job`, or `fedbench study run fedprox_main_job`)"
        claims = [entry(run, c, study.measure(c, run)) | {"observed": f"not run: the main job has not run (no {path})",
                                                          "would_change": would}
                  for c in run.declaration.claims]
    return [c | {"study": MAIN_STUDY} for c in claims]


def fedprox_real_claims(cfg: Config, results_root: Path, data_root: Path) -> list[dict[str, Any]]:
    """FedProx's real-data entries, each tagged with the report's study "real data": every FedProx real-data study
    with claims of its own (fedbench.studies.fedprox_real.NAMES: MNIST-5k where params.yaml lists it, then the paper
    profile's datasets), read from its record's ``claims.json`` (fedbench.study.layout.reported_folder), or, where it
    has not run, each declared claim measured on no runs under ``cfg`` (not-run, saying what runs it), as
    :func:`main_job_claims` does; then the five-dataset mean and Figures 9-10 at E = 1, whose runs are several
    studies' (fedbench.studies.real_claims, read from those studies' records)."""
    from fedbench.studies import fedprox_real
    from fedbench.studies.fedprox_real_data import MNIST5K
    from fedbench.study.contract import entry, seeded

    out = []
    for name in fedprox_real.NAMES:
        study = fedprox_real.study(name)
        if not study.DECLARATION.claims or (name == MNIST5K and MNIST5K not in cfg.studies):
            continue
        budget = fedprox_real.budget(name)
        path = reported_folder(name, results_root, cfg) / "claims.json"
        if path.exists():
            out += read_json(path, "claims", f"run it anew: fedbench paper run {name}")["claims"]
            continue
        run = seeded(study.DECLARATION, budget, config=cfg)  # nothing run: every claim's runs missing
        out += [entry(run, c, study.measure(c, run)) for c in run.declaration.claims]
    out += [real_claims.five_dataset_mean(cfg, results_root, data_root),
            real_claims.partial_work_e1(cfg, results_root, data_root)]
    return [c | {"study": real_claims.STUDY} for c in out]


def collect(cfg: Config, results_root: Path,
            data_root: Path) -> tuple[list[dict[str, Any]], pd.DataFrame, pd.DataFrame]:
    """(every entry with its registration, the main job's run histories, their summaries): what the report
    renders, read from ``results_root`` (the claim studies' folders, the main job's among them: fedbench.study.layout;
    the main job's runs found by their params in its records, fedbench.study.experiments.load_runs)."""
    hist, summ = load_runs(cfg, Path(results_root), Path(data_root))  # for the figures and runs.csv
    real = fedprox_real_claims(cfg, Path(results_root), Path(data_root))
    claims = main_job_claims(cfg, Path(results_root)) + real \
        + [c | {"study": real_claims.STUDY} for c in real_claims.from_records(Path(results_root))] \
        + study_claims(cfg, results_root)
    registered = rules_registry.load()
    return [c | {"registration": rules_registry.status(c, registered)} for c in claims], hist, summ
