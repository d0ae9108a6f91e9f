"""The runs of a stack batched around the local steps (fedbench.engine.vmap_runs; CUDA's path, forced here on the
CPU as fedbench.bench.proxies.round_ops forces it): each algorithm's client_init, client_result and server_update
once for a group of runs equals the per-run path; the methods that cannot run under vmap fall back, and which
those are is held here; the CPU's default path never vmaps."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms import FedProx, Scaffold, build_algorithm
from fedbench.algorithms.sequential_sgd import pool_clients, sequential_config
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine import round as round_
from fedbench.engine import simulation, vmap_runs
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack
from fedbench.models import build_model
from tests.algorithms.cases import CASES, VARIED

# (class, method) -> runs that called it in a vmap group over the 4 rounds of :func:`_specs`'s stack; a method not
# listed ran run by run: it fell back (FALLBACK below) or its runs never formed a group (a Python number or host
# array in the state that differs between runs: Delta-FL's eta, FedProx-adaptive's mu and last loss)
VMAPPED = {
    "delta_fl": {("DeltaFL", "client_init"): 21},
    "fedadam": {("FedAdam", "client_init"): 24, ("FedAdam", "server_update"): 24},
    "fedavg": {("FedProx", "client_init"): 12, ("FedProx", "server_update"): 12},  # FedAvg trains as FedProx
    "fedavg_momentum": {("FedAvgMomentum", "client_init"): 24, ("FedAvgMomentum", "server_update"): 24},
    "feddane": {("FedDane", "client_result"): 32, ("FedDane", "server_update"): 32},
    "fedlaavg": {("FedLaAvg", "client_init"): 12, ("FedLaAvg", "client_result"): 12,
                 ("FedLaAvg", "server_update"): 12},
    "fedprox": {("FedProx", "client_init"): 32, ("FedProx", "server_update"): 32},
    "fedprox_adaptive": {("FedProxAdaptiveMu", "client_init"): 32},
    "fedproxvr": {("FedProxVR", "client_result"): 16, ("FedProxVR", "server_update"): 16},
    "mime": {("Mime", "client_init"): 12, ("Mime", "client_result"): 12, ("Mime", "server_update"): 12},
    "minibatch_sgd": {("MinibatchSGD", "client_init"): 12, ("MinibatchSGD", "client_result"): 12,
                      ("MinibatchSGD", "server_update"): 12},
    "scaffold": {("Scaffold", "client_init"): 24, ("Scaffold", "client_result"): 24,
                 ("Scaffold", "server_update"): 24},
    "sequential_sgd": {("SequentialSGD", "client_init"): 16, ("SequentialSGD", "server_update"): 16},
    "server_only": {("ServerOnly", "client_init"): 12, ("ServerOnly", "client_result"): 12,
                    ("ServerOnly", "server_update"): 12},
}
# the methods that raised under vmap and run run by run (fedbench.engine.vmap_runs.FALLBACKS): each draws from its
# run's own seeded stream for its own clients on the host (cohort.host_clients): FedDane the gradient devices beyond
# the cohort (its cases' gradient_clients > K), FedProxVR each client's output iterate t'. The full gradient of each
# run's clients (Mime's client_init, SCAFFOLD's client_result with control variate I) is one pass for the group
# (fedbench.engine.vmap_runs.ClientsFullGrad) and no longer falls back.
FALLBACK = {
    "feddane": {("FedDane", "client_init")},
    "fedproxvr": {("FedProxVR", "client_init")},
}


@pytest.fixture(scope="module")
def dataset():
    return generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)


def _specs(name: str, ds) -> list[RunSpec]:
    """Four runs of each of the case's algorithm objects (CASES, VARIED): three without stragglers (one cohort size:
    a group) and one with (another size)."""
    hyper, changes = CASES[name]
    base = dataclasses.replace(SimulationConfig(rounds=4, clients_per_round=4, local_epochs=2, batch_size=10, seed=5,
                                                device="cpu", checkpoint_every=10_000), **changes)
    algorithms = [{"lr": 0.05} | hyper] + ([{"lr": 0.05} | hyper | VARIED[name]] if name in VARIED else [])
    specs = []
    for h in algorithms:
        for seed, fraction in ((5, 0.0), (6, 0.0), (7, 0.0), (8, 0.3)):
            cfg = dataclasses.replace(base, seed=seed, straggler_fraction=0.0 if base.local_steps else fraction)
            data = ds
            if name == "sequential_sgd":
                cfg, data = sequential_config(cfg, local_steps=4), pool_clients(ds)
            specs.append(RunSpec(cfg, data, build_algorithm(name, **h)))
    return specs


def _batched(monkeypatch) -> None:
    monkeypatch.setattr(round_, "BATCHED_SIGNAL_DEVICES", ("cuda", "cpu"))


def _recording(monkeypatch) -> collections.Counter:
    calls: collections.Counter = collections.Counter()
    real = vmap_runs._vmapped

    def recorded(fn, group_args):
        out = real(fn, group_args)
        calls[(type(fn.__self__).__name__, fn.__name__)] += len(group_args)
        return out

    monkeypatch.setattr(vmap_runs, "_vmapped", recorded)
    monkeypatch.setattr(vmap_runs, "FALLBACKS", {})
    return calls


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_runs_batched_equal_the_runs_one_by_one(name, dataset, monkeypatch):
    specs = _specs(name, dataset)
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    one_by_one = simulate_stack(model, specs)
    calls = _recording(monkeypatch)
    _batched(monkeypatch)
    batched = simulate_stack(model, specs)
    assert dict(calls) == VMAPPED[name]
    assert {(k[0].__name__, k[1]) for k in vmap_runs.FALLBACKS} == FALLBACK.get(name, set())
    assert all("cohort.host_clients differs between the runs of a group" in why
               for why in vmap_runs.FALLBACKS.values())
    # Within float32 rounding: a reduction over the clients is batched under vmap (tensordot's mm becomes a bmm), whose
    # summation order a BLAS may choose by shape; on this machine's CPU every case is in fact bit for bit the same
    for a, b in zip(one_by_one, batched):
        torch.testing.assert_close(b.theta, a.theta, rtol=1e-5, atol=1e-6)
        assert len(a.history) == len(b.history) == 5
        for ra, rb in zip(a.history, b.history):
            assert rb["train/loss"] == pytest.approx(ra["train/loss"], rel=1e-5)


@pytest.mark.parametrize("name", ["fedprox", "scaffold", "fedproxvr"])
def test_the_runs_batched_equal_the_runs_one_by_one_at_a_static_shape(name, dataset, monkeypatch):
    specs = [dataclasses.replace(s, cfg=dataclasses.replace(s.cfg, capture="static")) for s in _specs(name, dataset)]
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    one_by_one = simulate_stack(model, specs)
    calls = _recording(monkeypatch)
    _batched(monkeypatch)
    batched = simulate_stack(model, specs)
    assert dict(calls) == VMAPPED[name]  # the same groups: the static loop hands back the same rows
    for a, b in zip(one_by_one, batched):
        torch.testing.assert_close(b.theta, a.theta, rtol=1e-5, atol=1e-6)


def test_the_cpus_default_path_never_vmaps(dataset, monkeypatch):
    def refuse(fn, group_args):
        raise AssertionError("vmap on the CPU's default path")

    monkeypatch.setattr(vmap_runs, "_vmapped", refuse)
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    results = simulate_stack(model, _specs("fedprox", dataset))
    assert len(results) == 8 and not any(r.diverged for r in results)


def test_a_groups_states_are_views_of_one_buffer_and_a_checkpoint_holds_only_its_run(dataset, monkeypatch, tmp_path):
    _batched(monkeypatch)
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    cfg = SimulationConfig(rounds=4, clients_per_round=4, local_epochs=2, batch_size=10, device="cpu",
                           checkpoint_every=2)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), dataset, Scaffold(lr=0.05),
                     checkpoint=tmp_path / f"run{s}.pt") for s in (1, 2, 3)]
    saved = []
    real = simulation._save_checkpoint

    def keep(path, *args):
        real(path, *args)
        saved.append(torch.load(path, weights_only=False))

    monkeypatch.setattr(simulation, "_save_checkpoint", keep)
    results = simulate_stack(model, specs)
    p, n = model.num_params, dataset.num_clients
    assert len(saved) == 3  # each its own theta, c and c_i table, not the group's 3 nor the pool's
    assert all(c["state"].theta.untyped_storage().nbytes() == 4 * p for c in saved)
    assert all(c["table"].untyped_storage().nbytes() == 4 * p * n for c in saved)
    thetas = [r.theta for r in results]
    assert vmap_runs.stack_rows(thetas).data_ptr() == thetas[0].data_ptr()  # the group's last update: one buffer


@pytest.mark.parametrize("name,hyper,ops", [("fedprox", {"mu": 1.0}, 19), ("scaffold", {}, 34), ("fedlaavg", {}, 32)])
def test_ops_outside_the_steps_are_the_same_at_2_and_4_runs(name, hyper, ops, monkeypatch):
    """fedbench.bench.proxies.round_ops's count for a stack of ``name`` (its per-client table, for SCAFFOLD and
    FedLaAvg, gathered and written once for the runs): the same at 2 and 4 runs."""
    from fedbench.bench import proxies
    from fedbench.engine.evaluation import EvalSpec

    _batched(monkeypatch)
    data, model = proxies._synthetic(10)
    protocol = (EvalSpec("train", every=10_000), EvalSpec("test", every=10_000))

    def outside(runs: int, rounds: int) -> int:
        cfg = SimulationConfig(rounds=rounds, clients_per_round=3, local_epochs=1, batch_size=10, local_steps=1,
                               device="cpu", evaluations=protocol, dissimilarity_every=0, checkpoint_every=10**9)
        specs = [RunSpec(dataclasses.replace(cfg, seed=s), data, build_algorithm(name, lr=0.05, **hyper))
                 for s in range(runs)]
        with proxies.OpCount() as count:
            simulate_stack(model, specs)
        return count.outside

    assert [(outside(runs, 5) - outside(runs, 3)) / 2 for runs in (2, 4)] == [ops, ops]


def test_stack_rows_is_a_view_only_where_the_tensors_lie_one_after_another():
    buffer = torch.arange(12.0).view(3, 4)
    rows = list(buffer.unbind())
    view = vmap_runs.stack_rows(rows)
    assert torch.equal(view, buffer) and view.data_ptr() == buffer.data_ptr()
    swapped = vmap_runs.stack_rows([rows[1], rows[0]])
    assert torch.equal(swapped, buffer[[1, 0]]) and swapped.data_ptr() != buffer.data_ptr()
    apart = vmap_runs.stack_rows([torch.ones(4), torch.zeros(4)])
    assert torch.equal(apart, torch.tensor([[1.0] * 4, [0.0] * 4]))
    strided = vmap_runs.stack_rows(list(buffer.t().unbind())[:2])  # columns: not contiguous
    assert torch.equal(strided, buffer.t()[:2]) and strided.data_ptr() != buffer.data_ptr()


def test_an_unshared_cohort_field_refuses_every_use():
    unshared = vmap_runs.Unshared("host_steps")
    for use in (lambda u: u.min(), len, bool, np.asarray, lambda u: u[0], lambda u: u == 1, lambda u: u + 1,
                lambda u: u(), int):
        with pytest.raises(vmap_runs.NotStackable, match="cohort.host_steps differs between the runs of a group"):
            use(unshared)


def test_equal_values_and_structures():
    assert vmap_runs.same_value(float("nan"), float("nan")) and not vmap_runs.same_value(1.0, 2.0)
    assert vmap_runs.same_value(np.array([1, -1]), np.array([1, -1]))
    assert not vmap_runs.same_value(np.array([1, -1]), np.array([1, 0]))
    assert not vmap_runs.same_value(1, 1.0)  # an int and a float: not the same value for a method's arithmetic
    a = FedProx(lr=0.1, mu=1.0)
    assert vmap_runs.groups([a, FedProx(lr=0.1, mu=1.0), FedProx(lr=0.1, mu=0.5)],
                            [(torch.zeros(3),), (torch.ones(3),), (torch.ones(3),)]) == [[0, 1], [2]]
    assert vmap_runs.groups([a, a, a], [(torch.zeros(3),), (torch.zeros(4),), (torch.zeros(3, dtype=torch.float64),)]) \
        == [[0], [1], [2]]


def test_a_trip_replayed_and_a_per_client_table_on_the_batched_path_equal_the_per_run_path(monkeypatch):
    """SCAFFOLD's stack of tests/engine/test_signal_window.py (c_i written every round; seeds 0, 1, 3 diverge, seed
    2's signal trips unconfirmed in rounds 1, 6 and 24, each trip replaying its window run by run): the same runs,
    the same rounds, the same models within float32 rounding, with the runs batched."""
    from fedbench.engine.evaluation import EvalSpec

    ds = generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    cfg = SimulationConfig(rounds=30, clients_per_round=4, local_epochs=1, batch_size=10, device="cpu",
                           evaluations=(EvalSpec("test", every=100),), dissimilarity_every=0, divergence_factor=1.5,
                           checkpoint_every=10_000, lr_decay=0.999)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), ds, Scaffold(lr=0.3)) for s in range(4)]
    one_by_one = simulate_stack(model, specs)
    calls = _recording(monkeypatch)
    _batched(monkeypatch)
    batched = simulate_stack(model, specs)
    assert [r.diverged for r in batched] == [r.diverged for r in one_by_one] == [True, True, False, True]
    assert [row["round"] for row in batched[2].history if "train/loss" in row] == [1, 6, 24]
    assert calls[("Scaffold", "server_update")] > 0 and not vmap_runs.FALLBACKS  # a decayed lr: the same groups
    for a, b in zip(one_by_one, batched):
        assert [row["round"] for row in a.history] == [row["round"] for row in b.history]
        torch.testing.assert_close(b.theta, a.theta, rtol=1e-5, atol=1e-6)


class _Crash:
    def on_round_end(self, round_, row):
        if round_ == 4:
            raise KeyboardInterrupt


@pytest.mark.parametrize("algorithm", [FedProx(lr=0.05, mu=1.0), Scaffold(lr=0.05)], ids=["fedprox", "scaffold"])
def test_a_batched_stack_resumes_from_its_checkpoints(algorithm, dataset, monkeypatch, tmp_path):
    _batched(monkeypatch)
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    cfg = SimulationConfig(rounds=6, clients_per_round=4, local_epochs=2, batch_size=10, device="cpu",
                           checkpoint_every=2)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), dataset, algorithm,
                     checkpoint=tmp_path / f"run{s}.pt") for s in (1, 2, 3)]
    whole = simulate_stack(model, [dataclasses.replace(s, checkpoint=None) for s in specs])
    with pytest.raises(KeyboardInterrupt):
        simulate_stack(model, [dataclasses.replace(specs[0], callbacks=(_Crash(),)), *specs[1:]])
    resumed = simulate_stack(model, specs)
    for a, b in zip(whole, resumed):
        assert len(b.history) == cfg.rounds + 1
        torch.testing.assert_close(b.theta, a.theta, rtol=1e-5, atol=1e-6)
