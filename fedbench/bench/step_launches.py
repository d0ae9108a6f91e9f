"""Launches a local step and FLOPs a row-step, per model family, counted on the CPU (issue 53's Targets table;
fedbench.bench.proxies prints them with their targets).

For each family's model at the paper's size (mclr on Synthetic's 60 features, FedLaAvg's CIFAR CNN, FedProx's
Shakespeare and Sent140 LSTMs, Delta-FL's Shakespeare GRU), one FedProx (mu 1) round of ``steps`` chain steps at
``rows`` rows (rows finish at different steps, last minibatches partial: fedbench.bench.fused_rnn_check.draw_round
for the recurrent models), run two ways:

- ``static``: the ATen operators fedbench.engine.static.run_static dispatches a chain step (views excluded: on CUDA
  each counted operator is about one kernel launch), the path ``capture: static``/``cuda_graph`` runs;
- ``fused``: the Triton launches a chain step of the family's fused module (fedbench.engine.fused.mclr, cnn, rnn:
  each module's own ``count_launches``), under Triton's interpreter (``TRITON_INTERPRET=1``; the recurrent
  kernels counted without running them, ``execute=False``: the launches are the driver's, not the kernels').

And ``flops_ratio``: the FLOPs one static step executes (fedbench.bench.machine.flop_counter, torch's FlopCounterMode
with a grouped convolution's weight gradient counted once; every row active on full minibatches) over the model's
training FLOPs for as many samples (fedbench.bench.machine.train_flops_per_sample, whose recurrent layers are counted
analytically), so 1.0 is a step that computes nothing but the training: no gradient of the images, no second forward,
no loss or evaluation beyond the one forward, no padded row. It counts the matrix products and convolutions (what
FlopCounterMode counts), not the elementwise work. FlopCounterMode does not see Triton: for the fused CNN step,
``fused_flops`` gives the FLOPs its tiles issue (fedbench.bench.fused_cnn_check.issued_flops), 2.868x the CIFAR CNN's
training FLOPs at batch 10 (6 channels on tl.dot's 16-wide tiles, a dX gathered at every input position). The CNN's static step (vmap: the R rows' convolutions as one
convolution of R groups) is 1.000 at every row count; torch's own counter made it 1 + (R - 1) x 11.856 / 32.047 (1.370
at 2 rows) by counting the grouped dW R times.

Triton reads ``TRITON_INTERPRET`` when it is imported, so :func:`measure` runs :func:`count` in a subprocess
(``python -m fedbench.bench.step_launches``) with the variable set; the counts need no GPU. Where Triton is not
installed the fused counts are None.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
from typing import Any

# family -> (fedbench.models builder name, feature shape, classes, sequence length (None: not recurrent), batch)
MODELS = {
    "mclr": ("mclr", (60,), 10, None, 10),
    "cnn": ("cifar_cnn", (3, 32, 32), 10, None, 10),
    "shakespeare_lstm": ("fedprox_shakespeare_lstm", (80,), 80, 80, 10),
    "sent140_lstm": ("fedprox_sent140_lstm", (25,), 2, 25, 10),
    "gru": ("deltafl_shakespeare_gru", (20,), 80, 20, 16),
}


@contextlib.contextmanager
def op_count():
    """ATen operators dispatched inside the block, views excluded: yields a one-element list holding the count."""
    from torch.utils._python_dispatch import TorchDispatchMode

    count = [0]

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not func.is_view:
                count[0] += 1
            return func(*args, **(kwargs or {}))

    with Mode():
        yield count


def _model(family: str):
    if family in ("mclr", "cnn"):
        from fedbench.models import build_model

        name, shape, classes, _, _ = MODELS[family]
        return build_model(name, shape, classes)
    from fedbench.bench.fused_rnn_aot import _model as paper_model

    return paper_model(MODELS[family][0])


def draw(family: str, rows: int, steps: int, batch: int | None = None, seed: int = 0) -> tuple:
    """run_static's arguments for one FedProx (mu 1) round of ``family``'s model on the CPU: ``rows`` rows, row k
    training steps - (k % 2) steps, its last minibatch one sample short."""
    import torch

    from fedbench.algorithms import build_algorithm
    from fedbench.engine.kernels import choose_kernel
    from fedbench.engine.static import StaticCohort

    model = _model(family)
    batch = batch or MODELS[family][4]
    if MODELS[family][3] is not None:
        from fedbench.bench.fused_rnn_check import draw_round

        return draw_round(model, rows, steps, batch, MODELS[family][3], seed)
    g = torch.Generator().manual_seed(seed)
    kernel = choose_kernel(model, "cpu", "mclr" if family == "mclr" else "vmap")
    theta0 = model.init(g)
    local = theta0 + 0.01 * torch.randn(rows, theta0.numel(), generator=g)
    n = rows * steps * batch
    x = torch.randn(n, *MODELS[family][1], generator=g)
    y = torch.randint(0, MODELS[family][2], (n,), generator=g)
    batches = torch.arange(n).view(rows, steps, batch).transpose(0, 1).contiguous()
    active = torch.ones(steps, rows, dtype=torch.bool)
    for k in range(rows):
        last = steps - 1 - (k % 2) if steps > 1 else 0
        active[last + 1:, k] = False
        batches[last + 1:, k] = -1
        if batch > 1:
            batches[last, k, -1] = -1
    algorithm = build_algorithm("fedprox", lr=0.1, mu=1.0)
    bcast = algorithm.broadcast(algorithm.init(theta0, rows))
    return algorithm, kernel, bcast, local, kernel.prepare(x), y, StaticCohort(batches=batches, active=active, rows=rows)


def static_ops(family: str, rows: int = 1, steps: int = 1, batch: int | None = None) -> float:
    """ATen operators a chain step of run_static (module docstring)."""
    from fedbench.engine.static import run_static

    args = draw(family, rows, steps, batch)
    with op_count() as ops:
        run_static(*args)
    return ops[0] / steps


def fused_launches(family: str, rows: int = 1, steps: int = 2, batch: int | None = None) -> float:
    """Triton launches a chain step of the family's fused module (needs Triton; TRITON_INTERPRET=1 on a CPU)."""
    args = draw(family, rows, steps, batch)
    if family == "mclr":
        from fedbench.engine.fused import mclr

        with mclr.count_launches() as launches:
            mclr.run_fused(*args)
        return launches.step / steps
    if family == "cnn":
        from fedbench.engine.fused import cnn

        with cnn.count_launches() as counted:
            cnn.run_fused(*args)
        return sum(counted.values()) / steps
    from fedbench.engine.fused import rnn

    with rnn.count_launches(execute=not rnn._interpreted()) as launches:
        rnn.run_fused(*args)
    return launches.total / steps


