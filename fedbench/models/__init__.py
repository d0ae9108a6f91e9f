"""Models: a torch module plus its spec (fedbench.models.spec), one file per model, each citing its source.

``build_model(name, feature_shape, num_classes)`` builds the model called ``name`` for a dataset's inputs; the
engine runs it through an execution kernel (fedbench.engine.kernels)."""

from __future__ import annotations

import math

from fedbench.models.cifar_cnn import cifar_cnn
from fedbench.models.mclr import mclr
from fedbench.models.mean_estimation import mean_estimation
from fedbench.models.quadratics import diagonal_quadratics
from fedbench.models.spec import Model, ParamSlot

__all__ = ["Model", "ParamSlot", "build_model", "MODEL_NAMES", "mclr", "cifar_cnn", "mean_estimation",
           "diagonal_quadratics"]


def _image_channels(feature_shape: tuple[int, ...], size: int) -> int:
    channels = feature_shape[0] if len(feature_shape) == 3 else math.prod(feature_shape) // (size * size)
    if math.prod(feature_shape) != channels * size * size or channels < 1:
        raise ValueError(f"the model takes {size}x{size} images (C x {size} x {size}, or C * {size * size} "
                         f"flattened), not inputs of shape {feature_shape}")
    return channels


def _mclr(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    return mclr(math.prod(feature_shape), num_classes)


def _cifar_cnn(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    return cifar_cnn(_image_channels(feature_shape, 32), num_classes)


BUILDERS = {
    "mclr": _mclr,  # multinomial logistic regression on flattened inputs
    "cnn": _cifar_cnn,  # FedLaAvg's CIFAR-10 CNN (the PyTorch tutorial network)
    "cifar_cnn": _cifar_cnn,
}
MODEL_NAMES = tuple(BUILDERS)


def build_model(name: str, feature_shape: tuple[int, ...], num_classes: int) -> Model:
    """The model called ``name`` for data of ``feature_shape`` with ``num_classes`` classes."""
    if name not in BUILDERS:
        raise ValueError(f"unknown model {name!r}; allowed: {', '.join(BUILDERS)}")
    return BUILDERS[name](tuple(feature_shape), num_classes)
