"""Item 6: on a fresh clone every verdict is computed on that machine. Before: dvc.lock was committed, so the
committed reports/studies satisfied DVC and a fresh clone's `make repro` skipped the claim studies (12 of 17
verdicts). Now dvc.lock is not tracked: it records what this checkout computed, and a fresh clone has none."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.faults.conftest import CODE


def test_fresh_clone_runs_every_stage(tmp_path):
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=CODE, capture_output=True, text=True, check=True)
    files = [rel for rel in tracked.stdout.split("\0") if rel and (CODE / rel).is_file()]
    assert "dvc.lock" not in files, "dvc.lock is tracked: a fresh clone would skip every stage it lists"
    clone = tmp_path / "clone"
    for rel in files:  # what `git clone` gives
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CODE / rel, clone / rel)
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
    env = os.environ | {"DVC_NO_ANALYTICS": "1", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    status = subprocess.run([sys.executable, "-m", "dvc", "status", "--json"], cwd=clone, env=env,
                            capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr[-2000:]
    to_run = set(json.loads(status.stdout))
    studies = yaml.safe_load((clone / "params.yaml").read_text())["claim_studies"]
    assert {f"study@{name}" for name in studies["default"]} <= to_run  # every default claim study is computed here
    assert not {f"study@{name}" for name in studies.get("opt_in") or {}} & to_run  # an opt-in one has no stage
    for name in studies.get("opt_in") or {}:  # nor committed outputs: its claims are not-run until it runs here
        assert not any(rel.startswith(f"reports/studies/{name}/") for rel in files), name
    assert {"track", "report"} <= to_run
