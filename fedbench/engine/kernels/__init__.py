"""Execution kernels: how the engine computes a cohort's gradients and a model's evaluation on a device.

A kernel is bound to one model (``KERNELS[name](model)``) and offers (theta [K, P] holds one model per row):

    prepare(x)                    the training inputs as ``grad`` takes them, per sample (once per run)
    batch(x, y, w)                a chunk of minibatches [R, B, ...] with labels [R, B] and weights [R, B]
                                  (each row's weights sum to 1, 0 on padding) -> grad's inputs, split per step
    grad(theta, *batch)           [a, P]: the gradient of each row's weighted loss sum_b w_b loss_b
    per_example(theta, x, y)      losses and correctness of one model [P] -> [n], or of M models [M, P] -> [M, n]
    segment_grads(theta, x, y, segment, counts)    [M, P]: each segment's mean-loss gradient at its own model
    segment_losses(theta, x, y, segment, counts)   [M]: each segment's mean loss, at one shared or its own model
    client_grads(theta, x, y, offsets, clients)    [K, P]: client clients[k]'s full gradient at theta[k], read from
                                  the stored training arrays (client c: rows offsets[c]:offsets[c + 1])

Every kernel computes the same numbers as the per-client reference (tested within stated tolerances); which
one runs is chosen per (model, device, cohort) by :func:`choose_kernel`, from a table of measurements
(``fedbench bench``, fedbench.engine.kernels.measured), or set in the config (``train.kernel``), and recorded with
each run.
"""

from __future__ import annotations

import torch

from fedbench.engine.kernels.host_memory import keep_freed_memory
from fedbench.engine.kernels.loop import LoopKernel
from fedbench.engine.kernels.mclr import MclrKernel
from fedbench.engine.kernels.measured import MEASURED, PER_COHORT, RECURRENT_MEASURED, fastest, fastest_at
from fedbench.engine.kernels.quadratic import MODELS as QUADRATIC_MODELS
from fedbench.engine.kernels.quadratic import QuadraticKernel
from fedbench.engine.kernels.rnn import RecurrentKernel
from fedbench.engine.kernels.vmap import VmapKernel
from fedbench.models.spec import Model

KERNELS = {"mclr": MclrKernel, "quadratic": QuadraticKernel, "vmap": VmapKernel, "loop": LoopKernel,
           "rnn": RecurrentKernel}

# The kernel each model runs by default, per device type: first the measured table (fedbench.engine.kernels.measured,
# from `fedbench bench`), then this table, then the family rule (_family_default). Notes from measurements:
# - mclr: the hand-written batched softmax regression beats vmap and the loop everywhere.
# - the closed-form toy objectives (quadratics, mean estimation): their hand-written kernel, 15x vmap on the CPU
#   (vmap's dispatch, about 0.8 ms a step, is the whole cost of a step of a scalar quadratic).
# - CNNs on the CPU: the per-client loop (cuDNN-free convolutions per client are faster than vmap's
#   batched-convolution fallback); on CUDA, vmap.
# - recurrent models (fedbench.models.recurrent): on CUDA, the measured table (rnn from cohort 100 on; a recurrent
#   model not measured there follows the measured ones: measured.RECURRENT_MEASURED); the per-client loop on the
#   CPU. On the CPU the rnn kernel is 0.3-0.4x the loop on FedProx's
#   Shakespeare LSTM and 0.6-0.85x on its Sent140 LSTM (one thread, cohort 10 and 100, client batch 10): one
#   client's weights stay in cache through its 80 steps in the loop, while a batched step streams all K
#   clients' weights from memory. It is 1.1-1.5x the loop on Delta-FL's small Sent140 LSTM and 1.6-2.5x on its
#   Shakespeare GRU, where per-step overhead dominates (2-core machine shared with other jobs).
DEFAULTS: dict[tuple[str, str], str] = {
    ("mclr", "cpu"): "mclr", ("mclr", "cuda"): "mclr",
    **{(name, device): "quadratic" for name in QUADRATIC_MODELS for device in ("cpu", "cuda")},
}
FALLBACK = {"cpu": "vmap", "cuda": "vmap"}


def kernel_names(model: Model) -> list[str]:
    """The kernels that can run ``model``."""
    return [name for name, cls in KERNELS.items() if cls.supports(model)]


def choose_kernel(model: Model, device: torch.device | str, name: str = "auto", cohort: int | None = None):
    """The kernel called ``name`` for ``model`` (``auto``: the table's choice for the device type and, where given,
    the ``cohort``: the rows one batched step trains, clients x stacked runs; fedbench.engine.kernels.measured says
    both rules). On the CPU, the process keeps freed host memory for reuse from then on
    (fedbench.engine.kernels.host_memory)."""
    device_type = torch.device(device).type
    if device_type == "cpu":
        keep_freed_memory()
    if name == "auto":
        name = (_measured_choice(model.name, device_type, kernel_names(model), cohort)
                or DEFAULTS.get((model.name, device_type)) or _family_default(model, device_type, cohort))
    if name not in KERNELS:
        raise ValueError(f"kernel {name!r} is not known; allowed: auto, {', '.join(KERNELS)}")
    if not KERNELS[name].supports(model):
        raise ValueError(f"kernel {name!r} cannot run model {model.name}; allowed: auto, {', '.join(kernel_names(model))}")
    return KERNELS[name](model)


def _measured_choice(model_name: str, device_type: str, allowed: list[str], cohort: int | None) -> str | None:
    measured = MEASURED.get((model_name, device_type), {})
    if cohort is None or device_type not in PER_COHORT:
        return fastest(measured, allowed)
    return fastest_at(measured, allowed, cohort)


def _family_default(model: Model, device_type: str, cohort: int | None = None) -> str:
    recurrent = any(isinstance(m, torch.nn.RNNBase) for m in model.module.modules())
    conv = any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.module.modules())
    if device_type == "cpu" and (recurrent or conv):
        return "loop"
    if recurrent:  # vmap has no batching rule for nn.LSTM/nn.GRU (it would fall back to a per-sample loop)
        agreed = {_measured_choice(name, device_type, kernel_names(model), cohort)
                  for name in RECURRENT_MEASURED.get(device_type, ())}
        return agreed.pop() if len(agreed) == 1 and None not in agreed else "loop"
    return FALLBACK.get(device_type, "vmap")
