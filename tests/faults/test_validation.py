"""Issue 14 item 9: validation gaps, each now one line naming the problem and the fix, before anything is
written."""

import os

import pytest

from tests.faults.conftest import one_line

RUN = ["run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--seed", "0", "--no-track"]


def test_repeated_yaml_key_is_refused_as_dvc_does(ws):
    params = ws.path / "params.yaml"
    params.write_text(params.read_text().replace("  rounds: 3\n", "  rounds: 3\n  rounds: 5\n"))
    proc = ws.fedbench("check-config")
    assert proc.returncode == 2
    assert "params.yaml: line" in one_line(proc.stderr) and "key 'rounds' repeats line" in proc.stderr


def test_helper_module_is_not_a_claim_study(ws):
    ws.write_params(lambda raw: raw.update(claim_studies={"default": {"record": {}}}))
    proc = ws.fedbench("check-config")
    assert proc.returncode == 2
    assert one_line(proc.stderr).startswith("fedbench: config error: claim_studies.default.record: unknown claim study")


def test_yaml_12_numbers(ws):
    ws.write_params(lambda raw: raw["train"].update(lr="LR"))
    params = ws.path / "params.yaml"
    params.write_text(params.read_text().replace("lr: LR", "lr: 1e-2"))  # a float for DVC (YAML 1.2): so for us
    assert ws.fedbench("check-config").returncode == 0
    proc = ws.fedbench(*RUN, "--set", "train.lr=1e-3")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [line["params"]["lr"] for line in ws.index()] == [0.001]


def test_stragglers_without_fewer_epochs_fail_before_data(ws):
    ws.write_params(lambda raw: raw["studies"]["stragglers"].update(stragglers=[0.0]))
    proc = ws.fedbench(*RUN, "--stragglers", "0.5", "--set", "train.local_epochs=1")
    assert proc.returncode == 2
    assert one_line(proc.stderr).startswith("fedbench: config error: --stragglers: stragglers with "
                                            "straggler_epochs='authors_code' run U{1..E-1} epochs")
    assert not (ws.path / "data").exists() and not (ws.path / "results").exists()


@pytest.mark.parametrize("args", [["check-config", "--params", "params.yaml"], ["--params", "params.yaml", "check-config"]])
def test_params_before_or_after_the_command(ws, args):
    proc = ws.fedbench(*args)
    assert proc.returncode == 0 and proc.stdout.startswith("params.yaml: ok")


@pytest.mark.parametrize("path", ["/", "missing.yaml", "data"])
def test_unreadable_params_is_one_line(ws, path):
    (ws.path / "data").mkdir(exist_ok=True)
    proc = ws.fedbench("check-config", "--params", path)
    assert proc.returncode == 2 and one_line(proc.stderr).startswith(f"fedbench: config error: {path}")


def test_show_creates_no_store(ws):
    env_uri = ws.env.pop("MLFLOW_TRACKING_URI")  # the default store, mlflow.db in the working directory
    try:
        proc = ws.fedbench("show")
    finally:
        ws.env["MLFLOW_TRACKING_URI"] = env_uri
    assert proc.returncode == 0 and proc.stdout.startswith("no runs in sqlite:///")
    assert sorted(os.listdir(ws.path)) == ["params.yaml"]
