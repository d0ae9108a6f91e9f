"""FedLaAvg's CIFAR-10 CNN (the PyTorch CIFAR-10 tutorial network, fedbench.models.cifar_cnn; Yan et al., arXiv
2002.07399 v1, section 5.1; the authors' mikudehuane/FedLaAvg train/model.py "CPCFF") with its layer structure
kept and its input adapted to 28 x 28 grey images, for the Fashion-MNIST stand-in of FedLaAvg's CIFAR-10 study
(fedbench.studies.fedlaavg_fashion):

    conv(1->6, 5x5) - ReLU - maxpool 2 - conv(6->16, 5x5) - ReLU - maxpool 2
    - fc(256->120) - ReLU - fc(120->84) - ReLU - fc(84->C)

44,426 parameters for C = 10 (the CIFAR network has 62,006). Inputs are images [1, 28, 28] (flattened 784 inputs
are reshaped). Init is PyTorch's default, from our seeded generator.

Deviations from the CIFAR network, both forced by the input: one input channel instead of three (conv1 has 156
parameters, not 456), and 28 x 28 inputs leave 16 x 4 x 4 = 256 features after the second pooling instead of
16 x 5 x 5 = 400 (fc1 is 256 -> 120). No padding was added to recover 400: that would change the layers, not
the input.
"""

from __future__ import annotations

from torch import nn

from fedbench.models.cifar_cnn import ImageInput
from fedbench.models.spec import Model

NAME = "fashion_cnn"
SIDE = 28


def fashion_tutorial_cnn(num_classes: int = 10) -> nn.Module:
    """The network as an ordinary module (its parameters in the order of the flat theta)."""
    return nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, num_classes),
    )


def fashion_cnn(num_classes: int = 10) -> Model:
    return Model(name=NAME, config=(num_classes,), module=ImageInput(fashion_tutorial_cnn(num_classes), (1, SIDE, SIDE)),
                 loss="softmax_ce")
