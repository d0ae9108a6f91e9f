"""The fused recurrent kernels compiled for a CUDA architecture on a machine without a GPU (as
fedbench.engine.fused.aot does for mclr's): every distinct kernel that fedbench.engine.fused.rnn.run_fused launches for
a paper model at its full size, compiled by Triton's own compiler and the ptxas its wheel ships, with its registers
and spill bytes. The interpreter runs Python, not compiled Triton; this is what says that the kernels are valid
compiled Triton (runtime branches, constexpr tiles, loops) before a GPU is lent.

    python -m fedbench.bench.fused_rnn_aot [--arch 90] [--model fedprox_shakespeare_lstm]

The launches are taken from one chain step of run_fused with each kernel's ``run`` recording its arguments instead of
launching (so nothing runs), and the signature of each is read from them. Must run without TRITON_INTERPRET.
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from fedbench.engine.fused import rnn
from fedbench.engine.fused.aot import _ptxas_usage

# paper model -> (builder at full size, sequence length, minibatch size)
PAPER_MODELS = {
    "fedprox_shakespeare_lstm": ("fedprox_shakespeare_lstm", 80, 10),
    "fedprox_sent140_lstm": ("fedprox_sent140_lstm", 25, 10),
    "deltafl_shakespeare_gru": ("deltafl_shakespeare_gru", 20, 16),
    "deltafl_sent140_lstm": ("deltafl_sent140_lstm", 25, 10),
}
POINTER_TYPES = {torch.float32: "*fp32", torch.int64: "*i64", torch.bool: "*i1", torch.int32: "*i32"}


def _model(name: str) -> Any:
    from fedbench import models

    build = getattr(models, PAPER_MODELS[name][0])
    if "sent140" in name:
        return build(torch.zeros(10, 300 if name.startswith("fedprox") else 50))
    return build()


def launches(name: str, rows: int = 1) -> list[tuple[Any, tuple, dict]]:
    """(kernel, arguments, keyword arguments) of each distinct launch of one FedProx chain step of ``name``."""
    from fedbench.algorithms import build_algorithm
    from fedbench.engine.kernels.rnn import RecurrentKernel
    from fedbench.engine.static import StaticCohort

    model = _model(name)
    _, seq, batch = PAPER_MODELS[name]
    kernel = RecurrentKernel(model)
    theta = torch.zeros(rows, model.num_params)
    algorithm = build_algorithm("fedprox", lr=0.1, mu=1.0)
    cohort = StaticCohort(batches=torch.zeros(1, rows, batch, dtype=torch.int64),
                          active=torch.ones(1, rows, dtype=torch.bool), rows=rows)
    seen: dict[tuple, tuple] = {}
    patched = []
    for kern in rnn.KERNELS:
        def record(*args, grid, warmup, _kern=kern, **kwargs):
            key = (_kern.__name__, *sorted((k, v if isinstance(v, (int, float, bool)) else v.__name__)
                                           for k, v in kwargs.items()))
            seen.setdefault(key, (_kern, args, kwargs))

        patched.append((kern, vars(kern).get("run")))
        kern.run = record
    try:
        rnn.run_fused(algorithm, kernel, algorithm.broadcast(algorithm.init(theta[0], rows)), theta,
                      torch.zeros(4, seq), torch.zeros(4, dtype=torch.int64), cohort)
    finally:
        for kern, own in patched:
            if own is None:
                del kern.run
            else:
                kern.run = own
    return list(seen.values())


def _signature(kern: Any, args: tuple, kwargs: dict) -> tuple[dict, dict]:
    names = kern.arg_names
    constexprs = {p.name for p in kern.params if p.is_constexpr}
    signature, values = {}, dict(zip(names, args)) | {k: v for k, v in kwargs.items() if k in names}
    for name in names:
        value = values[name]
        if name in constexprs:
            signature[name] = "constexpr"
        elif isinstance(value, torch.Tensor):
            signature[name] = POINTER_TYPES[value.dtype]
        else:
            signature[name] = "i32" if -2**31 <= int(value) < 2**31 else "i64"
    return signature, {name: values[name] for name in names if name in constexprs}


def compile_model(name: str, arch: int = 90, kernels: tuple[str, ...] | None = None) -> list[dict]:
    """Each distinct kernel of one chain step of ``name`` (or those named in ``kernels``) compiled for sm_``arch``: its
    registers and spill bytes."""
    out = []
    for kern, args, kwargs in launches(name):
        if kernels is not None and kern.__name__ not in kernels:
            continue
        signature, constants = _signature(kern, args, kwargs)
        compiled = triton.compile(ASTSource(kern, signature, constexprs=constants), target=GPUTarget("cuda", arch, 32),
                                  options={"num_warps": kwargs.get("num_warps", rnn.NUM_WARPS)})
        shown = {k: v for k, v in constants.items() if k in ("GATHER", "TOP", "DX", "TWO")}
        out.append({"model": name, "kernel": kern.__name__, **shown, **_ptxas_usage(compiled.asm["ptx"], arch)})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", type=int, default=90, help="CUDA compute capability as 90, 80, ... (default 90)")
    parser.add_argument("--model", choices=sorted(PAPER_MODELS), action="append",
                        help="a paper model (default: all four)")
    args = parser.parse_args(argv)
    for name in args.model or sorted(PAPER_MODELS):
        for row in compile_model(name, args.arch):
            flags = " ".join(f"{k}={v}" for k, v in row.items() if k in ("GATHER", "TOP", "DX", "TWO"))
            print(f"{row['model']:26s} {row['kernel']:15s} {flags:22s} {row['registers']:3d} registers  "
                  f"{row['spill_bytes']:6d} spill bytes")


if __name__ == "__main__":
    main()
