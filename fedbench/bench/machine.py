"""What the machine can do, measured in the same run as the benchmark, and the floor it puts under a workload.

- :func:`measure_machine`: the peak float32 matmul rate (FLOP/s, 2 per multiply-add) of one large square
  product, and the memory bandwidth of one large copy (bytes read + written per second), on the device with
  the torch threads the benchmark runs with (one by default: per-core figures). Best of a few repeats: a
  peak is what the machine reaches, not what it averages while other jobs share it. On CUDA the product
  runs with torch's matmul precision setting (full float32 by default, no TF32), while cuDNN convolutions
  use TF32 by default, so a CNN can run faster than its "floor" there (the report says so).
- :func:`train_flops_per_sample`: the FLOPs of one training sample of a model (forward and the gradient of
  the weights), counted by ``torch.utils.flop_counter`` on one minibatch on the CPU, plus an analytic count
  for recurrent layers, which the counter does not see (``aten::lstm`` on the CPU is one opaque operation):
  a recurrent layer's forward is T x gates x H x (I + H) multiply-adds per sample, its training 3x that
  (forward, and the gradients of weights and inputs).
- :func:`flop_counter`: ``FlopCounterMode`` with a convolution's weight gradient counted per group. torch 2.13's
  formula for ``aten.convolution_backward`` ignores ``groups`` in the weight gradient and so counts a grouped
  convolution's dW G times (pytorch/pytorch#183405 divides it by groups upstream). vmap runs a convolution over R
  rows' own weights as one convolution of R groups, so torch's counter made the CIFAR CNN's static step look like
  1.37x its training FLOPs at 2 rows (2.11x at 4) when it executes 1.000x (fedbench.bench.step_launches).
- :class:`Floor`: no implementation can be faster than max(FLOPs / peak, bytes of weights moved /
  bandwidth); the arithmetic is kept so that reports show it.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, conv_flop_count

from fedbench.models.spec import Model
from fedbench.seeding import torch_generator

FLOAT_BYTES = 4  # float32 weights


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass(frozen=True)
class Machine:
    device: str
    threads: int
    matmul_size: int  # n of the n x n @ n x n float32 product timed
    peak_flops: float  # FLOP/s
    copy_bytes: int  # bytes of the tensor copied
    bandwidth: float  # bytes/s (read + written)

    def as_dict(self) -> dict:
        return asdict(self)


def measure_machine(device: torch.device, quick: bool = False) -> Machine:
    """Peak matmul FLOP/s and copy bandwidth of ``device`` with the current torch threads."""
    if device.type == "cuda":
        n, copy_floats = 8192, 2**28  # 1 GiB copied
    else:
        n, copy_floats = (512, 2**24) if quick else (1024, 2**26)  # 64 MiB or 256 MiB copied
    g = torch_generator(0, -1, "data", 99)
    a = torch.randn(n, n, generator=g).to(device)
    b = torch.randn(n, n, generator=g).to(device)
    peak = 2.0 * n**3 / best_time(lambda: torch.mm(a, b), device, repeats=3 if quick else 5)
    src = torch.ones(copy_floats, device=device)
    dst = torch.empty_like(src)
    bandwidth = 2.0 * src.numel() * src.element_size() / best_time(lambda: dst.copy_(src), device, repeats=3 if quick else 5)
    return Machine(device=str(device), threads=torch.get_num_threads(), matmul_size=n, peak_flops=peak,
                   copy_bytes=src.numel() * src.element_size(), bandwidth=bandwidth)


def best_time(fn, device: torch.device, repeats: int) -> float:
    """Fastest of ``repeats`` timed calls after one warm-up call."""
    fn()
    sync(device)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return best


def synthetic_inputs(model: Model, feature_shape: tuple[int, ...], num_classes: int, n: int,
                     generator: torch.Generator, vocabulary: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Random inputs of a model's input shape and dtype, and labels: float features N(0, 1), or token ids in
    [0, vocabulary) for integer inputs (default: the rows of the model's embedding)."""
    if model.input_dtype.is_floating_point:
        x = torch.randn(n, *feature_shape, generator=generator).to(model.input_dtype)
    else:
        vocab = vocabulary or vocabulary_size(model)
        x = torch.randint(0, vocab, (n, *feature_shape), generator=generator, dtype=model.input_dtype)
    y = torch.randint(0, num_classes, (n,), generator=generator)
    return x, y


def vocabulary_size(model: Model) -> int:
    """Token ids a model with integer inputs accepts: the rows of its first ``nn.Embedding``, else of its first
    frozen matrix (an embedding such as GloVe passed as a frozen tensor)."""
    for m in model.module.modules():
        if isinstance(m, nn.Embedding):
            return m.num_embeddings
    for t in model.frozen.values():
        if t.dim() == 2:
            return t.shape[0]
    raise ValueError(f"model {model.name} takes {model.input_dtype} inputs but has no embedding to say how many "
                     "token ids there are; give its vocabulary in fedbench.bench.federation.BENCH_MODELS")


