"""The executed-FLOPs proxy of issue 53 for the CNN: torch's FlopCounterMode counts a grouped convolution's weight
gradient ``groups`` times, and vmap runs R rows' convolutions as one of R groups, so the CIFAR CNN's static step
read 1.370 at 2 rows; counted per group (fedbench.bench.machine.flop_counter) it executes exactly its training FLOPs."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from fedbench.bench import step_launches
from fedbench.bench.machine import flop_counter


def _backward_flops(counter, conv, x, w):
    x, w = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    out = conv(x, w)
    with counter as c:
        torch.autograd.grad(out, (x, w), torch.ones_like(out))
    return c.get_total_flops()


@pytest.mark.parametrize("transposed", [False, True])
def test_a_grouped_convolutions_weight_gradient_is_counted_once(transposed):
    g, cin, cout, n = 3, 6, 9, 2
    x = torch.randn(n, cin, 8, 8)
    if transposed:  # weight [cin, cout / g, 3, 3]
        w = torch.randn(cin, cout // g, 3, 3)
        conv = lambda x, w, groups=g: F.conv_transpose2d(x, w, groups=groups)
        parts = [(x[:, i * 2:(i + 1) * 2], w[i * 2:(i + 1) * 2]) for i in range(g)]
    else:  # weight [cout, cin / g, 3, 3]
        w = torch.randn(cout, cin // g, 3, 3)
        conv = lambda x, w, groups=g: F.conv2d(x, w, groups=groups)
        parts = [(x[:, i * 2:(i + 1) * 2], w[i * 3:(i + 1) * 3]) for i in range(g)]
    grouped = _backward_flops(flop_counter(), conv, x, w)
    separate = sum(_backward_flops(flop_counter(), lambda x, w: conv(x, w, 1), *p) for p in parts)
    # a group: 2 in, 3 out channels, 3 x 3 taps, at 6 x 6 (conv) or 8 x 8 (transposed conv's input) positions, 2
    # samples; dX and dW each 2 FLOPs a multiply-add
    positions = 8 * 8 if transposed else 6 * 6
    assert grouped == separate == g * 2 * (2 * 2 * 3 * 9 * positions * n)
    # torch 2.13.0's own counter: dX right, dW g times (this line fails once torch divides by groups, as
    # pytorch/pytorch#183405 does: then flop_counter's mapping can go)
    assert _backward_flops(FlopCounterMode(display=False), conv, x, w) == grouped + (g - 1) * grouped // 2
    # ungrouped: the same as torch's
    one = parts[0]
    assert (_backward_flops(flop_counter(), lambda x, w: conv(x, w, 1), *one)
            == _backward_flops(FlopCounterMode(display=False), lambda x, w: conv(x, w, 1), *one))


@pytest.mark.parametrize("rows", [1, 3])
def test_the_cnn_static_step_executes_its_training_flops_and_nothing_more(rows):
    got = step_launches.flops_ratio("cnn", rows=rows)
    # CIFAR CNN at batch 10, multiply-adds a sample: conv1 6 x 75 x 28 x 28 (forward, dW: no gradient of the
    # images), conv2 16 x 150 x 10 x 10 (forward, dW, dX), dense 400 x 120, 120 x 84, 84 x 10 (forward, dW, dX)
    training = 2 * 10 * (352_800 * 2 + 240_000 * 3 + 3 * (48_000 + 10_080 + 840))
    assert got == {"executed_per_row_step": training, "model_per_row_step": training, "ratio": 1.0}
