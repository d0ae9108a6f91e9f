"""Evaluation and full-data gradients written once over a kernel's ``grad`` and the model's functional forward;
kernels without a faster way use these."""

from __future__ import annotations

import numpy as np
import torch

from fedbench.models.spec import Model
from fedbench.ops import to_device

EVAL_CHUNK_SAMPLES = 4096  # samples per forward in evaluation (bounds activation memory)
SEGMENT_CHUNK_SAMPLES = 4096  # padded samples per ``grad`` call in segment_grads
# Devices where M models [M, P] are evaluated in one forward pass a chunk (the kernel's ``forward_many``: vmap over
# the models, or the rnn kernel's own forward over stacked weights; issue 49, D5), instead of one pass a model. Not
# the CPU: there a batched pass computes a model's float32 outputs with another algorithm than its own pass
# (vmap's grouped convolution for the CIFAR CNN differs in the last bits, 2.4e-7; the rnn kernel's recurrence is
# not nn.LSTM's), so a run would evaluate differently stacked and alone. On CUDA the numbers are held to the GPU
# check's tolerance, and a pass a model is a launch-bound pass a model.
BATCHED_EVAL_DEVICES = ("cuda",)


def eval_dtype(model: Model, theta: torch.Tensor) -> torch.dtype:
    return model.eval_dtype or theta.dtype


def per_example(model: Model, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor):
    """Losses and correctness of one model [P] on x [n, ...] ([n] each), or of M models [M, P] ([M, n] each),
    a chunk of samples at a time."""
    if theta.dim() == 2:
        pairs = [per_example(model, th, x, y) for th in theta]
        if not pairs:
            return x.new_zeros(0, len(x)), x.new_zeros(0, len(x))
        return torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])
    dtype = eval_dtype(model, theta)
    theta = theta.to(dtype)
    losses, correct = [], []
    for lo in range(0, len(x), EVAL_CHUNK_SAMPLES):
        xx, yy = x[lo: lo + EVAL_CHUNK_SAMPLES], y[lo: lo + EVAL_CHUNK_SAMPLES]
        out = model.forward(theta, xx.to(dtype) if xx.is_floating_point() else xx)
        losses.append(model.example_losses(out, yy))
        correct.append(model.correct(out, yy))
    if not losses:
        return theta.new_zeros(0), torch.zeros(0, dtype=torch.bool, device=x.device)
    return torch.cat(losses), torch.cat(correct)


def per_example_many(model: Model, thetas: torch.Tensor, x: torch.Tensor, y: torch.Tensor, forward_many):
    """Losses and correctness of M models thetas [M, P] on x [n, ...] ([M, n] each), one pass a chunk of samples for
    all M: ``forward_many(thetas, x)`` -> outputs [M, n, ...]."""
    m = thetas.shape[0]
    dtype = eval_dtype(model, thetas)
    thetas = thetas.to(dtype)
    losses, correct = [], []
    for lo in range(0, len(x), EVAL_CHUNK_SAMPLES):
        xx, yy = x[lo: lo + EVAL_CHUNK_SAMPLES], y[lo: lo + EVAL_CHUNK_SAMPLES]
        out = forward_many(thetas, xx.to(dtype) if xx.is_floating_point() else xx).flatten(0, 1)
        ys = yy.repeat(m)
        losses.append(model.example_losses(out, ys).view(m, -1))
        correct.append(model.correct(out, ys).view(m, -1))
    if not losses:
        return thetas.new_zeros(m, 0), torch.zeros(m, 0, dtype=torch.bool, device=x.device)
    return torch.cat(losses, 1), torch.cat(correct, 1)


def vmap_forward(model: Model):
    """M models' outputs in one pass, fn(thetas [M, P], x [n, ...]) -> [M, n, ...]: ``vmap`` of the model's forward
    over its parameters; None for a recurrent model (vmap cannot batch nn.LSTM, nn.GRU: the loop kernel borrows the
    rnn kernel's forward with the models as rows instead, fedbench.engine.kernels.loop)."""
    if any(isinstance(m, torch.nn.RNNBase) for m in model.module.modules()):
        return None
    from torch.func import vmap

    return vmap(model.forward, in_dims=(0, None))


