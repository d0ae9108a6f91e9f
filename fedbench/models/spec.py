"""A model is a torch ``nn.Module`` plus a small declared spec: what the engine needs to train it as the flat
parameter vector theta that algorithms work with.

The spec says
- the layout of the trainable parameters in theta: names, shapes and offsets, in the module's parameter order;
- the frozen tensors shared by every client (a GloVe matrix, say): passed to the module as buffers, never in
  theta, never averaged, stored once on the compute device;
- the per-example loss the model owns (fedbench.models.losses: softmax or sigmoid cross-entropy, or the
  squared residual of the quadratic toy problems) and whether accuracy is defined;
- the dtype of its inputs (float features and images, int64 token ids), and the dtype evaluation runs in.

The network is evaluated functionally, ``torch.func.functional_call(module, {theta's views, frozen}, x)``, on
one module skeleton whose own parameters live on the 'meta' device (shapes only), so one Model serves every
client, every run and every execution kernel (fedbench.engine.kernels).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.func import functional_call

import fedbench.models.losses as losses

LOSSES = ("softmax_ce", "sigmoid_ce", "squared", "value")


@dataclass(frozen=True)
class ParamSlot:
    """One trainable tensor of the module and where it lives in theta."""

    name: str
    shape: tuple[int, ...]
    offset: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def layout_of(module: nn.Module) -> tuple[ParamSlot, ...]:
    """The module's trainable parameters, in registration order, as consecutive slots of theta."""
    slots, offset = [], 0
    for name, p in module.named_parameters():
        slots.append(ParamSlot(name, tuple(p.shape), offset))
        offset += p.numel()
    return tuple(slots)


def default_init(module: nn.Module, layout: tuple[ParamSlot, ...], generator: torch.Generator) -> torch.Tensor:
    """PyTorch's default initialisation of Linear, Conv, Embedding and recurrent layers, drawn from our seeded
    generator in float64 (so the draw does not depend on the device) and returned as float32 on the CPU:
    weights and biases of Linear/Conv uniform in +-1/sqrt(fan_in), recurrent weights uniform in +-1/sqrt(H),
    embeddings standard normal."""
    parts = []
    for slot in layout:
        owner = module.get_submodule(slot.name.rsplit(".", 1)[0]) if "." in slot.name else module
        n = slot.numel
        if isinstance(owner, nn.Embedding):
            parts.append(torch.randn(n, generator=generator, dtype=torch.float64))
            continue
        if isinstance(owner, nn.RNNBase):
            bound = 1.0 / math.sqrt(owner.hidden_size)
        else:
            weight = getattr(owner, "weight", None)
            fan_in = weight[0].numel() if weight is not None else slot.shape[0]
            bound = 1.0 / math.sqrt(fan_in)
        parts.append((torch.rand(n, generator=generator, dtype=torch.float64) * 2 - 1) * bound)
    return torch.cat(parts).float()


@dataclass(frozen=True, eq=False)
class Model:
    """A module, its theta layout, its frozen tensors and its loss.

    ``name`` and ``config`` identify the model (two Models are equal when both are): runs can be stacked or
    compared only on equal models. ``init`` draws theta^0 from a generator (default: :func:`default_init`)."""

    name: str
    config: tuple[Any, ...]  # the builder's arguments, e.g. (in_features, num_classes)
    module: nn.Module  # the network skeleton: its parameters on 'meta', forward(x) -> outputs
    loss: str  # one of LOSSES
    input_dtype: torch.dtype = torch.float32
    frozen: Mapping[str, torch.Tensor] = field(default_factory=dict)  # buffers shared by all clients
    eval_dtype: torch.dtype | None = None  # evaluate in this dtype (None: the parameters' dtype)
    init_fn: Callable[[nn.Module, tuple[ParamSlot, ...], torch.Generator], torch.Tensor] | None = None
    layout: tuple[ParamSlot, ...] = field(init=False)

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"model {self.name}: loss {self.loss!r} is not one of {LOSSES}")
        module = self.module if _on_meta(self.module) else self.module.to("meta")
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "layout", layout_of(module))
        object.__setattr__(self, "frozen", dict(self.frozen))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Model) and (self.name, self.config) == (other.name, other.config)

    def __hash__(self) -> int:
        return hash((self.name, self.config))

    def __repr__(self) -> str:
        return f"Model({self.name}{self.config}, {self.num_params:,} params, loss={self.loss})"

    # ---- theta ---------------------------------------------------------------------------------------

    @property
    def num_params(self) -> int:
        return sum(s.numel for s in self.layout)

    @property
    def num_frozen(self) -> int:
        return sum(t.numel() for t in self.frozen.values())

    @property
    def has_accuracy(self) -> bool:
        return self.loss not in ("squared", "value")

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of one flat theta [P] as the module's named parameters."""
        return {s.name: theta[s.offset: s.offset + s.numel].view(s.shape) for s in self.layout}

    def flatten(self, tensors: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """theta [P] from named parameter tensors (e.g. a trained ``nn.Module``'s state_dict)."""
        return torch.cat([tensors[s.name].reshape(-1) for s in self.layout])

    def init(self, generator: torch.Generator) -> torch.Tensor:
        """theta^0 as float32 on the CPU."""
        fn = self.init_fn or default_init
        theta = fn(self.module, self.layout, generator)
        if theta.shape != (self.num_params,):
            raise ValueError(f"model {self.name}: init gave shape {tuple(theta.shape)}, expected ({self.num_params},)")
        return theta

    def to(self, device: torch.device | str) -> Model:
        """This model with its frozen tensors on ``device`` (moved once, shared by every client)."""
        device = torch.device(device)
        if all(t.device == device for t in self.frozen.values()):
            return self
        moved = {k: t.to(device) for k, t in self.frozen.items()}
        out = object.__new__(Model)
        for f in ("name", "config", "module", "loss", "input_dtype", "eval_dtype", "init_fn", "layout"):
            object.__setattr__(out, f, getattr(self, f))
        object.__setattr__(out, "frozen", moved)
        return out

    # ---- one model -----------------------------------------------------------------------------------

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Outputs of one model theta [P] on inputs x [n, ...]."""
        return self.forward_params(self.unflatten(theta), x)

    def forward_params(self, params: Mapping[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Outputs of the model whose trainable tensors are ``params`` (named and shaped as the layout) on x.
        The per-client loop differentiates with respect to these tensors rather than theta (see
        fedbench.engine.kernels.loop)."""
        return functional_call(self.module, {**params, **self.frozen}, (x,))

    def example_losses(self, outputs: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-example losses [n] from the outputs."""
        return losses.per_example(self.loss, outputs, y)

    def correct(self, outputs: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-example correctness [n] (bool); NaN (float) where accuracy is not defined."""
        return losses.correct(self.loss, outputs, y)

    def loss_fn(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean loss of one model on one batch (the reference path differentiates this)."""
        return self.example_losses(self.forward(theta, x), y).mean()

    def weighted_loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """sum_b w_b loss_b of one model on one (padded) minibatch; padding has w_b = 0."""
        return (self.example_losses(self.forward(theta, x), y) * w).sum()


def _on_meta(module: nn.Module) -> bool:
    return all(p.device.type == "meta" for p in module.parameters())
