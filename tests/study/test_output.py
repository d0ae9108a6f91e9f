"""A claim study's folder is replaced whole, and a run stopped or failing on its way never loses the simulations it
(or an earlier run) finished: they were moved into the temporary folder before the swap, and removed with it when
anything after that raised (an interrupt-and-resume audit, 2026-11-29). On FedLaAvg's Example 1 (6 simulations,
deterministic), at larger step sizes than the study's (SMALL_ETAS: 35 periods in all, not 260; its claims still
judged; about 3 s of CPU, 20 s at the study's own), run once for the module and copied for each test."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from fedbench.study import output
from fedbench.study.output import replace_keeping, run_claim_study

NAME = "fedlaavg_example1"
SMALL_ETAS = (0.2, 0.1, 0.05)  # three step sizes as the study's ETAS (0.1, 0.02, 0.005), whose periods grow as 1/eta


def _outcomes(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "outcomes").glob("*.json"))


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


@pytest.fixture(scope="module", autouse=True)
def small_steps():
    """The study at SMALL_ETAS for every run of this module (the same settings in each, so reruns reuse)."""
    from fedbench.studies import fedlaavg_example1

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fedlaavg_example1, "ETAS", SMALL_ETAS)
        yield


@pytest.fixture(scope="module")
def finished_once(tmp_path_factory, small_steps):
    """The study run once for the module's tests (each of them changes or reruns the folder: they get copies)."""
    folder = tmp_path_factory.mktemp("finished") / NAME / "pipeline"
    run_claim_study(NAME, folder, workers=1)
    assert len(_outcomes(folder)) == 6
    return folder


@pytest.fixture
def finished(finished_once, tmp_path):
    """A finished folder of the study, as its run left it: a copy of the module's (file times kept)."""
    folder = tmp_path / NAME / "pipeline"
    shutil.copytree(finished_once, folder)
    return folder


def test_a_stop_after_the_runs_keeps_every_finished_simulation_and_the_old_folder(finished, monkeypatch):
    before = {p.name: p.read_bytes() for p in finished.iterdir() if p.is_file()}
    outcomes = _outcomes(finished)

    def stopped(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(output, "keep_folder_seconds", stopped)  # Ctrl-C once the records are written
    with pytest.raises(KeyboardInterrupt):
        run_claim_study(NAME, finished, workers=1)
    assert _outcomes(finished) == outcomes  # they were deleted with the temporary folder
    assert {p.name: p.read_bytes() for p in finished.iterdir() if p.is_file()} == before
    assert _leftovers(finished.parent) == []


@pytest.mark.parametrize("step", [1, 2, 3])
def test_a_swap_cut_short_at_any_rename_leaves_the_old_folder_and_its_store(step, tmp_path, monkeypatch):
    folder, new = tmp_path / "pipeline", tmp_path / ".pipeline.new"
    (folder / "outcomes").mkdir(parents=True)
    (folder / "outcomes" / "a.json").write_text("{}")
    (folder / "claims.json").write_text("old")
    new.mkdir()
    (new / "claims.json").write_text("new")
    calls, rename = [], os.replace

    def cut(src, dst):
        calls.append(src)
        if len(calls) == step:
            raise KeyboardInterrupt
        rename(src, dst)

    monkeypatch.setattr(output.os, "replace", cut)
    with pytest.raises(KeyboardInterrupt):
        replace_keeping(folder, new, "outcomes")
    monkeypatch.setattr(output.os, "replace", rename)
    assert (folder / "claims.json").read_text() == "old" and (folder / "outcomes" / "a.json").exists()
    replace_keeping(folder, new, "outcomes")  # and the same swap goes through afterwards
    assert (folder / "claims.json").read_text() == "new" and (folder / "outcomes" / "a.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipeline"]


@pytest.mark.parametrize("broken", ['{"study": ', "[1]\n"])
def test_an_unreadable_record_of_the_last_run_is_replaced_and_its_simulations_reused(broken, finished, capsys):
    """A cut-short claims.json made every rerun fail with a JSONDecodeError traceback, deleting the outcomes."""
    (finished / "claims.json").write_text(broken)
    run_claim_study(NAME, finished, workers=1)
    assert "6 of 6 simulations reused" in capsys.readouterr().out
    assert json.loads((finished / "claims.json").read_text())["study"] == NAME and len(_outcomes(finished)) == 6
