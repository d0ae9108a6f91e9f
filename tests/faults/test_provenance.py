"""Item 5: the commit recorded is the one that computed the numbers. Before: after a plain `make repro`, 63 of 66
training runs and every study run were tagged `<sha>-dirty`, because the pipeline itself rewrites dvc.lock (and
reports/) while it runs. Now a run is dirty only when the code that determines its numbers differs from HEAD."""

import json
import shutil
import subprocess

import pytest

from tests.faults.conftest import CODE, Workspace


def _checkout(tmp_path):
    """A git checkout of the code as committed plus this tree's changes: the tracked files, one commit."""
    repo = tmp_path / "repo"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=CODE, capture_output=True, text=True, check=True)
    for rel in filter(None, files.stdout.split("\0")):
        if (CODE / rel).is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(CODE / rel, repo / rel)
    git = dict(cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "init", "-q"], **git)
    subprocess.run(["git", "add", "-A"], **git)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], **git)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], **git, text=True).stdout.strip()
    return repo, sha


@pytest.mark.slow
def test_commit_is_dirty_only_for_the_numbers_code(tmp_path, ws):
    repo, sha = _checkout(tmp_path)
    ws = Workspace(ws.path, ws.store.parent)
    ws.env["PYTHONPATH"] = str(repo)

    def commit_of_run(seed: int) -> str:
        proc = ws.fedbench("run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--seed", str(seed),
                           "--no-track")
        assert proc.returncode == 0, proc.stderr[-2000:]
        (line,) = [line for line in ws.index() if line["params"]["seed"] == seed]
        return ws.outcome(line["fingerprint"])["about"]["git_commit"]

    assert commit_of_run(0) == sha
    for rewritten in ("reports/claims.md", "reports/runs.csv", "README.md"):  # what the pipeline (or a note) rewrites
        (repo / rewritten).write_text((repo / rewritten).read_text() + "\nrewritten\n")
    (repo / "dvc.lock").write_text("schema: '2.0'\n")  # untracked now; a checkout that still tracks it: the same
    assert commit_of_run(1) == sha
    (repo / "fedbench/engine/local.py").write_text("# edited\n" + (repo / "fedbench/engine/local.py").read_text())
    assert commit_of_run(2) == f"{sha}-dirty"


def test_study_commit_follows_the_study_code(tmp_path):
    from fedbench.provenance import RUN_CODE, STUDY_CODE, git_commit, study_code

    repo, sha = _checkout(tmp_path)
    (repo / "reports/claims.md").write_text("rewritten\n")
    (repo / "fedbench/cli.py").write_text("# edited\n" + (repo / "fedbench/cli.py").read_text())
    assert git_commit(STUDY_CODE, repo / "fedbench") == sha == git_commit(RUN_CODE, repo / "fedbench")
    (repo / "fedbench/studies/new_helper.py").write_text("X = 1\n")  # untracked code counts too
    assert git_commit(study_code("new_helper"), repo / "fedbench") == f"{sha}-dirty"
    assert git_commit(study_code("fedlaavg_example1"), repo / "fedbench") == sha  # another study's module: not its code
    assert git_commit(RUN_CODE, repo / "fedbench") == sha
