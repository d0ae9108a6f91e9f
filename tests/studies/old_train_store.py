"""A ready-made former train store (``<root>/train/``, as fedbench/runner.py wrote it until issue 50 removed it) for the
tests of its one-time move (fedbench.studies.fedprox_main_job.adopt_train_store, fedprox_real.adopt_train_store):
``index.jsonl``, one line per finished run (``name``, ``fingerprint``, ``params``, ``dataset_hash``, ``code``, keys
sorted), and ``outcomes/<fingerprint>.json``, the run's outcome file (fedbench.study.reuse's format, which the train
store shared), named by the train store's own fingerprint, not the study's. Remove with adopt_train_store."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from fedbench.study.experiments import outcome_path, train_runs

# what the old index lines held as ``code``: the hash of the train stage's run code (provenance.LEGACY_TRAIN_RUN_CODE)
# at a75443e, the last commit with the train store
TRAIN_CODE = "3595dabb74529aa7"


def write_old_train_store(cfg: Any, keys: list, data_root: Path, root: Path, scratch: Path,
                          commit: str = "0123abc-dirty") -> list[dict[str, Any]]:
    """``keys``' runs under ``cfg`` as the train store of ``root`` held them: computed by today's path
    (fedbench.study.experiments.train_runs into the results root ``scratch``, not ``root``), each outcome file copied
    to ``root/train/outcomes/`` under an old fingerprint with ``commit`` as the commit that computed it, and its index
    line appended. The runs' summaries, in ``keys``' order."""
    summaries = train_runs(cfg, keys, data_root, scratch, progress=False)
    store = Path(root) / "train"
    (store / "outcomes").mkdir(parents=True, exist_ok=True)
    lines = []
    for key, s in zip(keys, summaries, strict=True):
        old = hashlib.sha256(f"train store:{s['fingerprint']}".encode()).hexdigest()[:16]
        body = json.loads(outcome_path(scratch, s["fingerprint"]).read_text())
        body["about"] = {**(body.get("about") or {}), "git_commit": commit}
        (store / "outcomes" / f"{old}.json").write_text(json.dumps(body))
        lines.append(json.dumps({"name": key.desc, "fingerprint": old, "params": s["params"],
                                 "dataset_hash": s["dataset_hash"], "code": TRAIN_CODE}, sort_keys=True) + "\n")
    with (store / "index.jsonl").open("a") as f:
        f.write("".join(lines))
    return summaries
