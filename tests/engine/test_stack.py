"""Stacked runs (fedbench.engine.simulation.simulate_stack): every algorithm's runs give bit-identical numbers
stacked and alone (seeds, straggler fractions, datasets and the algorithm's stack_varying fields mixed in one
stack); a diverging run leaves the stack without disturbing the others; a stack resumes from its runs'
checkpoints; runs that cannot share a stack are refused in one line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms import ALGORITHMS, FedAvg, FedProx, Scaffold, algorithm_class, build_algorithm
from fedbench.algorithms.sequential_sgd import pool_clients, sequential_config
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate, simulate_stack
from fedbench.models import build_model
from tests.algorithms.cases import CASES, VARIED


@pytest.fixture(scope="module")
def datasets():
    kw = dict(num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)
    return generate_synthetic(1, 1, **kw), generate_synthetic(0, 0, **kw)


def _specs(name: str, datasets) -> list[RunSpec]:
    hyper, changes = CASES[name]
    base = SimulationConfig(rounds=3, clients_per_round=4, local_epochs=2, batch_size=10, straggler_fraction=0.3,
                            seed=5, device="cpu", checkpoint_every=10_000)
    base = dataclasses.replace(base, **changes)
    algorithms = [{"lr": 0.05} | hyper]
    if name in VARIED:
        algorithms.append(algorithms[0] | VARIED[name])
    fractions = [base.straggler_fraction] if base.local_steps else [base.straggler_fraction, 0.0]
    specs = []
    for h in algorithms:
        for ds in datasets:
            for f in fractions:
                for seed in (5, 6):
                    cfg = dataclasses.replace(base, seed=seed, straggler_fraction=f)
                    if name == "sequential_sgd":
                        cfg, ds_run = sequential_config(cfg, local_steps=4), pool_clients(ds)
                    else:
                        ds_run = ds
                    specs.append(RunSpec(cfg, ds_run, build_algorithm(name, **h)))
    return specs


def test_every_algorithm_has_a_case_and_declares_only_real_fields():
    assert set(CASES) == set(ALGORITHMS)
    for name in ALGORITHMS:
        cls = algorithm_class(name)
        fields = {f.name for f in dataclasses.fields(cls)}
        assert set(getattr(cls, "stack_varying", ())) <= fields, name
        # keeps_partial_work is the engine's flag, not a hyperparameter to build with: FedProx lets it vary for
        # FedAvg's stacking form (tests/engine/test_stacking_form.py, tests/algorithms/test_fedavg.py stack them)
        assert set(VARIED.get(name, {})) == set(getattr(cls, "stack_varying", ())) - {"keeps_partial_work"}, name


@pytest.mark.parametrize("name", sorted(CASES))
def test_stacked_runs_equal_the_same_runs_alone(name, datasets):
    specs = _specs(name, datasets)
    model = build_model("mclr", specs[0].dataset.feature_shape, specs[0].dataset.num_classes)
    alone = [simulate(s.cfg, s.dataset, model, s.algorithm) for s in specs]
    stacked = simulate_stack(model, specs)
    assert len({a.param_digest for a in alone}) > 1  # the runs differ from one another
    for a, b in zip(alone, stacked):
        assert b.stack_size == len(specs) and b.kernel == "mclr"
        assert a.param_digest == b.param_digest
        assert torch.equal(a.theta, b.theta)
        for ra, rb in zip(a.history, b.history):
            for key in ("train/loss", "test/accuracy", "train/dissimilarity", "test/error_p90"):
                assert ra[key] == rb[key] or (np.isnan(ra[key]) and np.isnan(rb[key])), (key, ra["round"])


def test_a_diverging_run_leaves_the_stack_and_the_others_go_on(datasets):
    ds = datasets[0]
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    cfg = SimulationConfig(rounds=6, clients_per_round=4, local_epochs=2, batch_size=10, seed=1, device="cpu",
                           checkpoint_every=10_000)
    good = [RunSpec(dataclasses.replace(cfg, seed=s), ds, FedProx(lr=0.05, mu=m)) for s in (1, 2) for m in (0.0, 1.0)]
    bad = RunSpec(cfg, ds, FedProx(lr=0.05, mu=-1e30))  # a proximal term pushing away: the loss turns non-finite
    results = simulate_stack(model, [good[0], bad, *good[1:]])
    assert results[1].diverged and len(results[1].history) < cfg.rounds + 1
    assert not np.isfinite(results[1].history[-1]["train/loss"])
    for spec, res in zip(good, [results[0], *results[2:]]):
        alone = simulate(spec.cfg, ds, model, spec.algorithm)
        assert not res.diverged and res.param_digest == alone.param_digest


class _Crash:
    def __init__(self, at: int) -> None:
        self.at = at

    def on_round_end(self, round_, row):
        if round_ == self.at:
            raise KeyboardInterrupt


def test_a_stack_resumes_from_its_checkpoints(datasets, tmp_path):
    ds = datasets[0]
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    cfg = SimulationConfig(rounds=6, clients_per_round=4, local_epochs=2, batch_size=10, seed=1, device="cpu",
                           checkpoint_every=2)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s, straggler_fraction=f), ds, FedProx(lr=0.05, mu=1.0),
                     checkpoint=tmp_path / f"run{s}-{f}.pt") for s in (1, 2) for f in (0.0, 0.5)]
    whole = simulate_stack(model, [dataclasses.replace(s, checkpoint=None) for s in specs])
    crashing = [dataclasses.replace(specs[0], callbacks=(_Crash(at=4),)), *specs[1:]]
    with pytest.raises(KeyboardInterrupt):
        simulate_stack(model, crashing)
    assert all(s.checkpoint.exists() for s in specs)  # every run saved round 4's state
    resumed = simulate_stack(model, specs)
    assert [r.param_digest for r in resumed] == [r.param_digest for r in whole]
    assert [len(r.history) for r in resumed] == [cfg.rounds + 1] * len(specs)
    assert not any(s.checkpoint.exists() for s in specs)  # removed once finished


def test_runs_that_cannot_share_a_stack_are_refused(datasets):
    ds = datasets[0]
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    cfg = SimulationConfig(rounds=1, device="cpu", clients_per_round=2)
    with pytest.raises(ValueError, match="run 1 cannot share a stack with run 0: setting local_epochs differs"):
        simulate_stack(model, [RunSpec(cfg, ds, FedAvg(lr=0.1)),
                               RunSpec(dataclasses.replace(cfg, local_epochs=3), ds, FedAvg(lr=0.1))])
    with pytest.raises(ValueError, match="algorithm field lr differs"):
        simulate_stack(model, [RunSpec(cfg, ds, FedAvg(lr=0.1)), RunSpec(cfg, ds, FedAvg(lr=0.2))])
    with pytest.raises(ValueError, match="algorithm class differs"):  # FedAvg stacks with FedProx (its form), not Scaffold
        simulate_stack(model, [RunSpec(cfg, ds, FedAvg(lr=0.1)), RunSpec(cfg, ds, Scaffold(lr=0.1))])
