"""Models as flat parameter vectors: single-client maths for the reference path and evaluation, and a
batched gradient over a cohort ([K, P] parameters) for the vectorized engine."""

import math

from fedbench.models.cnn import SmallCNN
from fedbench.models.linear import MultinomialLogisticRegression

__all__ = ["MultinomialLogisticRegression", "SmallCNN", "build_model"]


def build_model(name: str, feature_shape: tuple[int, ...], num_classes: int):
    """The model called ``name`` for data of ``feature_shape`` with ``num_classes`` classes."""
    if name == "mclr":
        (d,) = feature_shape
        return MultinomialLogisticRegression(in_features=d, num_classes=num_classes)
    if name == "cnn":  # images [3, 32, 32], or flattened to [3072]
        channels = feature_shape[0] if len(feature_shape) == 3 else 3
        if math.prod(feature_shape) != channels * 32 * 32:
            raise ValueError(f"unknown model 'cnn' for feature shape {feature_shape}: the CNN takes 32x32 images "
                             "(C x 32 x 32, or C * 1024 flattened)")
        return SmallCNN(num_classes=num_classes, in_channels=channels)
    raise ValueError(f"unknown model {name!r}; allowed: ['mclr', 'cnn']")
