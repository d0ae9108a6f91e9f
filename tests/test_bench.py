"""`fedbench bench` on a tiny case: it runs, the JSON has the documented fields and the ratios are positive
numbers (no timing thresholds: CI machines are too noisy for those)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from fedbench import bench

CASE_FIELDS = {
    "model": str, "cohort": int, "device": str, "samples_per_round": int,
    "vectorized_samples_per_s": float, "per_client_loop_samples_per_s": float, "centralized_samples_per_s": float,
    "throughput_ratio_to_centralized": float, "speedup_over_per_client_loop": float,
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    threads = torch.get_num_threads()
    path = tmp_path_factory.mktemp("bench") / "out" / "bench.json"
    try:
        code = bench.main(["--quick", "--json", str(path), "--cohorts", "2,3", "--models", "mclr,cnn",
                           "--min-time", "0", "--device", "cpu"])
    finally:
        torch.set_num_threads(threads)
    assert code == 0
    return json.loads(path.read_text())


def test_json_schema_and_positive_ratios(tiny_run):
    assert tiny_run["schema"] == bench.SCHEMA and tiny_run["quick"] is True and tiny_run["device"] == "cpu"
    cases = tiny_run["cases"]
    assert [(c["model"], c["cohort"]) for c in cases] == [("mclr", 2), ("mclr", 3), ("cnn", 2), ("cnn", 3)]
    for c in cases:
        for name, kind in CASE_FIELDS.items():
            assert isinstance(c[name], kind), name
        for name in ("vectorized_samples_per_s", "per_client_loop_samples_per_s", "centralized_samples_per_s",
                     "throughput_ratio_to_centralized", "speedup_over_per_client_loop"):
            assert math.isfinite(c[name]) and c[name] > 0, name
        assert c["device"] == "cpu" and c["samples_per_round"] > 0
    assert tiny_run["targets"] == []  # targets are read at cohort 100 only
    assert tiny_run["environment"]["torch"] == torch.__version__


def test_help_and_bad_arguments(capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--quick", "--json", "--device", "--cohorts", "--report"):
        assert flag in out
    with pytest.raises(SystemExit, match="unknown 'resnet'"):
        bench.main(["--models", "resnet"])
    with pytest.raises(SystemExit, match="cohort sizes must be >= 1"):
        bench.main(["--cohorts", "0"])


def test_schedule_covers_each_client_once_per_epoch():
    fed = bench.make_federation("mclr", 6, torch.device("cpu"))
    sched = bench.make_schedule(fed, np.arange(6), seed=0, round_=0, epochs=2, batch=4)
    assert np.all(np.diff(sched.steps) <= 0)  # work-sorted, most steps first
    pool = len(fed.y)
    for row, client, steps in zip(sched.index.numpy(), sched.clients, sched.steps):
        n = int(fed.sizes[client])
        per_epoch = -(-n // 4)
        assert steps == 2 * per_epoch and np.all(row[steps:] == -1)
        own = set(((fed.starts[client] + np.arange(n)) % pool).tolist())
        for e in range(2):
            epoch = row[e * per_epoch: (e + 1) * per_epoch].ravel()
            assert sorted(epoch[epoch >= 0].tolist()) == sorted(own)
    assert sched.samples == 2 * int(fed.sizes.sum())


def test_report_writer_and_federation_scaling(tiny_run, tmp_path):
    row = bench.measure_federation("mclr", num_clients=20, cohort=5, device=torch.device("cpu"), max_steps=2, rounds=1)
    assert row["table_bytes"] == 20 * 610 * 4 and row["samples_per_s"] > 0 and row["algorithm"] == "fedlaavg"
    result = dict(tiny_run, federation_scaling=[row], elapsed_s=1.0,
                  studies=[{"study": "x", "rounds": 10, "round_s": 0.5, "projected_s": 5.0, "assumptions": "y"}])
    bench.write_report(result, tmp_path / "report", ["--quick"])
    text = (tmp_path / "report" / "README.md").read_text()
    assert "| mclr | 2 | cpu |" in text and "federation grows" in text and "Full-scale projections" in text
    for name in ("bench.json", "cohort_scaling.png", "federation_scaling.png"):
        assert (tmp_path / "report" / name).stat().st_size > 0
