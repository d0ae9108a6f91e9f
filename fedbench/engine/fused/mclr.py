"""The mclr local step as one Triton launch a chain step, and as one launch a round (issue 53, item 1; design D3 of
../shared/reference/gpu-design.md).

Softmax regression's step is a few microseconds of arithmetic, which the static path (fedbench.engine.static) spends
10-24 launches on: gather, logits, softmax, gradient, the algorithm's update, the finished-row mask. Here one
program a client row does all of it:

    gather row k's minibatch (indices -1 pad it: weight 0; weights 1/count, as the engine's)
    z = x_aug theta,  p = softmax(z),  g = (w x_aug)^T (p - onehot(y))        (fedbench.engine.kernels.mclr)
    state <- update(state, g, vectors, scalars, t)      where row k is active at step t (else it keeps its state)

``update`` is the algorithm's step in its elementwise form (fedbench.engine.fused.forms), inlined as the
kernel's epilogue; a form that takes two gradients a step (FedProxVR, Mime) gets both from the same program and
the same gathered minibatch. :func:`run_fused` launches ``_mclr_step`` once per chain step, or, ``persistent``,
``_mclr_round`` once per round: the round's T steps loop inside the program with the row's state in registers,
loaded once and stored once. :func:`count_launches` counts the launches (the proxy "launches a chain step": 1, and
1 a round).

Numbers. The result is :func:`fedbench.engine.static.run_static`'s, in the same layout and local-state type, up to
the rounding of the gradient's sums (another order than MKL's): 3e-8 to 7e-7 on the synthetic data's local states
in fp32 (|state| < 4), one ulp on minibatch SGD's gradient sums (|state| 57); tests/engine/test_fused_mclr.py
holds every algorithm within 1e-5 in Triton's interpreter. It is a GPU path:
the CPU default stays the static or ragged path, bit for bit.

Shapes. Where a row's [d + 1, C] parameters fit one tile (padded to powers of two, at least 16 for ``tl.dot``; at
most :data:`ONE_TILE` elements: the synthetic data's 61 x 10), a program holds the whole tile, and the round kernel
keeps it in registers. Larger rows (MNIST's 785 x 10, FEMNIST's 785 x 62) run the ``_blocked`` kernels: the logits
summed over blocks of the input features, then each block's gradient and update written back, the state in global
memory (L1/L2) between steps; still one launch a step or a round. fp32 only, products in IEEE fp32
(``input_precision="ieee"``, not TF32). fedbench.engine.fused.aot compiles every kernel for sm_90 on a machine
without a GPU and reads its registers and spills from ptxas.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from fedbench.engine.fused.forms import SCALARS, UpdateForm, form_of

# ---- one row's work ------------------------------------------------------------------------------------------


@triton.jit
def _tile(row, d0, P, D1, C, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr):
    """Offsets of row ``row``'s parameters viewed [d + 1, C] (theta.view(K, d + 1, C)) from input feature ``d0`` on,
    and the mask of the real ones in the padded [BLOCK_D, BLOCK_C] tile."""
    od = d0 + tl.arange(0, BLOCK_D)
    oc = tl.arange(0, BLOCK_C)
    offs = row * P + od[:, None] * C + oc[None, :]
    return offs, (od[:, None] < D1) & (oc[None, :] < C)


@triton.jit
def _load_slots(ptr, N: tl.constexpr, stride, offs, mask):
    """The first N slots of a [SLOTS, K, P] buffer at one row's tile; the others zero tiles (never stored)."""
    zero = tl.zeros(offs.shape, tl.float32)
    t0 = zero
    t1 = zero
    t2 = zero
    t3 = zero
    if N > 0:
        t0 = tl.load(ptr + offs, mask=mask, other=0.0)
    if N > 1:
        t1 = tl.load(ptr + stride + offs, mask=mask, other=0.0)
    if N > 2:
        t2 = tl.load(ptr + 2 * stride + offs, mask=mask, other=0.0)
    if N > 3:
        t3 = tl.load(ptr + 3 * stride + offs, mask=mask, other=0.0)
    return t0, t1, t2, t3


@triton.jit
def _store_slots(ptr, N: tl.constexpr, stride, offs, mask, t0, t1, t2, t3):
    tl.store(ptr + offs, t0, mask=mask)
    if N > 1:
        tl.store(ptr + stride + offs, t1, mask=mask)
    if N > 2:
        tl.store(ptr + 2 * stride + offs, t2, mask=mask)
    if N > 3:
        tl.store(ptr + 3 * stride + offs, t3, mask=mask)


