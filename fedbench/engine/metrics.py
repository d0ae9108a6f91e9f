"""Per-round evaluation of the global model on every device (FedProx appendix C.2 and its code).

- ``train/loss``: the global objective f(w) = sum_k n_k F_k(w) / n over all devices' training data.
- ``test/accuracy``: pooled, sum of correct / sum of test samples over all devices.
- per-device training loss and test accuracy (kept so percentiles can be read, e.g. Delta-FL's p90 error).
- ``train/dissimilarity``: the variance of local gradients of Figure 2, the *unweighted* mean over all N
  devices of ||grad f(w) - grad F_k(w)||^2, with grad f the n_k-weighted mean of the full local gradients
  (the authors' code; the paper writes E_k[||grad F_k - grad f||^2]). It is streamed over chunks of clients,
  so no [N, P] tensor is ever held (a 6.6M-parameter CNN x 3,500 FEMNIST writers would be 92 GB).
- divergence by appendix C.3.2: f_t - f_{t-10} > 1, or a non-finite loss.
- ``has_diverged``: the rule by which a run has diverged and stops (fedbench.divergence).

Several models on the same data (the runs of a stack) are evaluated at once where the kernel can.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fedbench.data.format import FederatedDataset
from fedbench.data.transforms import model_inputs
from fedbench.divergence import (  # noqa: F401 (the engine's divergence rule; re-read by its callers here)
    DIVERGENCE_FACTOR,
    has_diverged,
    is_diverging,
)

DISSIMILARITY_CHUNK_BYTES = 64 * 2**20  # client gradients held at once while streaming the dissimilarity


@dataclass(frozen=True)
class DeviceData:
    """A dataset's arrays as tensors on the compute device, with per-sample client ids."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    seg_train: torch.Tensor
    n_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    seg_test: torch.Tensor
    n_test: torch.Tensor
    train_offsets: np.ndarray
    num_clients: int
    num_classes: int

    @property
    def train_sizes(self) -> np.ndarray:
        return np.diff(self.train_offsets)

    @staticmethod
    def build(ds: FederatedDataset, device: torch.device) -> DeviceData:
        def seg(sizes: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.repeat(np.arange(len(sizes)), sizes)).to(device)

        return DeviceData(  # model_inputs: stored arrays (uint8 pixels, int ids) -> what the model consumes
            x_train=torch.from_numpy(model_inputs(ds, "train")).to(device), y_train=torch.from_numpy(ds.train.y).to(device),
            seg_train=seg(ds.train.sizes), n_train=torch.from_numpy(ds.train.sizes).to(device),
            x_test=torch.from_numpy(model_inputs(ds, "test")).to(device), y_test=torch.from_numpy(ds.test.y).to(device),
            seg_test=seg(ds.test.sizes), n_test=torch.from_numpy(ds.test.sizes).to(device),
            train_offsets=ds.train.offsets, num_clients=ds.num_clients, num_classes=ds.num_classes,
        )


@dataclass(frozen=True)
class Evaluation:
    train_loss: float
    train_accuracy: float
    test_loss: float
    test_accuracy: float
    dissimilarity: float
    device_train_loss: np.ndarray  # [N]
    device_test_accuracy: np.ndarray  # [N], NaN for devices without test data

    def scalars(self) -> dict[str, float]:
        acc = self.device_test_accuracy[np.isfinite(self.device_test_accuracy)]
        return {
            "train/loss": self.train_loss,
            "train/accuracy": self.train_accuracy,
            "test/loss": self.test_loss,
            "test/accuracy": self.test_accuracy,
            "train/dissimilarity": self.dissimilarity,
            "test/error_p90": float(np.percentile(1.0 - acc, 90)) if len(acc) else float("nan"),
        }


