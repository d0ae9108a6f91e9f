"""The fused kernels compiled for a CUDA architecture on a machine without a GPU: Triton's own compiler (frontend,
TTIR, TTGIR, LLVM IR, PTX) and the ptxas its wheel ships, so that what Triton's interpreter cannot check (that the
kernels are valid compiled Triton: constexpr functions, tuples, loops) and how many registers and spill bytes each
takes are known before a GPU is lent.

    python -m fedbench.engine.fused.aot [--arch 90] [--d1 61] [--classes 10] [--batch 10]

Must run without TRITON_INTERPRET (the interpreter's functions do not compile); the interpreter's tests run it in a
process of its own.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
from typing import Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from fedbench.engine.fused.forms import EVERY_FORM, UpdateForm
from fedbench.engine.fused.mclr import plan

POINTERS = {"x_ptr": "*fp32", "y_ptr": "*i64", "idx_ptr": "*i64", "active_ptr": "*i1", "s_ptr": "*fp32",
            "v_ptr": "*fp32", "a_ptr": "*fp32"}
INTEGERS = ("computes", "K", "P", "D1", "C", "B")


def compile_form(form: UpdateForm, arch: int = 90, d1: int = 61, classes: int = 10, batch: int = 10,
                 block_d: int | None = None) -> list[dict]:
    """The step and round kernels run_fused would launch for ``form`` at this shape (fedbench.engine.fused.mclr.plan),
    compiled for sm_``arch``: per kernel its registers and spill bytes (ptxas -v)."""
    step_kernel, round_kernel, constants = plan(form, batch, d1, classes, block_d)
    warps = constants.pop("num_warps")
    out = []
    for kernel, loop in ((step_kernel, "step"), (round_kernel, "T")):
        signature = POINTERS | {loop: "i32"} | dict.fromkeys(INTEGERS, "i32") | dict.fromkeys(constants, "constexpr")
        compiled = triton.compile(ASTSource(kernel, signature, constexprs=constants), target=GPUTarget("cuda", arch, 32),
                                  options={"num_warps": warps})
        out.append({"kernel": kernel.__name__, "update": form.update.__name__, "warps": warps,
                    "block_d": constants["BLOCK_D"], **_ptxas_usage(compiled.asm["ptx"], arch)})
    return out


def _ptxas_usage(ptx: str, arch: int) -> dict[str, int]:
    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        report = subprocess.run([ptxas, f"-arch=sm_{arch}a", "-v", path, "-o", os.devnull], capture_output=True,
                                text=True, check=True).stderr
    registers = re.search(r"Used (\d+) registers", report)
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", report)]
    return {"registers": int(registers.group(1)) if registers else -1, "spill_bytes": sum(spills)}


def compile_all(arch: int = 90, **shape: Any) -> list[dict]:
    """Every declared form's two kernels (fedbench.engine.fused.forms.EVERY_FORM)."""
    return [row for form in EVERY_FORM for row in compile_form(form, arch, **shape)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", type=int, default=90, help="CUDA compute capability as 90, 80, ... (default 90)")
    parser.add_argument("--d1", type=int, default=61, help="d + 1 input features (default 61: the synthetic data)")
    parser.add_argument("--classes", type=int, default=10, help="classes (default 10)")
    parser.add_argument("--batch", type=int, default=10, help="minibatch size (default 10)")
    args = parser.parse_args(argv)
    for row in compile_all(args.arch, d1=args.d1, classes=args.classes, batch=args.batch):
        print(f"{row['update']:18s} {row['kernel']:20s} block_d {row['block_d']:4d}  {row['warps']} warps  "
              f"{row['registers']:3d} registers  {row['spill_bytes']:6d} spill bytes")


if __name__ == "__main__":
    main()
