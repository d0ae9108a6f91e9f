"""The soak (``pytest -m soak``, skipped by default): many concurrent `fedbench run` processes against one MLflow
store and one runs/ folder, killed at random (SIGKILL, SIGTERM, SIGINT) and rerun until every run is done,
then checked against runs computed once, undisturbed. It reports runs lost, duplicated and with changed
digests (each must be 0), the store's integrity and the processes left behind, and writes the report to
``$SOAK_REPORT`` (default: soak-report.json in the test's folder).

Knobs (environment): SOAK_SEED (0), SOAK_WAVES (12), SOAK_PROCESSES (6 at once), SOAK_RUNS (8 seeds).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.faults.conftest import alive, descendants

SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM, "SIGINT": signal.SIGINT}


@pytest.mark.soak
def test_soak(ws, tmp_path):
    rng = random.Random(int(os.environ.get("SOAK_SEED", "0")))
    waves = int(os.environ.get("SOAK_WAVES", "12"))
    width = int(os.environ.get("SOAK_PROCESSES", "6"))
    seeds = list(range(int(os.environ.get("SOAK_RUNS", "8"))))
    ws.write_params(lambda raw: raw["train"].update(rounds=120, seeds=seeds, checkpoint_every=3))
    assert ws.fedbench("generate").returncode == 0

    from fedbench.config import load_config
    from fedbench.study.experiments import train

    cfg = load_config(ws.path / "params.yaml")  # the reference: every run once, undisturbed, elsewhere
    reference = {s["params"]["seed"]: s["param_digest"] for s in
                 train(cfg, "synthetic_1_1", "fedavg", 0.0, data_root=ws.path / "data/generated",
                       results_root=tmp_path / "reference-runs", progress=False)}

    kills: Counter[str] = Counter()
    exits: Counter[int] = Counter()
    pids: set[int] = set()
    started = time.monotonic()
    for wave in range(waves + 1):
        last = wave == waves  # the last wave runs every seed and kills nothing
        chosen = seeds if last else [rng.choice(seeds) for _ in range(width)]  # repeats: the same run at once
        procs = [ws.start("run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--seed", str(s))
                 for s in chosen]
        if not last:
            time.sleep(rng.uniform(0.5, 8.0))
            for proc in rng.sample(procs, rng.randint(1, len(procs))):
                if proc.poll() is None:
                    pids.update(descendants(proc.pid) | {proc.pid})
                    name = rng.choice(sorted(SIGNALS))
                    proc.send_signal(SIGNALS[name])
                    kills[name] += 1
        for proc in procs:
            ws.finish(proc, timeout=600)
            exits[proc.returncode] += 1
        if last:
            assert all(proc.returncode == 0 for proc in procs), [ws.finish(p)[-2000:] for p in procs]
    time.sleep(1.0)

    runs = [r for r in ws.runs() if r.info.status == "FINISHED"]
    per_seed = Counter(int(r.data.tags["seed"]) for r in runs)
    summaries = {}
    index = ws.index()
    for s in seeds:
        lines = [line for line in index if line["params"]["seed"] == s]
        assert len(lines) <= 1, lines  # one fingerprint: one run per seed
        summaries[s] = ws.outcome(lines[0]["fingerprint"]) if lines else None
    changed = [s for s in seeds if summaries[s] is not None and summaries[s]["param_digest"] != reference[s]]
    changed += [int(r.data.tags["seed"]) for r in runs if r.data.tags["param_digest"] != reference[int(r.data.tags["seed"])]]
    with sqlite3.connect(ws.store) as db:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    report = {
        "waves": waves, "processes": sum(exits.values()), "runs": len(seeds), "kills": dict(kills),
        "exit_codes": {str(k): v for k, v in sorted(exits.items())}, "seconds": round(time.monotonic() - started),
        "runs_lost": sum(per_seed[s] == 0 or summaries[s] is None for s in seeds),
        "runs_duplicated": sum(max(0, n - 1) for n in per_seed.values()),
        "digests_changed": len(changed),
        "store_integrity": integrity,
        "unfinished_attempts_left": len([r for r in ws.runs() if r.info.status != "FINISHED"]),
        "processes_left": sorted(p for p in pids if alive(p)),
        "temporary_files_left": sorted(str(p.relative_to(ws.path)) for p in (ws.path / "results").rglob("*.tmp")),
    }
    out = Path(os.environ.get("SOAK_REPORT", tmp_path / "soak-report.json"))
    out.write_text(json.dumps(report, indent=2) + "\n")
    print("\nsoak report:", json.dumps(report, indent=2))
    assert report["runs_lost"] == report["runs_duplicated"] == report["digests_changed"] == 0, report
    assert integrity == "ok" and report["processes_left"] == [] and report["unfinished_attempts_left"] == 0, report
