"""The dissimilarity computed only for the runs whose claims read it (issue 49, D5): a per-run setting
(SimulationConfig.dissimilarity_every, in PER_RUN_SETTINGS) that the train stage sets from
train.dissimilarity_variants and train.dissimilarity_stragglers (fedbench.config.TrainConfig.computes_dissimilarity).
A run without it keeps every other number bit for bit, and shares a stack with runs that compute it."""

from __future__ import annotations

import dataclasses

import pytest

from fedbench.algorithms import FedAvg, FedProx
from fedbench.config import ConfigError, TrainConfig, load_config
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate, simulate_stack, stack_key
from fedbench.models import build_model
from fedbench.study.experiments import run_params

DISSIMILARITY = "train/dissimilarity"


def _numbers(history: list[dict], without: tuple[str, ...] = ()) -> list[dict]:
    return [{k: v for k, v in row.items() if not k.endswith("time_s") and k not in without} for row in history]


def test_runs_without_the_dissimilarity_share_the_stack_and_change_no_other_number():
    data = generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)
    model = build_model("mclr", data.feature_shape, data.num_classes)
    cfg = SimulationConfig(rounds=3, clients_per_round=4, local_epochs=2, batch_size=10, device="cpu",
                           dissimilarity_every=1, checkpoint_every=10**9)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s, straggler_fraction=f, dissimilarity_every=every), data, alg)
             for s, f, every, alg in ((1, 0.0, 1, FedAvg(lr=0.05)), (1, 0.5, 0, FedAvg(lr=0.05)),
                                      (2, 0.0, 1, FedProx(lr=0.05, mu=1.0)), (2, 0.5, 0, FedProx(lr=0.05, mu=1.0)))]
    assert len({stack_key(s) for s in specs}) == 1
    stacked = simulate_stack(model, specs)
    for got, spec in zip(stacked, specs):
        every = dataclasses.replace(spec.cfg, dissimilarity_every=1)  # the run as it was before: the metric on
        ref = simulate(every, data, model, spec.algorithm)
        assert got.param_digest == ref.param_digest
        if spec.cfg.dissimilarity_every:
            assert _numbers(got.history) == _numbers(ref.history)  # read: every value, the dissimilarity too
        else:
            assert all(DISSIMILARITY not in row for row in got.history)
            assert _numbers(got.history) == _numbers(ref.history, without=(DISSIMILARITY,))


def test_the_train_settings_say_which_runs_compute_it():
    t = TrainConfig(dissimilarity_variants=("fedavg", "fedprox_mu1"), dissimilarity_stragglers=(0.0,))
    assert [t.computes_dissimilarity(v, f) for v, f in (("fedavg", 0.0), ("fedprox_mu1", 0), ("fedprox_mu0", 0.0),
                                                        ("fedavg", 0.9))] == [True, True, False, False]
    assert TrainConfig().computes_dissimilarity("fedprox_mu0", 0.9)  # left out: every run, as before


def test_a_run_that_skips_it_records_so_and_the_others_keep_their_fingerprint_settings():
    overrides = {"train.dissimilarity_variants": ["fedavg"], "train.dissimilarity_stragglers": [0.0]}
    cfg, plain = load_config("params.yaml", overrides), load_config("params.yaml")
    ds = cfg.data.datasets[0]
    assert run_params(cfg, ds, "fedavg", 0.0, 0) == run_params(plain, ds, "fedavg", 0.0, 0)
    assert run_params(cfg, ds, "fedavg", 0.5, 0) == run_params(plain, ds, "fedavg", 0.5, 0) | {"dissimilarity": False}


@pytest.mark.parametrize("key, value, message", [
    ("train.dissimilarity_variants", ["fedavgg"], "train.dissimilarity_variants: 'fedavgg' is not allowed"),
    ("train.dissimilarity_stragglers", [1.5], "train.dissimilarity_stragglers: 1.5 is not a straggler fraction"),
    ("train.dissimilarity_stragglers", [], "train.dissimilarity_stragglers: expected a non-empty list"),
])
def test_bad_settings_fail_with_one_line_naming_the_key(key, value, message):
    with pytest.raises(ConfigError, match=message):
        load_config("params.yaml", {key: value})
