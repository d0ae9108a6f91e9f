"""Issue 54, item 5: `fedbench paper run NAME --executor ray|local` sets train.executor for the study's runs as
`--set train.executor=...` does elsewhere (params.yaml's when the flag is not given); any other value is one line
naming the flag and what is allowed, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedbench import paper
from fedbench.config import load_config
from fedbench.studies import fedprox_real, stage

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def executors_seen(monkeypatch):
    """What train.executor each study's runs were handed (nothing built, fetched or trained)."""
    seen = []
    monkeypatch.setattr(paper, "plan", lambda *args, **kwargs: ["cost: none"])
    monkeypatch.setattr(paper, "build_variants", lambda *args, **kwargs: None)
    monkeypatch.setattr(stage, "run_study", lambda cfg, name, **kwargs: seen.append((name, cfg.train.executor)) or [])
    # a FedProx real-data study runs through the one driver too (fedbench.studies.fedprox_real), not the train stage
    monkeypatch.setattr(fedprox_real, "run_real_study", lambda cfg, name, *args, **kwargs: seen.append(
        (name, cfg.train.executor)) or [])
    return seen


@pytest.mark.parametrize("name, stage_name", [("fedproxvr_mnist", "fedproxvr_mnist"),
                                              ("fedprox_mnist", "fedprox_mnist")])
def test_paper_run_executor_sets_train_executor_as_set_would(name, stage_name, executors_seen, capsys):
    params = str(ROOT / "params.yaml")
    default = load_config(params).train.executor
    for flag, expected in ((["--executor", "ray"], "ray"), (["--executor", "local"], "local"), ([], default)):
        assert paper.main(["--params", params, "run", name, "--yes", *flag]) == 0, capsys.readouterr().err
        assert executors_seen.pop() == (stage_name, expected)
    assert load_config(params, {"train.executor": "ray"}).train.executor == "ray"  # what --set makes of the same
    assert default == "local"


def test_paper_run_executor_of_another_kind_is_one_line_before_anything_runs(executors_seen, capsys):
    code = paper.main(["--params", str(ROOT / "params.yaml"), "run", "fedproxvr_mnist", "--yes", "--executor", "dask"])
    err = capsys.readouterr().err
    assert code == 2 and executors_seen == []
    assert err == "fedbench paper run: --executor 'dask'; allowed: local, ray\n"
