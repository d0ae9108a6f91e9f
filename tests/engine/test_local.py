"""The per-client loop's local work client by client (fedbench.engine.local.run_client_by_client) against the
same work step by step over all active rows (run_vectorized's other branch): bit-identical for every algorithm,
alone and stacked, and a stacked run with the loop equal to the same run alone."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from fedbench.engine import local, simulation
from fedbench.engine.kernels import LoopKernel
from fedbench.engine.simulation import simulate, simulate_stack
from fedbench.models import build_model
from tests.engine.test_stack import CASES, _specs, datasets  # noqa: F401  (the module-scoped fixture)


class _StepwiseLoop(LoopKernel):
    client_by_client = False


def _stepwise(monkeypatch) -> None:
    """Build every loop kernel as one that leaves the rows to run_vectorized's step-by-step branch."""
    real = simulation.choose_kernel

    def choose(model, device, name="auto"):
        kernel = real(model, device, name)
        return _StepwiseLoop(model) if kernel.name == "loop" else kernel

    monkeypatch.setattr(simulation, "choose_kernel", choose)


def _loop_specs(name, datasets):
    return [dataclasses.replace(s, cfg=dataclasses.replace(s.cfg, kernel="loop")) for s in _specs(name, datasets)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_client_by_client_equals_step_by_step_bit_for_bit(name, datasets, monkeypatch):
    specs = _loop_specs(name, datasets)[:4]
    model = build_model("mclr", specs[0].dataset.feature_shape, specs[0].dataset.num_classes)
    client_by_client = simulate_stack(model, specs)
    alone = simulate(specs[1].cfg, specs[1].dataset, model, specs[1].algorithm)
    _stepwise(monkeypatch)
    step_by_step = simulate_stack(model, specs)
    assert {r.kernel for r in client_by_client} == {"loop"}
    assert len({r.param_digest for r in client_by_client}) > 1  # the runs differ from one another
    for a, b in zip(client_by_client, step_by_step):
        assert torch.equal(a.theta, b.theta), name
        assert [row["train/loss"] for row in a.history] == [row["train/loss"] for row in b.history]
    assert alone.param_digest == client_by_client[1].param_digest  # stacked == alone with the loop


def test_client_by_client_runs_each_client_in_turn_with_unequal_steps_and_padding():
    """Hand-made cohort: 3 clients with 3, 2 and 0 steps, partial batches; FedAvg at lr 0.5 on a 2-feature mclr:
    each final row is its client's own SGD steps (the 0-step client keeps its start), equal to the stepwise
    branch bit for bit."""
    from fedbench.algorithms import FedAvg

    model = build_model("mclr", (2,), 2)
    kernel = LoopKernel(model)
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [0.0, 2.0], [1.0, -1.0]])
    y = torch.tensor([0, 1, 1, 0, 1, 0])
    batches = torch.tensor([[0, 1], [2, -1], [3, 4], [5, 0], [1, -1]])
    data = local.CohortData(x=x, y=y, x_prepared=x, batches=batches, starts=torch.tensor([0, 3, 5]).numpy(),
                            steps=torch.tensor([3, 2, 0]).numpy())
    start = torch.arange(3 * model.num_params, dtype=torch.float32).view(3, -1) / 10
    alg = FedAvg(lr=0.5)
    got = local.run_vectorized(alg, kernel, None, start.clone(), data)
    want = local.run_vectorized(alg, _StepwiseLoop(model), None, start.clone(), data)
    assert torch.equal(got, want)
    assert torch.equal(got[2], start[2])
    for k, rows in ((0, [[0, 1], [2], [3, 4]]), (1, [[5, 0], [1]])):
        theta = start[k].clone()
        for r in rows:
            th = theta.clone().requires_grad_(True)
            (g,) = torch.autograd.grad(model.loss_fn(th, x[r], y[r]), th)
            theta = theta - 0.5 * g
        assert torch.equal(got[k], theta), k
