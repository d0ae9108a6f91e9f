"""fedbench.bench.step_parts at toy size: each part computes what it names (the engine's step equals FedAvg's
step on the loop kernel's gradient bit for bit; the in-place headroom path agrees with it to float32 rounding),
and the reported shares are the floor's arithmetic. No timing thresholds."""

from __future__ import annotations

import pytest
import torch

from fedbench.bench import cli, report, step_parts
from fedbench.bench.federation import BenchModel
from fedbench.bench.machine import Machine, train_flops_per_sample
from fedbench.engine.kernels import choose_kernel
from fedbench.ops import sgd_step
from fedbench.seeding import torch_generator

CPU = torch.device("cpu")
MACHINE = Machine(device="cpu", threads=1, matmul_size=64, peak_flops=1e9, copy_bytes=2**20, bandwidth=1e9)
SPEC = BenchModel("cifar_cnn", (3, 32, 32), 10)


def test_the_step_is_fedavg_on_the_loop_gradient_and_the_headroom_path_agrees():
    model = SPEC.build()
    paths, state = step_parts.step_paths(model, SPEC, 3, CPU)
    assert set(paths) == set(step_parts.PARTS)
    theta0 = model.init(torch_generator(0, -1, "init")).expand(3, -1)
    assert torch.equal(state["step"], theta0) and torch.equal(state["fused"], theta0)
    # the inputs the paths use, drawn again the same way
    from fedbench.bench.machine import synthetic_inputs

    x, y = synthetic_inputs(model, SPEC.feature_shape, SPEC.num_classes, 30, torch_generator(0, -1, "data", 2))
    kernel = choose_kernel(model, CPU, "loop")
    want = sgd_step(theta0, kernel.grad(theta0.clone(), x.view(3, 10, 3, 32, 32), y.view(3, 10),
                                        torch.full((3, 10), 0.1)), step_parts.LR)
    assert all(paths[p]() == 3 for p in step_parts.PARTS)
    assert torch.equal(state["step"], want)
    assert not torch.equal(state["fused"], theta0)
    torch.testing.assert_close(state["fused"], want, rtol=0, atol=1e-6)


def test_shares_are_the_floor_over_the_measured_time():
    c = step_parts.measure_steps(SPEC, 2, CPU, MACHINE, min_time=0.0, max_reps=1)
    model = SPEC.build()
    flops = train_flops_per_sample(model, SPEC.feature_shape, SPEC.num_classes, 10) * 10
    assert c["flops_per_client_step"] == flops and c["floor_ms"] == pytest.approx(flops / 1e9 * 1e3, rel=1e-12)
    assert c["row_pass_ms"] == pytest.approx(4 * 62_006 / 1e9 * 1e3, rel=1e-12)
    for p in step_parts.PARTS:
        assert c["ms_per_client_step"][p] > 0
        assert c["share_of_floor"][p] * c["ms_per_client_step"][p] == pytest.approx(c["floor_ms"], rel=1e-12)
    assert "| cifar_cnn | 2 |" in "\n".join(step_parts.steps_table([c]))
    assert "A client step taken apart" in report.print_summary({"steps": [c]})


def test_cli_runs_the_steps_part(capsys):
    assert cli.main(["--quick", "--parts", "steps", "--models", "cifar_cnn", "--cohorts", "2", "--min-time", "0"]) == 0
    out = capsys.readouterr().out
    assert "| cifar_cnn | 2 |" in out and "fused" in out
