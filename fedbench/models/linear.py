"""Multinomial logistic regression (softmax regression), the model of every FedProx convex experiment.

Parameters are one flat vector theta = [W.flatten() (d x C), b (C)]. The batched gradient is written out
by hand (bmm over the cohort): on small models the time goes into per-operation overhead, and the
analytic form needs a third of the operations of autograd. The reference path differentiates
:meth:`loss` with autograd, so the two are checked against each other in the tests.

Deviation from the FedProx code (flearn/models/synthetic/mclr.py): the authors declare an L2
regularizer of 0.001 that is never added to the optimised loss; we leave it out as well. Their init is
Glorot-uniform for W and zeros for b, as here, from our own seeded generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class MultinomialLogisticRegression:
    in_features: int
    num_classes: int

    @property
    def num_params(self) -> int:
        return self.in_features * self.num_classes + self.num_classes

    def init(self, generator: torch.Generator) -> torch.Tensor:
        """Glorot-uniform W, zero b, as a flat float32 vector on CPU."""
        d, c = self.in_features, self.num_classes
        limit = math.sqrt(6.0 / (d + c))
        w = (torch.rand(d * c, generator=generator, dtype=torch.float64) * 2 - 1) * limit
        return torch.cat([w, torch.zeros(c, dtype=torch.float64)]).float()

    def _split(self, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d, c = self.in_features, self.num_classes
        return theta[..., : d * c].unflatten(-1, (d, c)), theta[..., d * c :]

    def logits(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits of one model theta [P] on samples x [n, d]."""
        w, b = self._split(theta)
        return torch.addmm(b, x, w)

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of one model on one batch (the reference path differentiates this)."""
        return F.cross_entropy(self.logits(theta, x), y)

    def prepare_inputs(self, x: torch.Tensor) -> torch.Tensor:
        """Inputs as the vectorized path feeds them to :meth:`batched_grad`: a column of ones appended,
        so that x_aug @ [W; b] = x W + b and the flat theta is exactly [W; b] flattened."""
        return torch.cat([x, torch.ones_like(x[..., :1])], dim=-1)

    def batched_grad(self, theta: torch.Tensor, x: torch.Tensor, target: torch.Tensor,
                     weight: torch.Tensor) -> torch.Tensor:
        """Gradient of each client's weighted mean cross-entropy, for a cohort at once.

        theta [K, P]; x [K, B, d + 1] from :meth:`prepare_inputs`; target [K, B, C] = one-hot labels times
        weight; weight [K, B, 1], each client's summing to 1 (zero on padding). Returns [K, P].
        """
        k = theta.shape[0]
        w_aug = theta.view(k, self.in_features + 1, self.num_classes)
        p = torch.softmax(torch.bmm(x, w_aug), dim=-1)
        p = p.mul_(weight).sub_(target)  # d(loss)/d(logits)
        return torch.bmm(x.transpose(1, 2), p).view(k, -1)

    def per_sample(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample loss and correctness of one model [P] on x [n, d]."""
        z = self.logits(theta, x)
        return F.cross_entropy(z, y, reduction="none"), (z.argmax(1) == y)

    def segment_grads(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                      counts: torch.Tensor) -> torch.Tensor:
        """Full-data gradient of each segment's mean loss: theta [M, P] (one model per segment),
        x [n, d] with segment ids [n] in 0..M-1 and per-segment sample counts [M]. Returns [M, P].

        One small product X_m^T R_m per segment, on contiguous slices: no [n, d, C] intermediate (at EMNIST
        size that would be gigabytes), and about ten times faster than gathering a model per sample."""
        m, d, c = theta.shape[0], self.in_features, self.num_classes
        x, y, segment = _contiguous_segments(x, y, segment)
        w, b = self._split(theta)
        sizes = counts.tolist()
        scale = 1.0 / counts.clamp(min=1).to(x.dtype)
        out = torch.zeros(m, self.num_params, dtype=x.dtype, device=x.device)
        for k, (xk, yk) in enumerate(zip(x.split(sizes), y.split(sizes))):
            if sizes[k] == 0:
                continue
            r = torch.softmax(torch.addmm(b[k], xk, w[k]), dim=1)
            r[torch.arange(len(yk), device=yk.device), yk] -= 1.0
            r = r * scale[k]
            out[k, : d * c] = (xk.T @ r).reshape(-1)
            out[k, d * c :] = r.sum(0)
        return out

    def segment_losses(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                       counts: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of each segment on all its samples: theta [P] (one model for every segment) or
        [M, P] (one per segment), x [n, d] with segment ids [n] in 0..M-1 and counts [M]. Returns [M]
        (0 for an empty segment)."""
        if theta.dim() == 1:
            z = self.logits(theta, x)
        else:  # one model per segment: logits slice by slice (no [n, d, C] gather)
            x, y, segment = _contiguous_segments(x, y, segment)
            w, b = self._split(theta)
            sizes = counts.tolist()
            z = torch.cat([torch.addmm(b[k], xk, w[k]) for k, xk in enumerate(x.split(sizes))])
        per_sample = F.cross_entropy(z, y, reduction="none")
        total = torch.zeros(len(counts), dtype=per_sample.dtype, device=per_sample.device)
        total.index_add_(0, segment, per_sample)
        return total / counts.clamp(min=1).to(per_sample.dtype)


def _contiguous_segments(x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor):
    """Samples reordered (stably) so that each segment's samples are contiguous and in segment order; the
    engine already passes them that way, so usually nothing moves."""
    if len(segment) < 2 or bool((segment[1:] >= segment[:-1]).all()):
        return x, y, segment
    order = torch.argsort(segment, stable=True)
    return x[order], y[order], segment[order]
