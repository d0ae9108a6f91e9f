"""The divergence signal read back once a window of rounds (fedbench.engine.simulation._Window; issue 49, D2): a run's
numbers, history rows, models given to on_model, and the round a diverged run stops at are those of the signal read
every round, alone and stacked, where the signal never trips, where it trips and the full training loss confirms it,
and where it trips and the loss does not (the confirming row, then the run goes on); the per-client table written
in the rounds after the trip is put back (SCAFFOLD's c_i)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import fedbench.engine.simulation as simulation
from fedbench.algorithms import FedAvg, Scaffold
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine.evaluation import EvalSpec
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate, simulate_stack
from fedbench.models import build_model
from tests.algorithms.handmade import handmade_config, handmade_dataset, handmade_model

TIMES = ("wall_time_s", "eval_time_s")


class Trace:
    def __init__(self) -> None:
        self.models: list[tuple[int, np.ndarray]] = []

    def on_model(self, round_, theta) -> None:
        self.models.append((round_, theta.double().numpy().copy()))


def _every_round(monkeypatch) -> None:
    """The engine as it was: every round's signal read back in that round."""
    real = simulation._round
    monkeypatch.setattr(simulation, "_round", lambda *args, defer: real(*args, defer=False))


def _rows(result) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in TIMES} for row in result.history]


def _same(a, b, ta: Trace, tb: Trace) -> None:
    assert a.param_digest == b.param_digest and a.diverged == b.diverged
    assert _rows(a) == _rows(b)
    assert [r for r, _ in ta.models] == [r for r, _ in tb.models]
    assert all(np.array_equal(x, y) for (_, x), (_, y) in zip(ta.models, tb.models))


# lr 30, factor 30: the signal trips in round 1 and the loss confirms it; factor 100: it trips in round 34 (a window's
# 14th round) and the full loss (88.3) does not confirm it; lr 0.3: it never trips
@pytest.mark.parametrize("lr,factor,rows", [(30.0, 30.0, [1]), (30.0, 100.0, [34]), (0.3, 100.0, [])],
                         ids=["confirmed", "not-confirmed", "never"])
def test_a_window_read_once_gives_what_a_read_every_round_gives(monkeypatch, lr, factor, rows):
    cfg = handmade_config(rounds=40, clients_per_round=1, local_epochs=1, evaluations=(EvalSpec("test", every=100),),
                          dissimilarity_every=0, divergence_factor=factor)
    t1 = Trace()
    windowed = simulate(cfg, handmade_dataset(), handmade_model(), FedAvg(lr=lr), callbacks=(t1,))
    _every_round(monkeypatch)
    t2 = Trace()
    read_each = simulate(cfg, handmade_dataset(), handmade_model(), FedAvg(lr=lr), callbacks=(t2,))
    _same(windowed, read_each, t1, t2)
    assert [row["round"] for row in windowed.history if "train/loss" in row and row["round"] > 0] == rows
    assert windowed.diverged == (factor == 30.0)
    assert len(t1.models) == (1 if factor == 30.0 else 40)  # the diverged run's models stop at round 0's update


def test_stacked_runs_with_a_table_and_a_trip_equal_each_run_read_every_round(monkeypatch):
    """SCAFFOLD (a per-client table of c_i, written in place every round) at a step size that makes some seeds'
    signal trip: each run of the stack, read once a window, equals the same run alone read every round."""
    ds = generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    cfg = SimulationConfig(rounds=30, clients_per_round=4, local_epochs=1, batch_size=10, device="cpu",
                           evaluations=(EvalSpec("test", every=100),), dissimilarity_every=0, divergence_factor=1.5,
                           checkpoint_every=10_000)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), ds, Scaffold(lr=LR), callbacks=(Trace(),)) for s in range(4)]
    stacked = simulate_stack(model, specs)
    _every_round(monkeypatch)
    for spec, res in zip(specs, stacked):
        trace = Trace()
        alone = simulate(spec.cfg, ds, model, Scaffold(lr=LR), callbacks=(trace,))
        _same(res, alone, spec.callbacks[0], trace)
    assert sorted(r.diverged for r in stacked) == DIVERGED
    assert [row["round"] for row in stacked[2].history if "train/loss" in row] == [1, 6, 24]


