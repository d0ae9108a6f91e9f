"""The initialisation of the authors' TensorFlow 1 layers, for the models whose authors wrote them in TF (FedProx,
LEAF, FedProxVR): every kernel Glorot-uniform (TF1's default for ``tf.get_variable``, ``tf.layers.dense``,
``tf.layers.conv2d`` and ``rnn.BasicLSTMCell``), every bias zero, drawn from our seeded generator in float64 and
returned as float32 on the CPU.

Glorot-uniform draws from U(-l, l), l = sqrt(6 / (fan_in + fan_out)), with TF's fans for each kernel:
- dense [in, out]: in, out;
- conv2d [k, k, in, out]: k*k*in, k*k*out;
- embedding [V, d] (a plain ``tf.get_variable``): V, d;
- BasicLSTMCell: ONE kernel [in + H, 4H] for the input and the recurrent weights together, so PyTorch's
  weight_ih [4H, in] and weight_hh [4H, H] both draw with fan_in = in + H, fan_out = 4H.

Only the distribution matches TF's, not its draws (TF's own generator is not reproduced).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from fedbench.models.spec import ParamSlot


def glorot_limit(fan_in: int, fan_out: int) -> float:
    return math.sqrt(6.0 / (fan_in + fan_out))


def _fans(owner: nn.Module, attr: str, shape: tuple[int, ...]) -> tuple[int, int] | None:
    """TF's (fan_in, fan_out) of one kernel of ``owner``; None for a bias (zero-initialised)."""
    if isinstance(owner, nn.RNNBase):
        if not attr.startswith("weight_"):
            return None
        layer = int(attr.rsplit("_l", 1)[1])
        in_size = owner.input_size if layer == 0 else owner.hidden_size
        return in_size + owner.hidden_size, shape[0]  # one TF kernel [in + H, gates * H]
    if attr != "weight":
        return None
    if isinstance(owner, nn.Embedding):
        return shape[0], shape[1]
    if isinstance(owner, nn.Linear):
        return shape[1], shape[0]
    if isinstance(owner, nn.modules.conv._ConvNd):
        receptive = math.prod(shape[2:])
        return shape[1] * receptive, shape[0] * receptive
    raise ValueError(f"no TF initialiser for {type(owner).__name__}.{attr}")


def tf_glorot_init(module: nn.Module, layout: tuple[ParamSlot, ...], generator: torch.Generator) -> torch.Tensor:
    """theta^0 of a module built from Linear, Conv, Embedding and LSTM/GRU layers, initialised as TF1 does."""
    parts = []
    for slot in layout:
        owner_name, _, attr = slot.name.rpartition(".")
        owner = module.get_submodule(owner_name) if owner_name else module
        fans = _fans(owner, attr, slot.shape)
        if fans is None:
            parts.append(torch.zeros(slot.numel, dtype=torch.float64))
        else:
            limit = glorot_limit(*fans)
            parts.append((torch.rand(slot.numel, generator=generator, dtype=torch.float64) * 2 - 1) * limit)
    return torch.cat(parts).float()
