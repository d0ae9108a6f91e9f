"""A block's schedule drawn ahead (fedbench.engine.schedule) equals the schedule the round loop draws round by
round: every algorithm, every availability model, blocks of 1, 2, 3 and all rounds, and a block that crosses
the point where a run resumed from its checkpoint."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fedbench.algorithms import build_algorithm
from fedbench.availability import AvailabilityConfig
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine import simulation
from fedbench.engine.schedule import schedule_block
from fedbench.engine.simulation import RunSpec, SimulationConfig, build_stack, simulate
from fedbench.models import build_model
from tests.algorithms.cases import CASES

ROUNDS = 5
AVAILABILITY = {
    "always": AvailabilityConfig(),
    "dropout": AvailabilityConfig(model="dropout", probability=0.6),
    "diurnal": AvailabilityConfig(model="diurnal", period=4, beta=0.5),
}


@pytest.fixture(scope="module")
def dataset():
    return generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)


def _spec(name: str, availability: str, ds, checkpoint=None) -> RunSpec:
    hyper, changes = CASES[name]
    cfg = SimulationConfig(rounds=ROUNDS, clients_per_round=4, local_epochs=2, batch_size=10, straggler_fraction=0.3,
                           seed=3, device="cpu", checkpoint_every=2)
    cfg = dataclasses.replace(cfg, **(changes | {"availability": AVAILABILITY[availability]}))
    if name == "sequential_sgd":
        from fedbench.algorithms.sequential_sgd import pool_clients, sequential_config

        cfg, ds = sequential_config(cfg, local_steps=4), pool_clients(ds)
    return RunSpec(cfg, ds, build_algorithm(name, **({"lr": 0.05} | hyper)), checkpoint=checkpoint)


def _recorded(monkeypatch, spec: RunSpec, model) -> dict[int, tuple]:
    """Each round's schedule as the round loop draws it: (clients, steps, batches, weights) by round."""
    seen: dict[int, tuple] = {}
    real = simulation.run_round

    def recording(stack, schedules, shape=None):
        for s in schedules:
            seen[s.round] = (s.clients, s.steps, s.batches, s.cohort.weights.numpy())
        return real(stack, schedules, shape)

    monkeypatch.setattr(simulation, "run_round", recording)
    simulate(spec.cfg, spec.dataset, model, spec.algorithm, checkpoint=spec.checkpoint)
    monkeypatch.setattr(simulation, "run_round", real)
    return seen


def _blocks(run, size: int) -> list:
    out = []
    for r0 in range(0, ROUNDS, size):
        out += schedule_block(run, r0, size)
    return out


def _assert_same(draws, seen: dict[int, tuple], hooked: bool) -> None:
    assert [d.round for d in draws] == list(range(ROUNDS))
    for d in draws:
        if d.round not in seen:  # nobody trained: the drawn work is empty too
            assert hooked or len(d.work.clients) == 0
            continue
        clients, steps, batches, weights = seen[d.round]
        assert int(steps.max()) <= d.max_steps and len(clients) <= d.max_clients
        if hooked:  # the algorithm's state decides the cohort: the draw holds only what the streams decide
            assert d.work is None
            continue
        w = d.work
        assert np.array_equal(w.clients, clients) and np.array_equal(w.steps, steps)
        assert np.array_equal(w.batches, batches)
        assert np.array_equal((w.weights / w.weights.sum()).astype(np.float32), weights)
        assert d.max_steps == int(steps.max()) and d.max_clients == len(clients)


@pytest.mark.parametrize("availability", sorted(AVAILABILITY))
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_block_drawn_ahead_equals_the_rounds_drawn_one_by_one(name, availability, dataset, monkeypatch):
    spec = _spec(name, availability, dataset)
    model = build_model("mclr", spec.dataset.feature_shape, spec.dataset.num_classes)
    seen = _recorded(monkeypatch, spec, model)
    assert seen  # some round trained
    _, (run,) = build_stack(model, [spec])
    hooked = hasattr(spec.algorithm, "choose_clients") or hasattr(spec.algorithm, "filter_cohort")
    for size in (1, 2, 3, ROUNDS):
        _assert_same(_blocks(run, size), seen, hooked)


