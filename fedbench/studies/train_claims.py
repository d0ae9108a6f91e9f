"""FedProx's claims on real data judged on the runs of params.yaml's ``studies:`` and the train store (issue 30, items 2
and 4; what is left of the train stage's judging since the main job became a study, issue 50 item 1):
fedbench.studies.real_claims judges them on the main job study's recorded runs (the offline MNIST-5k study's, found
through fedbench.runner.find_run) and on whatever runs of the paper profile's FedProx studies the train store holds,
so that a ``fedbench paper run`` counts in every later report. The main job's own claims are its study's
(fedbench.studies.fedprox_main_job, results/fedprox_main_job/<budget>/claims.json).

They are judged in the DVC stage ``main_job`` (pipelines/main_job.py, after the main job study has run) and in
``fedbench paper run`` after a FedProx study has trained, and :func:`write` keeps them in
``results/fedprox_real_data/pipeline/`` (fedbench.study.layout), the layout of every claim study's folder:
``claims.json`` (the entries, the seconds judging took) and ``simulations.jsonl`` (no records: the runs are the main
job's and the train store's). The folder is written whole (fedbench.data.format.atomic_folder). The report reads it
(:func:`read`; fedbench.studies.entries) and judges nothing.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from fedbench.claims.entry import plain
from fedbench.config import Config
from fedbench.data.format import atomic_folder
from fedbench.errors import read_json
from fedbench.studies import real_claims
from fedbench.study.layout import PIPELINE_BUDGET, REAL_DATA, RESULTS_ROOT, study_folder
from fedbench.study.record import keep_folder_seconds, write_simulations

NAME = REAL_DATA  # the folder of FedProx's real-data claims judged on the main job's runs and the train store
COMMAND = "dvc repro main_job"  # what judges them anew (pipelines/main_job.py)


def folder(results_root: str | Path = RESULTS_ROOT) -> Path:
    """Where FedProx's real-data claims are kept: ``results_root/fedprox_real_data/pipeline/``."""
    return study_folder(NAME, PIPELINE_BUDGET, results_root)


def judge(cfg: Config, results_root: Path, data_root: Path) -> list[dict[str, Any]]:
    """Every FedProx real-data claim judged on the runs under ``cfg`` (the main job study's record, the train
    store), each tagged with its study ("real data")."""
    return [c | {"study": real_claims.STUDY} for c in real_claims.on_train_store(cfg, results_root, data_root)]


def write(cfg: Config, results_root: Path = RESULTS_ROOT, data_root: Path = Path("data/generated")) -> list[dict]:
    """Judge (:func:`judge`) and keep the result in :func:`folder`, whole: claims.json and an empty simulations.jsonl written
    into a temporary folder that replaces it (fedbench.data.format.atomic_folder; seconds that changed while every
    number stayed the same are not rewritten: fedbench.study.record.keep_folder_seconds). The entries."""
    out = folder(results_root)
    t0 = time.perf_counter()
    claims = judge(cfg, Path(results_root), Path(data_root))
    with atomic_folder(out) as tmp:
        write_simulations(tmp, [])
        body = plain({"study": NAME, "seconds": round(time.perf_counter() - t0, 1), "workers": 1,
                      "budget": PIPELINE_BUDGET, "claims": claims})
        (tmp / "claims.json").write_text(json.dumps(body, indent=2, allow_nan=False) + "\n")
        keep_folder_seconds(out, tmp)
    for c in claims:
        print(f"{c['verdict']:>15}  {c['id']}")
    return claims


def unjudged(cfg: Config, data_root: Path, results_root: Path = RESULTS_ROOT) -> list[dict[str, Any]]:
    """The entries :func:`write` would keep where it has not run: each claim judged on no runs (not-run, with the
    command that runs its study)."""
    with tempfile.TemporaryDirectory() as empty:
        return judge(cfg, Path(empty), data_root)


def read(results_root: Path = RESULTS_ROOT) -> list[dict[str, Any]] | None:
    """The entries :func:`write` kept, or None where it has not run."""
    path = folder(results_root) / "claims.json"
    if not path.exists():
        return None
    return read_json(path, "claims", f"judge them anew: {COMMAND}")["claims"]