@triton.jit
def _scalars(ptr, row, K):
    """The row's 8 per-row scalars from a [SCALARS, K] buffer (unused ones are 0)."""
    return (tl.load(ptr + row), tl.load(ptr + K + row), tl.load(ptr + 2 * K + row), tl.load(ptr + 3 * K + row),
            tl.load(ptr + 4 * K + row), tl.load(ptr + 5 * K + row), tl.load(ptr + 6 * K + row),
            tl.load(ptr + 7 * K + row))


@triton.jit
def _samples(y_ptr, idx_ptr, B, BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr):
    """One row's minibatch from its B indices at ``idx_ptr`` (-1: padding): the sample indices (0 on padding), which
    are real, their weights [BLOCK_B] (1/count on real samples, as the engine's
    ``weight / weight.sum().clamp(min=1)``) and one-hot labels [BLOCK_B, BLOCK_C]."""
    ob = tl.arange(0, BLOCK_B)
    idx = tl.load(idx_ptr + ob, mask=ob < B, other=-1)
    valid = idx >= 0
    weight = valid.to(tl.float32)
    weight = weight / tl.maximum(tl.sum(weight, axis=0), 1.0)
    sample = tl.where(valid, idx, 0)
    label = tl.load(y_ptr + sample, mask=valid, other=-1)
    onehot = (label[:, None] == tl.arange(0, BLOCK_C)[None, :]).to(tl.float32)
    return sample, valid, weight, onehot


@triton.jit
def _inputs(x_ptr, sample, valid, d0, D1, BLOCK_D: tl.constexpr):
    """The samples' inputs x_aug [BLOCK_B, BLOCK_D] from feature ``d0`` on (0 on padding)."""
    od = d0 + tl.arange(0, BLOCK_D)
    return tl.load(x_ptr + sample[:, None] * D1 + od[None, :], mask=valid[:, None] & (od[None, :] < D1), other=0.0)


@triton.jit
def _minibatch(x_ptr, y_ptr, idx_ptr, B, D1, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr):
    """One row's whole minibatch: inputs [BLOCK_B, BLOCK_D], one-hot labels and weights (:func:`_samples`)."""
    sample, valid, weight, onehot = _samples(y_ptr, idx_ptr, B, BLOCK_B, BLOCK_C)
    return _inputs(x_ptr, sample, valid, 0, D1, BLOCK_D), onehot, weight


@triton.jit
def _residual(z, onehot, C, BLOCK_C: tl.constexpr):
    """softmax(z) - onehot over the classes of logits z [BLOCK_B, BLOCK_C] (padded classes: probability 0)."""
    z = tl.where(tl.arange(0, BLOCK_C)[None, :] < C, z, float("-inf"))
    e = tl.exp(z - tl.max(z, axis=1)[:, None])
    return e / tl.sum(e, axis=1)[:, None] - onehot


@triton.jit
def _grad(theta, x, onehot, weight, C, BLOCK_C: tl.constexpr):
    """(w x_aug)^T (softmax(x_aug theta) - onehot): the weighted cross-entropy's gradient at one row's theta
    [BLOCK_D, BLOCK_C], its factors rounded as the engine's kernel rounds them (the weights folded into the inputs;
    padded samples weight 0)."""
    residual = _residual(tl.dot(x, theta, input_precision="ieee"), onehot, C, BLOCK_C)
    return tl.dot(tl.trans(x * weight[:, None]), residual, input_precision="ieee")


@triton.jit
def _row_step(s, v, a, step, x, onehot, weight, mask, C, UPDATE: tl.constexpr, G0: tl.constexpr, G1: tl.constexpr,
              BLOCK_C: tl.constexpr):
    """One local step of one row: its gradient(s) on the gathered minibatch, at the state slot (code 0-3) or the
    read-only vector (code 4-7) the form names, then the form's update (padding entries of the tile held at 0)."""
    if G0 < 4:
        g0 = _grad(s[G0], x, onehot, weight, C, BLOCK_C)
    else:
        g0 = _grad(v[G0 - 4], x, onehot, weight, C, BLOCK_C)
    g1 = g0
    if G1 != G0:
        if G1 < 4:
            g1 = _grad(s[G1], x, onehot, weight, C, BLOCK_C)
        else:
            g1 = _grad(v[G1 - 4], x, onehot, weight, C, BLOCK_C)
    n0, n1, n2, n3 = UPDATE(s, (g0, g1), v, a, step)
    return tl.where(mask, n0, 0.0), tl.where(mask, n1, 0.0), tl.where(mask, n2, 0.0), tl.where(mask, n3, 0.0)


