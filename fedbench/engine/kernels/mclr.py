"""The hand-written kernel of softmax regression (fedbench.models.mclr): the cohort's gradients as two batched
matrix products per step.

On small models the time goes into per-operation overhead, and the analytic gradient needs a third of the
operations of autograd: with x_aug = [x, 1] (a column of ones when the model has a bias, so theta viewed as
[d + 1, C] is exactly [W; b]) and p = softmax(x_aug W_aug), the weighted cross-entropy's gradient is
x_aug^T (w * p - w * onehot(y)). Full-data gradients per segment are one small product per segment on
contiguous slices (no [n, d, C] intermediate, which at EMNIST size would be gigabytes); evaluating M models at
once is one batched product.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import fedbench.engine.kernels.generic as generic
from fedbench.models.spec import Model
from fedbench.ops import to_device


class MclrKernel:
    name = "mclr"

    def __init__(self, model: Model) -> None:
        if not self.supports(model):
            raise ValueError(f"the mclr kernel runs only the mclr model, not {model.name}")
        self.model = model
        self.in_features, self.num_classes, self.bias = model.config

    @staticmethod
    def supports(model: Model) -> bool:
        return model.name == "mclr"

    # ---- training ------------------------------------------------------------------------------------

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        """Flattened inputs with a column of ones appended (bias), so x_aug @ theta.view(d + 1, C) = x W + b."""
        x = x.flatten(1)
        return torch.cat([x, torch.ones_like(x[..., :1])], dim=-1) if self.bias else x

    def batch(self, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(x [R, B, d+1], w * x [R, B, d+1], onehot(y)^T [R, C, B], 0 on padding): the weights are folded into
        the inputs of the backward product once per chunk, and the class axis comes before the batch axis, so
        the softmax runs over a middle axis, vectorised along the batch (3x faster than over a last axis of
        C = 10)."""
        onehot_t = x.new_zeros(y.shape[0], self.num_classes, y.shape[1]).scatter_(1, y.unsqueeze(1), (w > 0).to(x.dtype).unsqueeze(1))
        return x, x * w.unsqueeze(-1), onehot_t

    def grad(self, theta: torch.Tensor, x: torch.Tensor, xw: torch.Tensor, onehot_t: torch.Tensor) -> torch.Tensor:
        """Each row's gradient sum_b w_b (softmax(x_b W_aug) - onehot(y_b)) x_b^T: the logits x W_aug, their softmax
        over classes, minus the one-hot labels, times the weighted inputs."""
        k = theta.shape[0]
        w_aug = theta.view(k, x.shape[-1], self.num_classes)
        p_t = torch.softmax(torch.bmm(x, w_aug).transpose(1, 2), dim=1)  # [k, C, B] (a view of [k, B, C])
        return torch.bmm(p_t.sub_(onehot_t), xw).transpose(1, 2).reshape(k, -1)  # (p - y)^T (w x), as [d+1, C]

    # ---- evaluation ----------------------------------------------------------------------------------

    def _split(self, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        d, c = self.in_features, self.num_classes
        return theta[..., : d * c].unflatten(-1, (d, c)), (theta[..., d * c:] if self.bias else None)

    def _logits_t(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits of M models theta [M, P] on x [n, d], transposed: [M, C, n], as one product W^T x^T with the
        models' class rows stacked [M * C, d]. Stacking rows (not columns) keeps each model's numbers the same
        whatever M is (MKL's row blocks are independent), so a run evaluates identically alone and stacked."""
        m, d, c = theta.shape[0], self.in_features, self.num_classes
        w, b = self._split(theta)  # [M, d, C], [M, C]
        z = torch.mm(w.transpose(1, 2).reshape(m * c, d), x.flatten(1).t()).view(m, c, len(x))
        return z + b.unsqueeze(-1) if b is not None else z

    def per_example(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor):
        one = theta.dim() == 1
        z = self._logits_t(theta.unsqueeze(0) if one else theta, x)  # [M, C, n]
        losses = F.cross_entropy(z, y.expand(z.shape[0], len(y)), reduction="none")
        correct = z.max(1).indices == y  # first maximal index, as argmax; 5x faster over a middle axis
        return (losses[0], correct[0]) if one else (losses, correct)

    def train_eval(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, offsets, acc=None):
        """Per-example losses and correctness of M models on the training data (each [M, n]), and, given a
        fedbench.engine.metrics.Dissimilarity ``acc``, every client's full gradient fed to it, all from one
        product for the logits: the residual softmax - onehot of those logits, per client one product with its
        inputs (the clients' samples are contiguous, ``offsets`` [N + 1])."""
        m, d, c = theta.shape[0], self.in_features, self.num_classes
        x = x.flatten(1)
        z = self._logits_t(theta, x)  # [M, C, n]
        losses = F.cross_entropy(z, y.expand(m, len(y)), reduction="none")
        correct = z.max(1).indices == y
        if acc is not None and len(y):
            from fedbench.engine.metrics import DISSIMILARITY_CHUNK_BYTES

            r = torch.softmax(z, dim=1)
            r[:, y, torch.arange(len(y), device=y.device)] -= 1.0
            clients = np.flatnonzero(np.diff(offsets) > 0)
            per_chunk = max(1, DISSIMILARITY_CHUNK_BYTES // (4 * m * self.model.num_params))
            for start in range(0, len(clients), per_chunk):
                chunk = clients[start: start + per_chunk]
                g = torch.empty(m, len(chunk), self.model.num_params, dtype=x.dtype, device=x.device)
                for j, k in enumerate(chunk):
                    lo, hi = int(offsets[k]), int(offsets[k + 1])
                    rk = r[:, :, lo:hi]  # [M, C, n_k]
                    gw = torch.mm(rk.reshape(m * c, hi - lo), x[lo:hi]).view(m, c, d) / (hi - lo)
                    g[:, j, : d * c] = gw.transpose(1, 2).reshape(m, -1)
                    if self.bias:
                        g[:, j, d * c:] = rk.sum(-1) / (hi - lo)
                acc.add(torch.from_numpy(np.diff(offsets)[chunk]).to(x.device), g)
        return losses, correct

    def segment_grads_many(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                           counts: torch.Tensor) -> torch.Tensor:
        """[M, S, P]: each segment's full gradient at each of the M models theta [M, P]: per segment, one product
        for the logits of all models and one for their gradients."""
        m, d, c = theta.shape[0], self.in_features, self.num_classes
        x, y, segment = generic.contiguous_segments(x.flatten(1), y, segment)
        sizes = counts.tolist()
        out = torch.zeros(m, len(sizes), self.model.num_params, dtype=x.dtype, device=x.device)
        for k, (xk, yk) in enumerate(zip(x.split(sizes), y.split(sizes))):
            if sizes[k] == 0:
                continue
            r = torch.softmax(self._logits_t(theta, xk), dim=1)  # [M, C, n_k]
            r[:, yk, torch.arange(len(yk), device=yk.device)] -= 1.0
            r = r / sizes[k]
            gw = torch.mm(r.reshape(m * c, -1), xk).view(m, c, d)  # [M, C, d]
            out[:, k, : d * c] = gw.transpose(1, 2).reshape(m, -1)
            if self.bias:
                out[:, k, d * c:] = r.sum(-1)
        return out

    def segment_grads(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                      counts: torch.Tensor) -> torch.Tensor:
        x, y, segment = generic.contiguous_segments(x.flatten(1), y, segment)
        sizes = np.asarray(counts.tolist(), dtype=np.int64)
        ends = np.cumsum(sizes)
        return self._slice_grads(theta, x, y, ends - sizes, ends, counts)

    def client_grads(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, offsets: np.ndarray,
                     clients: np.ndarray) -> torch.Tensor:
        """Each client's full gradient read in place from the stored training arrays, where its samples are the
        contiguous rows offsets[c]:offsets[c + 1]: nothing is gathered, and each client's products are those of
        segment_grads on the gathered rows, operation for operation (the same numbers)."""
        lo, hi = offsets[clients], offsets[clients + 1]
        counts = to_device(hi - lo, x.device)
        return self._slice_grads(theta, x.flatten(1), y, lo, hi, counts)

    def _slice_grads(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, lo: np.ndarray, hi: np.ndarray,
                     counts: torch.Tensor) -> torch.Tensor:
        """[K, P]: the mean-loss gradient on the rows lo[k]:hi[k] of x [n, d] at theta[k], per row range one
        product for the logits, their softmax minus the one-hot labels, and one product with the inputs."""
        d, c = self.in_features, self.num_classes
        w, b = self._split(theta)
        scale = 1.0 / counts.clamp(min=1).to(x.dtype)
        out = torch.zeros(theta.shape[0], self.model.num_params, dtype=x.dtype, device=x.device)
        for k, (start, end) in enumerate(zip(lo.tolist(), hi.tolist())):
            if end == start:
                continue
            xk, yk = x[start:end], y[start:end]
            r = torch.softmax(torch.addmm(b[k], xk, w[k]) if b is not None else xk @ w[k], dim=1)
            r[torch.arange(len(yk), device=yk.device), yk] -= 1.0
            r = r * scale[k]
            out[k, : d * c] = (xk.T @ r).reshape(-1)
            if b is not None:
                out[k, d * c:] = r.sum(0)
        return out

    def run_losses(self, thetas: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """[R, n]: the loss of each of R models thetas [R, P] on its own samples, x [R, n, d+1] as :meth:`prepare`
        gives them and y [R, n]: one batched product for the logits (the bias through the column of ones)."""
        z = torch.bmm(x, thetas.view(thetas.shape[0], x.shape[-1], self.num_classes))  # [R, n, C]
        return F.cross_entropy(z.transpose(1, 2), y, reduction="none")

    def segment_losses(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                       counts: torch.Tensor) -> torch.Tensor:
        if theta.dim() == 1:  # per_example's losses, without its correctness
            per_sample = F.cross_entropy(self._logits_t(theta.unsqueeze(0), x), y.unsqueeze(0), reduction="none")[0]
        else:  # one model per segment: logits slice by slice (no [n, d, C] gather)
            x, y, segment = generic.contiguous_segments(x.flatten(1), y, segment)
            sizes = counts.tolist()
            parts = [F.cross_entropy(self._logits_t(theta[k: k + 1], xk), yk.unsqueeze(0), reduction="none")[0]
                     for k, (xk, yk) in enumerate(zip(x.split(sizes), y.split(sizes))) if sizes[k]]
            per_sample = torch.cat(parts) if parts else theta.new_zeros(0)
        total = torch.zeros(len(counts), dtype=per_sample.dtype, device=per_sample.device)
        total.index_add_(0, segment, per_sample)
        return total / counts.clamp(min=1).to(per_sample.dtype)
