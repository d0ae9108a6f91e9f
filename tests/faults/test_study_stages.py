"""Issue 19.2: each claim study is its own DVC stage with its own code deps and params, so editing one study (its
module or its params.yaml entry) makes only that study's stage out of date; an opt-in study has no stage."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.faults.conftest import CODE


def _dvc(clone: Path, *args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"DVC_NO_ANALYTICS": "1", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_editing_one_study_makes_only_its_stage_stale(tmp_path):
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=CODE, capture_output=True, text=True, check=True)
    clone = tmp_path / "clone"
    for rel in (r for r in tracked.stdout.split("\0") if r and (CODE / r).is_file()):
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CODE / rel, clone / rel)
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
    names = ["fedlaavg_example1", "delta_fl_triangle", "mime_synthetic"]
    stages = [f"study@{name}" for name in names]
    for name in names:  # their outs (results/NAME/; not committed) as a run leaves them
        shutil.copytree(clone / "reports/studies" / name, clone / "results" / name / "pipeline")
    _dvc(clone, "commit", "-f", "-q", *stages)  # as if they had just run: their deps and params recorded

    def stale() -> dict:
        return json.loads(_dvc(clone, "status", "--json", *stages).stdout)

    assert stale() == {}
    module = clone / "fedbench/studies/mime_synthetic.py"
    module.write_text(module.read_text() + "\n# edited\n")
    assert list(stale()) == ["study@mime_synthetic"]
    params = yaml.safe_load((clone / "params.yaml").read_text())
    params["claim_studies"]["default"]["fedlaavg_example1"]["seeds"] = None  # its entry changes, no one else's
    params["claim_studies"]["opt_in"]["feddane_synthetic"]["budget"] = "pipeline"  # opt-in: no stage to go stale
    (clone / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert sorted(stale()) == ["study@fedlaavg_example1", "study@mime_synthetic"]
    names = _dvc(clone, "stage", "list", "--name-only").stdout.split()
    assert "study@feddane_synthetic" not in names and "study@mime_synthetic" in names