def _segment_mean(values: torch.Tensor, seg: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` [..., n] over each segment (float64 [..., M]); NaN for an empty segment."""
    lead = values.shape[:-1]
    total = torch.zeros(*lead, len(counts), dtype=torch.float64, device=values.device)
    total.index_add_(values.dim() - 1, seg, values.double())
    mean = total / counts.double().clamp(min=1)
    return torch.where(counts > 0, mean, torch.full_like(mean, float("nan")))


@torch.no_grad()
def evaluate(kernel, theta: torch.Tensor, data: DeviceData, with_dissimilarity: bool = True) -> Evaluation:
    """The global model theta [P] on every device of ``data``."""
    return evaluate_many(kernel, theta.unsqueeze(0), data, with_dissimilarity)[0]


@torch.no_grad()
def evaluate_many(kernel, thetas: torch.Tensor, data: DeviceData, with_dissimilarity: bool = True) -> list[Evaluation]:
    """Several global models thetas [M, P] on the same data (the runs of a stack), in one pass where the kernel
    evaluates several models at once."""
    m = thetas.shape[0]
    acc = Dissimilarity(m, thetas.shape[1], data.train_sizes, thetas.device) if with_dissimilarity else None
    fused = getattr(kernel, "train_eval", None)
    if fused is not None:  # the kernel's own pass: losses and client gradients from the same logits
        loss_tr, correct_tr = fused(thetas, data.x_train, data.y_train, data.train_offsets, acc)
    else:
        loss_tr, correct_tr = _per_example_many(kernel, thetas, data.x_train, data.y_train)
        if acc is not None:
            _stream_client_grads(kernel, thetas, data, acc)
    loss_te, correct_te = _per_example_many(kernel, thetas, data.x_test, data.y_test)
    dev_loss = _segment_mean(loss_tr, data.seg_train, data.n_train).cpu().numpy()
    dev_acc = _segment_mean(correct_te, data.seg_test, data.n_test).cpu().numpy()
    dissim = acc.value() if acc is not None else np.full(m, float("nan"))
    out = []
    for i in range(m):
        out.append(Evaluation(
            train_loss=float(loss_tr[i].double().mean()),
            train_accuracy=float(correct_tr[i].double().mean()),
            test_loss=float(loss_te[i].double().mean()) if loss_te.shape[-1] else float("nan"),
            test_accuracy=float(correct_te[i].double().mean()) if correct_te.shape[-1] else float("nan"),
            dissimilarity=float(dissim[i]),
            device_train_loss=dev_loss[i],
            device_test_accuracy=dev_acc[i],
        ))
    return out


def _per_example_many(kernel, thetas: torch.Tensor, x: torch.Tensor, y: torch.Tensor):
    if thetas.shape[0] == 1:
        loss, correct = kernel.per_example(thetas[0], x, y)
        return loss.unsqueeze(0), correct.unsqueeze(0)
    return kernel.per_example(thetas, x, y)


class Dissimilarity:
    """FedProx Figure 2's gradient dissimilarity of M models, (1/N') sum_k ||g_k - g||^2 over the N' devices with
    training data, g = sum_k p_k g_k, p_k = n_k / n, g_k the full local gradient; fed client gradients a chunk
    at a time, so no [N, P] tensor is ever held. Float64 running sums S1 = sum_k ||g_k||^2, S2 = sum_k g_k and
    g give (1/N') sum_k ||g_k - g||^2 = (S1 - 2 g.S2 + N' ||g||^2) / N'."""

    def __init__(self, m: int, p: int, sizes: np.ndarray, device: torch.device) -> None:
        self.count = float((sizes > 0).sum())
        self.n_total = float(sizes.sum())
        self.s1 = torch.zeros(m, dtype=torch.float64, device=device)
        self.s2 = torch.zeros(m, p, dtype=torch.float64, device=device)
        self.g = torch.zeros(m, p, dtype=torch.float64, device=device)

    def add(self, counts: torch.Tensor, grads: torch.Tensor) -> None:
        """Clients with ``counts`` [c] samples and full gradients ``grads`` [M, c, P]."""
        grads = grads.double()
        self.s1 += (grads * grads).sum((1, 2))
        self.s2 += grads.sum(1)
        self.g += torch.einsum("c,mcp->mp", counts.double() / self.n_total, grads)

    def value(self) -> np.ndarray:
        if self.count == 0:
            return np.full(len(self.s1), float("nan"))
        value = (self.s1 - 2.0 * (self.g * self.s2).sum(1) + self.count * (self.g * self.g).sum(1)) / self.count
        return value.clamp(min=0.0).cpu().numpy()


def _stream_client_grads(kernel, thetas: torch.Tensor, data: DeviceData, acc: Dissimilarity) -> None:
    """Full gradients of every client with training data at each model, a chunk of clients at a time."""
    m, p = thetas.shape
    sizes = data.train_sizes
    has_data = np.flatnonzero(sizes > 0)
    per_chunk = max(1, DISSIMILARITY_CHUNK_BYTES // max(1, 4 * p * m))
    offs = data.train_offsets
    for lo in range(0, len(has_data), per_chunk):
        clients = has_data[lo: lo + per_chunk]
        idx = torch.from_numpy(np.concatenate([np.arange(offs[c], offs[c + 1]) for c in clients])).to(thetas.device)
        counts = torch.from_numpy(sizes[clients]).to(thetas.device)
        seg = torch.repeat_interleave(torch.arange(len(clients), device=thetas.device), counts)
        acc.add(counts, segment_grads_many(kernel, thetas, data.x_train[idx], data.y_train[idx], seg, counts))


def dissimilarity(kernel, thetas: torch.Tensor, data: DeviceData) -> np.ndarray:
    """The gradient dissimilarity (:class:`Dissimilarity`) of each model thetas [M, P] on ``data``."""
    acc = Dissimilarity(thetas.shape[0], thetas.shape[1], data.train_sizes, thetas.device)
    _stream_client_grads(kernel, thetas, data, acc)
    return acc.value()


def segment_grads_many(kernel, thetas: torch.Tensor, x, y, segment, counts) -> torch.Tensor:
    """[M, S, P]: the full gradient of each of S segments' mean loss at each of M models."""
    fn = getattr(kernel, "segment_grads_many", None)
    if fn is not None:
        return fn(thetas, x, y, segment, counts)
    s = len(counts)
    return torch.stack([kernel.segment_grads(th.expand(s, -1), x, y, segment, counts) for th in thetas])
