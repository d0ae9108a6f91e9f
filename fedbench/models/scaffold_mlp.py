"""SCAFFOLD's non-convex model (Karimireddy et al., "SCAFFOLD: Stochastic Controlled Averaging for Federated
Learning", ICML 2020, section 7.1 and Table 5): a "2 layer fully connected network" on EMNIST (balanced, 47
classes). The authors released no code and the paper gives no width:

    features [784] -> fc 784 -> 256 - ReLU -> fc 256 -> 47; softmax cross-entropy

213,039 parameters at the width chosen here, HIDDEN = 256 (our choice, stated, not the authors'). Init is
PyTorch's default, from our seeded generator.
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.spec import Model

NAME = "scaffold_mlp"
HIDDEN = 256  # not given in the paper


def scaffold_mlp(in_features: int = 784, num_classes: int = 47, hidden: int = HIDDEN) -> Model:
    with torch.device("meta"):
        net = nn.Sequential(nn.Flatten(), nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))
    return Model(name=NAME, config=(in_features, num_classes, hidden), module=net, loss="softmax_ce")
