"""The tutorial "Run your own algorithm through a claim", word for word at a tiny budget: its module written into a
folder outside fedbench, its commands run as printed (3 rounds and 2 seeds instead of 20 and 3), and the comparison judged."""

import re
import shlex
import shutil
from pathlib import Path

import pytest

from fedbench import algorithms
from fedbench.claims.entry import VERDICTS
from fedbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorials" / "your-algorithm.md"


@pytest.fixture
def registry():
    """The algorithm registry as it was, back after the test (the tutorial registers its class)."""
    kept = [(d, dict(d)) for d in (algorithms.ALGORITHMS, algorithms.USER_ALGORITHMS, algorithms.HYPERPARAMETERS,
                                   algorithms.DOMAINS)]
    yield
    for d, before in kept:
        d.clear()
        d.update(before)


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def test_the_user_algorithm_tutorial_runs_word_for_word(tmp_path, monkeypatch, capsys, registry):
    text = TUTORIAL.read_text()
    (module,) = _blocks(text, "python")
    user = tmp_path / "user"
    (user / "my_algos").mkdir(parents=True)
    (user / "my_algos" / "__init__.py").write_text("")
    (user / "my_algos" / "damped.py").write_text(module)
    monkeypatch.syspath_prepend(str(user))  # the tutorial's `export PYTHONPATH=$PWD`
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "params.yaml", work / "params.yaml")
    monkeypatch.chdir(work)
    commands = [line for block in _blocks(text, "bash") for line in block.splitlines() if line.startswith("fedbench ")]
    assert [c.split()[1] for c in commands] == ["run", "run", "run", "compare"]
    for command in commands:
        argv = shlex.split(command.replace("train.rounds=20", "train.rounds=3").replace("[0,1,2]", "[0,1]"))[1:]
        try:
            main(argv)
        except SystemExit as stop:
            assert stop.code in (0, None), (command, capsys.readouterr())
    out = capsys.readouterr().out.splitlines()
    judged = {line.split(":")[0].strip(): line.rsplit(": ", 1)[1] for line in out if line.startswith("  ")}
    assert set(judged) == {"fedprox_mu1", "DampedProx"} and set(judged.values()) <= set(VERDICTS)
    assert out[-1] == "damped.png" and (work / "damped.png").stat().st_size > 0
    assert not list((ROOT / "fedbench").rglob("damped.py"))  # defined outside fedbench
