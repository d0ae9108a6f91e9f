"""The FLOPs the fused CNN step issues (fedbench.bench.fused_cnn_check.issued_flops: its tl.dot tiles, padding
included) against its training FLOPs, exact at the paper's CIFAR CNN, and the count checked against every dot the
kernels run in Triton's interpreter."""

from __future__ import annotations

import pytest
from torch import nn

from fedbench.models import build_model
from fedbench.models.cifar_cnn import ImageInput
from fedbench.models.spec import Model
from tests.engine.test_fused_cnn import _interpreting, fused  # noqa: F401 - fused: the interpreter's build, a fixture


@pytest.mark.usefixtures("fused")
def test_the_fused_cifar_cnn_step_issues_2_87_times_its_training_flops():
    from fedbench.bench import fused_cnn_check as cnn_check
    from fedbench.engine.fused import cnn

    net = cnn.network_of(build_model("cifar_cnn", (3, 32, 32), 10))
    got = cnn_check.issued_flops(net, 10)  # the GPU's tiles: m 64, n 32, k 32
    # conv1 forward: 1,960 pooled positions on 31 tiles of 64, its 6 channels on one of 16, 75 taps on 3 of 32, 4
    # window positions; conv2 forward: 250 on 4 x 64, 16 channels, 150 taps on 5 x 32, 4 positions
    assert got["_conv_forward"] == 2 * 4 * (31 * 64 * 16 * 96 + 4 * 64 * 16 * 160)
    # conv2's dX: all 10 x 14 x 14 input positions (31 x 64) x 6 channels on 16 x 400 (cout, kh, kw) on 13 x 32
    assert got["_conv_grad_x"] == 2 * 1984 * 16 * 416
    assert sum(got.values()) == 91_897_856
    assert cnn_check.train_flops(net, 10) == 32_047_200  # = fedbench.bench.step_launches.flops_ratio's
    assert sum(got.values()) / cnn_check.train_flops(net, 10) == pytest.approx(2.8676, abs=1e-4)


def _two_convs() -> Model:
    """Every kernel of the family, small: conv 3 x 3 (1 -> 2, same padding) - ReLU - pool on 8 x 8, conv 3 x 3 (2 -> 3)
    - ReLU - pool, dense 3 -> 4 - ReLU - dense 4 -> 5."""
    net = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(2, 3, 3), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 5))
    return Model(name="test_two_convs", config=(), module=ImageInput(net, (1, 8, 8)), loss="softmax_ce")


@pytest.mark.usefixtures("fused")
def test_the_count_is_every_dot_the_kernels_run(monkeypatch):
    """One chain step of a small CNN with every kernel (1 row, batch 2) in the interpreter, every ``tl.dot`` counted
    as it runs (2 M N K of its operands' shapes) and summed by kernel: equal to the analytic count."""
    from triton.runtime import interpreter

    from fedbench.bench import fused_cnn_check as cnn_check
    from fedbench.engine.fused import cnn

    tiles = cnn.Tiles(m=32, n=16, k=16, update=1024)  # several programs, and loops of several trips
    counted: dict[str, int] = {}
    current = [""]
    dot = interpreter.InterpreterBuilder.create_dot
    running = interpreter.GridExecutor.__call__

    def counted_dot(self, a, b, d, *args, **kwargs):
        (m, k), n = a.data.shape, b.data.shape[1]
        counted[current[0]] = counted.get(current[0], 0) + 2 * m * n * k
        return dot(self, a, b, d, *args, **kwargs)

    def run(self, *args, **kwargs):
        current[0] = self.fn.__name__
        return running(self, *args, **kwargs)

    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", counted_dot)
    monkeypatch.setattr(interpreter.GridExecutor, "__call__", run)
    model = _two_convs()
    net = cnn.network_of(model)
    with _interpreting():
        cnn.run_fused(*cnn_check.inputs(model, rows=1, batch=2, steps=1, device="cpu"), tiles=tiles)
    assert counted == cnn_check.issued_flops(net, 2, tiles)
    assert set(counted) == {"_conv_forward", "_dense_forward", "_dense_grad_w", "_dense_grad_x", "_conv_grad_w",
                            "_conv_grad_x"}
    assert sum(counted.values()) > cnn_check.train_flops(net, 2)