def train_flops_per_sample(model: Model, feature_shape: tuple[int, ...], num_classes: int, batch: int = 10,
                           vocabulary: int | None = None) -> float:
    """FLOPs of one training sample: forward and gradient of the loss with respect to theta (see the module
    docstring), on a CPU minibatch of ``batch`` random samples."""
    model = model.to("cpu")
    x, y = synthetic_inputs(model, feature_shape, num_classes, batch, torch_generator(0, -1, "data", 98), vocabulary)
    theta = model.init(torch_generator(0, -1, "init")).requires_grad_(True)
    w = torch.full((batch,), 1.0 / batch)
    recurrent = {name: m for name, m in model.module.named_modules() if isinstance(m, nn.RNNBase)}
    analytic: dict[str, float] = {}
    hooks = [m.register_forward_hook(lambda mod, args, out, name=name: analytic.__setitem__(
        name, analytic.get(name, 0.0) + recurrent_train_flops(mod, args[0]))) for name, m in recurrent.items()]
    try:
        with flop_counter() as counter, torch.enable_grad():
            torch.autograd.grad(model.weighted_loss(theta, x, y, w), theta)
    finally:
        for h in hooks:
            h.remove()
    total = float(counter.get_total_flops())
    counts = counter.get_flop_counts()
    for name in recurrent:  # replace whatever the counter saw inside a recurrent layer by the analytic count
        seen = [v for k, v in counts.items() if k.endswith("." + name)]
        total -= float(sum(sum(v.values()) for v in seen[:1]))
    return (total + sum(analytic.values())) / batch


def _conv_backward_flops(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed,
                         _output_padding, groups, output_mask, out_shape, **_kwargs) -> int:
    """torch.utils.flop_counter's formula for ``aten.convolution_backward`` (dX as the transposed convolution of
    the output's gradient with W; dW as the convolution of X with it), with dW divided by ``groups``: each group's
    dW only meets its own C_in / groups input channels, and torch's transposed shapes lose that division."""

    def t(shape):
        return [shape[1], shape[0], *shape[2:]]

    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        a, b = (grad_out_shape, x_shape) if transposed else (x_shape, grad_out_shape)
        flops += conv_flop_count(t(a), t(b), t(out_shape[1]), transposed=False) // groups
    return flops


def flop_counter() -> FlopCounterMode:
    """``FlopCounterMode(display=False)`` whose convolution backward counts a grouped convolution's weight gradient
    once, not ``groups`` times (module docstring); every other operator as torch counts it."""
    return FlopCounterMode(display=False, custom_mapping={torch.ops.aten.convolution_backward: _conv_backward_flops})


def recurrent_train_flops(rnn: nn.RNNBase, x: torch.Tensor) -> float:
    """Training FLOPs of one call of a recurrent layer on x (batch-first or not): 3 x 2 x forward MACs."""
    gates = {"LSTM": 4, "GRU": 3}.get(rnn.mode, 1)
    batch_first = rnn.batch_first
    steps = x.shape[1] if (batch_first and x.dim() == 3) else x.shape[0]
    n = x.shape[0] if (batch_first and x.dim() == 3) else (x.shape[1] if x.dim() == 3 else 1)
    directions = 2 if rnn.bidirectional else 1
    h = rnn.hidden_size
    macs, inp = 0, rnn.input_size
    for _ in range(rnn.num_layers):
        macs += directions * gates * h * (inp + h)
        inp = h * directions
    return 3 * 2.0 * macs * steps * n


@dataclass(frozen=True)
class Floor:
    """max(FLOPs / peak, bytes / bandwidth): the least time any implementation needs for the work."""

    flops: float
    peak_flops: float
    bytes_moved: float
    bandwidth: float

    @property
    def flop_s(self) -> float:
        return self.flops / self.peak_flops

    @property
    def byte_s(self) -> float:
        return self.bytes_moved / self.bandwidth if self.bandwidth else 0.0

    @property
    def seconds(self) -> float:
        return max(self.flop_s, self.byte_s)

    @property
    def bound(self) -> str:
        return "FLOPs" if self.flop_s >= self.byte_s else "bytes"

    def arithmetic(self) -> str:
        """The floor as a line of arithmetic, e.g. '1.2 GFLOP / 98 GFLOP/s = 12 ms; 3.4 MB / 9.1 GB/s = 0.4 ms'."""
        return (f"{si(self.flops)}FLOP / {si(self.peak_flops)}FLOP/s = {seconds(self.flop_s)}; "
                f"{si(self.bytes_moved)}B / {si(self.bandwidth)}B/s = {seconds(self.byte_s)}")

    def as_dict(self) -> dict:
        return {**asdict(self), "seconds": self.seconds, "bound": self.bound, "arithmetic": self.arithmetic()}


def weights_moved(row_steps: int, num_params: int) -> int:
    """Bytes of weights moved by ``row_steps`` local steps of separate models: each active model's weights read
    and written once per step (the least any implementation that keeps one model per client can move)."""
    return 2 * FLOAT_BYTES * num_params * row_steps


def environment(device: torch.device) -> dict:
    """The machine and versions a measurement ran on: one record for every benchmark file (bench, paper cost,
    the GPU check)."""
    import numpy as np

    env = {"device": str(device), "python": platform.python_version(), "torch": torch.__version__,
           "numpy": np.__version__, "cuda": torch.version.cuda, "platform": platform.platform(),
           "cpu": cpu_name(), "cpu_cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    try:
        env["load_average"] = [round(v, 2) for v in os.getloadavg()]
    except OSError:
        pass
    if device.type == "cuda":
        env["device_name"] = torch.cuda.get_device_name(device)
        env["device_memory_gib"] = round(torch.cuda.get_device_properties(device).total_memory / 2**30, 1)
    return env


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else what platform says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def si(value: float) -> str:
    """A number with an SI prefix and a trailing space: 1.23e9 -> '1.23 G'."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}"
    return f"{value:.3g} "


def seconds(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.1f} min"
    if s >= 1:
        return f"{s:.1f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"
