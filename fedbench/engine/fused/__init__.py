"""Fused Triton kernels for the GPU: a client's local step in one launch, then a round in one (issue 53; design D3
of ../shared/reference/gpu-design.md).

- :mod:`fedbench.engine.fused.forms`: each algorithm's local step in the elementwise form a kernel evaluates as
  its epilogue (found by the algorithm's ``client_step``, never by its name);
- :mod:`fedbench.engine.fused.mclr`: softmax regression's step (``run_fused``: one launch a chain step, or one a
  round with ``persistent=True``; ``count_launches``: the launch-count proxy);
- :mod:`fedbench.engine.fused.cnn`: the paper CNNs' step (the vmap kernel's models) as implicit-im2col batched GEMMs,
  3 launches a layer;
- :mod:`fedbench.engine.fused.rnn`: the LSTMs' and the GRU's step (the rnn kernel's models), one cell launch a
  timestep and layer each way;
- :mod:`fedbench.engine.fused.aot`: the kernels compiled for a CUDA architecture without a GPU (registers, spills).

:func:`family` names the module that runs a stack's step (capture ``fused_step``; ``fused_round``, one launch a
round, is mclr's alone).

These are GPU paths (and Triton's interpreter's, ``TRITON_INTERPRET=1``, in the tests): the CPU default never
runs them, so its numbers stay bit-identical. Triton ships with torch's CUDA wheels; importing this package
needs no Triton, its modules do (:func:`available` says whether they can be imported).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any


def available() -> bool:
    """Whether Triton is installed, so that the fused kernels can be imported."""
    return importlib.util.find_spec("triton") is not None


FAMILIES = ("mclr", "cnn", "rnn")  # the fused modules, each its own family of models


def family(kernel: Any) -> str | None:
    """The fused module (:data:`FAMILIES`) that runs the local step of a stack on ``kernel``: mclr's kernel, the vmap
    kernel of a paper CNN (fedbench.engine.fused.cnn.supports), the rnn kernel of a model it reads
    (fedbench.engine.fused.rnn.shape_of); None for any other. Imports Triton for the last two."""
    if kernel.name == "mclr":
        return "mclr"
    if kernel.name == "vmap":
        from fedbench.engine.fused import cnn

        return "cnn" if cnn.supports(kernel.model) else None
    if kernel.name == "rnn":
        from fedbench.engine.fused import rnn

        try:
            rnn.shape_of(kernel)
        except ValueError:
            return None
        return "rnn"
    return None


def run_step(family_name: str, algorithm: Any, kernel: Any, bcast: Any, local: Any, x_prepared: Any, y: Any,
             cohort: Any, persistent: bool = False) -> Any:
    """fedbench.engine.static.run_static's local state from ``family_name``'s fused kernels (``persistent``: mclr's
    one launch a round)."""
    module = importlib.import_module(f"fedbench.engine.fused.{family_name}")
    if family_name == "mclr":
        return module.run_fused(algorithm, kernel, bcast, local, x_prepared, y, cohort, persistent=persistent)
    return module.run_fused(algorithm, kernel, bcast, local, x_prepared, y, cohort)
