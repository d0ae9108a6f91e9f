"""Evaluation and full-data gradients written once over a kernel's ``grad`` and the model's functional forward;
kernels without a faster way use these."""

from __future__ import annotations

import numpy as np
import torch

from fedbench.models.spec import Model
from fedbench.ops import to_device

EVAL_CHUNK_SAMPLES = 4096  # samples per forward in evaluation (bounds activation memory)
SEGMENT_CHUNK_SAMPLES = 4096  # padded samples per ``grad`` call in segment_grads


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

    def per_example(self, theta, x, y):
        return per_example(self.model, theta, x, y)

    def segment_grads(self, theta, x, y, segment, counts):
        return segment_grads(self, theta, x, y, segment, counts)

    def segment_losses(self, theta, x, y, segment, counts):
        return segment_losses(self, theta, x, y, segment, counts)

    def client_grads(self, theta, x, y, offsets, clients):
        return client_grads(self, theta, x, y, offsets, clients)
