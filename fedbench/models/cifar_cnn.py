"""The PyTorch CIFAR-10 tutorial CNN, which FedLaAvg (Yan et al., "Distributed Non-Convex Optimization with
Sublinear Speedup under Intermittent Client Availability", INFORMS J. Computing 2024, section 6; FedLaAvg
model "CPCFF") trains on CIFAR-10:

    conv(3->6, 5x5) - ReLU - maxpool 2 - conv(6->16, 5x5) - ReLU - maxpool 2
    - fc(400->120) - ReLU - fc(120->84) - ReLU - fc(84->C)

62,006 parameters for C = 10. Inputs are images [C, 32, 32] (flattened C*1024 inputs are reshaped). Init is
PyTorch's default for Conv2d and Linear (uniform in +-1/sqrt(fan_in) for weights and biases), drawn from our
own seeded generator. Deviations: none.
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.spec import Model


def tutorial_cnn(in_channels: int = 3, num_classes: int = 10) -> nn.Module:
    """The network as an ordinary module (its parameters in the order of the flat theta)."""
    return nn.Sequential(
        nn.Conv2d(in_channels, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, num_classes),
    )


class ImageInput(nn.Module):
    """Wraps a network of images [N, C, H, W]: flattened inputs [N, C*H*W] are reshaped first."""

    def __init__(self, net: nn.Module, shape: tuple[int, int, int]) -> None:
        super().__init__()
        self.net, self.shape = net, shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x if tuple(x.shape[1:]) == self.shape else x.reshape(len(x), *self.shape))


def cifar_cnn(in_channels: int = 3, num_classes: int = 10) -> Model:
    return Model(name="cifar_cnn", config=(in_channels, num_classes),
                 module=ImageInput(tutorial_cnn(in_channels, num_classes), (in_channels, 32, 32)), loss="softmax_ce")
