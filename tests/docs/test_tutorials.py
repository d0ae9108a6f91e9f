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


def test_the_fedprox_straggler_tutorial_runs_word_for_word_on_a_tiny_main_job(tmp_path, monkeypatch, capsys):
    """"Reproduce FedProx's straggler study" after its `make repro`, here a main job of 3 rounds and 2 seeds (its two
    90%-straggler cells on Synthetic(1,1) run first, as `make repro` would): its commands as printed, the second run's
    40 rounds made 4. The first run is reused, as the tutorial says; compare judges FedProx against FedAvg."""
    import yaml

    text = (ROOT / "docs" / "tutorials" / "fedprox-stragglers.md").read_text()
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["train"] |= {"rounds": 3, "seeds": [0, 1]}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    (tmp_path / "reports").mkdir()
    shutil.copy(ROOT / "reports" / "claims.json", tmp_path / "reports" / "claims.json")
    monkeypatch.chdir(tmp_path)
    for variant in ("fedavg", "fedprox_mu1"):  # what `make repro` computed
        main(["run", "--dataset", "synthetic_1_1", "--algorithm", variant, "--stragglers", "0.9", "--no-track"])
    capsys.readouterr()
    commands = [line.split("  #")[0] for block in _blocks(text, "bash") for line in block.splitlines()
                if line.startswith("fedbench ")]
    assert [c.split()[1] for c in commands] == ["show", "run", "run", "compare"]
    outputs = []
    for command in commands:
        argv = shlex.split(command.replace("train.rounds=40", "train.rounds=4"))[1:]
        if argv[0] == "run":
            argv.append("--no-track")  # MLflow's logging is the UI tutorial's, and seconds of a test
        try:
            main(argv)
        except SystemExit as stop:
            assert stop.code in (0, None), (command, capsys.readouterr())
        outputs.append(capsys.readouterr().out)
    assert "fedprox/synthetic-1-1/stragglers-90/accuracy-gain" in outputs[0]
    assert "synthetic_1_1 fedprox_mu1 stragglers=0.9 seed=0: reused" in outputs[1]
    assert "synthetic_1_1 fedprox_mu1 stragglers=0.9 seed=0: wrote" in outputs[2]
    lines = outputs[3].splitlines()
    assert lines[1].startswith("  fedprox_mu1: ") and lines[1].rsplit(": ", 1)[1] in VERDICTS
    assert lines[-1] == "fig1.png" and (tmp_path / "fig1.png").exists()