LR = 0.3  # seeds 0, 1, 3 diverge (rounds 2, 4, 7); seed 2's signal trips in rounds 1, 6 and 24, unconfirmed
DIVERGED = [False, True, True, True]


def test_a_run_resumed_from_a_checkpoint_inside_windows_equals_the_uninterrupted_run(tmp_path):
    """A checkpoint is written after its window is read back (never with a signal pending): a run that crashes in
    round 14 and resumes from round 10's checkpoint ends as the run that never stopped, its unconfirmed trips
    included."""

    class Crash:
        def on_round_end(self, round_, row):
            if round_ == 14:
                raise KeyboardInterrupt

    ds = generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    cfg = SimulationConfig(rounds=30, clients_per_round=4, local_epochs=1, batch_size=10, device="cpu", seed=2,
                           evaluations=(EvalSpec("test", every=7),), dissimilarity_every=0, divergence_factor=1.5,
                           checkpoint_every=5)
    whole = simulate(cfg, ds, model, Scaffold(lr=LR))
    ckpt = tmp_path / "run.pt"
    with pytest.raises(KeyboardInterrupt):
        simulate(cfg, ds, model, Scaffold(lr=LR), callbacks=(Crash(),), checkpoint=ckpt)
    assert torch.load(ckpt, weights_only=False)["round"] == 10
    resumed = simulate(cfg, ds, model, Scaffold(lr=LR), checkpoint=ckpt)
    assert resumed.param_digest == whole.param_digest and _rows(resumed) == _rows(whole)
    assert [row["round"] for row in whole.history if "train/loss" in row] == [1, 6, 24]


def test_the_batched_signal_pass_gives_each_runs_cohort_losses(monkeypatch):
    """CUDA's path (fedbench.engine.round.BATCHED_SIGNAL_DEVICES), run here on the CPU: the cohort losses of a stack's
    runs, each at its own model and on its own cohort (two datasets, cohorts of unequal sizes), from one padded batched pass,
    within fp32 rounding of each run's own pass; the CPU's default is that own pass."""
    import fedbench.engine.round as round_
    from fedbench.engine.simulation import build_stack
    from fedbench.engine.round import cohort_loss_tensor, cohort_loss_tensors, schedule_round

    kw = dict(num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)
    datasets = generate_synthetic(1, 1, **kw), generate_synthetic(0, 0, **kw)
    model = build_model("mclr", datasets[0].feature_shape, datasets[0].num_classes)
    cfg = SimulationConfig(rounds=3, clients_per_round=4, local_epochs=2, batch_size=10, device="cpu",
                           straggler_fraction=0.5)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), ds, FedAvg(lr=0.1)) for s in (1, 2) for ds in datasets]
    stack, states = build_stack(model, specs)
    for i, run in enumerate(states):  # each run at a model of its own
        run.state = dataclasses.replace(run.state, theta=run.state.theta + 0.1 * i)
    schedules = [schedule_round(stack, run, 1) for run in states]
    assert len({int(s.run.sizes[s.clients].sum()) for s in schedules}) == 2  # rows of unequal widths: padded
    own = [cohort_loss_tensor(stack.kernel, s.run.data, s.clients, s.run.state.theta) for s in schedules]
    assert all(torch.equal(a, b) for a, b in zip(cohort_loss_tensors(stack, schedules), own))
    monkeypatch.setattr(round_, "BATCHED_SIGNAL_DEVICES", ("cuda", "cpu"))
    batched = cohort_loss_tensors(stack, schedules)
    for a, b in zip(batched, own):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
