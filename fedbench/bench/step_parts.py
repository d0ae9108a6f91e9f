"""Where a client step's time goes on the CPU (issue 20, item 5): the per-client loop's local step of a model,
taken apart into nested parts and timed in turn in one process (fedbench.bench.timing), at client batch 10:

- ``gradients``: each client's gradients by autograd, one tensor per parameter (what the loop kernel
  differentiates; fedbench.engine.kernels.loop), nothing written anywhere;
- ``kernel``: the loop kernel's ``grad``: the same gradients placed into the cohort's [K, P] block;
- ``step``: FedAvg's local step as the engine runs it: ``sgd_step(theta, kernel.grad(theta, ...), lr)``;
- ``round``: one engine round in which every client takes one local step (``schedule_round`` + ``run_round``:
  the broadcast to K rows, the step, the server's weighted mean; fedbench.bench.throughput.federated_round);
- ``fused`` (headroom, not a path of the engine): the same gradients applied in place, tensor by tensor,
  ``theta_k.add_(g, alpha=-lr)``: one pass over the weights, no [K, P] gradient, no temporaries. Not the
  engine's numbers: ATen computes ``alpha`` with a fused multiply-add on its vectorized path, and the
  gradient's -0.0 is not made +0.0 (fedbench.ops.sgd_step, fedbench.engine.kernels.loop say why both matter).

Each part is reported in ms per client step and as a share of the step's FLOP floor (FLOPs of a client step
over the peak matmul rate measured in the same run, fedbench.bench.machine), beside the time of one pass over
a row of weights (4 P bytes at the measured copy bandwidth): the parts' differences count passes over
weights that only memory bandwidth limits (the LEAF FEMNIST CNN's row is 26 MB).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fedbench.bench.federation import BenchModel, make_federation
from fedbench.bench.machine import FLOAT_BYTES, Machine, synthetic_inputs, train_flops_per_sample
from fedbench.bench.throughput import CLIENT_BATCH, LR, federated_round
from fedbench.bench.timing import time_interleaved
from fedbench.engine.kernels import choose_kernel
from fedbench.models.spec import Model
from fedbench.ops import sgd_step
from fedbench.seeding import torch_generator

PARTS = ("gradients", "kernel", "step", "round", "fused")
MODELS = ("leaf_femnist_cnn", "cifar_cnn")  # the papers' CNNs (default of `fedbench bench --parts steps`)


def step_paths(model: Model, spec: BenchModel, cohort: int, device: torch.device,
               seed: int = 0) -> tuple[dict[str, Callable[[], int]], dict[str, torch.Tensor]]:
    """One callable per part, each running one step of ``cohort`` clients and returning the client steps it took;
    and the cohort's parameters [K, P] that ``step`` and ``fused`` advance (the others start from theta^0 each
    call)."""
    kernel = choose_kernel(model, device, "loop")
    g = torch_generator(seed, -1, "data", 2)
    x, y = synthetic_inputs(model, spec.feature_shape, spec.num_classes, cohort * CLIENT_BATCH, g, spec.vocabulary)
    x = kernel.prepare(x.to(device)).view(cohort, CLIENT_BATCH, *x.shape[1:])
    y = y.to(device).view(cohort, CLIENT_BATCH)
    w = torch.full((cohort, CLIENT_BATCH), 1.0 / CLIENT_BATCH, device=device)
    theta0 = model.init(torch_generator(seed, -1, "init")).to(device)
    model = model.to(device)
    state = {"step": theta0.expand(cohort, -1).clone(), "fused": theta0.expand(cohort, -1).clone()}
    fixed = theta0.expand(cohort, -1).clone()

    def client_grads(theta: torch.Tensor, k: int) -> tuple[dict[str, torch.Tensor], tuple[torch.Tensor, ...]]:
        views = model.unflatten(theta[k])
        leaves = {name: v.detach().requires_grad_(True) for name, v in views.items()}
        with torch.enable_grad():
            loss = (model.example_losses(model.forward_params(leaves, x[k]), y[k]) * w[k]).sum()
            return views, torch.autograd.grad(loss, list(leaves.values()))

    def gradients() -> int:
        for k in range(cohort):
            client_grads(fixed, k)
        return cohort

    def kernel_grad() -> int:
        kernel.grad(fixed, x, y, w)
        return cohort

    def step() -> int:
        state["step"] = sgd_step(state["step"], kernel.grad(state["step"], x, y, w), LR)
        return cohort

    def fused() -> int:
        theta = state["fused"]
        with torch.no_grad():
            for k in range(cohort):
                views, grads = client_grads(theta, k)
                for v, gr in zip(views.values(), grads):
                    v.add_(gr, alpha=-LR)
        return cohort

    ds = make_federation(spec, model, cohort, seed)
    one_round = federated_round(model, ds, device, "loop", local_steps=1, seed=seed)

    def engine_round() -> int:
        one_round()
        return cohort

    return {"gradients": gradients, "kernel": kernel_grad, "step": step, "round": engine_round, "fused": fused}, state


def measure_steps(spec: BenchModel, cohort: int, device: torch.device, machine: Machine, min_time: float = 1.0,
                  max_reps: int = 7, seed: int = 0) -> dict[str, Any]:
    """Every part of one (model, cohort): ms per client step (median of rounds taken in turn), share of the
    FLOP floor, and the time of one pass over a row of weights."""
    model = spec.build()
    paths, _ = step_paths(model, spec, cohort, device, seed)
    timed = time_interleaved(paths, min_time, max_reps, lead="step")
    flops = train_flops_per_sample(model, spec.feature_shape, spec.num_classes, CLIENT_BATCH, spec.vocabulary)
    floor_s = flops * CLIENT_BATCH / machine.peak_flops
    ms = {part: timed[part].round_s / cohort * 1e3 for part in PARTS}
    return {"model": spec.name, "cohort": cohort, "device": str(device), "num_params": model.num_params,
            "client_batch": CLIENT_BATCH, "flops_per_client_step": flops * CLIENT_BATCH,
            "floor_ms": floor_s * 1e3, "row_pass_ms": FLOAT_BYTES * model.num_params / machine.bandwidth * 1e3,
            "ms_per_client_step": ms, "share_of_floor": {part: floor_s * 1e3 / ms[part] for part in PARTS},
            "repeats": len(timed["step"].seconds)}


def steps_table(cases: list[dict[str, Any]]) -> list[str]:
    lines = ["| model | cohort | floor (FLOPs / peak) | one pass over a row | " + " | ".join(PARTS) + " |",
             "|---|---|---|---|" + "---|" * len(PARTS)]
    for c in cases:
        cells = [f"{c['ms_per_client_step'][p]:.2f} ms ({c['share_of_floor'][p]:.2f})" for p in PARTS]
        lines.append(f"| {c['model']} | {c['cohort']} | {c['floor_ms']:.2f} ms | {c['row_pass_ms']:.2f} ms | "
                     + " | ".join(cells) + " |")
    return lines
