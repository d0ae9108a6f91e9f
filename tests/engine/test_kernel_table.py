"""choose_kernel's table (fedbench.engine.kernels.measured): the CUDA rows are the committed GPU measurement, the
rnn kernel runs the recurrent models on CUDA at the cohorts where it was measured faster, and the CPU's choices are
those the regression reference was made with, at every cohort."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedbench.engine.kernels import choose_kernel
from fedbench.engine.kernels.measured import MEASURED, PROVENANCE, as_measured, fastest_at
from tests.engine.test_kernels import MODELS

ROOT = Path(__file__).resolve().parents[2]
RECURRENT = ("fedprox_shakespeare_lstm", "fedprox_sent140_lstm", "deltafl_sent140_lstm", "deltafl_shakespeare_gru")
COHORTS = (None, 1, 10, 50, 100, 200, 1000, 5000)

# the CPU choice of each model before the table followed the cohort (commit f3d2e18, every cohort)
CPU_CHOICE = {"mclr": "mclr", "mclr_no_bias": "mclr", "cifar_cnn": "loop", "mean_estimation": "quadratic",
              "quadratics": "quadratic", "scalar_quadratics": "quadratic", "fedprox_shakespeare_lstm": "loop",
              "fedprox_sent140_lstm": "loop", "deltafl_emnist_cnn": "loop", "deltafl_sent140_linear": "vmap",
              "deltafl_sent140_lstm": "loop", "deltafl_shakespeare_gru": "loop", "scaffold_mlp": "vmap",
              "leaf_femnist_cnn": "loop"}


def test_cuda_rows_are_the_committed_gpu_measurement_and_every_row_says_where_it_was_measured():
    bench = json.loads((ROOT / "reports/bench-gpu/bench.json").read_text())
    committed = as_measured(bench["throughput"]["kernel_table"])
    assert {key: rows for key, rows in MEASURED.items() if key[1] == "cuda"} == committed
    assert bench["environment"]["device_name"] == "NVIDIA H200"
    assert set(PROVENANCE) == set(MEASURED)
    assert all("NVIDIA H200" in PROVENANCE[key] and "2026-11-27" in PROVENANCE[key] for key in committed)


@pytest.mark.parametrize("name", RECURRENT)
def test_rnn_runs_the_recurrent_models_on_cuda_from_cohort_100(name):
    for cohort in (100, 200, 999, 1000, 5000):
        assert choose_kernel(MODELS[name], "cuda", cohort=cohort).name == "rnn"


def test_below_cohort_100_cuda_follows_the_measurement_at_10():
    # Shakespeare LSTM at 10: rnn 821.2 < loop 920.5; Sent140 LSTM at 10: rnn 3580.1 > loop 2861.2
    assert choose_kernel(MODELS["fedprox_shakespeare_lstm"], "cuda", cohort=10).name == "loop"
    assert choose_kernel(MODELS["fedprox_shakespeare_lstm"], "cuda", cohort=99).name == "loop"
    assert choose_kernel(MODELS["fedprox_sent140_lstm"], "cuda", cohort=10).name == "rnn"
    # the unmeasured recurrent models follow the measured two only where both agree: not at 10
    assert choose_kernel(MODELS["deltafl_shakespeare_gru"], "cuda", cohort=10).name == "loop"
    assert choose_kernel(MODELS["deltafl_sent140_lstm"], "cuda", cohort=10).name == "loop"
    # unknown cohort: the kernel at least as fast as the loop at every measured cohort
    assert choose_kernel(MODELS["fedprox_shakespeare_lstm"], "cuda").name == "loop"
    assert choose_kernel(MODELS["fedprox_sent140_lstm"], "cuda").name == "rnn"
    assert choose_kernel(MODELS["cifar_cnn"], "cuda", cohort=10).name == "vmap"
    assert choose_kernel(MODELS["mclr"], "cuda", cohort=1000).name == "mclr"


@pytest.mark.parametrize("name", sorted(CPU_CHOICE))
def test_cpu_choices_are_unchanged_at_every_cohort(name):
    assert [choose_kernel(MODELS[name], "cpu", cohort=k).name for k in COHORTS] == [CPU_CHOICE[name]] * len(COHORTS)


def test_fastest_at_reads_the_largest_measured_cohort_at_or_below():
    table = {10: {"loop": 100.0, "rnn": 90.0, "vmap": 95.0}, 100: {"loop": 100.0, "rnn": 900.0, "vmap": 120.0}}
    both = ["loop", "rnn", "vmap"]
    assert fastest_at(table, both, 1) == "loop"  # below every measured cohort: the smallest one's
    assert fastest_at(table, both, 99) == "loop"
    assert fastest_at(table, both, 100) == "rnn"
    assert fastest_at(table, both, 10**6) == "rnn"
    assert fastest_at(table, ["loop", "vmap"], 100) == "vmap"  # rnn not allowed for this model
    assert fastest_at({10: {"loop": 5.0, "vmap": 5.0}}, both, 10) == "loop"  # a tie keeps the loop
    assert fastest_at({10: {"vmap": 5.0}}, both, 10) is None and fastest_at({}, both, 10) is None
