"""Fused Triton kernels for the GPU: a client's local step in one launch, then a round in one (issue 53; design D3
of ../shared/reference/gpu-design.md).

- :mod:`fedbench.engine.fused.forms`: each algorithm's local step in the elementwise form a kernel evaluates as
  its epilogue (found by the algorithm's ``client_step``, never by its name);
- :mod:`fedbench.engine.fused.mclr`: softmax regression's step (``run_fused``: one launch a chain step, or one a
  round with ``persistent=True``; ``count_launches``: the launch-count proxy);
- :mod:`fedbench.engine.fused.aot`: the kernels compiled for a CUDA architecture without a GPU (registers, spills).

These are GPU paths (and Triton's interpreter's, ``TRITON_INTERPRET=1``, in the tests): the CPU default never
runs them, so its numbers stay bit-identical. Triton ships with torch's CUDA wheels; importing this package
needs no Triton, its modules do (:func:`available` says whether they can be imported).
"""

from __future__ import annotations

import importlib.util


def available() -> bool:
    """Whether Triton is installed, so that the fused kernels can be imported."""
    return importlib.util.find_spec("triton") is not None