def flops_ratio(family: str, rows: int = 2, batch: int | None = None) -> dict[str, float]:
    """The FLOPs of one static step with every row active on full minibatches of ``batch``, per row-step, over the
    model's training FLOPs for ``batch`` samples (fedbench.bench.machine.train_flops_per_sample)."""
    import torch

    from fedbench.bench.machine import flop_counter, train_flops_per_sample
    from fedbench.engine.static import StaticCohort, run_static

    batch = batch or MODELS[family][4]
    algorithm, kernel, bcast, local, x, y, _ = draw(family, rows, 1, batch)
    n = x.shape[0]
    cohort = StaticCohort(batches=torch.arange(rows * batch).remainder(n).view(1, rows, batch),
                          active=torch.ones(1, rows, dtype=torch.bool), rows=rows)
    with flop_counter() as counter:
        run_static(algorithm, kernel, bcast, local, x, y, cohort)
    executed = float(counter.get_total_flops()) / rows
    _, shape, classes, _, _ = MODELS[family]
    model = _model(family)
    vocabulary = None
    if MODELS[family][3] is not None:
        from fedbench.bench.machine import vocabulary_size

        vocabulary = vocabulary_size(model)
    trained = train_flops_per_sample(model, shape, classes, batch=batch, vocabulary=vocabulary) * batch
    return {"executed_per_row_step": executed, "model_per_row_step": trained, "ratio": executed / trained}


def fused_cnn_flops(batch: int | None = None) -> dict[str, float]:
    """The FLOPs the fused CNN step's ``tl.dot`` tiles issue a row-step at the GPU's tiles
    (fedbench.bench.fused_cnn_check.issued_flops: padding included, which a GPU executes in fp32), over the model's
    training FLOPs (needs Triton; counted, not run)."""
    from fedbench.bench.fused_cnn_check import issued_flops, train_flops
    from fedbench.engine.fused.cnn import network_of

    batch = batch or MODELS["cnn"][4]
    net = network_of(_model("cnn"))
    issued, trained = sum(issued_flops(net, batch).values()), train_flops(net, batch)
    return {"issued_per_row_step": float(issued), "model_per_row_step": float(trained), "ratio": issued / trained}


def layers(family: str) -> int:
    """The recurrent layers of the family's model (0 for mclr and the CNN)."""
    import torch.nn as nn

    return sum(m.num_layers for m in _model(family).module.modules() if isinstance(m, nn.RNNBase))


def count(quick: bool = False) -> dict[str, Any]:
    """Every family's static ops and fused launches a chain step, and FLOPs ratio (module docstring)."""
    fused = importlib.util.find_spec("triton") is not None
    out: dict[str, Any] = {}
    for family in MODELS:
        row: dict[str, Any] = {"static_ops_per_step": static_ops(family)}
        # the CNN's interpreted kernels compute (~13 s a step at batch 10): one step at batch 2, the same launches
        small = {"steps": 1, "batch": 2} if family == "cnn" else {}
        row["fused_launches_per_step"] = fused_launches(family, **small) if fused else None
        row["layers"], row["timesteps"] = layers(family), MODELS[family][3] or 0
        if family in ("mclr", "cnn") or not quick:
            row["flops"] = flops_ratio(family)
        if family == "cnn" and fused:
            row["fused_flops"] = fused_cnn_flops()
        out[family] = row
    return out


def measure(quick: bool = False, timeout: float = 600.0) -> dict[str, Any]:
    """:func:`count` in a subprocess with TRITON_INTERPRET=1 (module docstring)."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    cmd = [sys.executable, "-m", "fedbench.bench.step_launches"] + (["--quick"] if quick else [])
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"fedbench.bench.step_launches failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":  # pragma: no cover - run by measure()
    print(json.dumps(count(quick="--quick" in sys.argv[1:])))
