"""LEAF's FEMNIST reference CNN (Caldas et al., "LEAF: A Benchmark for Federated Settings", 2018; code
TalwalkarLab/leaf models/femnist/cnn.py), the TensorFlow layers-tutorial network:

    images [1, 28, 28] -> conv 5x5 (1 -> 32, same padding) - ReLU - maxpool 2
    -> conv 5x5 (32 -> 64, same padding) - ReLU - maxpool 2 -> dense 3136 -> 2048 - ReLU -> dense 2048 -> 62
    softmax cross-entropy

6,603,710 parameters, the authors' count: conv 832 + 51,264; dense 6,424,576 + 127,038.

Deviations and notes:
1. Init as TF1's defaults (fedbench.models.tf_init): Glorot-uniform kernels (conv fans k*k*in, k*k*out),
   zero biases, from our seeded generator.
2. TF flattens the 7x7x64 maps in (height, width, channel) order, PyTorch in (channel, height, width): the
   first dense kernel's rows are permuted relative to TF's, the same network up to that relabelling.
3. Flattened inputs [784] are reshaped to [1, 28, 28], as the authors' ``tf.reshape``.
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.cifar_cnn import ImageInput
from fedbench.models.spec import Model
from fedbench.models.tf_init import tf_glorot_init

NAME = "leaf_femnist_cnn"
DENSE = 2048


def two_conv_same_cnn(in_channels: int, size: int, dense: int, num_classes: int) -> nn.Module:
    """conv5 (32, same) - ReLU - pool 2 - conv5 (64, same) - ReLU - pool 2 - dense - ReLU - dense, on
    [in_channels, size, size] images (the TF layers-tutorial CNN that LEAF and FedProxVR adapt)."""
    flat = 64 * (size // 4) ** 2
    return nn.Sequential(
        nn.Conv2d(in_channels, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(flat, dense), nn.ReLU(),
        nn.Linear(dense, num_classes),
    )


def leaf_femnist_cnn(num_classes: int = 62, dense: int = DENSE) -> Model:
    """The authors' network at dense = 2048 (a narrower one for tests)."""
    with torch.device("meta"):
        net = ImageInput(two_conv_same_cnn(1, 28, dense, num_classes), (1, 28, 28))
    return Model(name=NAME, config=(num_classes, dense), module=net, loss="softmax_ce", init_fn=tf_glorot_init)
