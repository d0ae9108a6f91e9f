"""Item 4: a run's recorded settings are the settings its data was made with. Before: with data generated,
`--set data.seed=1 --set data.num_devices=20` trained on the 30-device seed-0 data and recorded seed 1 and 20
devices in summary.json and MLflow. Now the run refuses in one line, before writing anything."""

from tests.faults.conftest import one_line

RUN = ["run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--seed", "0", "--no-track"]


def test_run_refuses_data_made_with_other_settings(ws):
    assert ws.fedbench("generate").returncode == 0
    proc = ws.fedbench(*RUN, "--set", "data.seed=1", "--set", "data.num_devices=20")
    assert proc.returncode == 2
    line = one_line(proc.stderr)
    assert line.startswith("fedbench: data error: data/generated/synthetic_1_1 was made with data.seed=0, "
                           "data.num_devices=30 but the config says data.seed=1, data.num_devices=20")
    assert "fedbench generate synthetic_1_1 --set data.seed=1 --set data.num_devices=20" in line
    assert not (ws.path / "results").exists()
    regen = ws.fedbench("generate", "--set", "data.seed=1", "--set", "data.num_devices=20")  # the fix it names
    assert regen.returncode == 0, regen.stderr[-2000:]
    assert ws.fedbench(*RUN, "--set", "data.seed=1", "--set", "data.num_devices=20").returncode == 0


def test_clients_per_round_beyond_the_datas_clients(ws):
    # issue 9: clients_per_round larger than the generated data's clients passed load (and failed in the engine)
    assert ws.fedbench("generate", "--set", "data.num_devices=5", "--set", "train.clients_per_round=5").returncode == 0
    proc = ws.fedbench(*RUN, "--set", "data.num_devices=5")  # clients_per_round 10 > 5: refused at load
    assert proc.returncode == 2 and "train.clients_per_round: 10 exceeds data.num_devices (5)" in one_line(proc.stderr)
    import json

    from fedbench.config import load_config
    from fedbench.errors import ConfigError
    from fedbench.study.experiments import dataset_meta

    meta = ws.path / "data/generated/synthetic_1_1/meta.json"
    body = json.loads(meta.read_text())
    del body["source"]["params"]  # a dataset that does not say how it was made (e.g. downloaded)
    meta.write_text(json.dumps(body))
    cfg = load_config(ws.path / "params.yaml")
    try:
        dataset_meta(cfg, "synthetic_1_1", ws.path / "data/generated")
    except ConfigError as exc:
        assert str(exc).startswith("train.clients_per_round: 10 exceeds the 5 clients of")
    else:
        raise AssertionError("clients_per_round beyond the data's clients was accepted")