class _Crash:
    def on_round_end(self, round_, row):
        if round_ == 3:
            raise KeyboardInterrupt


def test_a_block_crossing_a_resume_point_equals_the_uninterrupted_schedule(dataset, monkeypatch, tmp_path):
    spec = _spec("fedprox", "dropout", dataset, checkpoint=tmp_path / "run.pt")
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    whole = _recorded(monkeypatch, dataclasses.replace(spec, checkpoint=None), model)
    with pytest.raises(KeyboardInterrupt):
        simulate(spec.cfg, spec.dataset, model, spec.algorithm, callbacks=(_Crash(),), checkpoint=spec.checkpoint)
    _, (resumed,) = build_stack(model, [spec])
    assert resumed.next_round == 2  # the checkpoint of round 2 (checkpoint_every=2; round 3 crashed)
    after = _recorded(monkeypatch, spec, model)  # the resumed run's rounds 2..4
    assert sorted(after) == [2, 3, 4] and all(np.array_equal(a, b) for r in after for a, b in zip(after[r], whole[r]))
    # one block [1, 4) drawn by the resumed run, across its resume point at round 2
    draws = schedule_block(resumed, 1, 3)
    assert [d.round for d in draws] == [1, 2, 3]
    for d in draws:
        clients, _, batches, _ = whole[d.round]
        assert np.array_equal(d.work.clients, clients) and np.array_equal(d.work.batches, batches)


def test_a_block_is_cut_at_the_last_round_and_refuses_an_empty_count(dataset):
    spec = _spec("fedavg", "always", dataset)
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    _, (run,) = build_stack(model, [spec])
    assert [d.round for d in schedule_block(run, 3, 10)] == [3, 4]
    with pytest.raises(ValueError, match="count >= 1"):
        schedule_block(run, 0, 0)


@pytest.mark.parametrize("name", ["fedavg", "fedprox"])
def test_minibatch_stragglers_at_one_epoch_run_the_plans_steps_drawn_ahead_or_one_by_one(name, dataset, monkeypatch):
    """E = 1 with stragglers cut in minibatch steps (Figures 9 and 10): FedProx keeps the stragglers' first
    U{1..S_k-1} steps, FedAvg drops them; the block drawn ahead equals the round loop's."""
    from fedbench.engine.sampling import plan_round

    spec = _spec(name, "always", dataset)
    cfg = dataclasses.replace(spec.cfg, local_epochs=1, straggler_epochs="minibatches", straggler_fraction=0.5)
    spec = dataclasses.replace(spec, cfg=cfg)
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    seen = _recorded(monkeypatch, spec, model)
    _, (run,) = build_stack(model, [spec])
    _assert_same(_blocks(run, 2), seen, hooked=False)
    sizes = run.sizes
    for r, (clients, steps, _, _) in seen.items():
        plan = plan_round(cfg.seed, r, sizes, cfg.clients_per_round, cfg.sampling, 0.5, 1, "minibatches",
                          batch_size=cfg.batch_size)
        keep = np.ones(len(plan.clients), bool) if name == "fedprox" else ~plan.straggler
        want = dict(zip(plan.clients[keep].tolist(), plan.steps[keep].tolist()))
        assert dict(zip(clients.tolist(), steps.tolist())) == want
        full = -(-sizes[plan.clients] // cfg.batch_size)  # one epoch's steps
        assert np.all(plan.steps[plan.straggler] < full[plan.straggler])  # every straggler's work is cut (S_k > 1)
    # FedProx trains the 4 selected clients, FedAvg the round(4 x (1 - 0.5)) = 2 active ones, in every round
    assert sorted(seen) == list(range(ROUNDS))
    assert all(len(c) == (4 if name == "fedprox" else 2) for c, *_ in seen.values())