@triton.jit
def _point(s_ptr, v_ptr, CODE: tl.constexpr, stride, offs, mask):
    """A block of the gradient point: state slot CODE (0-3) or read-only vector CODE - 4 (4-7)."""
    if CODE < 4:
        out = tl.load(s_ptr + CODE * stride + offs, mask=mask, other=0.0)
    else:
        out = tl.load(v_ptr + (CODE - 4) * stride + offs, mask=mask, other=0.0)
    return out


@triton.jit
def _row_step_in_memory(x_ptr, y_ptr, idx_ptr, s_ptr, v_ptr, a, step, row, K, P, D1, C, B, UPDATE: tl.constexpr,
                        NS: tl.constexpr, NV: tl.constexpr, G0: tl.constexpr, G1: tl.constexpr,
                        BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr):
    """One local step of one row whose parameters are more than one tile (MNIST's 785 x 10): the first pass sums
    the logits at the gradient point(s) block of d + 1 by block; the second computes each block's gradient(s) and
    update and writes it back. The state stays in global memory (L1/L2) between the passes and the steps."""
    stride = K * P
    sample, valid, weight, onehot = _samples(y_ptr, idx_ptr, B, BLOCK_B, BLOCK_C)
    z0 = tl.zeros((BLOCK_B, BLOCK_C), tl.float32)
    z1 = tl.zeros((BLOCK_B, BLOCK_C), tl.float32)
    d0 = tl.full((), 0, tl.int32)
    while d0 < D1:
        offs, mask = _tile(row, d0, P, D1, C, BLOCK_D, BLOCK_C)
        x = _inputs(x_ptr, sample, valid, d0, D1, BLOCK_D)
        z0 += tl.dot(x, _point(s_ptr, v_ptr, G0, stride, offs, mask), input_precision="ieee")
        if G1 != G0:
            z1 += tl.dot(x, _point(s_ptr, v_ptr, G1, stride, offs, mask), input_precision="ieee")
        d0 += BLOCK_D
    r0 = _residual(z0, onehot, C, BLOCK_C)
    r1 = r0
    if G1 != G0:
        r1 = _residual(z1, onehot, C, BLOCK_C)
    d0 = tl.full((), 0, tl.int32)
    while d0 < D1:
        offs, mask = _tile(row, d0, P, D1, C, BLOCK_D, BLOCK_C)
        xw = tl.trans(_inputs(x_ptr, sample, valid, d0, D1, BLOCK_D) * weight[:, None])
        g0 = tl.dot(xw, r0, input_precision="ieee")
        g1 = g0
        if G1 != G0:
            g1 = tl.dot(xw, r1, input_precision="ieee")
        s = _load_slots(s_ptr, NS, stride, offs, mask)
        v = _load_slots(v_ptr, NV, stride, offs, mask)
        n0, n1, n2, n3 = UPDATE(s, (g0, g1), v, a, step)
        tl.debug_barrier()  # every thread has read this block (and the first pass) before any thread writes it
        _store_slots(s_ptr, NS, stride, offs, mask, n0, n1, n2, n3)
        d0 += BLOCK_D
    tl.debug_barrier()  # the next step reads what this one wrote, in other threads


# ---- the kernels ---------------------------------------------------------------------------------------------


@triton.jit
def _mclr_step(x_ptr, y_ptr, idx_ptr, active_ptr, s_ptr, v_ptr, a_ptr, step, computes, K, P, D1, C, B,
               UPDATE: tl.constexpr, NS: tl.constexpr, NV: tl.constexpr, G0: tl.constexpr, G1: tl.constexpr,
               BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr):
    """Chain step ``step`` of every row, one program a row; the state [NS, K, P] is updated in place."""
    row = tl.program_id(0)
    go = (tl.load(active_ptr + step * K + row) != 0) & (step < computes)
    if go:
        offs, mask = _tile(row, 0, P, D1, C, BLOCK_D, BLOCK_C)
        s0, s1, s2, s3 = _load_slots(s_ptr, NS, K * P, offs, mask)
        v0, v1, v2, v3 = _load_slots(v_ptr, NV, K * P, offs, mask)
        a = _scalars(a_ptr, row, K)
        x, onehot, weight = _minibatch(x_ptr, y_ptr, idx_ptr + (step * K + row) * B, B, D1, BLOCK_B, BLOCK_D,
                                       BLOCK_C)
        s0, s1, s2, s3 = _row_step((s0, s1, s2, s3), (v0, v1, v2, v3), a, step, x, onehot, weight, mask, C,
                                   UPDATE, G0, G1, BLOCK_C)
        tl.debug_barrier()  # every thread has read the tile before any thread writes it
        _store_slots(s_ptr, NS, K * P, offs, mask, s0, s1, s2, s3)


