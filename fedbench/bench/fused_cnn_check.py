"""The fused CNN step against the engine's static path at a chosen number of rows, for the prepared GPU check (issue 53,
item 6; ../shared/reference/gpu-design.md section 8, item 3: a CIFAR CNN chain step at 5, 100 and 3,000 rows):

- ``static``: fedbench.engine.static.run_static over the engine's kernel for the device (vmap on CUDA), the
  reference;
- ``fused``: fedbench.engine.fused.cnn.run_fused.

Per path: the largest |difference| from the reference's local state, the launches a chain step (the static path's
ATen operators, views excluded; the fused kernels counted at Triton's launch entry) and, on CUDA, the median time
of a chain step over ``repeats`` runs after one warm-up run, the training FLOP/s it reaches
(:func:`train_flops` a row-step) and, given the card's fp32 peak, the fraction of it; for the fused path also the
FLOPs its tiles issue over the training FLOPs (:func:`issued_flops`), so that a fraction of peak reads against
its ceiling (1 / that ratio, the fraction reached were every issued FLOP at peak). On the CPU (Triton's
interpreter) the times mean nothing and are not reported.

The inputs are FedAvg's, built here (not a simulation's round): ``rows`` rows of the model's init, each nudged, on
random images, every row active at every step and its minibatch full; the step's arithmetic does not depend on the
values.
"""

from __future__ import annotations

import statistics
import time
from contextlib import contextmanager
from typing import Any

import torch

from fedbench.engine import static
from fedbench.engine.fused.cnn import Network, Tiles, count_launches, network_of, run_fused


def train_flops(net: Network, batch: int) -> int:
    """FLOPs of one row-step's gradient at minibatches of ``batch``: each layer's forward GEMM (2 FLOPs a
    multiply-add), its dW GEMM and its dX GEMM (none for the first layer); bias, ReLU, pooling and the update
    are not counted."""
    total = 0
    for i, c in enumerate(net.convs):
        conv = 2 * batch * c.cout * c.cin * c.ks * c.ks * (c.h + 2 * c.pad - c.ks + 1) * (c.w + 2 * c.pad - c.ks + 1)
        total += conv * (3 if i else 2)
    return total + sum(6 * batch * d.fin * d.fout for d in net.dense)


def inputs(model: Any, rows: int, batch: int, steps: int, device: str | torch.device, seed: int = 0) -> tuple:
    """run_static's arguments for FedAvg (lr 0.05) on ``model``: ``rows`` nudged copies of its init, ``steps`` full
    minibatches of ``batch`` random images a row."""
    from fedbench.algorithms import build_algorithm
    from fedbench.engine.kernels import choose_kernel

    device = torch.device(device)
    kernel = choose_kernel(model, device)
    generator = torch.Generator().manual_seed(seed)
    theta0 = model.init(generator)
    local = theta0 + 0.01 * torch.randn(rows, theta0.numel(), generator=generator)
    c = network_of(model).convs[0]
    n = min(rows * batch * steps, 4096)
    x = torch.randn(n, c.cin, c.h, c.w, generator=generator)
    y = torch.randint(0, network_of(model).classes, (n,), generator=generator)
    batches = torch.randint(0, n, (steps, rows, batch), generator=generator)
    cohort = static.StaticCohort(batches=batches.to(device), active=torch.ones(steps, rows, dtype=torch.bool,
                                                                                device=device), rows=rows)
    return (build_algorithm("fedavg", lr=0.05), kernel, theta0.to(device), local.to(device),
            kernel.prepare(x.to(device)), y.to(device), cohort)


