"""Evaluation of the global model (FedProx appendix C.2 and its code); what is evaluated and when is declared in
fedbench.engine.evaluation (by default every device, every round). A split may be read on a subset of its samples.

- ``train/loss``: the global objective f(w) = sum_k n_k F_k(w) / n over all devices' training data.
- ``test/accuracy``: pooled, sum of correct / sum of test samples over all devices.
- ``global_test/loss``, ``global_test/accuracy``: pooled over the dataset's global test set (owned by no device).
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

import fedbench.engine.kernels.generic as generic
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
    """A dataset's arrays as tensors on the compute device, with per-sample client ids; the global test set
    (owned by no client) where the dataset has one."""

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
    x_global: torch.Tensor | None = None
    y_global: torch.Tensor | None = None
    test_offsets: np.ndarray | None = None

    @property
    def train_sizes(self) -> np.ndarray:
        return np.diff(self.train_offsets)

    @property
    def test_sizes(self) -> np.ndarray:
        return self.n_test.cpu().numpy() if self.test_offsets is None else np.diff(self.test_offsets)

    @staticmethod
    def build(ds: FederatedDataset, device: torch.device) -> DeviceData:
        def seg(sizes: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.repeat(np.arange(len(sizes)), sizes)).to(device)

        glob = ds.global_test
        return DeviceData(  # model_inputs: stored arrays (uint8 pixels, int ids) -> what the model consumes
            x_train=torch.from_numpy(model_inputs(ds, "train")).to(device), y_train=torch.from_numpy(ds.train.y).to(device),
            seg_train=seg(ds.train.sizes), n_train=torch.from_numpy(ds.train.sizes).to(device),
            x_test=torch.from_numpy(model_inputs(ds, "test")).to(device), y_test=torch.from_numpy(ds.test.y).to(device),
            seg_test=seg(ds.test.sizes), n_test=torch.from_numpy(ds.test.sizes).to(device),
            train_offsets=ds.train.offsets, num_clients=ds.num_clients, num_classes=ds.num_classes,
            x_global=None if glob is None else torch.from_numpy(model_inputs(ds, "global_test")).to(device),
            y_global=None if glob is None else torch.from_numpy(glob.y).to(device),
            test_offsets=ds.test.offsets,
        )


NAN = float("nan")
DEFAULT_SPLITS = ("train", "test")


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of a global model: the metrics of the splits in ``splits`` (the others NaN), the gradient
    dissimilarity where ``with_dissimilarity``, and per-device values (NaN for a device not evaluated)."""

    train_loss: float
    train_accuracy: float
    test_loss: float
    test_accuracy: float
    dissimilarity: float
    device_train_loss: np.ndarray  # [N]
    device_test_accuracy: np.ndarray  # [N], NaN for devices without (evaluated) test data
    global_test_loss: float = NAN
    global_test_accuracy: float = NAN
    splits: tuple[str, ...] = DEFAULT_SPLITS
    with_dissimilarity: bool = True

    def scalars(self) -> dict[str, float]:
        """The evaluated metrics, by name (with train and test: the six columns the main job has always had,
        train/dissimilarity NaN in rounds without it)."""
        out: dict[str, float] = {}
        if "train" in self.splits:
            out |= {"train/loss": self.train_loss, "train/accuracy": self.train_accuracy}
        if "test" in self.splits:
            out |= {"test/loss": self.test_loss, "test/accuracy": self.test_accuracy}
        if "train" in self.splits or self.with_dissimilarity:
            out["train/dissimilarity"] = self.dissimilarity
        if "test" in self.splits:
            acc = self.device_test_accuracy[np.isfinite(self.device_test_accuracy)]
            out["test/error_p90"] = float(np.percentile(1.0 - acc, 90)) if len(acc) else NAN
        if "global_test" in self.splits:
            out |= {"global_test/loss": self.global_test_loss, "global_test/accuracy": self.global_test_accuracy}
        return out


