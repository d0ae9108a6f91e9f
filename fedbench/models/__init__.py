"""Models: a torch module plus its spec (fedbench.models.spec), one file per model, each citing its source.

``build_model(name, feature_shape, num_classes, embedding=None)`` builds the model called ``name`` for a dataset's
inputs (``embedding``: the dataset's frozen word table, for the models that embed words with one); the engine
runs it through an execution kernel (fedbench.engine.kernels). Registry names say whose model it is."""

from __future__ import annotations

import math

import torch

from fedbench.models.cifar_cnn import cifar_cnn
from fedbench.models.deltafl_emnist_cnn import deltafl_emnist_cnn
from fedbench.models.deltafl_emnist_linear import deltafl_emnist_linear
from fedbench.models.deltafl_sent140_linear import deltafl_sent140_linear
from fedbench.models.deltafl_sent140_lstm import deltafl_sent140_lstm
from fedbench.models.deltafl_shakespeare_gru import deltafl_shakespeare_gru
from fedbench.models.fashion_cnn import fashion_cnn
from fedbench.models.fedprox_sent140_lstm import fedprox_sent140_lstm
from fedbench.models.fedprox_shakespeare_lstm import fedprox_shakespeare_lstm
from fedbench.models.fedproxvr_cnn import fedproxvr_cnn
from fedbench.models.leaf_femnist_cnn import leaf_femnist_cnn
from fedbench.models.mclr import mclr
from fedbench.models.mean_estimation import mean_estimation
from fedbench.models.quadratics import diagonal_quadratics
from fedbench.models.recurrent import check_embedding, check_sequence_input
from fedbench.models.scaffold_mlp import scaffold_mlp
from fedbench.models.spec import Model, ParamSlot

__all__ = [
    "EMBEDDING_MODELS",
    "MODEL_NAMES",
    "Model",
    "ParamSlot",
    "build_model",
    "cifar_cnn",
    "deltafl_emnist_cnn",
    "deltafl_emnist_linear",
    "deltafl_sent140_linear",
    "deltafl_sent140_lstm",
    "deltafl_shakespeare_gru",
    "diagonal_quadratics",
    "fashion_cnn",
    "fedprox_sent140_lstm",
    "fedprox_shakespeare_lstm",
    "fedproxvr_cnn",
    "leaf_femnist_cnn",
    "mclr",
    "mean_estimation",
    "scaffold_mlp",
]


def _image_channels(feature_shape: tuple[int, ...], size: int) -> int:
    channels = feature_shape[0] if len(feature_shape) == 3 else math.prod(feature_shape) // (size * size)
    if math.prod(feature_shape) != channels * size * size or channels < 1:
        raise ValueError(f"the model takes {size}x{size} images (C x {size} x {size}, or C * {size * size} "
                         f"flattened), not inputs of shape {feature_shape}")
    return channels


def _grey_28(name: str, feature_shape: tuple[int, ...]) -> None:
    if _image_channels(feature_shape, 28) != 1:
        raise ValueError(f"model {name} takes 28x28 grey images ([1, 28, 28] or 784 features), not {feature_shape}")


def _binary(name: str, num_classes: int) -> None:
    if num_classes != 2:
        raise ValueError(f"model {name} is a binary classifier (one sigmoid output); the data has {num_classes} classes")