def issued_flops(net: Network, batch: int, tiles: Tiles | None = None) -> dict[str, int]:
    """FLOPs one row-step's ``tl.dot`` calls issue, by kernel, at minibatches of ``batch`` and ``tiles`` (default
    :class:`Tiles`'s): each launch's programs (fedbench.engine.fused.cnn's own grids) times its reduction loop's
    trips times its dots' (BM x BN x BK) tiles, 2 FLOPs a multiply-add. In fp32 IEEE a padded lane is a real
    fused multiply-add on a GPU, so this over :func:`train_flops` is the executed-FLOPs ratio of the fused path
    (issue 53's "executed FLOPs / the model's training FLOPs", which FlopCounterMode cannot see in Triton). Where it
    exceeds 1: channel counts below ``tl.dot``'s 16 (the CIFAR CNN's 6) padded to 16, reductions and samples
    rounded up to tiles, and a conv layer's dX gathered at every input position over all (cout, kh, kw) (masked
    where no conv output lies: 196 positions x 25 taps where 100 conv outputs feed, on the CIFAR CNN's second
    layer). The update and the epilogues are not counted."""
    from fedbench.engine.fused import cnn
    from fedbench.engine.fused.forms import SGD

    tiles = tiles or Tiles()
    one = torch.zeros(1)
    index = torch.zeros(1, dtype=torch.int64)
    launches = cnn._launches(net, tiles, 1, 1, batch, cnn._buffers(net, 1, 1, torch.device("cpu")), one, index, index,
                             torch.zeros(1, dtype=torch.bool), one, one, one,
                             {"points": {"S0": 0, "S1": 0}, "form": SGD, "ns": 1, "nv": 0})
    out: dict[str, int] = {}
    for kern, grid, _, _, c in launches:
        name = kern.__name__
        if name == "_update":
            continue
        trips, dots = _loop(name, c)
        step = c["BM"] if name in ("_dense_grad_w", "_conv_grad_w") else c["BK"]  # the loop's stride
        programs = grid[1] * grid[2]  # a row's
        out[name] = out.get(name, 0) + programs * -(-trips // step) * dots * 2 * c["BM"] * c["BN"] * c["BK"]
    return out


def _loop(kernel: str, c: dict) -> tuple[int, int]:
    """The reduction loop's length in a program of ``kernel`` launched with constants ``c``, and its dots a trip."""
    if kernel == "_conv_forward":
        return c["CIN"] * c["KS"] ** 2, 4  # one dot a pooling-window position
    if kernel == "_conv_grad_w":
        return c["B"] * 4 * c["PH"] * c["PW"], 1
    if kernel == "_conv_grad_x":
        return c["COUT"] * c["KS"] ** 2, 1
    return {"_dense_forward": c.get("FIN"), "_dense_grad_w": c.get("B"), "_dense_grad_x": c.get("FOUT")}[kernel], 1


def compare(model: Any, rows: int, batch: int = 5, steps: int = 2, repeats: int = 5, tiles: Tiles | None = None,
            peak_flops: float | None = None, device: str | torch.device = "cuda") -> dict[str, dict]:
    """Both paths on :func:`inputs` ({path: {max_abs_diff, launches_per_step, and on CUDA us_per_step,
    tflops, fraction_of_peak (with ``peak_flops``)}}); ``tiles`` default: :class:`Tiles`'s."""
    tiles = tiles or Tiles()
    args = inputs(model, rows, batch, steps, device)
    cuda = args[-1].batches.is_cuda
    net = network_of(model)
    paths = {"static": lambda: static.run_static(*args), "fused": lambda: run_fused(*args, tiles=tiles)}
    reference = None
    out = {}
    for name, run in paths.items():
        if name == "static":
            with _op_count() as ops:
                result = run()
            launches, reference = ops[0], result
        else:
            with count_launches() as counted:
                result = run()
            launches = sum(counted.values())
        row = {"max_abs_diff": float((result.double() - reference.double()).abs().max()),
               "launches_per_step": launches / steps}
        if name == "fused":
            row["issued_over_training_flops"] = sum(issued_flops(net, batch, tiles).values()) / train_flops(net, batch)
        if cuda:
            times = []
            for _ in range(repeats):
                torch.cuda.synchronize()
                start = time.perf_counter()
                run()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
            seconds = statistics.median(times) / steps
            row["us_per_step"] = 1e6 * seconds
            row["tflops"] = train_flops(net, batch) * rows / seconds / 1e12
            if peak_flops:
                row["fraction_of_peak"] = row["tflops"] * 1e12 / peak_flops
        out[name] = row
    return out


@contextmanager
def _op_count():
    """ATen operators dispatched inside the block, views excluded (as fedbench.bench.proxies counts them): yields a
    one-element list that holds the count."""
    from torch.utils._python_dispatch import TorchDispatchMode

    count = [0]

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not func.is_view:
                count[0] += 1
            return func(*args, **(kwargs or {}))

    with Mode():
        yield count