def _segment_mean(values: torch.Tensor, seg: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` [..., n] over each segment (float64 [..., M]); NaN for an empty segment."""
    lead = values.shape[:-1]
    total = torch.zeros(*lead, len(counts), dtype=torch.float64, device=values.device)
    total.index_add_(values.dim() - 1, seg, values.double())
    mean = total / counts.double().clamp(min=1)
    return torch.where(counts > 0, mean, torch.full_like(mean, float("nan")))


@torch.no_grad()
def evaluate(kernel, theta: torch.Tensor, data: DeviceData, with_dissimilarity: bool = True, **how) -> Evaluation:
    """The global model theta [P] on ``data`` (every device by default; ``how``: as :func:`evaluate_many`)."""
    return evaluate_many(kernel, theta.unsqueeze(0), data, with_dissimilarity, **how)[0]


def _mean(values: torch.Tensor) -> torch.Tensor:
    """The mean of ``values`` [n] in float64, on its device (NaN for none)."""
    return values.double().mean() if values.shape[-1] else torch.full((), NAN, dtype=torch.float64, device=values.device)


@torch.no_grad()
def evaluate_many(kernel, thetas: torch.Tensor, data: DeviceData, with_dissimilarity: bool = True, *,
                  splits: tuple[str, ...] = DEFAULT_SPLITS,
                  samples: dict[str, np.ndarray] | list[dict[str, np.ndarray]] | None = None,
                  dissimilarity_idx: np.ndarray | list[np.ndarray] | None = None) -> list[Evaluation]:
    """Several global models thetas [M, P] on the same data (the runs of a stack), in one pass where the kernel
    evaluates several models at once. ``splits``: which of "train", "test", "global_test"; ``samples``: for a
    split, the sorted indices of the samples to read (absent: all), one dict for every model or a list of one
    dict per model (each run's own seeded sample: every model is evaluated on the union of the samples in one
    pass, and each reads its own; per-sample values do not depend on the other samples of the pass, so each
    model's metrics are those of its own pass); ``dissimilarity_idx``: the sorted indices of the training samples
    each client's gradient is taken on (None: all; a list: each model's own, one segmented backward for all). Every model's metrics are read back to the host in one read
    (fedbench.engine.host_sync), each computed as it would be alone."""
    m, n_dev = thetas.shape[0], data.num_clients
    per_model = samples if isinstance(samples, list) else [samples or {}] * m
    if len(per_model) != m:
        raise ValueError(f"evaluate_many: {len(per_model)} sample plans for {m} models")
    none = torch.full((m, n_dev), NAN, dtype=torch.float64, device=thetas.device)
    acc = Dissimilarity(m, thetas.shape[1], data.train_sizes, thetas.device) if with_dissimilarity else None
    fused = getattr(kernel, "train_eval", None)
    train_idx = [s.get("train") for s in per_model]
    streamed = acc is None
    loss_tr = correct_tr = None
    if "train" in splits and all(i is None for i in train_idx) and fused is not None:
        # the kernel's own pass: losses and client gradients from the same logits
        full_grads = dissimilarity_idx is None
        loss_tr, correct_tr = fused(thetas, data.x_train, data.y_train, data.train_offsets, acc if full_grads else None)
        streamed = streamed or full_grads
    elif "train" in splits:
        loss_tr, correct_tr = _per_example_each(kernel, thetas, data.x_train, data.y_train, train_idx)
    if not streamed:
        _stream_client_grads(kernel, thetas, data, acc, dissimilarity_idx)
    dev_loss = none
    if loss_tr is not None:
        dev_loss = _device_means(loss_tr, data.seg_train, data.n_train, train_idx, n_dev)
    loss_te = correct_te = None
    dev_acc = none
    if "test" in splits:
        test_idx = [s.get("test") for s in per_model]
        loss_te, correct_te = _per_example_each(kernel, thetas, data.x_test, data.y_test, test_idx)
        dev_acc = _device_means(correct_te, data.seg_test, data.n_test, test_idx, n_dev)
    loss_gl = correct_gl = None
    if "global_test" in splits:
        if data.x_global is None:
            raise ValueError("evaluations: the dataset has no global_test split")
        gl_idx = [s.get("global_test") for s in per_model]
        loss_gl, correct_gl = _per_example_each(kernel, thetas, data.x_global, data.y_global, gl_idx)
    nan = torch.full((), NAN, dtype=torch.float64, device=thetas.device)
    columns = (loss_tr, correct_tr, loss_te, correct_te, loss_gl, correct_gl)
    scalars = torch.stack([torch.stack([nan if v is None else _mean(v[i]) for v in columns]) for i in range(m)])
    dissim = acc.value_tensor() if acc is not None else torch.full((m,), NAN, dtype=torch.float64,
                                                                     device=thetas.device)
    read = torch.cat([scalars, dissim.unsqueeze(1), dev_loss, dev_acc], dim=1).cpu().numpy()  # the one read
    out = []
    for row in read:
        (tr_loss, tr_acc, te_loss, te_acc, gl_loss, gl_acc), rest = row[:6].tolist(), row[6:]
        out.append(Evaluation(
            train_loss=tr_loss, train_accuracy=tr_acc, test_loss=te_loss, test_accuracy=te_acc,
            dissimilarity=float(rest[0]), device_train_loss=rest[1:1 + n_dev], device_test_accuracy=rest[1 + n_dev:],
            global_test_loss=gl_loss, global_test_accuracy=gl_acc,
            splits=tuple(s for s in ("train", "test", "global_test") if s in splits),
            with_dissimilarity=with_dissimilarity,
        ))
    return out


def _device_means(values, seg: torch.Tensor, counts: torch.Tensor, idx: list[np.ndarray | None],
                  n_dev: int) -> torch.Tensor:
    """[M, N] each model's per-device mean of ``values`` over its own samples, on the device: one segment sum for all
    models where they read the same samples (a tensor [M, n]), else one per model (a list)."""
    if isinstance(values, torch.Tensor):
        return _segment_mean(values, *_segments(seg, counts, idx[0], n_dev))
    return torch.stack([_segment_mean(v, *_segments(seg, counts, i, n_dev)) for v, i in zip(values, idx)])


def _per_example_each(kernel, thetas: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                      idx: list[np.ndarray | None]):
    """Per-example losses and correctness of each model thetas[i] on its own samples ``idx[i]`` (None: all), in one
    pass: on the split (or the one sample every model shares), else on the union of the samples, each model then
    reading its own columns. Returns [M, n] tensors where every model reads the same samples, else lists."""
    first = idx[0]
    if all(i is None for i in idx) or all(i is not None and np.array_equal(i, first) for i in idx):
        xs, ys = (x, y) if first is None else _take(x, y, first)
        return _per_example_many(kernel, thetas, xs, ys)
    union = np.arange(len(y)) if any(i is None for i in idx) else np.unique(np.concatenate(idx))
    xs, ys = _take(x, y, union)
    loss, correct = _per_example_many(kernel, thetas, xs, ys)
    cols = [None if i is None else torch.from_numpy(np.searchsorted(union, i)).to(loss.device) for i in idx]
    return ([loss[k] if c is None else loss[k, c] for k, c in enumerate(cols)],
            [correct[k] if c is None else correct[k, c] for k, c in enumerate(cols)])


def _take(x: torch.Tensor, y: torch.Tensor, idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.from_numpy(np.asarray(idx, dtype=np.int64)).to(x.device)
    return x[t], y[t]


def _segments(seg: torch.Tensor, counts: torch.Tensor, idx: np.ndarray | None, n_dev: int):
    """The client of each evaluated sample and each client's count of evaluated samples."""
    if idx is None:
        return seg, counts
    t = torch.from_numpy(np.asarray(idx, dtype=np.int64)).to(seg.device)
    sub = seg[t]
    return sub, torch.bincount(sub, minlength=n_dev)


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
        return self.value_tensor().cpu().numpy()

    def value_tensor(self) -> torch.Tensor:
        """[M] float64, on the device."""
        if self.count == 0:
            return torch.full_like(self.s1, float("nan"))
        value = (self.s1 - 2.0 * (self.g * self.s2).sum(1) + self.count * (self.g * self.g).sum(1)) / self.count
        return value.clamp(min=0.0)


def _stream_client_grads(kernel, thetas: torch.Tensor, data: DeviceData, acc: Dissimilarity,
                         idx: np.ndarray | list[np.ndarray] | None = None) -> None:
    """Gradients of every client with training data at each model, a chunk of clients at a time: on all its
    samples, or (``idx``, sorted training-sample indices) on its samples among ``idx``; weighted by its n_k.
    ``idx`` a list: each model's own sample (one per model), every (model, client) pair a segment of one
    segmented backward a chunk (:func:`_stream_own_samples`)."""
    if isinstance(idx, list):
        _stream_own_samples(kernel, thetas, data, acc, idx)
        return
    m, p = thetas.shape
    sizes = data.train_sizes
    has_data = np.flatnonzero(sizes > 0)
    per_chunk = max(1, DISSIMILARITY_CHUNK_BYTES // max(1, 4 * p * m))
    offs = data.train_offsets
    if idx is None:
        lo_k, hi_k, pool = offs[:-1], offs[1:], None
    else:
        pool = np.asarray(idx, dtype=np.int64)
        lo_k, hi_k = np.searchsorted(pool, offs[:-1]), np.searchsorted(pool, offs[1:])
    for lo in range(0, len(has_data), per_chunk):
        clients = has_data[lo: lo + per_chunk]
        ranges = [np.arange(lo_k[c], hi_k[c]) for c in clients]
        rows = np.concatenate(ranges) if pool is None else pool[np.concatenate(ranges)]
        idx_t = torch.from_numpy(rows).to(thetas.device)
        used = torch.from_numpy(np.array([len(r) for r in ranges], dtype=np.int64)).to(thetas.device)
        counts = torch.from_numpy(sizes[clients]).to(thetas.device)
        seg = torch.repeat_interleave(torch.arange(len(clients), device=thetas.device), used)
        acc.add(counts, segment_grads_many(kernel, thetas, data.x_train[idx_t], data.y_train[idx_t], seg, used))


def _stream_own_samples(kernel, thetas: torch.Tensor, data: DeviceData, acc: Dissimilarity,
                        idx: list[np.ndarray]) -> None:
    """:func:`_stream_client_grads` where model i takes each client's gradient on its own sample ``idx[i]`` (sorted
    training-sample indices): per chunk of clients, the M x c (model, client) segments as the rows of one
    ``kernel.segment_grads`` call at their model's parameters, instead of a pass a model."""
    m, p = thetas.shape
    sizes = data.train_sizes
    has_data = np.flatnonzero(sizes > 0)
    per_chunk = max(1, DISSIMILARITY_CHUNK_BYTES // max(1, 4 * p * m))
    offs = data.train_offsets
    pools = [np.asarray(i, dtype=np.int64) for i in idx]
    bounds = [(np.searchsorted(pool, offs[:-1]), np.searchsorted(pool, offs[1:])) for pool in pools]
    for lo in range(0, len(has_data), per_chunk):
        clients = has_data[lo: lo + per_chunk]
        rows, used = [], []
        for pool, (lo_k, hi_k) in zip(pools, bounds):
            for c in clients:
                rows.append(pool[lo_k[c]:hi_k[c]])
                used.append(hi_k[c] - lo_k[c])
        idx_t = torch.from_numpy(np.concatenate(rows)).to(thetas.device)
        used_t = torch.from_numpy(np.array(used, dtype=np.int64)).to(thetas.device)
        seg = torch.repeat_interleave(torch.arange(len(used), device=thetas.device), used_t)
        theta_rows = thetas.repeat_interleave(len(clients), dim=0)  # row (i, c): model i's parameters
        grads = kernel.segment_grads(theta_rows, data.x_train[idx_t], data.y_train[idx_t], seg, used_t)
        counts = torch.from_numpy(sizes[clients]).to(thetas.device)
        acc.add(counts, grads.view(m, len(clients), p))


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
    if thetas.device.type in generic.BATCHED_EVAL_DEVICES and thetas.shape[0] > 1:
        # one segmented backward for the M x S (model, segment) pairs, instead of a pass a model (issue 49, D5)
        m = thetas.shape[0]
        seg = (segment.unsqueeze(0) + s * torch.arange(m, device=segment.device).unsqueeze(1)).flatten()
        grads = kernel.segment_grads(thetas.repeat_interleave(s, dim=0), x.repeat(m, *[1] * (x.dim() - 1)),
                                     y.repeat(m), seg, counts.repeat(m))
        return grads.view(m, s, -1)
    return torch.stack([kernel.segment_grads(th.expand(s, -1), x, y, segment, counts) for th in thetas])
