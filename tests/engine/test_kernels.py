"""Every execution kernel against the per-client reference (autograd on the model's own loss), for every model
it can run: cohort gradients with padding, evaluation of one and of several models, full-data gradients per
segment; and the choice of kernel per (model, device)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms import FedAvg, FedProx
from fedbench.engine import local
from fedbench.engine.kernels import KERNELS, choose_kernel, kernel_names
from fedbench.models import (
    cifar_cnn,
    deltafl_emnist_cnn,
    deltafl_sent140_linear,
    deltafl_sent140_lstm,
    deltafl_shakespeare_gru,
    fedprox_sent140_lstm,
    fedprox_shakespeare_lstm,
    leaf_femnist_cnn,
    mclr,
    scaffold_mlp,
)
from fedbench.models.mean_estimation import mean_estimation
from fedbench.models.quadratics import diagonal_quadratics, scalar_quadratics
from fedbench.seeding import torch_generator
from tests.rounding import two_evaluations_bound, unit_roundoff

pytestmark = pytest.mark.numerics  # kernels against autograd: rerun under every kernel path (make test-kernel-paths)

CLASSES = 4
VOCAB, STEPS = 6, 5  # token models: a vocabulary of 6 ids (the frozen tables have 6 rows), sequences of 5 steps
GRAY_28 = ("deltafl_emnist_cnn", "leaf_femnist_cnn")


def _inputs(model, n: int, g: torch.Generator, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    if model.input_dtype == torch.int64:  # token ids; sigmoid models take labels 0/1
        x = torch.randint(0, VOCAB, (n, STEPS), generator=g)
        y = torch.randint(0, 2 if model.loss == "sigmoid_ce" else CLASSES, (n,), generator=g)
        return x, y
    if model.name == "cifar_cnn":
        x = torch.randn(n, 3, 32, 32, generator=g, dtype=dtype)
    elif model.name in GRAY_28:
        x = torch.randn(n, 1, 28, 28, generator=g, dtype=dtype)
    elif model.name == "scalar_quadratics":
        x = torch.cat([torch.rand(n, 1, generator=g, dtype=dtype) + 0.5, torch.randn(n, 1, generator=g, dtype=dtype)], 1)
    elif model.name == "diagonal_quadratics":
        d = model.config[0]
        x = torch.cat([torch.rand(n, d, generator=g, dtype=dtype) + 0.5, torch.randn(n, d, generator=g, dtype=dtype)], 1)
    else:
        x = torch.randn(n, model.config[0], generator=g, dtype=dtype) * 2
    y = torch.randint(0, 2 if model.loss == "sigmoid_ce" else CLASSES, (n,), generator=g)
    return x, y


_TABLE = torch.randn(VOCAB, 7, generator=torch.Generator().manual_seed(11))  # a small frozen word table
MODELS = {
    "mclr": mclr(5, CLASSES),
    "mclr_no_bias": mclr(5, CLASSES, bias=False),
    "cifar_cnn": cifar_cnn(3, CLASSES),
    "mean_estimation": mean_estimation(3, 0.5),
    "quadratics": diagonal_quadratics(3),
    "scalar_quadratics": scalar_quadratics(0.5),
    "fedprox_shakespeare_lstm": fedprox_shakespeare_lstm(VOCAB),
    "fedprox_sent140_lstm": fedprox_sent140_lstm(_TABLE),
    "deltafl_emnist_cnn": deltafl_emnist_cnn(CLASSES),
    "deltafl_sent140_linear": deltafl_sent140_linear(5),
    "deltafl_sent140_lstm": deltafl_sent140_lstm(_TABLE),
    "deltafl_shakespeare_gru": deltafl_shakespeare_gru(VOCAB),
    "scaffold_mlp": scaffold_mlp(5, CLASSES, hidden=8),
    "leaf_femnist_cnn": leaf_femnist_cnn(CLASSES, dense=16),  # FedProxVR's CNN is this network at dense 512
}
CASES = [(m, k) for m, model in MODELS.items() for k in kernel_names(model)]


def _reduction_length(model, x: torch.Tensor) -> int:
    """n of tests/rounding.py for a gradient on the batch ``x``: the sums along its chain, each weight's longer
    side (its fan-in in the forward product, its fan-out in the backward one; a convolution's kernel window
    included), plus the sum of its gradient over the samples and the positions it is shared by (pixels of an
    image, steps of a sequence)."""
    fans = [max(s.numel // s.shape[0], s.numel // s.shape[1]) for s in model.layout if len(s.shape) >= 2]
    if x.dtype == torch.int64:
        positions = x.shape[1]  # token ids: one recurrence step per position
    else:
        positions = x[0, 0].numel() if x.dim() > 2 else 1  # an image's pixels, or a vector's one position
    return sum(fans) + x.shape[0] * positions


def _per_sample_scale(model, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, reduce=torch.mean) -> float:
    """sum|terms| of the batch mean of per-sample gradients, the largest over the gradient's elements: max_j
    mean_s |g_sj| (float64, so that the scale itself carries no rounding of the dtype under test); with
    ``reduce=torch.amax``, max_j max_s |g_sj|, which bounds the mean over any sub-batch."""
    th = theta.double()
    xs = x.double() if x.is_floating_point() else x
    model = _in_dtype(model, torch.float64)
    per_sample = torch.stack([_reference_grad(model, th, xs[s: s + 1], y[s: s + 1]) for s in range(len(y))])
    return float(reduce(per_sample.abs(), 0).max())


def _in_dtype(model, dtype):
    """The model with its frozen tensors in ``dtype`` (they enter the forward beside theta's views)."""
    if not model.frozen:
        return model
    return dataclasses.replace(model, frozen={k: v.to(dtype) for k, v in model.frozen.items()})


def _theta(model, k: int, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    base = torch.stack([model.init(torch_generator(0, -1, "init", i)) for i in range(k)]).to(dtype)
    return base + 0.1 * torch.randn(base.shape, generator=g, dtype=dtype)


def _reference_grad(model, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    th = theta.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(model.loss_fn(th, x, y), th)
    return g


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("model_name,kernel_name", CASES, ids=[f"{m}-{k}" for m, k in CASES])
def test_cohort_gradient_equals_per_client_autograd_with_padding(model_name, kernel_name, dtype):
    model = _in_dtype(MODELS[model_name], dtype)
    kernel = KERNELS[kernel_name](model)
    g = torch.Generator().manual_seed(1)
    k, b = 3, 4
    x, y = _inputs(model, k * b, g, dtype)
    x, y = x.view(k, b, *x.shape[1:]), y.view(k, b)
    valid = torch.tensor([[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 1, 0]], dtype=torch.bool)
    w = valid.to(dtype) / valid.sum(1, keepdim=True).to(dtype)
    theta = _theta(model, k, dtype)
    flat = kernel.prepare(x.reshape(k * b, *x.shape[2:]))
    xp = flat.view(k, b, *flat.shape[1:])
    copies = [t.clone() for t in (theta, xp, y, w)]
    got = kernel.grad(theta, *kernel.batch(xp, y, w))
    assert got.shape == theta.shape and got.abs().max() > 1e-4
    for t, c in zip((theta, xp, y, w), copies):
        assert torch.equal(t, c)  # inputs untouched
    # the kernel and autograd evaluate the same sums in another order (batched, blocked per instruction set): they
    # differ by at most twice the rounding bound of tests/rounding.py, for the client's own sums and scale
    bounds = []
    for i in range(k):
        xi, yi = x[i][valid[i]], y[i][valid[i]]
        want = _reference_grad(model, theta[i], xi, yi)
        bounds.append(two_evaluations_bound(_reduction_length(model, x[i]), _per_sample_scale(model, theta[i], xi, yi),
                                            dtype))
        torch.testing.assert_close(got[i], want, rtol=0, atol=bounds[i])
    # padding slots carry junk that must not matter (a padded slot's weight is 0, so its terms are exact zeros: at
    # most a change of summation order, within the same bound)
    junk_x = torch.where(valid.view(k, b, *[1] * (xp.dim() - 2)), xp, torch.full_like(xp, 3.0))
    junk_y = torch.where(valid, y, (y + 1) % CLASSES)
    torch.testing.assert_close(kernel.grad(theta, *kernel.batch(junk_x, junk_y, w)), got, rtol=0, atol=max(bounds))


@pytest.mark.parametrize("model_name,kernel_name", CASES, ids=[f"{m}-{k}" for m, k in CASES])
def test_evaluation_and_full_gradients_equal_the_reference(model_name, kernel_name):
    model = _in_dtype(MODELS[model_name], torch.float64)
    kernel = KERNELS[kernel_name](model)
    g = torch.Generator().manual_seed(2)
    segment = torch.tensor([0, 1, 0, 3, 3, 1, 0, 3, 1, 1, 0])  # interleaved; segment 2 is empty
    counts = torch.bincount(segment, minlength=4)
    x, y = _inputs(model, len(segment), g, torch.float64)
    theta = _theta(model, 4, torch.float64)
    # one model, and several at once (the runs of a stack): equal to the model's own forward and loss
    losses, correct = kernel.per_example(theta[0], x, y)
    out = model.forward(theta[0], x)
    torch.testing.assert_close(losses, model.example_losses(out, y), rtol=0, atol=1e-10)
    many, many_correct = kernel.per_example(theta, x, y)
    assert many.shape == (4, len(y))
    for m in range(4):
        one, one_correct = kernel.per_example(theta[m], x, y)
        torch.testing.assert_close(many[m], one, rtol=0, atol=1e-12)
        assert torch.equal(many_correct[m], one_correct) or model.loss in ("squared", "value")  # no accuracy (nan)
    grads = kernel.segment_grads(theta, x, y, segment, counts)
    seg_losses = kernel.segment_losses(theta, x, y, segment, counts)
    shared_losses = kernel.segment_losses(theta[0], x, y, segment, counts)
    for s in range(4):
        rows = segment == s
        if rows.any():
            torch.testing.assert_close(grads[s], _reference_grad(model, theta[s], x[rows], y[rows]), rtol=0, atol=1e-10)
            torch.testing.assert_close(seg_losses[s], model.loss_fn(theta[s], x[rows], y[rows]), rtol=0, atol=1e-10)
            torch.testing.assert_close(shared_losses[s], model.loss_fn(theta[0], x[rows], y[rows]), rtol=0, atol=1e-10)
        else:
            assert not grads[s].any() and seg_losses[s] == 0
    from fedbench.engine.metrics import segment_grads_many

    per_model = segment_grads_many(kernel, theta[:2], x, y, segment, counts)
    for m in range(2):
        torch.testing.assert_close(per_model[m], kernel.segment_grads(theta[m].expand(4, -1), x, y, segment, counts),
                                   rtol=0, atol=1e-10)


@pytest.mark.parametrize("model_name,kernel_name", CASES, ids=[f"{m}-{k}" for m, k in CASES])
def test_engine_local_work_equals_the_reference_loop(model_name, kernel_name):
    """Unequal steps (3, 2, 1) and partial batches, FedProx's proximal step: run_vectorized with the kernel
    against the per-client autograd loop."""
    model = MODELS[model_name]
    kernel = KERNELS[kernel_name](model)
    g = torch.Generator().manual_seed(3)
    x, y = _inputs(model, 12, g, torch.float32)
    batches = torch.tensor([[0, 1, 2], [3, 4, 5], [6, -1, -1], [7, 8, 9], [10, -1, -1], [11, 0, 4]])
    steps = np.array([3, 2, 1])
    data = local.CohortData(x=x, y=y, x_prepared=kernel.prepare(x), batches=batches, starts=np.array([0, 3, 5]),
                            steps=steps)
    theta0 = model.init(torch_generator(0, -1, "init"))
    # Each step theta <- theta - lr (g + mu (theta - theta0)) evaluates g in another order on the two paths (within
    # the bound of tests/rounding.py for a batch of 3, at the largest per-sample gradient, which bounds every batch
    # mean of |terms|) and rounds the update (2 u (|theta| + lr |step|), |step| <= 2 max|g_s|: the gradient plus
    # FedProx's mu |theta - theta0| <= 0.5 * 3 lr max|g_s|). To first order in u and with lr L <= 1 (L the
    # gradient's Lipschitz constant), a difference carried into a later step at most doubles there: over 3 steps
    # the differences add up to at most (1 + 2 + 4) times one step's.
    lr, n_steps = 0.1, int(steps.max())
    per_sample = _per_sample_scale(model, theta0, x, y, reduce=torch.amax)
    one_step = (lr * two_evaluations_bound(_reduction_length(model, x[:3]), per_sample, torch.float32)
                + 2 * unit_roundoff(torch.float32) * (float(theta0.abs().max()) + 2 * lr * per_sample))
    for alg in (FedAvg(lr=lr), FedProx(lr=lr, mu=0.5)):
        bcast = alg.broadcast(alg.init(theta0, 3))
        start = theta0.expand(3, -1).clone()
        vec = local.run_vectorized(alg, kernel, bcast, start.clone(), data)
        ref = local.run_reference(alg, model, bcast, start.clone(), data)
        torch.testing.assert_close(vec, ref, rtol=0, atol=(2**n_steps - 1) * one_step)
        assert float((vec - start).abs().max()) > 1e-4


def test_kernel_choice_per_model_and_device():
    assert choose_kernel(mclr(5, 3), "cpu").name == "mclr"
    assert choose_kernel(cifar_cnn(), "cpu").name == "loop"
    assert choose_kernel(mean_estimation(2), "cpu").name == "quadratic"
    assert choose_kernel(scalar_quadratics(1.0), "cuda").name == "quadratic"
    assert choose_kernel(mean_estimation(2), "cpu", "vmap").name == "vmap"
    assert choose_kernel(mclr(5, 3), "cpu", "vmap").name == "vmap"
    with pytest.raises(ValueError, match="kernel 'mclr' cannot run model cifar_cnn; allowed: auto, vmap, loop"):
        choose_kernel(cifar_cnn(), "cpu", "mclr")
    with pytest.raises(ValueError, match="kernel 'fast' is not known"):
        choose_kernel(mclr(5, 3), "cpu", "fast")


def test_rnn_kernel_runs_exactly_the_recurrent_models():
    recurrent = {"fedprox_shakespeare_lstm", "fedprox_sent140_lstm", "deltafl_sent140_lstm", "deltafl_shakespeare_gru"}
    assert {name for name, model in MODELS.items() if "rnn" in kernel_names(model)} == recurrent
    for name in recurrent:  # on the CPU the loop stays the default (measured faster for the large LSTMs)
        assert choose_kernel(MODELS[name], "cpu").name == "loop"
        assert choose_kernel(MODELS[name], "cpu", "rnn").name == "rnn"
    with pytest.raises(ValueError, match="kernel 'rnn' cannot run model cifar_cnn; allowed: auto, vmap, loop"):
        choose_kernel(cifar_cnn(), "cpu", "rnn")
    with pytest.raises(ValueError, match="the rnn kernel runs the sequence classifiers"):
        KERNELS["rnn"](cifar_cnn())


def _copy_rows_into(module: torch.nn.Module, model, theta_row: torch.Tensor) -> torch.nn.Module:
    """A real module (float64) holding one row's parameters and the model's frozen tensors, copied by name."""
    values = {**model.unflatten(theta_row), **model.frozen}
    with torch.no_grad():
        for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
            tensor.copy_(values[name])
    return module


@pytest.mark.parametrize("cell,layers", [("LSTM", 2), ("GRU", 2), ("LSTM", 1), ("GRU", 1)])
def test_batched_recurrence_equals_nn_lstm_and_nn_gru_with_copied_weights(cell, layers):
    """The rnn kernel's forward over K stacked rows against torch's own nn.LSTM / nn.GRU (a stock module, with
    its two biases), each row's weights copied in; and the single-bias TF LSTM against nn.LSTM with b_hh set to
    the frozen constant."""
    from fedbench.models.recurrent import SequenceClassifier, single_bias_lstm
    from fedbench.models.spec import Model

    def stock() -> torch.nn.Module:
        rnn_cls = torch.nn.LSTM if cell == "LSTM" else torch.nn.GRU
        return SequenceClassifier(rnn_cls(3, 5, layers, batch_first=True), [torch.nn.Linear(5, 4), torch.nn.Linear(4, 2)],
                                  embedding=torch.nn.Embedding(VOCAB, 3)).double()

    variants = [(Model(name="x", config=(), module=stock(), loss="softmax_ce"), stock)]
    if cell == "LSTM":
        lstm, frozen = single_bias_lstm(3, 5, layers, forget_bias=1.0)
        tf_style = SequenceClassifier(lstm, [torch.nn.Linear(5, 4, device="meta"), torch.nn.Linear(4, 2, device="meta")],
                                      embedding=torch.nn.Embedding(VOCAB, 3, device="meta"))
        frozen = {f"rnn.{k}": v.double() for k, v in frozen.items()}
        variants.append((Model(name="y", config=(), module=tf_style, loss="softmax_ce", frozen=frozen), stock))
    g = torch.Generator().manual_seed(4)
    x = torch.randint(0, VOCAB, (3, 4, 6), generator=g)  # K = 3 rows, 4 sequences each, 6 steps
    for model, make in variants:
        kernel = KERNELS["rnn"](model)
        theta = torch.randn(3, model.num_params, generator=g, dtype=torch.float64) * 0.5
        params = {s.name: theta[:, s.offset: s.offset + s.numel].view(3, *s.shape) for s in model.layout}
        out = kernel.forward(params, x)
        assert out.shape == (3, 4, 2)
        for k in range(3):
            module = _copy_rows_into(make(), model, theta[k])
            torch.testing.assert_close(out[k], module(x[k]), rtol=0, atol=1e-12)


def _flat_row_grad(model, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The per-client loop as it was before issue 20: autograd with respect to each flat row theta[k]."""
    out = torch.empty_like(theta)
    for k in range(theta.shape[0]):
        keep = w[k] > 0
        th = theta[k].detach().requires_grad_(True)
        (out[k],) = torch.autograd.grad(model.weighted_loss(th, x[k][keep], y[k][keep], w[k][keep]), th)
    return out


@pytest.mark.parametrize("per_tensor", [False, True], ids=["concatenated", "per-tensor"])
@pytest.mark.parametrize("model_name", list(MODELS))
def test_loop_gradient_is_bit_identical_to_differentiating_the_flat_row(model_name, per_tensor, monkeypatch):
    """The loop differentiates the module's tensors, not the flat row (4x faster on the FEMNIST CNN): the same
    bits, padded or not, whichever way the row is written."""
    import fedbench.engine.kernels.loop as loop

    monkeypatch.setattr(loop, "PER_TENSOR_PLACING", 0 if per_tensor else 2**62)
    model = MODELS[model_name]
    kernel = KERNELS["loop"](model)
    g = torch.Generator().manual_seed(5)
    k, b = 3, 4
    x, y = _inputs(model, k * b, g, torch.float32)
    x, y = x.view(k, b, *x.shape[1:]), y.view(k, b)
    theta = _theta(model, k, torch.float32)
    full = torch.full((k, b), 1 / b)
    padded = torch.tensor([[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 1, 0]], dtype=torch.float32)
    padded = padded / padded.sum(1, keepdim=True)
    for w in (full, padded):
        got, want = kernel.grad(theta, x, y, w), _flat_row_grad(model, theta, x, y, w)
        assert torch.equal(got.view(torch.int32), want.view(torch.int32))  # signed zeros included


@pytest.mark.parametrize("per_tensor", [False, True], ids=["concatenated", "per-tensor"])
def test_loop_places_negative_zero_gradients_as_the_flat_row_sum_does(per_tensor, monkeypatch):
    """-0.0 in a tensor's gradient: the flat row's gradient sums the slices' zero-padded gradients, so it reads
    +0.0 when two tensors get a gradient and -0.0 when only one does; the loop writes the same."""
    import fedbench.engine.kernels.loop as loop
    from fedbench.models.spec import Model

    monkeypatch.setattr(loop, "PER_TENSOR_PLACING", 0 if per_tensor else 2**62)

    class TwoTensors(torch.nn.Module):
        def __init__(self, use_b: bool) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Parameter(torch.zeros(1, 3)), torch.nn.Parameter(torch.zeros(1, 2))
            self.use_b = use_b

        def forward(self, x):  # one sample: d/da = x exactly, -0.0 where x is -0.0 (no sum over samples)
            out = (x[:, :3] * self.a).sum(1, keepdim=True)
            return out + (x[:, 3:] * self.b).sum(1, keepdim=True) if self.use_b else out

    x = torch.tensor([[[-0.0, 1.0, -2.0, -0.0, 3.0]]])  # one client, one sample
    y, w, theta = torch.zeros(1, 1), torch.ones(1, 1), torch.ones(1, 5)
    for use_b, a_zero_sign in ((True, False), (False, True)):
        model = Model(name="two", config=(use_b,), module=TwoTensors(use_b), loss="value")
        got = KERNELS["loop"](model).grad(theta, x, y, w)
        want = _flat_row_grad(model, theta, x, y, w)
        assert torch.equal(got.view(torch.int32), want.view(torch.int32))
        assert bool(torch.signbit(got[0, 0])) is a_zero_sign  # -0.0 survives only when one tensor gets a gradient
        if use_b:  # vmap assumes every tensor enters the loss (fedbench.engine.kernels.vmap): the same bits then
            monkeypatch.setattr(loop, "PER_TENSOR_PLACING", 0 if per_tensor else 2**62)
            got = KERNELS["vmap"](model).grad(theta, x, y, w)
            assert torch.equal(got.view(torch.int32), want.view(torch.int32))


def test_cpu_kernels_keep_freed_host_memory():
    """Choosing a kernel for the CPU asks glibc to keep freed memory (fedbench.engine.kernels.host_memory);
    the setting holds for the process (Linux with glibc, as CI and the project's machines)."""
    import platform

    from fedbench.engine.kernels import host_memory

    choose_kernel(cifar_cnn(), "cpu")
    assert host_memory.keep_freed_memory() is (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")
    host_memory.release_freed_memory()  # hands free heap memory back; callable at any time


def test_measured_choice_is_the_fastest_kernel_never_slower_than_the_loop():
    from fedbench.engine.kernels.measured import MEASURED, fastest, table_from_cases

    both = ["loop", "vmap", "rnn"]
    assert fastest({10: {"loop": 100.0, "vmap": 150.0}, 100: {"loop": 100.0, "vmap": 120.0}}, both) == "vmap"
    # faster on average but slower than the loop at one cohort: not chosen
    assert fastest({10: {"loop": 100.0, "vmap": 400.0}, 100: {"loop": 100.0, "vmap": 99.0}}, both) == "loop"
    # the larger geometric-mean gain wins; a kernel measured at one cohort only is not a candidate
    assert fastest({10: {"loop": 1.0, "vmap": 2.0, "rnn": 1.5}, 100: {"loop": 1.0, "vmap": 1.1, "rnn": 1.5}}, both) == "rnn"
    assert fastest({10: {"loop": 1.0, "vmap": 3.0}, 100: {"loop": 1.0}}, both) == "loop"
    assert fastest({10: {"loop": 1.0, "vmap": 3.0}}, ["loop"]) == "loop"  # not allowed for the model
    assert fastest({10: {"vmap": 3.0}}, both) is None and fastest({}, both) is None  # no loop measured
    for (name, device), measured in MEASURED.items():
        chosen = fastest(measured, measured[next(iter(measured))])
        assert all(by_kernel[chosen] >= by_kernel["loop"] for by_kernel in measured.values()), (name, device)
    assert choose_kernel(leaf_femnist_cnn(), "cpu").name == fastest(MEASURED["leaf_femnist_cnn", "cpu"], ["loop", "vmap"])
    case = {"model": "cifar_cnn", "device": "cuda:0", "cohort": 10, "kernels": {"loop": {"samples_per_s": 5.04},
                                                                                "vmap": {"samples_per_s": 7.0}}}
    assert table_from_cases([case]) == {"cifar_cnn/cuda": {"10": {"loop": 5.0, "vmap": 7.0}}}


@pytest.mark.parametrize("per_tensor", [False, True], ids=["concatenated", "per-tensor"])
@pytest.mark.parametrize("model_name", [m for m, model in MODELS.items() if "vmap" in kernel_names(model)])
def test_vmap_gradient_is_bit_identical_to_differentiating_the_flat_rows(model_name, per_tensor, monkeypatch):
    """vmap differentiates the module's tensors and concatenates them, or (a large model) writes each tensor's
    gradient into its columns (issue 20): the same bits as vmap over the gradient of each flat row, as before."""
    from torch.func import grad, vmap

    import fedbench.engine.kernels.loop as loop

    monkeypatch.setattr(loop, "PER_TENSOR_PLACING", 0 if per_tensor else 2**62)
    model = MODELS[model_name]
    g = torch.Generator().manual_seed(6)
    k, b = 3, 4
    x, y = _inputs(model, k * b, g, torch.float32)
    x, y = x.view(k, b, *x.shape[1:]), y.view(k, b)
    theta = _theta(model, k, torch.float32)
    w = torch.tensor([[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 1, 0]], dtype=torch.float32)
    w = w / w.sum(1, keepdim=True)
    got = KERNELS["vmap"](model).grad(theta, x, y, w)
    want = vmap(grad(model.weighted_loss))(theta, x, y, w)
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))
