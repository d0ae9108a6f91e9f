"""Per-round evaluation of the global model on every device (FedProx appendix C.2 and its code).

- ``train/loss``: the global objective f(w) = sum_k n_k F_k(w) / n over all devices' training data.
- ``test/accuracy``: pooled, sum of correct / sum of test samples over all devices.
- per-device training loss and test accuracy (kept so percentiles can be read, e.g. Delta-FL's p90 error).
- ``train/dissimilarity``: the variance of local gradients of Figure 2, the *unweighted* mean over all N
  devices of ||grad f(w) - grad F_k(w)||^2, with grad f the n_k-weighted mean of the full local gradients
  (the authors' code; the paper writes E_k[||grad F_k - grad f||^2]).
- divergence by appendix C.3.2: f_t - f_{t-10} > 1, or a non-finite loss.
- ``has_diverged``: the rule by which a run has diverged and stops (below).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fedbench.data.format import FederatedDataset
from fedbench.data.transforms import model_inputs

DIVERGENCE_WINDOW = 10
DIVERGENCE_JUMP = 1.0
CONVERGENCE_TOL = 1e-4
# A run has diverged, and the engine stops it, once its training loss f_t is not finite or exceeds
# DIVERGENCE_FACTOR * max(|f_0|, 1), f_0 being the loss of the initial model (round 0). The run is then a
# result (recorded diverged), not an error. From the usual initialisation a cross-entropy f_0 is about
# ln(classes) (2.3 to 3.5 on the synthetic data), so the bound is in the thousands; the largest loss of a
# normal run here is about 42 f_0 (FedDane in the Figure 4 study), 24 times below it.
DIVERGENCE_FACTOR = 1000.0


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
    """Mean of ``values`` over each segment (float64 [M]); NaN for an empty segment."""
    total = torch.zeros(len(counts), dtype=torch.float64, device=values.device)
    total.index_add_(0, seg, values.double())
    mean = total / counts.double().clamp(min=1)
    return torch.where(counts > 0, mean, torch.full_like(mean, float("nan")))


@torch.no_grad()
def evaluate(model, theta: torch.Tensor, data: DeviceData, with_dissimilarity: bool = True) -> Evaluation:
    loss_tr, correct_tr = model.per_sample(theta, data.x_train, data.y_train)
    loss_te, correct_te = model.per_sample(theta, data.x_test, data.y_test)
    dev_loss = _segment_mean(loss_tr, data.seg_train, data.n_train)
    dev_acc = _segment_mean(correct_te, data.seg_test, data.n_test)
    dissim = float("nan")
    if with_dissimilarity:
        grads = model.segment_grads(theta.expand(data.num_clients, -1), data.x_train, data.y_train,
                                    data.seg_train, data.n_train).double()
        p = data.n_train.double() / data.n_train.sum()
        global_grad = p @ grads
        has_data = data.n_train > 0  # a device without training data has no local objective
        dissim = float(((grads[has_data] - global_grad) ** 2).sum(1).mean())
    return Evaluation(
        train_loss=float(loss_tr.double().mean()),
        train_accuracy=float(correct_tr.double().mean()),
        test_loss=float(loss_te.double().mean()) if len(loss_te) else float("nan"),
        test_accuracy=float(correct_te.double().mean()) if len(correct_te) else float("nan"),
        dissimilarity=dissim,
        device_train_loss=dev_loss.cpu().numpy(),
        device_test_accuracy=dev_acc.cpu().numpy(),
    )


def has_diverged(losses: list[float]) -> bool:
    """The divergence rule (DIVERGENCE_FACTOR) on the losses f_0..f_t of the rounds so far."""
    return not np.isfinite(losses[-1]) or losses[-1] > DIVERGENCE_FACTOR * max(abs(losses[0]), 1.0)


def is_diverging(losses: list[float]) -> bool:
    """Appendix C.3.2: diverging once f_t - f_{t-10} > 1 (or the run has diverged by has_diverged)."""
    if not losses or has_diverged(losses):
        return bool(losses)
    return len(losses) > DIVERGENCE_WINDOW and losses[-1] - losses[-1 - DIVERGENCE_WINDOW] > DIVERGENCE_JUMP


def reporting_round(losses: list[float] | np.ndarray) -> tuple[int, str]:
    """The round at which FedProx appendix C.3.2 reads a method's accuracy: the first round that has
    converged (|f_t - f_{t-1}| < 1e-4), or has started to diverge (f_t - f_{t-10} > 1), or the last one;
    or the round at which the run diverged (has_diverged), reason "diverged"."""
    losses = list(map(float, losses))
    if not losses:
        raise ValueError("reporting_round needs at least one evaluated round")
    if has_diverged(losses[:1]):
        return 0, "diverged"
    for t in range(1, len(losses)):
        if has_diverged(losses[: t + 1]):
            return t, "diverged"
        if abs(losses[t] - losses[t - 1]) < CONVERGENCE_TOL:
            return t, "converged"
        if is_diverging(losses[: t + 1]):
            return t, "diverging"
    return len(losses) - 1, "round budget"
