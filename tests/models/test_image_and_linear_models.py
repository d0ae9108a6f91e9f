"""The image and linear models of the papers: the TF-style CNNs (LEAF's FEMNIST CNN, FedProxVR's CNN) and their
init, Delta-FL's ConvNet without padding, Delta-FL's linear models with the authors' zero init and loss,
SCAFFOLD's two-layer network, each against an explicit formula."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from fedbench.engine.kernels import choose_kernel
from fedbench.models import (
    deltafl_emnist_cnn,
    deltafl_emnist_linear,
    deltafl_sent140_linear,
    fedproxvr_cnn,
    leaf_femnist_cnn,
    scaffold_mlp,
)
from fedbench.seeding import torch_generator


def _explicit_two_conv_same_cnn(views: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """conv5 same - ReLU - pool - conv5 same - ReLU - pool - dense - ReLU - dense, from the layer definitions."""
    z = F.max_pool2d(F.relu(F.conv2d(x, views["net.0.weight"], views["net.0.bias"], padding=2)), 2)
    z = F.max_pool2d(F.relu(F.conv2d(z, views["net.3.weight"], views["net.3.bias"], padding=2)), 2)
    assert z.shape[1:] == (64, 7, 7)  # same padding keeps 28 -> 14 -> 7
    z = F.relu(z.flatten(1) @ views["net.7.weight"].T + views["net.7.bias"])
    return z @ views["net.9.weight"].T + views["net.9.bias"]


def test_leaf_and_fedproxvr_cnns_forward_and_tf_init():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 1, 28, 28, generator=g, dtype=torch.float64)
    for model, dense, classes in ((leaf_femnist_cnn(), 2048, 62), (fedproxvr_cnn(), 512, 10)):
        theta = model.init(torch_generator(0, -1, "init"))
        views = model.unflatten(theta)
        assert views["net.7.weight"].shape == (dense, 3136) and views["net.9.weight"].shape == (classes, dense)
        # TF1 Glorot-uniform kernels (conv fans k*k*in, k*k*out), zero biases
        for name, limit in (("net.0.weight", math.sqrt(6 / (25 * 1 + 25 * 32))),
                            ("net.3.weight", math.sqrt(6 / (25 * 32 + 25 * 64))),
                            ("net.7.weight", math.sqrt(6 / (3136 + dense)))):
            assert views[name].abs().max() <= limit and views[name].abs().max() > 0.95 * limit, (model.name, name)
        assert not any(views[f"net.{i}.bias"].any() for i in (0, 3, 7, 9))
        theta64 = theta.double() + 0.01 * torch.randn(model.num_params, generator=g, dtype=torch.float64)
        want = _explicit_two_conv_same_cnn(model.unflatten(theta64), x)
        torch.testing.assert_close(model.forward(theta64, x), want, rtol=0, atol=1e-12)
        torch.testing.assert_close(model.forward(theta64, x.flatten(1)), want, rtol=0, atol=1e-12)


def test_deltafl_convnet_has_no_padding_and_pytorch_init():
    model = deltafl_emnist_cnn(62)
    theta = model.init(torch_generator(0, -1, "init"))
    views = model.unflatten(theta)
    assert views["net.0.weight"].abs().max() <= 1 / 5  # PyTorch's default: +-1/sqrt(fan_in), fan_in = 25
    assert views["net.7.weight"].shape == (62, 1024)  # 28 -> 24 -> 12 -> 8 -> 4: 64 * 4 * 4 = 1024
    x = torch.randn(2, 784, generator=torch.Generator().manual_seed(1))
    z = F.max_pool2d(F.relu(F.conv2d(x.view(2, 1, 28, 28), views["net.0.weight"], views["net.0.bias"])), 2)
    z = F.max_pool2d(F.relu(F.conv2d(z, views["net.3.weight"], views["net.3.bias"])), 2)
    torch.testing.assert_close(model.forward(theta, x), z.flatten(1) @ views["net.7.weight"].T + views["net.7.bias"])


def test_deltafl_emnist_linear_is_mclr_without_bias_from_zero():
    model = deltafl_emnist_linear()
    assert model.num_params == 784 * 62 and model.config == (784, 62, False)
    assert not model.init(torch_generator(0, -1, "init")).any()  # the authors' w^0 = 0
    assert choose_kernel(model, "cpu").name == "mclr"  # the hand-written softmax-regression kernel runs it


def test_deltafl_sent140_linear_loss_is_the_authors_logistic_loss():
    model = deltafl_sent140_linear(50)
    assert model.num_params == 50 and not model.init(torch_generator(0, -1, "init")).any()
    g = torch.Generator().manual_seed(2)
    w = torch.randn(50, generator=g, dtype=torch.float64)
    x = torch.randn(6, 50, generator=g, dtype=torch.float64)
    y = torch.tensor([1, 0, 1, 1, 0, 0])
    s = x @ w
    yf = y.double()
    authors = yf * torch.log1p(torch.exp(-s)) + (1 - yf) * torch.log1p(torch.exp(s))  # erm_log_reg.single_loss
    torch.testing.assert_close(model.example_losses(model.forward(w, x), y), authors, rtol=0, atol=1e-12)
    assert torch.equal(model.correct(model.forward(w, x), y), (torch.sigmoid(s) >= 0.5) == y.bool())


def test_scaffold_mlp_is_two_fully_connected_layers():
    model = scaffold_mlp(784, 47)
    assert model.config == (784, 47, 256) and model.num_params == 784 * 256 + 256 + 256 * 47 + 47
    g = torch.Generator().manual_seed(3)
    theta = torch.randn(model.num_params, generator=g, dtype=torch.float64) * 0.05
    v = model.unflatten(theta)
    x = torch.randn(4, 1, 28, 28, generator=g, dtype=torch.float64)
    want = F.relu(x.flatten(1) @ v["1.weight"].T + v["1.bias"]) @ v["3.weight"].T + v["3.bias"]
    torch.testing.assert_close(model.forward(theta, x), want, rtol=0, atol=1e-12)
