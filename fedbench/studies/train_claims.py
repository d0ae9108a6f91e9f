"""The claims judged on the train store's runs, kept as a study's record (issue 30, items 2 and 4): the main job's
(fedbench.studies.fedprox_main_job_claims, on the runs of params.yaml's ``studies:``) and FedProx's on real data
(fedbench.studies.real_claims, on whatever runs of the paper profile's studies the store holds, so that a ``fedbench
paper run`` counts in every later report).

Their study modules judge them in the DVC stage ``main_job`` (pipelines/main_job.py, after the train stage) and in
``fedbench paper run`` after a FedProx study has trained, and :func:`write` keeps them in
``results/fedprox_main_job/pipeline/`` (fedbench.study.layout), the layout of every claim study's folder:
``claims.json`` (the entries, the seconds judging took) and ``simulations.jsonl`` (one record per run of the configured
train studies, fedbench.study.record, each named by its one fingerprint; after ``fedbench paper run`` of a FedProx
study, its runs too: the runs themselves, their outcomes, stay in the train store, ``results/train/``). The folder is written whole (fedbench.data.format.atomic_folder). The report reads it
(:func:`read`; fedbench.studies.entries) and judges nothing.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from fedbench.claims.entry import plain
from fedbench.config import Config
from fedbench.data.format import atomic_folder
from fedbench.errors import read_json
from fedbench.studies import fedprox_main_job as main_job
from fedbench.studies import real_claims
from fedbench.studies.fedprox_curves import STUDY as MAIN_STUDY
from fedbench.studies.train_runs import load_runs
from fedbench.study.layout import MAIN_JOB, PIPELINE_BUDGET, RESULTS_ROOT, study_folder
from fedbench.study.record import keep_folder_seconds, record, write_simulations

NAME = MAIN_JOB  # the main job's declaration (fedbench.studies.fedprox_main_job) names its folder
COMMAND = "dvc repro main_job"  # what judges them anew from the train store (pipelines/main_job.py)


def folder(results_root: str | Path = RESULTS_ROOT) -> Path:
    """Where the claims judged on the train store are kept: ``results_root/fedprox_main_job/pipeline/``."""
    return study_folder(NAME, PIPELINE_BUDGET, results_root)


def judge(cfg: Config, results_root: Path, data_root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the entries, the main job's run records): every claim judged on the train store's runs under ``cfg``, each
    tagged with its study (the main job's, or "real data"), and one record per run of the main job found."""
    found: list[dict[str, Any]] = []
    hist, summ = load_runs(cfg, results_root, data_root, found)
    claims = ([c | {"study": MAIN_STUDY} for c in main_job.evaluate_claims(cfg, hist, summ)]
              + [c | {"study": real_claims.STUDY} for c in real_claims.on_train_store(cfg, results_root, data_root)])
    return claims, [run_record(run) for run in found]


def run_record(run: dict[str, Any]) -> dict[str, Any]:
    """A run of the train store (fedbench.runner.summary, with its ``name``) as a simulation record
    (fedbench.study.record.record, every study's), named by its fingerprint."""
    result = SimpleNamespace(history=run["history"], final=run["final"], diverged=run["diverged"],
                             param_digest=run["param_digest"], device=run["device"], seconds=run["wall_time_s"])
    return record(run["name"], run["params"], result) | {"fingerprint": run["fingerprint"]}


def write(cfg: Config, results_root: Path = RESULTS_ROOT, data_root: Path = Path("data/generated")) -> list[dict]:
    """Judge (:func:`judge`) and keep the result in :func:`folder`, whole: claims.json and simulations.jsonl written
    into a temporary folder that replaces it (fedbench.data.format.atomic_folder; seconds that changed while every
    number stayed the same are not rewritten: fedbench.study.record.keep_folder_seconds). The entries."""
    out = folder(results_root)
    t0 = time.perf_counter()
    claims, records = judge(cfg, Path(results_root), Path(data_root))
    with atomic_folder(out) as tmp:
        write_simulations(tmp, records)
        body = plain({"study": NAME, "seconds": round(time.perf_counter() - t0, 1), "workers": 1,
                      "budget": PIPELINE_BUDGET, "claims": claims})
        (tmp / "claims.json").write_text(json.dumps(body, indent=2, allow_nan=False) + "\n")
        keep_folder_seconds(out, tmp)
    for c in claims:
        print(f"{c['verdict']:>15}  {c['id']}")
    return claims


def unjudged(cfg: Config, data_root: Path, results_root: Path = RESULTS_ROOT) -> list[dict[str, Any]]:
    """The entries :func:`write` would keep, each not-run, where it has not run: what its study modules give on a train
    store with no runs (each claim's runs missing, a paper study's with the command that runs it), the main job's
    saying what judges them."""
    with tempfile.TemporaryDirectory() as empty:
        claims, _ = judge(cfg, Path(empty), data_root)
    why = f"not judged: no {folder(results_root)}/claims.json (`{COMMAND}` judges the train store's runs)"
    return [c | {"observed": why, "would_change": f"running the train stage, then `{COMMAND}`"}
            if c["study"] == MAIN_STUDY else c for c in claims]


def read(results_root: Path = RESULTS_ROOT) -> list[dict[str, Any]] | None:
    """The entries :func:`write` kept, or None where it has not run."""
    path = folder(results_root) / "claims.json"
    if not path.exists():
        return None
    return read_json(path, "claims", f"judge them anew: {COMMAND}")["claims"]
