"""A small CNN for 3x32x32 images: the PyTorch CIFAR-10 tutorial network, which FedLaAvg (Yan et al.,
"Distributed Non-Convex Optimization with Sublinear Speedup under Intermittent Client Availability",
INFORMS J. Computing 2024, section 6) trains on CIFAR-10.

    conv(3->6, 5x5) - ReLU - maxpool 2 - conv(6->16, 5x5) - ReLU - maxpool 2
    - fc(400->120) - ReLU - fc(120->84) - ReLU - fc(84->C)

Parameters are one flat vector theta (62,006 floats for C = 10), unflattened into views of the layers'
weights. The cohort's gradients come from ``torch.func``: ``vmap(grad(loss))`` over the stacked flat
parameters [K, P], each client's loss computed by ``functional_call`` on one shared module skeleton. The
reference path differentiates :meth:`loss` with ordinary autograd; the tests compare the two.

Init follows PyTorch's default for Conv2d and Linear (uniform in +-1/sqrt(fan_in) for weights and
biases), drawn from our own seeded generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

SEGMENT_CHUNK_SAMPLES = 4096  # samples per call in segment_grads and per_sample (bounds activation memory)
PER_MODEL_CHUNK = 64  # samples per call when each sample has its own model (segment_losses)
CPU_VMAP_SAMPLES = 512  # on CPU, batched_grad runs vmap over this many samples' clients at a time: larger
# activations (over ~32 MB) are fresh mmap allocations whose page faults cost more than the convolutions


def tutorial_cnn(in_channels: int = 3, num_classes: int = 10) -> nn.Module:
    """The network as an ordinary module (its parameters in the order of the flat theta)."""
    return nn.Sequential(
        nn.Conv2d(in_channels, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, num_classes),
    )


@dataclass(frozen=True)
class SmallCNN:
    num_classes: int = 10
    in_channels: int = 3
    image_size: int = 32
    _net: nn.Module = field(init=False, repr=False, compare=False)
    _shapes: tuple[tuple[str, torch.Size], ...] = field(init=False, repr=False, compare=False)  # theta's layout

    def __post_init__(self) -> None:
        if self.image_size != 32:
            raise ValueError(f"SmallCNN expects 32x32 images (got image_size={self.image_size})")
        net = tutorial_cnn(self.in_channels, self.num_classes).to("meta")  # a skeleton: shapes only
        object.__setattr__(self, "_net", net)
        object.__setattr__(self, "_shapes", tuple((name, p.shape) for name, p in net.named_parameters()))

    # ---- flat parameters -------------------------------------------------------------------------------

    @property
    def num_params(self) -> int:
        return sum(s.numel() for _, s in self._shapes)

    def _unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of one flat theta [P] as the module's named parameters."""
        out, offset = {}, 0
        for name, shape in self._shapes:
            n = shape.numel()
            out[name] = theta[offset: offset + n].view(shape)
            offset += n
        return out

    def init(self, generator: torch.Generator) -> torch.Tensor:
        """PyTorch's default init (uniform +-1/sqrt(fan_in)), as a flat float32 vector on CPU."""
        parts = []
        for name, shape in self._shapes:
            module = self._net.get_submodule(name.rsplit(".", 1)[0])
            fan_in = module.weight[0].numel()
            bound = 1.0 / math.sqrt(fan_in)
            parts.append((torch.rand(shape.numel(), generator=generator, dtype=torch.float64) * 2 - 1) * bound)
        return torch.cat(parts).float()

    # ---- single model --------------------------------------------------------------------------------

    def _images(self, x: torch.Tensor) -> torch.Tensor:
        """Raw samples [..., C*H*W] or [..., C, H, W] as images [..., C, H, W]."""
        shape = (self.in_channels, self.image_size, self.image_size)
        if tuple(x.shape[-3:]) == shape:
            return x
        return x.unflatten(-1, shape)

    def logits(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits of one model theta [P] on samples x [n, ...]."""
        return functional_call(self._net, self._unflatten(theta), (self._images(x),))

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of one model on one batch (the reference path differentiates this)."""
        return F.cross_entropy(self.logits(theta, x), y)

    def per_sample(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample loss and correctness of one model [P] on x [n, ...] (in chunks, to bound memory)."""
        losses, correct = [], []
        for lo in range(0, len(x), SEGMENT_CHUNK_SAMPLES):
            z = self.logits(theta, x[lo: lo + SEGMENT_CHUNK_SAMPLES])
            yy = y[lo: lo + SEGMENT_CHUNK_SAMPLES]
            losses.append(F.cross_entropy(z, yy, reduction="none"))
            correct.append(z.argmax(1) == yy)
        if not losses:
            return x.new_zeros(0), torch.zeros(0, dtype=torch.bool, device=x.device)
        return torch.cat(losses), torch.cat(correct)

    # ---- the cohort ----------------------------------------------------------------------------------

    def prepare_inputs(self, x: torch.Tensor) -> torch.Tensor:
        """Inputs as the vectorized path feeds them to :meth:`batched_grad`: images [..., C, H, W]."""
        return self._images(x)

    def _weighted_loss(self, theta: torch.Tensor, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        # sum_b sum_c target_bc * -log softmax(z_b)_c = sum_b w_b CE(z_b, y_b), as target = one-hot * w
        z = functional_call(self._net, self._unflatten(theta), (x,))
        return -(target * torch.log_softmax(z, dim=-1)).sum()

    def batched_grad(self, theta: torch.Tensor, x: torch.Tensor, target: torch.Tensor,
                     weight: torch.Tensor) -> torch.Tensor:
        """Gradient of each client's weighted mean cross-entropy, for a cohort at once.

        theta [K, P]; x [K, B, C, H, W] from :meth:`prepare_inputs`; target [K, B, classes] = one-hot labels
        times weight; weight [K, B, 1], each client's summing to 1 (zero on padding; it enters through
        ``target``). Returns [K, P]."""
        chunk = max(1, CPU_VMAP_SAMPLES // max(1, x.shape[1])) if theta.device.type == "cpu" else None
        return vmap(grad(self._weighted_loss), chunk_size=chunk)(theta, x, target)

    def segment_losses(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                       counts: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of each segment on all its samples: theta [P] (one model for every segment) or
        [M, P] (one per segment), x [n, ...] with segment ids [n] in 0..M-1 and counts [M]. Returns [M]
        (0 for an empty segment)."""
        if theta.dim() == 1:
            per_sample, _ = self.per_sample(theta, x, y)
        else:  # one model per sample, a chunk of samples at a time (a chunk holds chunk x P parameters)
            def one(th: torch.Tensor, xx: torch.Tensor, yy: torch.Tensor) -> torch.Tensor:
                return F.cross_entropy(self.logits(th, xx.unsqueeze(0)), yy.unsqueeze(0))

            per_sample = torch.cat([theta.new_zeros(0)] + [
                vmap(one)(theta[segment[lo: lo + PER_MODEL_CHUNK]], x[lo: lo + PER_MODEL_CHUNK],
                          y[lo: lo + PER_MODEL_CHUNK])
                for lo in range(0, len(y), PER_MODEL_CHUNK)])
        total = torch.zeros(len(counts), dtype=per_sample.dtype, device=per_sample.device)
        total.index_add_(0, segment, per_sample)
        return total / counts.clamp(min=1).to(per_sample.dtype)

    def segment_grads(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                      counts: torch.Tensor) -> torch.Tensor:
        """Full-data gradient of each segment's mean loss: theta [M, P] (one model per segment), x [n, ...]
        with segment ids [n] in 0..M-1 and per-segment sample counts [M]. Returns [M, P].

        Segments are padded to the longest one and run through :meth:`batched_grad` a chunk of segments at
        a time (padding has weight 0), so no loop runs over single segments."""
        m, device = theta.shape[0], theta.device
        out = torch.zeros(m, self.num_params, dtype=theta.dtype, device=device)
        if len(y) == 0:
            return out
        order = torch.argsort(segment, stable=True)
        seg_sorted = segment[order]
        n_seg = torch.bincount(segment, minlength=m)
        start = torch.cumsum(n_seg, 0) - n_seg
        rank = torch.arange(len(y), device=device) - start[seg_sorted]
        width = int(n_seg.max())
        index = torch.full((m, width), -1, dtype=torch.long, device=device)
        index[seg_sorted, rank] = order
        per_chunk = max(1, SEGMENT_CHUNK_SAMPLES // width)
        for lo in range(0, m, per_chunk):
            hi = min(m, lo + per_chunk)
            idx = index[lo:hi]
            valid = idx >= 0
            safe = idx.clamp(min=0)
            w = valid.to(theta.dtype) / counts[lo:hi].clamp(min=1).to(theta.dtype).unsqueeze(1)
            w = w.unsqueeze(-1)
            target = F.one_hot(y[safe], self.num_classes).to(theta.dtype).mul_(w)
            out[lo:hi] = self.batched_grad(theta[lo:hi], self.prepare_inputs(x[safe]), target, w)
        return out