@triton.jit
def _mclr_round(x_ptr, y_ptr, idx_ptr, active_ptr, s_ptr, v_ptr, a_ptr, T, computes, K, P, D1, C, B,
                UPDATE: tl.constexpr, NS: tl.constexpr, NV: tl.constexpr, G0: tl.constexpr, G1: tl.constexpr,
                BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr):
    """All T chain steps of every row, one program a row: the row's state and vectors are loaded once, kept in
    registers across the steps, and stored once."""
    row = tl.program_id(0)
    offs, mask = _tile(row, 0, P, D1, C, BLOCK_D, BLOCK_C)
    s0, s1, s2, s3 = _load_slots(s_ptr, NS, K * P, offs, mask)
    v0, v1, v2, v3 = _load_slots(v_ptr, NV, K * P, offs, mask)
    a = _scalars(a_ptr, row, K)
    step = tl.full((), 0, tl.int32)
    while step < T:  # a while loop, not range(T): the interpreter cannot index with a runtime bound under numpy 2.4
        go = (tl.load(active_ptr + step * K + row) != 0) & (step < computes)
        if go:
            x, onehot, weight = _minibatch(x_ptr, y_ptr, idx_ptr + (step * K + row) * B, B, D1, BLOCK_B,
                                           BLOCK_D, BLOCK_C)
            s0, s1, s2, s3 = _row_step((s0, s1, s2, s3), (v0, v1, v2, v3), a, step, x, onehot, weight, mask, C,
                                       UPDATE, G0, G1, BLOCK_C)
        step += 1
    _store_slots(s_ptr, NS, K * P, offs, mask, s0, s1, s2, s3)


@triton.jit
def _mclr_step_blocked(x_ptr, y_ptr, idx_ptr, active_ptr, s_ptr, v_ptr, a_ptr, step, computes, K, P, D1, C, B,
                       UPDATE: tl.constexpr, NS: tl.constexpr, NV: tl.constexpr, G0: tl.constexpr, G1: tl.constexpr,
                       BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr):
    """_mclr_step where a row's parameters are more than one tile: blocks of BLOCK_D input features."""
    row = tl.program_id(0)
    go = (tl.load(active_ptr + step * K + row) != 0) & (step < computes)
    if go:
        _row_step_in_memory(x_ptr, y_ptr, idx_ptr + (step * K + row) * B, s_ptr, v_ptr, _scalars(a_ptr, row, K), step,
                            row, K, P, D1, C, B, UPDATE, NS, NV, G0, G1, BLOCK_B, BLOCK_D, BLOCK_C)


@triton.jit
def _mclr_round_blocked(x_ptr, y_ptr, idx_ptr, active_ptr, s_ptr, v_ptr, a_ptr, T, computes, K, P, D1, C, B,
                        UPDATE: tl.constexpr, NS: tl.constexpr, NV: tl.constexpr, G0: tl.constexpr,
                        G1: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr):
    """_mclr_round where a row's parameters are more than one tile: one launch a round, the state in global memory
    (one row's 31 KB at MNIST's size stays in L1/L2 across the steps)."""
    row = tl.program_id(0)
    a = _scalars(a_ptr, row, K)
    step = tl.full((), 0, tl.int32)
    while step < T:
        go = (tl.load(active_ptr + step * K + row) != 0) & (step < computes)
        if go:
            _row_step_in_memory(x_ptr, y_ptr, idx_ptr + (step * K + row) * B, s_ptr, v_ptr, a, step, row, K, P, D1,
                                C, B, UPDATE, NS, NV, G0, G1, BLOCK_B, BLOCK_D, BLOCK_C)
        step += 1


