"""FedProxVR's non-convex model (Dinh, Tran, Nguyen, Bao, Zomaya, Zhou, "Federated Learning with Proximal
Stochastic Variance Reduced Gradient Algorithms", ICPP 2020; code CharlieDinh/FederatedLearningWithSVRG
flearn/models/mnist/cnn.py at its last commit), LEAF's CNN with a narrower dense layer:

    images [1, 28, 28] -> conv 5x5 (1 -> 32, same) - ReLU - maxpool 2 -> conv 5x5 (32 -> 64, same) - ReLU
    - maxpool 2 -> dense 3136 -> 512 - ReLU -> dense 512 -> 10; softmax cross-entropy

1,663,370 parameters, the authors' count: conv 832 + 51,264; dense 1,606,144 + 5,130.

Deviations and notes:
1. The code has ``tf.layers.dropout(rate=0.25)`` after each pooling layer without ``training=True``; TF's
   default is training=False, so the dropout never acts, and is left out here.
2. Earlier commits of the file had a 256-unit dense layer (857,738 parameters) or dropout rate 0.4; the last
   commit (512 units) is used. Which version produced the paper's numbers is not known.
3. Init as TF1's defaults (fedbench.models.tf_init); TF's (H, W, C) flattening order, as LEAF's CNN.
"""

from __future__ import annotations

import torch

from fedbench.models.cifar_cnn import ImageInput
from fedbench.models.leaf_femnist_cnn import two_conv_same_cnn
from fedbench.models.spec import Model
from fedbench.models.tf_init import tf_glorot_init

NAME = "fedproxvr_cnn"
DENSE = 512


def fedproxvr_cnn(num_classes: int = 10, dense: int = DENSE) -> Model:
    """The authors' network at dense = 512 (a narrower one for tests)."""
    with torch.device("meta"):
        net = ImageInput(two_conv_same_cnn(1, 28, dense, num_classes), (1, 28, 28))
    return Model(name=NAME, config=(num_classes, dense), module=net, loss="softmax_ce", init_fn=tf_glorot_init)
