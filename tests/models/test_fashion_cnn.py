"""The CIFAR tutorial CNN on 28x28 grey images (FedLaAvg's Fashion-MNIST stand-in): parameter count, theta's
layout against the nn.Module, flattened inputs, and refusal of other shapes."""

from __future__ import annotations

import pytest
import torch

from fedbench.models import build_model, cifar_cnn, fashion_cnn
from fedbench.models.fashion_cnn import fashion_tutorial_cnn
from fedbench.seeding import torch_generator

MODEL = fashion_cnn()


def test_parameter_count_and_layers_against_the_cifar_network():
    # conv1 1*6*25+6, conv2 6*16*25+16, fc 256*120+120, 120*84+84, 84*10+10
    assert MODEL.num_params == 156 + 2_416 + 30_840 + 10_164 + 850 == 44_426
    # every layer but conv1 (one input channel) and fc1 (256 inputs, not 400) has the CIFAR network's shape
    cifar = [s.shape for s in cifar_cnn().layout]
    ours = [s.shape for s in MODEL.layout]
    assert [i for i, (a, b) in enumerate(zip(cifar, ours)) if a != b] == [0, 4]
    assert ours[0] == (6, 1, 5, 5) and ours[4] == (120, 256)
    net = fashion_tutorial_cnn()
    theta = MODEL.init(torch_generator(0, -1, "init"))
    torch.nn.utils.vector_to_parameters(theta, net.parameters())
    x = torch.randn(5, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(MODEL.forward(theta, x), net(x))
    y = torch.tensor([0, 1, 2, 3, 4])
    torch.testing.assert_close(MODEL.loss_fn(theta, x.flatten(1), y), MODEL.loss_fn(theta, x, y))


def test_build_model_takes_grey_28_only():
    assert build_model("fashion_cnn", (784,), 10) == MODEL == build_model("fashion_cnn", (1, 28, 28), 10)
    with pytest.raises(ValueError, match="28x28 images"):
        build_model("fashion_cnn", (3, 32, 32), 10)
    with pytest.raises(ValueError, match="28x28 grey images"):
        build_model("fashion_cnn", (3, 28, 28), 10)