KERNELS = (_mclr_step, _mclr_round, _mclr_step_blocked, _mclr_round_blocked)
ONE_TILE = 64 * 64  # the largest [d + 1, C] tile (padded) a program holds whole; larger rows run in blocks
BLOCK_ELEMENTS = 1024  # a block's [BLOCK_D, BLOCK_C] elements where rows run in blocks: ptxas for sm_90 at MNIST's
# 785 x 10 and FEMNIST's 785 x 62, 48-179 registers and at most 40 spill bytes (2 of 48 kernels) at 8 warps; 2048
# reached 255 registers

# Warps a program. ptxas for sm_90 (fedbench.engine.fused.aot, on the synthetic data's 64 x 16 tiles): at 4 warps the
# round kernel of FedProxVR-SARAH (4 state tiles, 2 gradients) spills 464 bytes at 255 registers; at 8 it uses 236
# registers and spills nothing, plain SGD 140, and 2 of the 24 kernels spill 32 bytes.
NUM_WARPS = 8


# ---- launching -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Launch:
    """Everything one round's launches take, built once (no tensor work between the steps)."""

    args: tuple
    constants: dict[str, Any]
    steps: int
    rows: int
    computes: int
    step_kernel: Any
    round_kernel: Any


def _per_row(value: Any, k: int, device: torch.device) -> torch.Tensor:
    """A scalar operand (a number, or a tensor of one value or one per row) as [K] fp32."""
    t = torch.as_tensor(value, dtype=torch.float32, device=device).reshape(-1)
    return t.expand(k) if t.numel() == 1 else t


def _next_pow2(n: int) -> int:
    return max(16, triton.next_power_of_2(n))


