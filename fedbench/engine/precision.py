"""How a stack's arithmetic is computed (``SimulationConfig.precision``; issue 53, item 5; gpu-design.md D6): full
float32 by default, or a declared reduced-precision mode, never the default.

- ``fp32`` (the default): IEEE float32 everywhere. On CUDA the engine turns TF32 off for both matmuls and cuDNN
  convolutions while a stack runs: PyTorch's own default lets cuDNN convolutions use TF32 on Ampere and later,
  which would make a CNN's "fp32" numbers TF32 ones (the GPU check has always turned it off: fedbench.bench
  .gpucheck). On the CPU nothing changes: the CPU has no TF32, and this mode is the engine as it always ran.
- ``tf32``: matmuls and convolutions on CUDA's TF32 tensor cores (10-bit mantissa inputs, float32 accumulation);
  everything else float32. On the CPU it computes exactly as ``fp32`` (there are no TF32 units to use): the
  numbers are fp32's bit for bit, and the record still says ``tf32``, so that a run is named by what was asked.
- ``bf16``: ``torch.autocast`` to bfloat16 around the stack's training and evaluation: the operators autocast
  lists (matmuls, convolutions, the recurrent cells' GEMMs) take bfloat16 inputs, the parameters, their updates
  and the reductions stay float32. It runs on the CPU too (slower there: the point is the tests).

The tolerance of a mode against fp32 is declared (:data:`TOLERANCE`) and measured, never assumed: :func:`deviation`
compares one run made both ways (the largest difference of the final parameters and of the final test accuracy);
the GPU check's ``precision`` part (fedbench.bench.precision_check) measures it per model family on the card, and
tests/engine/test_precision.py on the CPU. A run in a
reduced mode records ``precision`` with its params (fedbench.study.record: an fp32 run's params are as before) and
is its own fingerprint and its own stack (runs of different precisions never share one).

Deviations: on the CPU, PyTorch's oneDNN LSTM has no bfloat16 path, so a recurrent model runs bf16 on CUDA only
(PyTorch's own error says so where it is tried). The fused Triton paths (``capture`` fused_step or fused_round) compute in IEEE float32 only
(``input_precision="ieee"``); a reduced mode with them is refused in one line rather than silently ignored.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

PRECISIONS = ("fp32", "tf32", "bf16")
REDUCED = ("tf32", "bf16")  # declared modes, never a default
# each reduced mode's declared tolerance: the largest difference of a short run's final parameters from the same run
# in fp32, relative to the largest fp32 parameter, that the mode promises (TF32 rounds matmul inputs to 10 mantissa
# bits, bfloat16 to 7: about 1e-3 and 8e-3 relative a product, compounded over a run's steps). tests/engine/
# test_precision.py holds bf16 to it on the CPU (0.0275 measured: 5 rounds of FedProx, mclr); the GPU check
# (fedbench.bench.precision_check) measures each model family on the card against it and prints what it finds
TOLERANCE = {"tf32": 0.01, "bf16": 0.05}


def check_precision(precision: str, capture: str = "none") -> None:
    """Refuse, in one line, a precision this engine does not compute or a capture that cannot compute it."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision: {precision!r} is not allowed; allowed: {', '.join(PRECISIONS)}")
    if precision in REDUCED and capture.startswith("fused"):
        raise ValueError(f"precision: {precision!r} with capture {capture!r}: the fused kernels compute in IEEE "
                         "float32 only; allowed with them: fp32")


@contextlib.contextmanager
def computing(precision: str, device: torch.device) -> Iterator[None]:
    """Within this block, the arithmetic on ``device`` is ``precision``'s; PyTorch's global TF32 switches are set
    for the block and put back as they were after it (also when it raises)."""
    check_precision(precision)
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
    try:
        if precision == "bf16":
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                yield
        else:
            yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def label(precision: str) -> str:
    """How a figure or table names numbers computed in ``precision`` (a reduced mode: its declared tolerance)."""
    check_precision(precision)
    if precision == "fp32":
        return "computed in fp32"
    return (f"computed in {precision}, a declared reduced precision (within {TOLERANCE[precision]:g} of the largest "
            "parameter of fp32's, as declared; not fp32's numbers)")


def deviation(reference, reduced) -> dict[str, float]:
    """How far a run in a reduced mode (``reduced``, a fedbench.engine.simulation.RunResult) lies from the same run
    in fp32 (``reference``): the largest absolute difference of the final parameters, the same relative to the
    largest fp32 parameter, and the difference of the final test accuracy in points."""
    theta, other = reference.theta.double().cpu(), reduced.theta.double().cpu()
    largest = float(theta.abs().max()) or 1.0
    accuracy = {r.final.scalars().get("test/accuracy") for r in (reference, reduced)}
    out = {"max_abs": float((theta - other).abs().max()), "max_rel": float((theta - other).abs().max()) / largest}
    if None not in accuracy:
        out["accuracy_points"] = 100 * abs(reference.final.scalars()["test/accuracy"]
                                           - reduced.final.scalars()["test/accuracy"])
    return out
