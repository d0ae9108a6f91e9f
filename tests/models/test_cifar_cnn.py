"""FedLaAvg's CIFAR-10 CNN: parameter count, theta's layout against the nn.Module, init, flattened inputs."""

from __future__ import annotations

import pytest
import torch

from fedbench.models import build_model, cifar_cnn
from fedbench.models.cifar_cnn import tutorial_cnn
from fedbench.seeding import torch_generator

MODEL = cifar_cnn()


def test_parameter_count_layout_and_init():
    assert MODEL.num_params == 62_006  # the PyTorch tutorial CNN (FedLaAvg's "CPCFF")
    net = tutorial_cnn()
    assert sum(p.numel() for p in net.parameters()) == MODEL.num_params
    theta = MODEL.init(torch_generator(0, -1, "init"))
    assert theta.dtype == torch.float32 and theta.shape == (MODEL.num_params,)
    assert torch.equal(theta, MODEL.init(torch_generator(0, -1, "init")))
    assert not torch.equal(theta, MODEL.init(torch_generator(1, -1, "init")))
    conv1 = theta[: 6 * 75]  # uniform in +-1/sqrt(fan_in), fan_in = 3 * 5 * 5
    assert conv1.abs().max() <= 75 ** -0.5 and conv1.abs().max() > 0.9 * 75 ** -0.5
    # the flat layout is the module's parameter order: same logits as the nn.Module loaded with theta
    torch.nn.utils.vector_to_parameters(theta, net.parameters())
    x = torch.randn(5, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(MODEL.forward(theta, x), net(x))


def test_flattened_inputs_and_build_model():
    assert build_model("cnn", (3, 32, 32), 10) == MODEL == build_model("cifar_cnn", (3072,), 10)
    with pytest.raises(ValueError, match="32x32 images"):
        build_model("cnn", (1, 28, 28), 10)
    theta = MODEL.init(torch_generator(0, -1, "init"))
    x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1, 2, 3])
    torch.testing.assert_close(MODEL.loss_fn(theta, x.flatten(1), y), MODEL.loss_fn(theta, x, y))