def plan(form: UpdateForm, batch: int, d1: int, classes: int, block_d: int | None = None) -> tuple[Any, Any, dict]:
    """The step and round kernels for ``form`` on minibatches of ``batch`` inputs of d + 1 = ``d1`` features and
    ``classes`` classes, and their compile-time arguments and warps: a row's whole tile (padded to powers of two, at
    least 16 for ``tl.dot``) where it is at most :data:`ONE_TILE` elements, else blocks of ``block_d`` features
    (default: :data:`BLOCK_ELEMENTS` a block)."""
    block_c = _next_pow2(classes)
    whole = _next_pow2(d1)
    if block_d is None and whole * block_c <= ONE_TILE:
        kernels, block = (_mclr_step, _mclr_round), whole
    else:
        kernels = (_mclr_step_blocked, _mclr_round_blocked)
        block = block_d if block_d is not None else min(whole, max(16, BLOCK_ELEMENTS // block_c))
        if block < 16 or block & (block - 1):
            raise ValueError(f"block_d {block}: a power of two >= 16 (tl.dot's smallest)")
    g0, g1 = form.grad_codes()
    constants = {"UPDATE": form.update, "NS": len(form.fields), "NV": form.vectors, "G0": g0, "G1": g1,
                 "BLOCK_B": _next_pow2(batch), "BLOCK_D": block, "BLOCK_C": block_c, "num_warps": NUM_WARPS}
    return *kernels, constants


def _prepare(form: UpdateForm, algorithm: Any, kernel: Any, bcast: Any, local: Any, x_prepared: torch.Tensor,
             y: torch.Tensor, cohort: Any, block_d: int | None) -> tuple[_Launch, torch.Tensor]:
    ops = form.operands(algorithm, bcast, local)
    steps, rows, batch = cohort.batches.shape
    d1, c = x_prepared.shape[-1], kernel.num_classes
    p = ops.state[0].shape[-1]
    if x_prepared.dtype != torch.float32 or any(t.dtype != torch.float32 for t in ops.state + ops.vectors):
        raise ValueError(f"the fused mclr kernel runs fp32 only, got inputs {x_prepared.dtype} and state "
                         f"{sorted({str(t.dtype) for t in ops.state + ops.vectors})}")
    if p != d1 * c or x_prepared.dim() != 2:
        raise ValueError(f"the fused mclr kernel needs prepared inputs [n, d + 1] and parameters (d + 1) * C, got "
                         f"inputs {tuple(x_prepared.shape)}, {p} parameters and C = {c}")
    if len(ops.state) != len(form.fields) or len(ops.vectors) != form.vectors or len(ops.scalars) > SCALARS:
        raise ValueError(f"{form.update.__name__}'s operands: {len(ops.state)} state and {len(ops.vectors)} "
                         f"read-only vectors and {len(ops.scalars)} scalars, where the form declares "
                         f"{len(form.fields)}, {form.vectors} and at most {SCALARS}")
    device = x_prepared.device
    state = torch.stack([t.expand(rows, p) for t in ops.state]).contiguous()  # a fresh buffer, updated in place
    vectors = (torch.stack([t.expand(rows, p) for t in ops.vectors]).contiguous() if ops.vectors
               else state.new_zeros(1))
    scalars = torch.zeros(SCALARS, rows, dtype=torch.float32, device=device)
    for j, value in enumerate(ops.scalars):
        scalars[j] = _per_row(value, rows, device)
    computes = form.computes(algorithm, local)
    computes = steps if computes is None else min(computes, steps)
    args = (x_prepared.contiguous(), y.contiguous(), cohort.batches.contiguous(), cohort.active.contiguous(),
            state, vectors, scalars)
    step_kernel, round_kernel, constants = plan(form, batch, d1, c, block_d)
    return _Launch(args, constants, steps, rows, computes, step_kernel, round_kernel), state


def run_fused(algorithm: Any, kernel: Any, bcast: Any, local: Any, x_prepared: torch.Tensor, y: torch.Tensor,
              cohort: Any, persistent: bool = False, block_d: int | None = None) -> Any:
    """fedbench.engine.static.run_static's local state from the fused kernels: the step kernel once a chain step,
    or (``persistent``) the round kernel once for the round (:func:`plan` picks whole-tile or blocked ones;
    ``block_d`` forces blocks of that many features). Same arguments as run_static (``local`` and a per-row
    ``bcast`` with the cohort's K rows); ``kernel`` is the mclr kernel (for C)."""
    form = form_of(algorithm)
    if form is None:
        raise ValueError(f"{type(algorithm).__name__} has no fused form (its client_step's code is none of fedbench.engine.fused.forms.CLIENT_STEPS); "
                         "run the static path")
    launch, state = _prepare(form, algorithm, kernel, bcast, local, x_prepared, y, cohort, block_d)
    d1, c = x_prepared.shape[-1], kernel.num_classes
    sizes = (launch.rows, d1 * c, d1, c, cohort.batches.shape[2])
    grid = (launch.rows,)
    if persistent:
        launch.round_kernel[grid](*launch.args, launch.steps, launch.computes, *sizes, **launch.constants)
    else:
        for t in range(launch.steps):
            launch.step_kernel[grid](*launch.args, t, launch.computes, *sizes, **launch.constants)
    return form.result(algorithm, local, list(state.unbind(0)), launch.steps)


# ---- the launch-count proxy ----------------------------------------------------------------------------------


@dataclass
class Launches:
    """Launches of the fused kernels while counting: of a step kernel, of a round kernel."""

    step: int = 0
    round: int = 0


@contextmanager
def count_launches():
    """Counts every launch of the step kernels and the round kernels inside the block, at the Triton runtime's own
    entry: a compiled kernel's ``run`` (wrapped on the kernel object), or, under ``TRITON_INTERPRET=1``, the
    interpreter's grid executor (which ``kernel[grid](...)`` calls without ``run``). Yields a :class:`Launches`
    that fills as they happen."""
    counts = Launches()
    names = {k.__name__: "round" if "round" in k.__name__ else "step" for k in KERNELS}

    def add(name: str) -> None:
        setattr(counts, names[name], getattr(counts, names[name]) + 1)

    if _interpreted():
        from triton.runtime.interpreter import GridExecutor

        execute = GridExecutor.__call__

        def counted_grid(self, *args, **kwargs):
            if self.fn.__name__ in names:
                add(self.fn.__name__)
            return execute(self, *args, **kwargs)

        GridExecutor.__call__ = counted_grid
        try:
            yield counts
        finally:
            GridExecutor.__call__ = execute
        return
    patched = []
    for kern in KERNELS:
        def counted(*args, _run=kern.run, _name=kern.__name__, **kwargs):
            add(_name)
            return _run(*args, **kwargs)

        patched.append((kern, vars(kern).get("run")))
        kern.run = counted
    try:
        yield counts
    finally:
        for kern, own in patched:
            if own is None:
                del kern.run  # the class's run again
            else:
                kern.run = own


def _interpreted() -> bool:
    """Whether the kernels were built for Triton's interpreter (TRITON_INTERPRET=1 when this module was imported)."""
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(_mclr_step, InterpretedFunction)