def _mclr(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    return mclr(math.prod(feature_shape), num_classes)


def _cifar_cnn(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    return cifar_cnn(_image_channels(feature_shape, 32), num_classes)


def _fedprox_shakespeare_lstm(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    check_sequence_input("fedprox_shakespeare_lstm", feature_shape)
    return fedprox_shakespeare_lstm(num_classes)


def _fedprox_sent140_lstm(feature_shape: tuple[int, ...], num_classes: int, embedding: torch.Tensor | None) -> Model:
    check_sequence_input("fedprox_sent140_lstm", feature_shape)
    _binary("fedprox_sent140_lstm", num_classes)
    return fedprox_sent140_lstm(check_embedding("fedprox_sent140_lstm", embedding))


def _deltafl_emnist_linear(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    return deltafl_emnist_linear(math.prod(feature_shape), num_classes)


def _deltafl_emnist_cnn(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    _grey_28("deltafl_emnist_cnn", feature_shape)
    return deltafl_emnist_cnn(num_classes)


def _deltafl_sent140_linear(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    _binary("deltafl_sent140_linear", num_classes)
    return deltafl_sent140_linear(math.prod(feature_shape))


def _deltafl_sent140_lstm(feature_shape: tuple[int, ...], num_classes: int, embedding: torch.Tensor | None) -> Model:
    check_sequence_input("deltafl_sent140_lstm", feature_shape)
    _binary("deltafl_sent140_lstm", num_classes)
    return deltafl_sent140_lstm(check_embedding("deltafl_sent140_lstm", embedding))


def _deltafl_shakespeare_gru(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    check_sequence_input("deltafl_shakespeare_gru", feature_shape)
    return deltafl_shakespeare_gru(num_classes)


def _fashion_cnn(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    _grey_28("fashion_cnn", feature_shape)
    return fashion_cnn(num_classes)


def _scaffold_mlp(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    return scaffold_mlp(math.prod(feature_shape), num_classes)


def _leaf_femnist_cnn(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    _grey_28("leaf_femnist_cnn", feature_shape)
    return leaf_femnist_cnn(num_classes)


def _fedproxvr_cnn(feature_shape: tuple[int, ...], num_classes: int) -> Model:
    _grey_28("fedproxvr_cnn", feature_shape)
    return fedproxvr_cnn(num_classes)


BUILDERS = {
    "mclr": _mclr,  # multinomial logistic regression on flattened inputs (FedProx's convex models)
    "cnn": _cifar_cnn,  # FedLaAvg's CIFAR-10 CNN (the PyTorch tutorial network)
    "cifar_cnn": _cifar_cnn,
    "fedlaavg_cifar_cnn": _cifar_cnn,
    "fedprox_shakespeare_lstm": _fedprox_shakespeare_lstm,  # embedding 80x8, 2 x LSTM(256), dense -> 80
    "fedprox_sent140_lstm": _fedprox_sent140_lstm,  # frozen GloVe 300d, 2 x LSTM(100), dense 30, dense 1
    "deltafl_emnist_linear": _deltafl_emnist_linear,  # softmax regression without bias, zero init
    "deltafl_emnist_cnn": _deltafl_emnist_cnn,  # conv32-conv64 (no padding), fc 1024 -> 62
    "deltafl_sent140_linear": _deltafl_sent140_linear,  # logistic regression on mean GloVe 50d features
    "deltafl_sent140_lstm": _deltafl_sent140_lstm,  # frozen GloVe 50d, LSTM(50), fc -> 1
    "deltafl_shakespeare_gru": _deltafl_shakespeare_gru,  # embedding 53x8, GRU(128), fc 128 -> 128
    "scaffold_logreg": _mclr,  # SCAFFOLD's logistic regression (784 -> 47 on EMNIST balanced)
    "scaffold_mlp": _scaffold_mlp,  # SCAFFOLD's two-layer fully connected network (width 256: our choice)
    "leaf_femnist_cnn": _leaf_femnist_cnn,  # conv32-conv64 (same padding), dense 2048 -> 62
    "fedproxvr_cnn": _fedproxvr_cnn,  # conv32-conv64 (same padding), dense 512 -> 10
    "fashion_cnn": _fashion_cnn,  # FedLaAvg's CIFAR CNN on 28x28 grey images: fc 256 -> 120 -> 84 -> C
}
EMBEDDING_MODELS = frozenset({"fedprox_sent140_lstm", "deltafl_sent140_lstm"})  # builders taking a frozen table
MODEL_NAMES = tuple(BUILDERS)


def build_model(name: str, feature_shape: tuple[int, ...], num_classes: int,
                embedding: torch.Tensor | None = None) -> Model:
    """The model called ``name`` for data of ``feature_shape`` with ``num_classes`` classes; ``embedding`` is the
    dataset's frozen word table (float [V, d]), used by the models in EMBEDDING_MODELS and ignored by the rest."""
    if name not in BUILDERS:
        raise ValueError(f"unknown model {name!r}; allowed: {', '.join(BUILDERS)}")
    if name in EMBEDDING_MODELS:
        return BUILDERS[name](tuple(feature_shape), num_classes, embedding)
    return BUILDERS[name](tuple(feature_shape), num_classes)
