"""Delta-FL's EMNIST ConvNet (Pillutla et al., appendix C.1.1; code krishnap25/simplicial-fl
models/femnist/erm_cnn_log_reg.py):

    images [1, 28, 28] -> conv 5x5 (1 -> 32, no padding) - ReLU - maxpool 2
    -> conv 5x5 (32 -> 64, no padding) - ReLU - maxpool 2 -> fc 1024 -> 62; softmax cross-entropy

115,646 parameters, the authors' count: conv 832 + 51,264; fc 63,550.

Deviations and notes: none in the network. Init is PyTorch's default for Conv2d and Linear (the authors'),
from our seeded generator. No l2 term (the authors' ``_l2_reg_penalty`` returns 0 for this model).
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.cifar_cnn import ImageInput
from fedbench.models.spec import Model

NAME = "deltafl_emnist_cnn"


def deltafl_emnist_cnn(num_classes: int = 62) -> Model:
    with torch.device("meta"):
        net = nn.Sequential(
            nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * 4 * 4, num_classes),
        )
    return Model(name=NAME, config=(num_classes,), module=ImageInput(net, (1, 28, 28)), loss="softmax_ce")
