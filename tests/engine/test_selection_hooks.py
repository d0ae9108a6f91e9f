"""The engine's selection under availability, the algorithm hooks (choose_clients, filter_cohort), local work
given in steps, and the per-client losses it hands to filter_cohort."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms import DeltaFL, FedAvg, FedLaAvg, FedProx
from fedbench.availability import AvailabilityConfig, RandomDropout
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine import local, simulation
from fedbench.engine import round as round_
from fedbench.engine.metrics import DeviceData
from fedbench.engine.sampling import plan_round, select_clients
from fedbench.engine.kernels import choose_kernel
from fedbench.engine.round import cohort_losses
from fedbench.engine.simulation import SimulationConfig, simulate
from fedbench.models import build_model
from fedbench.seeding import torch_generator
from tests.algorithms.handmade import (
    Recorder,
    _client,
    ce_loss,
    handmade_config,
    handmade_dataset,
    handmade_model,
)

SIZES = np.array([5, 80, 12, 40, 7, 300, 25, 60, 9, 150])


@pytest.fixture(scope="module")
def synthetic():
    return generate_synthetic(1, 1, num_devices=8, seed=0, lognormal_mean=3.0, lognormal_sigma=0.5, min_samples=20)


def _cfg(**changes) -> SimulationConfig:
    base = SimulationConfig(rounds=4, clients_per_round=3, local_epochs=2, batch_size=10, straggler_fraction=0.0,
                            seed=7, device="cpu", checkpoint_every=10_000)
    return dataclasses.replace(base, **changes)


def _model(ds):
    return build_model("mclr", ds.feature_shape, ds.num_classes)


# ---- selection among the available clients ----------------------------------------------------------------

@pytest.mark.parametrize("scheme", ["uniform", "proportional"])
def test_all_available_mask_draws_exactly_the_unrestricted_selection(scheme):
    for r in range(20):
        a = select_clients(3, r, SIZES, 4, scheme)
        b = select_clients(3, r, SIZES, 4, scheme, available=np.ones(len(SIZES), bool))
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


def test_selection_is_among_available_with_k_capped():
    dropout = RandomDropout(len(SIZES), 0.4)
    seen_short = False
    for r in range(30):
        mask = dropout.mask(5, r)
        plan = plan_round(5, r, SIZES, 4, "uniform", 0.5, 3, available=mask)
        assert len(plan.clients) == min(4, mask.sum())
        assert np.all(mask[plan.clients]) and len(set(plan.clients.tolist())) == len(plan.clients)
        np.testing.assert_array_equal(plan.weights, SIZES[plan.clients])
        assert len(plan.straggler) == len(plan.clients)  # stragglers drawn among the selected
        seen_short |= mask.sum() < 4
    assert seen_short  # the K = min(K, #available) case happened


def test_uniform_among_available():
    mask = np.zeros(len(SIZES), bool)
    mask[[1, 4, 6, 9]] = True
    counts = np.zeros(len(SIZES))
    for r in range(2000):
        clients, _ = select_clients(1, r, SIZES, 2, "uniform", available=mask)
        counts[clients] += 1
    freq = counts / 2000
    assert np.all(freq[~mask] == 0)
    np.testing.assert_allclose(freq[mask], 0.5, atol=0.05)  # K / #available; sd ~ 0.011


def _record_plans(monkeypatch):
    plans = []
    real = round_.plan_round

    def recording(*args, **kwargs):
        plan = real(*args, **kwargs)
        plans.append(plan)
        return plan

    monkeypatch.setattr(round_, "plan_round", recording)
    return plans


def test_algorithms_under_one_seed_see_the_same_availability_and_clients(synthetic, monkeypatch):
    cfg = _cfg(rounds=6, straggler_fraction=0.5, availability=AvailabilityConfig(model="dropout", probability=0.6))
    runs = []
    for alg in (FedAvg(lr=0.01), FedProx(lr=0.01, mu=1.0)):
        with monkeypatch.context() as m:
            plans = _record_plans(m)
            simulate(cfg, synthetic, _model(synthetic), alg)
        runs.append(plans)
    masks = [RandomDropout(8, 0.6).mask(cfg.seed, r) for r in range(cfg.rounds)]
    for p, q, mask in zip(*runs, masks):
        for f in ("clients", "straggler", "epochs", "weights"):
            np.testing.assert_array_equal(getattr(p, f), getattr(q, f))
        assert np.all(mask[p.clients]) and len(p.clients) == min(3, mask.sum())


def test_diurnal_availability_through_the_engine():
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=6, clients_per_round=2,
                          availability=AvailabilityConfig(model="diurnal", period=2, beta=0.5, groups=(0, 1, 0)))
    rec = Recorder(FedAvg(lr=0.5))
    simulate(cfg, ds, model, rec)
    # rounds 0, 1: group 0 (clients 0 and 2, both selected); round 2: group 1 (client 1 alone); repeat
    assert [sorted(r["clients"].tolist()) for r in rec.rounds] == [[0, 2], [0, 2], [1], [0, 2], [0, 2], [1]]


def test_round_without_available_clients_is_skipped(tmp_path):
    ds, model = handmade_dataset(), handmade_model()
    trace = tmp_path / "trace.csv"
    trace.write_text("client_id,available_from,available_to\na,1,1\n")
    cfg = handmade_config(rounds=3, availability=AvailabilityConfig(model="trace", trace=str(trace)))
    rec = Recorder(FedAvg(lr=0.5))
    result = simulate(cfg, ds, model, rec)
    assert [r["clients"].tolist() for r in rec.rounds] == [[0]]  # only round 1 trained
    assert len(result.history) == 4


# ---- choose_clients ------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Chooser(FedAvg):
    """FedAvg that trains the highest-indexed available clients (for the hook's contract)."""

    bad: bool = False

    def choose_clients(self, state, round_, available, k):
        if self.bad:
            return state, np.zeros(k, dtype=np.int64)  # the same client twice
        return state, np.flatnonzero(available)[-k:]


def test_choose_clients_hook_picks_the_cohort_and_keeps_scheme_weights():
    ds, model = handmade_dataset(), handmade_model()
    rec = Recorder(_Chooser(lr=0.5))
    simulate(handmade_config(rounds=2, clients_per_round=2), ds, model, rec)
    for r in rec.rounds:
        assert sorted(r["clients"].tolist()) == [1, 2]
        sizes = ds.train.sizes[r["clients"]]
        np.testing.assert_allclose(r["weights"], sizes / sizes.sum(), rtol=1e-6)


def test_choose_clients_must_return_distinct_available_clients():
    ds, model = handmade_dataset(), handmade_model()
    with pytest.raises(ValueError, match="distinct available"):
        simulate(handmade_config(rounds=1, clients_per_round=2), ds, model, _Chooser(lr=0.5, bad=True))


# ---- filter_cohort and the cohort's losses ------------------------------------------------------------------

def test_cohort_losses_are_each_clients_full_data_loss():
    ds, model = handmade_dataset(), handmade_model()
    data = DeviceData.build(ds, torch.device("cpu"))
    theta = torch.linspace(-1.0, 1.0, model.num_params)
    got = cohort_losses(choose_kernel(model, "cpu"), data, np.array([2, 0]), theta)
    expected = [ce_loss(theta.double().numpy(), *_client(ds, k)) for k in (2, 0)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@dataclasses.dataclass(frozen=True)
class _Keeper(FedAvg):
    """FedAvg that keeps only the selected client with the largest loss, with a made-up weight."""

    seen: list = dataclasses.field(default_factory=list, compare=False)

    def filter_cohort(self, state, round_, losses, num_samples):
        self.seen.append((round_, losses.copy(), num_samples.copy()))
        weights = np.zeros(len(losses))
        weights[np.argmax(losses)] = 3.0
        return state, weights


def test_filter_cohort_sees_losses_at_the_server_model_and_sets_weights():
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=2, clients_per_round=3)
    alg = _Keeper(lr=0.5)
    rec = Recorder(alg)
    result = simulate(cfg, ds, model, rec)
    assert [r for r, _, _ in alg.seen] == [0, 1]
    theta0 = model.init(torch_generator(cfg.seed, -1, "init"))
    expected0 = [ce_loss(theta0.double().numpy(), *_client(ds, k)) for k in range(3)]
    np.testing.assert_allclose(alg.seen[0][1], expected0, rtol=1e-6)
    np.testing.assert_array_equal(alg.seen[0][2], ds.train.sizes)
    for (_, losses, _), r in zip(alg.seen, rec.rounds):
        assert r["clients"].tolist() == [int(np.argmax(losses))]
        np.testing.assert_array_equal(r["weights"], [1.0])
    assert not result.diverged


# ---- local work in steps -------------------------------------------------------------------------------------

def test_local_steps_runs_exactly_c_steps_cycling_through_fresh_permutations(monkeypatch):
    ds, model = handmade_dataset(), handmade_model()  # 5, 3 and 4 samples; batch 2: 3, 2, 2 batches an epoch
    seen = {}
    real = local.run_vectorized

    def spy(algorithm, kernel, bcast, local_, data, row_bcast=False):
        seen["steps"] = data.steps.copy()
        seen["batches"] = [data.batches[s: s + n].clone() for s, n in zip(data.starts, data.steps)]
        return real(algorithm, kernel, bcast, local_, data, row_bcast)

    monkeypatch.setitem(simulation.LOCAL_PATHS, "vectorized", spy)
    cfg = handmade_config(rounds=1, clients_per_round=3, local_steps=5)
    rec = Recorder(FedAvg(lr=0.5))
    simulate(cfg, ds, model, rec)
    assert seen["steps"].tolist() == [5, 5, 5]
    assert rec.rounds[0]["epochs"].tolist() == [2, 3, 3]  # ceil(5 / batches per epoch), in work order
    from fedbench.engine.sampling import minibatch_order
    for row, c in enumerate(rec.rounds[0]["clients"]):
        n = int(ds.train.sizes[c])
        expected = minibatch_order(cfg.seed, 0, int(c), n, -(-5 // -(-n // 2)), 2)[:5]
        expected = np.where(expected >= 0, expected + ds.train.offsets[c], -1)
        np.testing.assert_array_equal(seen["batches"][row].numpy(), expected)


def test_local_steps_with_stragglers_is_refused():
    ds, model = handmade_dataset(), handmade_model()
    with pytest.raises(ValueError, match="local_steps"):
        simulate(handmade_config(local_steps=3, straggler_fraction=0.5), ds, model, FedAvg(lr=0.5))


# ---- the new algorithms on both local paths, and resumed -------------------------------------------------------

def _new_algorithms():
    return [DeltaFL(lr=0.01, theta=0.5), DeltaFL(lr=0.01, theta=0.5, weighting="filter", quantile_period=2),
            FedLaAvg(lr=0.01)]


@pytest.mark.parametrize("algorithm", _new_algorithms(), ids=["delta_exact", "delta_filter_k2", "fedlaavg"])
def test_vectorized_equals_reference(synthetic, algorithm, monkeypatch):
    monkeypatch.setattr(local, "CHUNK_STEPS", 3)
    cfg = _cfg(rounds=4, local_steps=7, availability=AvailabilityConfig(model="diurnal", period=2, beta=1.0))
    vec = simulate(dataclasses.replace(cfg, local_path="vectorized"), synthetic, _model(synthetic), algorithm)
    ref = simulate(dataclasses.replace(cfg, local_path="reference"), synthetic, _model(synthetic), algorithm)
    assert float((vec.theta - ref.theta).abs().max()) < 1e-5
    assert [r["train/loss"] for r in vec.history] == pytest.approx([r["train/loss"] for r in ref.history], abs=1e-6)


@pytest.mark.parametrize("algorithm", _new_algorithms(), ids=["delta_exact", "delta_filter_k2", "fedlaavg"])
def test_resume_equals_uninterrupted(synthetic, tmp_path, algorithm):
    class StopAt:
        def on_round_end(self, round_, row):
            if round_ == 2:
                raise KeyboardInterrupt

    cfg = _cfg(rounds=5, checkpoint_every=1, availability=AvailabilityConfig(model="dropout", probability=0.7))
    full = simulate(cfg, synthetic, _model(synthetic), algorithm)
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(KeyboardInterrupt):
        simulate(cfg, synthetic, _model(synthetic), algorithm, callbacks=(StopAt(),), checkpoint=ckpt)
    resumed = simulate(cfg, synthetic, _model(synthetic), algorithm, checkpoint=ckpt)
    assert torch.equal(resumed.theta, full.theta)



def test_on_model_callback_gets_the_model_after_each_round():
    ds, model = handmade_dataset(), handmade_model()

    class Models:
        def __init__(self):
            self.seen = []

        def on_model(self, round_, theta):
            self.seen.append((round_, theta.clone()))

    cb = Models()
    cfg = handmade_config(rounds=3)
    result = simulate(cfg, ds, model, FedAvg(lr=0.5), callbacks=(cb,))
    assert [r for r, _ in cb.seen] == [0, 1, 2]
    assert torch.equal(cb.seen[-1][1], result.theta)
    shorter = simulate(handmade_config(rounds=2), ds, model, FedAvg(lr=0.5))
    assert torch.equal(cb.seen[1][1], shorter.theta)