def segment_losses(kernel, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                   counts: torch.Tensor) -> torch.Tensor:
    """Mean loss of each segment: theta [P] (one model for all) or [M, P] (one per segment). Returns [M]."""
    if theta.dim() == 1:
        per_sample, _ = kernel.per_example(theta, x, y)
    else:
        x, y, segment = contiguous_segments(x, y, segment)
        sizes = counts.tolist()
        parts = [kernel.per_example(theta[m], xm, ym)[0] for m, (xm, ym) in enumerate(zip(x.split(sizes), y.split(sizes)))
                 if sizes[m]]
        per_sample = torch.cat(parts) if parts else theta.new_zeros(0)
    total = torch.zeros(len(counts), dtype=per_sample.dtype, device=per_sample.device)
    total.index_add_(0, segment, per_sample)
    return total / counts.clamp(min=1).to(per_sample.dtype)


def segment_grads(kernel, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                  counts: torch.Tensor) -> torch.Tensor:
    """Full-data gradient of each segment's mean loss at its own model theta [M, P]; x [n, ...] with segment ids
    [n] in 0..M-1 and counts [M]. Segments are padded to the longest one and run through ``kernel.grad`` a chunk
    of segments at a time (padding has weight 0). Returns [M, P] (0 for an empty segment)."""
    m, device = theta.shape[0], theta.device
    out = torch.zeros(m, theta.shape[1], dtype=theta.dtype, device=device)
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
    x_prepared = kernel.prepare(x)
    for lo in range(0, m, per_chunk):
        hi = min(m, lo + per_chunk)
        idx = index[lo:hi]
        valid = idx >= 0
        safe = idx.clamp(min=0)
        w = valid.to(theta.dtype) / counts[lo:hi].clamp(min=1).to(theta.dtype).unsqueeze(1)
        out[lo:hi] = kernel.grad(theta[lo:hi], *kernel.batch(x_prepared[safe], y[safe], w))
    return out


def client_segments(offsets: np.ndarray, clients: np.ndarray, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where the samples of ``clients`` are in the stored training arrays (client c: rows offsets[c]:offsets[c + 1]):
    their global indices, their segment (position of their client in ``clients``) and the counts n_k."""
    counts = offsets[clients + 1] - offsets[clients]
    idx = np.concatenate([np.arange(offsets[c], offsets[c + 1]) for c in clients]) if len(clients) else np.zeros(0, np.int64)
    seg = np.repeat(np.arange(len(clients)), counts)
    return to_device(idx, device), to_device(seg, device), to_device(counts, device)


def client_grads(kernel, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, offsets: np.ndarray,
                 clients: np.ndarray) -> torch.Tensor:
    """[K, P]: the full gradient of client clients[k] at theta[k], its samples the rows offsets[c]:offsets[c + 1]
    of the stored training arrays x, y: the clients' rows gathered, then ``kernel.segment_grads``."""
    idx, seg, counts = client_segments(offsets, clients, x.device)
    return kernel.segment_grads(theta, x[idx], y[idx], seg, counts)


def contiguous_segments(x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor):
    """Samples reordered (stably) so that each segment's samples are contiguous and in segment order; the
    engine already passes them that way, so usually nothing moves."""
    if len(segment) < 2 or bool((segment[1:] >= segment[:-1]).all()):
        return x, y, segment
    order = torch.argsort(segment, stable=True)
    return x[order], y[order], segment[order]


class GenericEvaluation:
    """Evaluation and full-data gradients through the functions above, for a kernel with ``self.model`` and a
    ``grad``; a kernel with a faster way (fedbench.engine.kernels.mclr) writes its own."""

    model: Model

    def forward_many(self, thetas: torch.Tensor, x: torch.Tensor):
        """Outputs [M, n, ...] of M models thetas [M, P] on the same inputs x [n, ...] in one pass (None: this
        kernel's model has none; :func:`vmap_forward`)."""
        fn = vmap_forward(self.model)
        return None if fn is None else fn(thetas, x)

    def per_example(self, theta, x, y):
        if theta.dim() == 2 and theta.device.type in BATCHED_EVAL_DEVICES and self.batches_models():
            return per_example_many(self.model, theta, x, y, self.forward_many)
        return per_example(self.model, theta, x, y)

    def batches_models(self) -> bool:
        """Whether :meth:`forward_many` evaluates several models in one pass."""
        return vmap_forward(self.model) is not None

    def segment_grads(self, theta, x, y, segment, counts):
        return segment_grads(self, theta, x, y, segment, counts)

    def segment_losses(self, theta, x, y, segment, counts):
        return segment_losses(self, theta, x, y, segment, counts)

    def client_grads(self, theta, x, y, offsets, clients):
        return client_grads(self, theta, x, y, offsets, clients)
