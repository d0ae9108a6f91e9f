"""The mclr local step as one Triton launch a chain step, and as one launch a round (issue 53, item 1; design D3 of
../shared/reference/gpu-design.md).

Softmax regression's step is a few microseconds of arithmetic, which the static path (fedbench.engine.static) spends
10-24 launches on: gather, logits, softmax, gradient, the algorithm's update, the finished-row mask. Here one
program a client row does all of it:

    gather row k's minibatch (indices -1 pad it: weight 0; weights 1/count, as the engine's)
    z = x_aug theta,  p = softmax(z),  g = x_aug^T (w (p - onehot(y)))        (fedbench.engine.kernels.mclr)
    state <- update(state, g, vectors, scalars, t)      where row k is active at step t (else it keeps its state)

``update`` is the algorithm's step in its elementwise form (fedbench.engine.fused.forms), inlined as the
kernel's epilogue; a form that takes two gradients a step (FedProxVR, Mime) gets both from the same program and
the same gathered minibatch. :func:`run_fused` launches ``_mclr_step`` once per chain step, or, ``persistent``,
``_mclr_round`` once per round: the round's T steps loop inside the program with the row's state in registers,
loaded once and stored once.

Numbers. The result is :func:`fedbench.engine.static.run_static`'s, in the same layout and local-state type, up to
the rounding of the gradient's sums (another order than MKL's), about 1e-7 on the synthetic data in fp32
(tests/engine/test_fused_mclr.py holds every algorithm within 1e-5 in Triton's interpreter). It is a GPU path:
the CPU default stays the static or ragged path, bit for bit.

Limits. One program holds a row's whole [d + 1, C] parameter tile (padded to powers of two, at least 16 for
``tl.dot``): the synthetic data's 61 x 10 fit in registers; MNIST's 785 x 10 and FEMNIST's 785 x 62 need the
tile split along d (two passes: logits, then gradient and update a block at a time), which is not written yet.
fp32 only, products in IEEE fp32 (``input_precision="ieee"``, not TF32).
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
def _tile(row, P, D1, C, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr):
    """Offsets of row ``row``'s parameters viewed [d + 1, C] (theta.view(K, d + 1, C)), and the mask of the real
    ones in the padded [BLOCK_D, BLOCK_C] tile."""
    od = tl.arange(0, BLOCK_D)
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
def _minibatch(x_ptr, y_ptr, idx_ptr, B, D1, C, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr,
               BLOCK_C: tl.constexpr):
    """One row's minibatch from its B indices at ``idx_ptr`` (-1: padding): inputs [BLOCK_B, BLOCK_D] (x_aug rows,
    0 on padding), one-hot labels [BLOCK_B, BLOCK_C] and weights [BLOCK_B] (1/count on real samples, as the
    engine's ``weight / weight.sum().clamp(min=1)``)."""
    ob = tl.arange(0, BLOCK_B)
    od = tl.arange(0, BLOCK_D)
    oc = tl.arange(0, BLOCK_C)
    idx = tl.load(idx_ptr + ob, mask=ob < B, other=-1)
    valid = idx >= 0
    weight = valid.to(tl.float32)
    weight = weight / tl.maximum(tl.sum(weight, axis=0), 1.0)
    sample = tl.where(valid, idx, 0)
    x = tl.load(x_ptr + sample[:, None] * D1 + od[None, :], mask=valid[:, None] & (od[None, :] < D1), other=0.0)
    label = tl.load(y_ptr + sample, mask=valid, other=-1)
    onehot = (label[:, None] == oc[None, :]).to(tl.float32)
    return x, onehot, weight


@triton.jit
def _grad(theta, x, onehot, weight, C, BLOCK_C: tl.constexpr):
    """(w x_aug)^T (softmax(x_aug theta) - onehot): the weighted cross-entropy's gradient at one row's theta
    [BLOCK_D, BLOCK_C], its factors rounded as the engine's kernel rounds them (the weights folded into the inputs;
    padded classes get probability 0, padded samples weight 0)."""
    oc = tl.arange(0, BLOCK_C)
    z = tl.dot(x, theta, input_precision="ieee")
    z = tl.where(oc[None, :] < C, z, float("-inf"))
    e = tl.exp(z - tl.max(z, axis=1)[:, None])
    return tl.dot(tl.trans(x * weight[:, None]), e / tl.sum(e, axis=1)[:, None] - onehot, input_precision="ieee")


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


# ---- the two kernels -----------------------------------------------------------------------------------------


@triton.jit
def _mclr_step(x_ptr, y_ptr, idx_ptr, active_ptr, s_ptr, v_ptr, a_ptr, step, computes, K, P, D1, C, B,
               UPDATE: tl.constexpr, NS: tl.constexpr, NV: tl.constexpr, G0: tl.constexpr, G1: tl.constexpr,
               BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr):
    """Chain step ``step`` of every row, one program a row; the state [NS, K, P] is updated in place."""
    row = tl.program_id(0)
    go = (tl.load(active_ptr + step * K + row) != 0) & (step < computes)
    if go:
        offs, mask = _tile(row, P, D1, C, BLOCK_D, BLOCK_C)
        s0, s1, s2, s3 = _load_slots(s_ptr, NS, K * P, offs, mask)
        v0, v1, v2, v3 = _load_slots(v_ptr, NV, K * P, offs, mask)
        a = _scalars(a_ptr, row, K)
        x, onehot, weight = _minibatch(x_ptr, y_ptr, idx_ptr + (step * K + row) * B, B, D1, C, BLOCK_B, BLOCK_D,
                                       BLOCK_C)
        s0, s1, s2, s3 = _row_step((s0, s1, s2, s3), (v0, v1, v2, v3), a, step, x, onehot, weight, mask, C,
                                   UPDATE, G0, G1, BLOCK_C)
        _store_slots(s_ptr, NS, K * P, offs, mask, s0, s1, s2, s3)


@triton.jit
def _mclr_round(x_ptr, y_ptr, idx_ptr, active_ptr, s_ptr, v_ptr, a_ptr, T, computes, K, P, D1, C, B,
                UPDATE: tl.constexpr, NS: tl.constexpr, NV: tl.constexpr, G0: tl.constexpr, G1: tl.constexpr,
                BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr):
    """All T chain steps of every row, one program a row: the row's state and vectors are loaded once, kept in
    registers across the steps, and stored once."""
    row = tl.program_id(0)
    offs, mask = _tile(row, P, D1, C, BLOCK_D, BLOCK_C)
    s0, s1, s2, s3 = _load_slots(s_ptr, NS, K * P, offs, mask)
    v0, v1, v2, v3 = _load_slots(v_ptr, NV, K * P, offs, mask)
    a = _scalars(a_ptr, row, K)
    step = tl.full((), 0, tl.int32)
    while step < T:  # a while loop, not range(T): the interpreter cannot index with a runtime bound under numpy 2.4
        go = (tl.load(active_ptr + step * K + row) != 0) & (step < computes)
        if go:
            x, onehot, weight = _minibatch(x_ptr, y_ptr, idx_ptr + (step * K + row) * B, B, D1, C, BLOCK_B,
                                           BLOCK_D, BLOCK_C)
            s0, s1, s2, s3 = _row_step((s0, s1, s2, s3), (v0, v1, v2, v3), a, step, x, onehot, weight, mask, C,
                                       UPDATE, G0, G1, BLOCK_C)
        step += 1
    _store_slots(s_ptr, NS, K * P, offs, mask, s0, s1, s2, s3)


KERNELS = (_mclr_step, _mclr_round)

# Warps a program. ptxas for sm_90 (fedbench.engine.fused.aot, on the synthetic data's 64 x 16 tiles): at 4 warps the
# round kernel of FedProxVR-SARAH (4 state tiles, 2 gradients) spills 464 bytes at 255 registers; at 8 it uses 236
# registers and spills nothing, and plain SGD 142.
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


def _per_row(value: Any, k: int, device: torch.device) -> torch.Tensor:
    """A scalar operand (a number, or a tensor of one value or one per row) as [K] fp32."""
    t = torch.as_tensor(value, dtype=torch.float32, device=device).reshape(-1)
    return t.expand(k) if t.numel() == 1 else t


def _next_pow2(n: int) -> int:
    return max(16, triton.next_power_of_2(n))


def constants_of(form: UpdateForm, batch: int, d1: int, classes: int) -> dict[str, Any]:
    """The compile-time arguments of both kernels for ``form`` on minibatches of ``batch`` inputs of d + 1 = ``d1``
    features and ``classes`` classes (tiles padded to powers of two, at least 16 for ``tl.dot``), and the launch's
    warps."""
    g0, g1 = form.grad_codes()
    return {"UPDATE": form.update, "NS": len(form.fields), "NV": form.vectors, "G0": g0, "G1": g1,
            "BLOCK_B": _next_pow2(batch), "BLOCK_D": _next_pow2(d1), "BLOCK_C": _next_pow2(classes),
            "num_warps": NUM_WARPS}


def _prepare(form: UpdateForm, algorithm: Any, kernel: Any, bcast: Any, local: Any, x_prepared: torch.Tensor,
             y: torch.Tensor, cohort: Any) -> tuple[_Launch, torch.Tensor]:
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
    constants = constants_of(form, batch, d1, c)
    return _Launch(args, constants, steps, rows, computes), state


def run_fused(algorithm: Any, kernel: Any, bcast: Any, local: Any, x_prepared: torch.Tensor, y: torch.Tensor,
              cohort: Any, persistent: bool = False) -> Any:
    """fedbench.engine.static.run_static's local state from the fused kernels: ``_mclr_step`` once a chain step,
    or (``persistent``) ``_mclr_round`` once for the round. Same arguments as run_static (``local`` and a per-row
    ``bcast`` with the cohort's K rows); ``kernel`` is the mclr kernel (for C)."""
    form = form_of(algorithm)
    if form is None:
        raise ValueError(f"{type(algorithm).__name__} declares no fused form (fedbench.engine.fused.forms.FORMS); "
                         "run the static path")
    launch, state = _prepare(form, algorithm, kernel, bcast, local, x_prepared, y, cohort)
    d1, c = x_prepared.shape[-1], kernel.num_classes
    sizes = (launch.rows, d1 * c, d1, c, cohort.batches.shape[2])
    grid = (launch.rows,)
    if persistent:
        _mclr_round[grid](*launch.args, launch.steps, launch.computes, *sizes, **launch.constants)
    else:
        for t in range(launch.steps):
            _mclr_step[grid](*launch.args, t, launch.computes, *sizes, **launch.constants)
    return form.result(algorithm, local, list(state.unbind(0)), launch.steps)


# ---- the launch-count proxy ----------------------------------------------------------------------------------


@dataclass
class Launches:
    """Launches of the fused kernels while counting, by kernel name."""

    step: int = 0
    round: int = 0


@contextmanager
def count_launches():
    """Counts every launch of ``_mclr_step`` and ``_mclr_round`` inside the block, at the Triton runtime's own
    entry: a compiled kernel's ``run`` (wrapped on the kernel object), or, under ``TRITON_INTERPRET=1``, the
    interpreter's grid executor (which ``kernel[grid](...)`` calls without ``run``). Yields a :class:`Launches`
    that fills as they happen."""
    counts = Launches()
    names = {_mclr_step.__name__: "step", _mclr_round.__name__: "round"}

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
