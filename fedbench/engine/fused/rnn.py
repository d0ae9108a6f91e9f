"""The recurrent models' local step in one fused cell kernel a timestep and layer, forward and backward (issue 53,
item 3; design D3 of ../shared/reference/gpu-design.md).

The engine's ``rnn`` kernel (fedbench.engine.kernels.rnn) runs a cohort's stacked LSTM or GRU as batched products,
but each timestep's gates, state update and their gradients are a dozen ATen operations: 6,749 launches a local
step of FedProx's Shakespeare LSTM (80 timesteps, 2 layers), 2,128 of its Sent140 LSTM (25, 2), 712 of Delta-FL's
GRU (20, 1). Here the clients are rows on the batch axis, as there, and one chain step is

    per gradient point (1, or 2 for the forms that take two gradients a step):
      per layer l (1 launch): the input part  X_l = in_l W_ih^T + b  for all timesteps at once (layer 0 gathers the
          row's minibatch and its embedding rows itself)
      per timestep t (1 launch): the recurrent product h_{t-1} W_hh^T, the gates and c_t, h_t (``_lstm_forward``,
          ``_gru_forward``: one program a row and block of hidden units)
      the head (1 launch): the linear layers on the last step's h, the loss's gradient and the head's gradients
      per layer from the top, per timestep from the last (1 launch): dh_t = dh_in + dG_{t+1} W_hh (the recurrent
          product of the backward pass), the gates' gradients and the carried dc (dh z for the GRU)
      per layer (1 launch): dW_ih, dW_hh and the biases as products over all timesteps, and the input's gradient
          (the layer below's dh_in, or the trainable embedding's gradient)
    the algorithm's update (1 launch): its elementwise form (fedbench.engine.fused.forms), rows not active keep their
    state

which is 2 x timesteps x layers + 2 x layers + 2 launches a chain step (one gradient): Shakespeare 326, Sent140
106, the GRU 44, against the issue's <= 2 x timesteps x layers + 10 (330 / 110 / 50). Every buffer is allocated once
a round; a chain step launches kernels only (no ATen operation).

Numbers. The arithmetic is the rnn kernel's (its ``_LSTMRecurrence``/``_GRURecurrence`` forward and their written-out
backpropagation through time), in its order of operations; sums over the hidden units, the gates and the samples
round in another order, and tanh is exp-based (Triton has no tanh in its interpreter). The local state is
fedbench.engine.static.run_static's within 1e-5 in fp32 (tests/engine/test_fused_rnn.py, Triton's interpreter); it
is a GPU path, never the CPU default. Products in IEEE fp32 (``input_precision="ieee"``).

fedbench.bench.fused_rnn_aot compiles every kernel this launches for the paper models for sm_90 without a GPU
(registers, spills); fedbench.bench.fused_rnn_check compares a full-size step with the static path on a GPU.

Not yet: the step index is an argument (a CUDA graph of one chain step would need it in device memory), and the
weights are read from global memory (L2) each timestep, not kept on chip across timesteps (issue 53's waves).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from fedbench.engine.fused.forms import SCALARS, UpdateForm, form_of
from fedbench.engine.fused.mclr import _load_slots, _scalars, _store_slots
from fedbench.models.recurrent import FROZEN_TABLE

# ---- pieces ----------------------------------------------------------------------------------------------------


@triton.jit
def _tanh(x):
    """tanh from one exp (Triton's interpreter has none): sign(x) (1 - e^{-2|x|}) / (1 + e^{-2|x|})."""
    e = tl.exp(-2.0 * tl.abs(x))
    y = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -y, y)


@triton.jit
def _go(active_ptr, step, computes, K, row):
    """Whether row ``row`` trains at chain step ``step`` (finished and padding rows skip every kernel)."""
    return (tl.load(active_ptr + step * K + row) != 0) & (step < computes)


@triton.jit
def _tokens(ids_ptr, idx_ptr, step, K, row, om, mm, B: tl.constexpr, S: tl.constexpr):
    """The token ids of positions m = b S + s of row ``row``'s minibatch at ``step`` (a padding sample reads sample
    0, as the static path's clamped gather does; its weight is 0)."""
    sample = tl.load(idx_ptr + (step * K + row) * B + om // S, mask=mm, other=0)
    sample = tl.maximum(sample, 0)
    return tl.load(ids_ptr + sample * S + om % S, mask=mm, other=0).to(tl.int32)


@triton.jit
def _inputs(ids_ptr, idx_ptr, step, K, row, src_ptr, src_stride, src_off, om, mm, oe, me, GATHER: tl.constexpr,
            B: tl.constexpr, S: tl.constexpr, E: tl.constexpr):
    """A layer's inputs [BLOCK_M, BLOCK_E] at positions ``om`` and input features ``oe``: the embedding rows of the
    minibatch's tokens (``GATHER``: a row's own table, or the frozen one at row stride 0), or the layer below's h."""
    if GATHER:
        token = _tokens(ids_ptr, idx_ptr, step, K, row, om, mm, B, S)
        base = src_ptr + row * src_stride + src_off + token * E
    else:
        base = src_ptr + row * src_stride + src_off + om * E
    return tl.load(base[:, None] + oe[None, :], mask=mm[:, None] & me[None, :], other=0.0)


# ---- forward ---------------------------------------------------------------------------------------------------


@triton.jit
def _input_part(ids_ptr, idx_ptr, active_ptr, step, computes, K, src_ptr, src_stride, src_off, th_ptr, P, w_off,
                b1_ptr, b1_stride, b1_off, b2_ptr, b2_stride, b2_off, out_ptr, GATHER: tl.constexpr,
                TWO_BIASES: tl.constexpr, B: tl.constexpr, S: tl.constexpr, E: tl.constexpr, G: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr):
    """X = in W_ih^T + b for every position of one row (rnn kernel's ``_input_part``; the LSTM's b = b_ih + b_hh):
    one program a row and [BLOCK_M positions, BLOCK_N gate columns] tile."""
    row = tl.program_id(0).to(tl.int64)  # offsets past 2^31 at thousands of rows
    if _go(active_ptr, step, computes, K, row):
        om = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
        on = tl.program_id(2) * BLOCK_N + tl.arange(0, BLOCK_N)
        mm = om < B * S
        mn = on < G
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for e0 in range(0, E, BLOCK_E):
            oe = e0 + tl.arange(0, BLOCK_E)
            me = oe < E
            x = _inputs(ids_ptr, idx_ptr, step, K, row, src_ptr, src_stride, src_off, om, mm, oe, me, GATHER, B, S, E)
            w = tl.load(th_ptr + row * P + w_off + on[None, :] * E + oe[:, None], mask=me[:, None] & mn[None, :],
                        other=0.0)  # W_ih[n, e] as [e, n]
            acc += tl.dot(x, w, input_precision="ieee")
        bias = tl.load(b1_ptr + row * b1_stride + b1_off + on, mask=mn, other=0.0)
        if TWO_BIASES:
            bias = bias + tl.load(b2_ptr + row * b2_stride + b2_off + on, mask=mn, other=0.0)
        tl.store(out_ptr + (row * B * S + om[:, None]) * G + on[None, :], bias[None, :] + acc,
                 mask=mm[:, None] & mn[None, :])


@triton.jit
def _recurrent(hs_ptr, th_ptr, w_row, prev, ob, mb, oj, mj, GATES: tl.constexpr, H: tl.constexpr,
               BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """h_{t-1} W_hh[q H + j, :]^T for the gates q < GATES (3 or 4; the fourth 0 for a GRU) at hidden units ``oj``:
    the recurrent product, h_{t-1} loaded once a block of BLOCK_K units (``prev``: the positions of t - 1)."""
    a0 = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
    a1 = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
    a2 = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
    a3 = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
    for k0 in range(0, H, BLOCK_K):
        ok = k0 + tl.arange(0, BLOCK_K)
        mk = ok < H
        h = tl.load(hs_ptr + prev[:, None] * H + ok[None, :], mask=mb[:, None] & mk[None, :], other=0.0)
        w = th_ptr + w_row + oj[None, :] * H + ok[:, None]  # W_hh[q H + j, k] as [k, j]
        mw = mk[:, None] & mj[None, :]
        a0 += tl.dot(h, tl.load(w, mask=mw, other=0.0), input_precision="ieee")
        a1 += tl.dot(h, tl.load(w + H * H, mask=mw, other=0.0), input_precision="ieee")
        a2 += tl.dot(h, tl.load(w + 2 * H * H, mask=mw, other=0.0), input_precision="ieee")
        if GATES == 4:
            a3 += tl.dot(h, tl.load(w + 3 * H * H, mask=mw, other=0.0), input_precision="ieee")
    return a0, a1, a2, a3


@triton.jit
def _lstm_forward(x_ptr, hs_ptr, cs_ptr, acts_ptr, th_ptr, P, w_off, active_ptr, step, computes, t, K,
                  B: tl.constexpr, S: tl.constexpr, H: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    """Timestep t of one LSTM layer (``_LSTMRecurrence.forward``): gates = X_t + h_{t-1} W_hh^T, i f g o, c_t, h_t;
    one program a row and block of hidden units j (its four gate columns)."""
    row = tl.program_id(0).to(tl.int64)  # offsets past 2^31 at thousands of rows
    if _go(active_ptr, step, computes, K, row):
        ob = tl.arange(0, BLOCK_B)
        oj = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
        mb = ob < B
        mj = oj < H
        m2 = mb[:, None] & mj[None, :]
        pos = (row * B + ob) * S + t
        gates = x_ptr + pos[:, None] * (4 * H) + oj[None, :]
        pi = tl.load(gates, mask=m2, other=0.0)
        pf = tl.load(gates + H, mask=m2, other=0.0)
        pg = tl.load(gates + 2 * H, mask=m2, other=0.0)
        po = tl.load(gates + 3 * H, mask=m2, other=0.0)
        c = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
        if t > 0:
            ai, af, ag, ao = _recurrent(hs_ptr, th_ptr, row * P + w_off, pos - 1, ob, mb, oj, mj, 4, H, BLOCK_B,
                                        BLOCK_H, BLOCK_K)
            pi = pi + ai
            pf = pf + af
            pg = pg + ag
            po = po + ao
            c = tl.load(cs_ptr + (pos - 1)[:, None] * H + oj[None, :], mask=m2, other=0.0)  # c_{t-1}
        i = tl.sigmoid(pi)
        f = tl.sigmoid(pf)
        g = _tanh(pg)
        o = tl.sigmoid(po)
        c = i * g + f * c  # c_{-1} = 0: i g exactly
        h = o * _tanh(c)
        acts = acts_ptr + pos[:, None] * (4 * H) + oj[None, :]
        tl.store(acts, i, mask=m2)
        tl.store(acts + H, f, mask=m2)
        tl.store(acts + 2 * H, g, mask=m2)
        tl.store(acts + 3 * H, o, mask=m2)
        tl.store(cs_ptr + pos[:, None] * H + oj[None, :], c, mask=m2)
        tl.store(hs_ptr + pos[:, None] * H + oj[None, :], h, mask=m2)


@triton.jit
def _gru_forward(x_ptr, hs_ptr, hn_ptr, acts_ptr, th_ptr, P, w_off, bh_ptr, bh_stride, bh_off, active_ptr, step,
                 computes, t, K, B: tl.constexpr, S: tl.constexpr, H: tl.constexpr, BLOCK_B: tl.constexpr,
                 BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Timestep t of one GRU layer (``_GRURecurrence.forward``): h_part = b_hh + h_{t-1} W_hh^T, r z n, h_t."""
    row = tl.program_id(0).to(tl.int64)  # offsets past 2^31 at thousands of rows
    if _go(active_ptr, step, computes, K, row):
        ob = tl.arange(0, BLOCK_B)
        oj = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
        mb = ob < B
        mj = oj < H
        m2 = mb[:, None] & mj[None, :]
        pos = (row * B + ob) * S + t
        bias = bh_ptr + row * bh_stride + bh_off + oj
        zero = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
        hr = zero + tl.load(bias, mask=mj, other=0.0)[None, :]
        hz = zero + tl.load(bias + H, mask=mj, other=0.0)[None, :]
        hn = zero + tl.load(bias + 2 * H, mask=mj, other=0.0)[None, :]
        h_prev = zero
        if t > 0:
            ar, az, an, _ = _recurrent(hs_ptr, th_ptr, row * P + w_off, pos - 1, ob, mb, oj, mj, 3, H, BLOCK_B,
                                       BLOCK_H, BLOCK_K)
            hr = hr + ar
            hz = hz + az
            hn = hn + an
            h_prev = tl.load(hs_ptr + (pos - 1)[:, None] * H + oj[None, :], mask=m2, other=0.0)
        gates = x_ptr + pos[:, None] * (3 * H) + oj[None, :]
        r = tl.sigmoid(tl.load(gates, mask=m2, other=0.0) + hr)
        z = tl.sigmoid(tl.load(gates + H, mask=m2, other=0.0) + hz)
        n = _tanh(tl.load(gates + 2 * H, mask=m2, other=0.0) + r * hn)
        if t > 0:
            h = n + z * (h_prev - n)
        else:
            h = n - z * n  # h_{-1} = 0
        acts = acts_ptr + pos[:, None] * (3 * H) + oj[None, :]
        tl.store(acts, r, mask=m2)
        tl.store(acts + H, z, mask=m2)
        tl.store(acts + 2 * H, n, mask=m2)
        tl.store(hn_ptr + pos[:, None] * H + oj[None, :], hn, mask=m2)
        tl.store(hs_ptr + pos[:, None] * H + oj[None, :], h, mask=m2)


# ---- the head and the loss -------------------------------------------------------------------------------------


@triton.jit
def _head(hs_ptr, y_ptr, idx_ptr, active_ptr, step, computes, K, th_ptr, P, w1_off, b1_off, w2_off, b2_off, g_ptr,
          dlast_ptr, B: tl.constexpr, S: tl.constexpr, H: tl.constexpr, C1: tl.constexpr, C2: tl.constexpr,
          TWO: tl.constexpr, SIGMOID: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr,
          BLOCK_C1: tl.constexpr, BLOCK_C2: tl.constexpr):
    """One row's head on the last timestep's h: 1 or 2 linear layers, the gradient of sum_b w_b loss_b (weights
    1/count on the real samples, as the static path's), the head's parameter gradients, and dh of the last step."""
    row = tl.program_id(0).to(tl.int64)  # offsets past 2^31 at thousands of rows
    if _go(active_ptr, step, computes, K, row):
        ob = tl.arange(0, BLOCK_B)
        mb = ob < B
        idx = tl.load(idx_ptr + (step * K + row) * B + ob, mask=mb, other=-1)
        weight = (idx >= 0).to(tl.float32)
        weight = weight / tl.maximum(tl.sum(weight, axis=0), 1.0)
        label = tl.load(y_ptr + tl.maximum(idx, 0), mask=mb, other=0)
        last = (row * B + ob) * S + S - 1
        oc1 = tl.arange(0, BLOCK_C1)
        mc1 = oc1 < C1
        th = th_ptr + row * P
        z1 = tl.zeros((BLOCK_B, BLOCK_C1), tl.float32)
        for h0 in range(0, H, BLOCK_H):
            oh = h0 + tl.arange(0, BLOCK_H)
            mh = oh < H
            h = tl.load(hs_ptr + last[:, None] * H + oh[None, :], mask=mb[:, None] & mh[None, :], other=0.0)
            w1 = tl.load(th + w1_off + oc1[None, :] * H + oh[:, None], mask=mh[:, None] & mc1[None, :], other=0.0)
            z1 += tl.dot(h, w1, input_precision="ieee")
        z1 = tl.load(th + b1_off + oc1, mask=mc1, other=0.0)[None, :] + z1
        out = z1
        CLASSES: tl.constexpr = C2 if TWO else C1
        BLOCK_OUT: tl.constexpr = BLOCK_C2 if TWO else BLOCK_C1
        oc2 = tl.arange(0, BLOCK_C2)
        mc2 = oc2 < C2
        if TWO:
            w2 = tl.load(th + w2_off + oc2[None, :] * C1 + oc1[:, None], mask=mc1[:, None] & mc2[None, :], other=0.0)
            out = tl.load(th + b2_off + oc2, mask=mc2, other=0.0)[None, :] + tl.dot(z1, w2, input_precision="ieee")
        oc = tl.arange(0, BLOCK_OUT)
        if SIGMOID:  # one logit: d/dz = sigmoid(z) - y
            dz = tl.where(oc[None, :] < 1, tl.sigmoid(out) - label.to(tl.float32)[:, None], 0.0)
        else:
            logits = tl.where(oc[None, :] < CLASSES, out, float("-inf"))
            e = tl.exp(logits - tl.max(logits, axis=1)[:, None])
            dz = e / tl.sum(e, axis=1)[:, None] - (label[:, None] == oc[None, :]).to(tl.float32)
        dz = dz * weight[:, None]
        dz1 = dz
        if TWO:
            dw2 = tl.dot(tl.trans(dz), z1, input_precision="ieee")  # [BLOCK_C2, BLOCK_C1]
            tl.store(g_ptr + row * P + w2_off + oc2[:, None] * C1 + oc1[None, :], dw2,
                     mask=mc2[:, None] & mc1[None, :])
            tl.store(g_ptr + row * P + b2_off + oc2, tl.sum(dz, axis=0), mask=mc2)
            dz1 = tl.dot(dz, tl.trans(w2), input_precision="ieee")  # [BLOCK_B, BLOCK_C1]
        tl.store(g_ptr + row * P + b1_off + oc1, tl.sum(dz1, axis=0), mask=mc1)
        for h0 in range(0, H, BLOCK_H):
            oh = h0 + tl.arange(0, BLOCK_H)
            mh = oh < H
            h = tl.load(hs_ptr + last[:, None] * H + oh[None, :], mask=mb[:, None] & mh[None, :], other=0.0)
            tl.store(g_ptr + row * P + w1_off + oc1[:, None] * H + oh[None, :],
                     tl.dot(tl.trans(dz1), h, input_precision="ieee"), mask=mc1[:, None] & mh[None, :])
            w1 = tl.load(th + w1_off + oc1[:, None] * H + oh[None, :], mask=mc1[:, None] & mh[None, :], other=0.0)
            tl.store(dlast_ptr + (row * B + ob)[:, None] * H + oh[None, :], tl.dot(dz1, w1, input_precision="ieee"),
                     mask=mb[:, None] & mh[None, :])


# ---- backward --------------------------------------------------------------------------------------------------


@triton.jit
def _dh(din_ptr, dg_ptr, th_ptr, w_row, pos, row, t, ob, mb, oj, mj, TOP: tl.constexpr, B: tl.constexpr,
        S: tl.constexpr, H: tl.constexpr, G: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr,
        BLOCK_K: tl.constexpr):
    """The gradient reaching h_t from above (the head's at the last step of the top layer, else the layer above's
    input gradient) and the recurrent product dG_{t+1} W_hh[:, j] (0 at the last step), apart."""
    m2 = mb[:, None] & mj[None, :]
    if TOP:
        d_in = tl.load(din_ptr + (row * B + ob)[:, None] * H + oj[None, :], mask=m2 & (t == S - 1), other=0.0)
    else:
        d_in = tl.load(din_ptr + pos[:, None] * H + oj[None, :], mask=m2, other=0.0)
    acc = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
    if t < S - 1:
        for g0 in range(0, G, BLOCK_K):
            og = g0 + tl.arange(0, BLOCK_K)
            mg = og < G
            d = tl.load(dg_ptr + (pos + 1)[:, None] * G + og[None, :], mask=mb[:, None] & mg[None, :], other=0.0)
            w = tl.load(th_ptr + w_row + og[:, None] * H + oj[None, :], mask=mg[:, None] & mj[None, :], other=0.0)
            acc += tl.dot(d, w, input_precision="ieee")
    return d_in, acc


@triton.jit
def _lstm_backward(din_ptr, dg_ptr, carry_ptr, acts_ptr, cs_ptr, th_ptr, P, w_off, active_ptr, step, computes, t, K,
                   TOP: tl.constexpr, B: tl.constexpr, S: tl.constexpr, H: tl.constexpr, BLOCK_B: tl.constexpr,
                   BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Timestep t of one LSTM layer's backpropagation through time (``_LSTMRecurrence.backward``): dh, dc (with the
    carried dc_{t+1} f_{t+1}), the gates' gradients dG_t, and the carry for t - 1."""
    row = tl.program_id(0).to(tl.int64)  # offsets past 2^31 at thousands of rows
    if _go(active_ptr, step, computes, K, row):
        ob = tl.arange(0, BLOCK_B)
        oj = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
        mb = ob < B
        mj = oj < H
        m2 = mb[:, None] & mj[None, :]
        pos = (row * B + ob) * S + t
        d_in, recurrent = _dh(din_ptr, dg_ptr, th_ptr, row * P + w_off, pos, row, t, ob, mb, oj, mj, TOP, B, S, H,
                              4 * H, BLOCK_B, BLOCK_H, BLOCK_K)
        dh = d_in + recurrent
        acts = acts_ptr + pos[:, None] * (4 * H) + oj[None, :]
        i = tl.load(acts, mask=m2, other=0.0)
        f = tl.load(acts + H, mask=m2, other=0.0)
        g = tl.load(acts + 2 * H, mask=m2, other=0.0)
        o = tl.load(acts + 3 * H, mask=m2, other=0.0)
        tc = _tanh(tl.load(cs_ptr + pos[:, None] * H + oj[None, :], mask=m2, other=0.0))
        carry = carry_ptr + (row * B + ob)[:, None] * H + oj[None, :]
        dc = dh * o * (1 - tc * tc)
        if t < S - 1:
            dc = dc + tl.load(carry, mask=m2, other=0.0)
        c_prev = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
        if t > 0:
            c_prev = tl.load(cs_ptr + (pos - 1)[:, None] * H + oj[None, :], mask=m2, other=0.0)
        dg = dg_ptr + pos[:, None] * (4 * H) + oj[None, :]
        tl.store(dg, dc * g * i * (1 - i), mask=m2)
        tl.store(dg + H, dc * c_prev * f * (1 - f), mask=m2)  # 0 at t = 0
        tl.store(dg + 2 * H, dc * i * (1 - g * g), mask=m2)
        tl.store(dg + 3 * H, dh * tc * o * (1 - o), mask=m2)
        tl.debug_barrier()  # every thread has read the carry before any thread writes it
        tl.store(carry, dc * f, mask=m2)


@triton.jit
def _gru_backward(din_ptr, dgx_ptr, dgh_ptr, carry_ptr, acts_ptr, hn_ptr, hs_ptr, th_ptr, P, w_off, active_ptr,
                  step, computes, t, K, TOP: tl.constexpr, B: tl.constexpr, S: tl.constexpr, H: tl.constexpr,
                  BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Timestep t of one GRU layer's backpropagation through time (``_GRURecurrence.backward``): dh (with the
    carried dh_{t+1} z_{t+1}), the gradients of the input part (dgx) and of the hidden part (dgh), the carry."""
    row = tl.program_id(0).to(tl.int64)  # offsets past 2^31 at thousands of rows
    if _go(active_ptr, step, computes, K, row):
        ob = tl.arange(0, BLOCK_B)
        oj = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
        mb = ob < B
        mj = oj < H
        m2 = mb[:, None] & mj[None, :]
        pos = (row * B + ob) * S + t
        d_in, recurrent = _dh(din_ptr, dgh_ptr, th_ptr, row * P + w_off, pos, row, t, ob, mb, oj, mj, TOP, B, S, H,
                              3 * H, BLOCK_B, BLOCK_H, BLOCK_K)
        carry = carry_ptr + (row * B + ob)[:, None] * H + oj[None, :]
        dh = d_in
        if t < S - 1:
            dh = d_in + (recurrent + tl.load(carry, mask=m2, other=0.0))  # dh_next = dG_h W_hh + dh_{t+1} z_{t+1}
        acts = acts_ptr + pos[:, None] * (3 * H) + oj[None, :]
        r = tl.load(acts, mask=m2, other=0.0)
        z = tl.load(acts + H, mask=m2, other=0.0)
        n = tl.load(acts + 2 * H, mask=m2, other=0.0)
        hn = tl.load(hn_ptr + pos[:, None] * H + oj[None, :], mask=m2, other=0.0)
        h_prev = tl.zeros((BLOCK_B, BLOCK_H), tl.float32)
        if t > 0:
            h_prev = tl.load(hs_ptr + (pos - 1)[:, None] * H + oj[None, :], mask=m2, other=0.0)
        dn = dh * (1 - z) * (1 - n * n)
        dr = dn * hn * r * (1 - r)
        dz = dh * (h_prev - n) * z * (1 - z)
        dgx = dgx_ptr + pos[:, None] * (3 * H) + oj[None, :]
        dgh = dgh_ptr + pos[:, None] * (3 * H) + oj[None, :]
        tl.store(dgx, dr, mask=m2)
        tl.store(dgx + H, dz, mask=m2)
        tl.store(dgx + 2 * H, dn, mask=m2)
        tl.store(dgh, dr, mask=m2)
        tl.store(dgh + H, dz, mask=m2)
        tl.store(dgh + 2 * H, dn * r, mask=m2)
        tl.debug_barrier()  # every thread has read the carry before any thread writes it
        tl.store(carry, dh * z, mask=m2)


@triton.jit
def _input_grad(dgx_ptr, th_ptr, w_row, om, mm, oe, me, G: tl.constexpr, E: tl.constexpr, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr):
    """dX [BLOCK_M, BLOCK_E] = dG W_ih at positions ``om``, input features ``oe``."""
    acc = tl.zeros((BLOCK_M, BLOCK_E), tl.float32)
    for n0 in range(0, G, BLOCK_N):
        on = n0 + tl.arange(0, BLOCK_N)
        mn = on < G
        d = tl.load(dgx_ptr + om[:, None] * G + on[None, :], mask=mm[:, None] & mn[None, :], other=0.0)
        w = tl.load(th_ptr + w_row + on[:, None] * E + oe[None, :], mask=mn[:, None] & me[None, :], other=0.0)
        acc += tl.dot(d, w, input_precision="ieee")
    return acc


@triton.jit
def _weight_grads(ids_ptr, idx_ptr, active_ptr, step, computes, K, src_ptr, src_stride, src_off, hs_ptr, dgx_ptr,
                  dgh_ptr, th_ptr, P, w_ih_off, g_ptr, gb_ih_off, gb_hh_off, ge_off, dx_ptr, GATHER: tl.constexpr,
                  TRAIN_BHH: tl.constexpr, DX: tl.constexpr, B: tl.constexpr, S: tl.constexpr, E: tl.constexpr,
                  H: tl.constexpr, G: tl.constexpr, V: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_E: tl.constexpr):
    """One layer's gradients after its backpropagation through time, each a product over all B S positions (the rnn
    kernel's autograd of ``_input_part`` and its one ``d_w_hh`` product), one program a row and tile of:
    dW_ih = dG_x^T in, then dW_hh = dG_h^T h_{t-1}, then the biases (sums of dG_x, dG_h over the positions), then
    (``DX`` 1) the input's gradient dG_x W_ih, the layer below's dh_in, or (``DX`` 2) the trainable embedding's
    gradient, onehot(tokens)^T (dG_x W_ih). The gradient of W_ih is at w_ih_off in theta's layout, W_hh's follows
    it (``rnn.weight_ih_l*``, ``rnn.weight_hh_l*`` are adjacent in every recurrent model's layout)."""
    row = tl.program_id(0).to(tl.int64)  # offsets past 2^31 at thousands of rows
    tile = tl.program_id(1)
    N_N: tl.constexpr = (G + BLOCK_N - 1) // BLOCK_N
    N_E: tl.constexpr = (E + BLOCK_E - 1) // BLOCK_E
    N_H: tl.constexpr = (H + BLOCK_E - 1) // BLOCK_E
    M: tl.constexpr = B * S
    if _go(active_ptr, step, computes, K, row):
        base = row * M
        if tile < N_N * (N_E + N_H):  # dW_ih, then dW_hh (the columns of [W_ih | W_hh] in tiles of BLOCK_E)
            on = (tile % N_N) * BLOCK_N + tl.arange(0, BLOCK_N)
            mn = on < G
            col = tile // N_N
            acc = tl.zeros((BLOCK_N, BLOCK_E), tl.float32)
            if col < N_E:
                oe = col * BLOCK_E + tl.arange(0, BLOCK_E)
                me = oe < E
                for m0 in range(0, M, BLOCK_M):
                    om = m0 + tl.arange(0, BLOCK_M)
                    mm = om < M
                    d = tl.load(dgx_ptr + (base + om[:, None]) * G + on[None, :], mask=mm[:, None] & mn[None, :],
                                other=0.0)
                    x = _inputs(ids_ptr, idx_ptr, step, K, row, src_ptr, src_stride, src_off, om, mm, oe, me, GATHER,
                                B, S, E)
                    acc += tl.dot(tl.trans(d), x, input_precision="ieee")
                tl.store(g_ptr + row * P + w_ih_off + on[:, None] * E + oe[None, :], acc,
                         mask=mn[:, None] & me[None, :])
            else:
                oj = (col - N_E) * BLOCK_E + tl.arange(0, BLOCK_E)
                mj = oj < H
                for m0 in range(0, M, BLOCK_M):
                    om = m0 + tl.arange(0, BLOCK_M)
                    mm = om < M
                    d = tl.load(dgh_ptr + (base + om[:, None]) * G + on[None, :], mask=mm[:, None] & mn[None, :],
                                other=0.0)
                    h = tl.load(hs_ptr + (base + om[:, None] - 1) * H + oj[None, :],
                                mask=(mm & (om % S > 0))[:, None] & mj[None, :], other=0.0)  # h_{t-1}, 0 at t = 0
                    acc += tl.dot(tl.trans(d), h, input_precision="ieee")
                tl.store(g_ptr + row * P + w_ih_off + G * E + on[:, None] * H + oj[None, :], acc,
                         mask=mn[:, None] & mj[None, :])
        elif tile < N_N * (N_E + N_H + 1):  # the biases
            on = (tile - N_N * (N_E + N_H)) * BLOCK_N + tl.arange(0, BLOCK_N)
            mn = on < G
            bx = tl.zeros((BLOCK_N,), tl.float32)
            bh = tl.zeros((BLOCK_N,), tl.float32)
            for m0 in range(0, M, BLOCK_M):
                om = m0 + tl.arange(0, BLOCK_M)
                mm = om < M
                mask = mm[:, None] & mn[None, :]
                bx += tl.sum(tl.load(dgx_ptr + (base + om[:, None]) * G + on[None, :], mask=mask, other=0.0), axis=0)
                if TRAIN_BHH:
                    bh += tl.sum(tl.load(dgh_ptr + (base + om[:, None]) * G + on[None, :], mask=mask, other=0.0),
                                 axis=0)
            tl.store(g_ptr + row * P + gb_ih_off + on, bx, mask=mn)
            if TRAIN_BHH:
                tl.store(g_ptr + row * P + gb_hh_off + on, bh, mask=mn)
        else:
            rest = tile - N_N * (N_E + N_H + 1)
            oe = (rest % N_E) * BLOCK_E + tl.arange(0, BLOCK_E)
            me = oe < E
            w_row = row * P + w_ih_off
            if DX == 1:  # the layer below's dh_in at positions in tiles of BLOCK_M
                om = (rest // N_E) * BLOCK_M + tl.arange(0, BLOCK_M)
                mm = om < M
                dx = _input_grad(dgx_ptr + base * G, th_ptr, w_row, om, mm, oe, me, G, E, BLOCK_M, BLOCK_N, BLOCK_E)
                tl.store(dx_ptr + (base + om[:, None]) * E + oe[None, :], dx, mask=mm[:, None] & me[None, :])
            if DX == 2:  # the trainable embedding's rows in tiles of BLOCK_M: onehot^T dX over the positions
                ov = (rest // N_E) * BLOCK_M + tl.arange(0, BLOCK_M)
                acc = tl.zeros((BLOCK_M, BLOCK_E), tl.float32)
                for m0 in range(0, M, BLOCK_M):
                    om = m0 + tl.arange(0, BLOCK_M)
                    mm = om < M
                    token = _tokens(ids_ptr, idx_ptr, step, K, row, om, mm, B, S)
                    onehot = ((token[None, :] == ov[:, None]) & mm[None, :]).to(tl.float32)  # [BLOCK_M v, BLOCK_M m]
                    dx = _input_grad(dgx_ptr + base * G, th_ptr, w_row, om, mm, oe, me, G, E, BLOCK_M, BLOCK_N,
                                     BLOCK_E)
                    acc += tl.dot(onehot, dx, input_precision="ieee")
                tl.store(g_ptr + row * P + ge_off + ov[:, None] * E + oe[None, :], acc,
                         mask=(ov < V)[:, None] & me[None, :])


# ---- the update ------------------------------------------------------------------------------------------------


@triton.jit
def _update(s_ptr, v_ptr, a_ptr, g0_ptr, g1_ptr, active_ptr, step, computes, K, P, UPDATE: tl.constexpr,
            NS: tl.constexpr, NV: tl.constexpr, BLOCK: tl.constexpr):
    """The algorithm's elementwise form (fedbench.engine.fused.forms) on one row's block of P parameters: the state
    [NS, K, P] updated in place where the row trains at this step."""
    row = tl.program_id(0).to(tl.int64)  # offsets past 2^31 at thousands of rows
    if _go(active_ptr, step, computes, K, row):
        o = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = o < P
        offs = row * P + o
        s = _load_slots(s_ptr, NS, K * P, offs, mask)
        v = _load_slots(v_ptr, NV, K * P, offs, mask)
        g0 = tl.load(g0_ptr + offs, mask=mask, other=0.0)
        g1 = tl.load(g1_ptr + offs, mask=mask, other=0.0)
        n0, n1, n2, n3 = UPDATE(s, (g0, g1), v, _scalars(a_ptr, row, K), step)
        tl.debug_barrier()  # every thread has read the block before any thread writes it
        _store_slots(s_ptr, NS, K * P, offs, mask, n0, n1, n2, n3)


KERNELS = (_input_part, _lstm_forward, _gru_forward, _head, _lstm_backward, _gru_backward, _weight_grads, _update)
# Warps a program. ptxas for sm_90 at the four paper models' sizes (fedbench.bench.fused_rnn_aot): at 4 warps every
# kernel but the input part compiles without spills (32-255 registers); the input part spilled 48-96 bytes on
# Sent140's (300 inputs) and takes 8 (74-122 registers, none); the weight gradients at 8 spilled 60 there.
NUM_WARPS = 4
GEMM_WARPS = 8  # the input part
UPDATE_BLOCK = 1024  # parameters a program of the update kernel
CELL_BLOCK = 32  # hidden units a program of the cell kernels (and the reduction's block over h or the gates)
GEMM_BLOCK = 64  # positions and gate columns a tile of the input part and of the weight gradients
INPUT_BLOCK = 32  # input features a tile
MAX_CLASSES = 1024  # a head layer's outputs, held in one tile


# ---- the model's shape, from its layout --------------------------------------------------------------------------


@dataclass(frozen=True)
class Tensor:
    """A weight the kernels read: in theta (``offset``, row stride P) or frozen and shared (``frozen``, stride 0)."""

    offset: int = 0
    frozen: torch.Tensor | None = None

    @property
    def trainable(self) -> bool:
        return self.frozen is None


@dataclass(frozen=True)
class Layer:
    inputs: int  # E
    w_ih: int  # offsets in theta (W_hh follows W_ih)
    w_hh: int
    b_ih: Tensor
    b_hh: Tensor


@dataclass(frozen=True)
class Shape:
    """A sequence classifier (fedbench.models.recurrent) as the kernels read it."""

    mode: str  # "LSTM" or "GRU"
    hidden: int
    vocab: int
    embedding: Tensor  # [V, E_0]
    layers: tuple[Layer, ...]
    head: tuple[tuple[int, int, int, int], ...]  # per linear layer (weight offset, bias offset, out, in)
    sigmoid: bool

    @property
    def gates(self) -> int:
        return (4 if self.mode == "LSTM" else 3) * self.hidden


def shape_of(kernel: Any) -> Shape:
    """The recurrent kernel's model (fedbench.engine.kernels.rnn.RecurrentKernel) as :class:`Shape`; refused in one
    line where it is not one the fused kernels run."""
    model = kernel.model
    slots = {s.name: s for s in model.layout}
    frozen = {name: t.float().contiguous() for name, t in model.frozen.items()}
    net = model.module
    if model.loss not in ("softmax_ce", "sigmoid_ce") or not 1 <= len(net.head) <= 2:
        raise ValueError(f"the fused recurrent kernels run 1 or 2 linear head layers under softmax_ce or sigmoid_ce, "
                         f"not {model.name} ({len(net.head)} layers, {model.loss})")

    def tensor(name: str) -> Tensor:
        return Tensor(slots[name].offset) if name in slots else Tensor(frozen=frozen[name])

    if "embedding.weight" in slots:
        vocab = slots["embedding.weight"].shape[0]
        embedding = Tensor(slots["embedding.weight"].offset)
    else:
        embedding = Tensor(frozen=frozen[FROZEN_TABLE])
        vocab = embedding.frozen.shape[0]
    layers = []
    for layer in range(net.rnn.num_layers):
        w_ih, w_hh = slots[f"rnn.weight_ih_l{layer}"], slots[f"rnn.weight_hh_l{layer}"]
        if w_hh.offset != w_ih.offset + w_ih.numel:
            raise ValueError(f"{model.name}: rnn.weight_hh_l{layer} does not follow rnn.weight_ih_l{layer} in theta")
        layers.append(Layer(w_ih.shape[1], w_ih.offset, w_hh.offset, tensor(f"rnn.bias_ih_l{layer}"),
                            tensor(f"rnn.bias_hh_l{layer}")))
    head = tuple((slots[f"head.{i}.weight"].offset, slots[f"head.{i}.bias"].offset, *slots[f"head.{i}.weight"].shape)
                 for i in range(len(net.head)))
    if max(out for _, _, out, _ in head) > MAX_CLASSES:
        raise ValueError(f"{model.name}: a head layer of more than {MAX_CLASSES} outputs; the fused head holds them in "
                         "one tile")
    if not all(layer.b_ih.trainable for layer in layers):
        raise ValueError(f"{model.name}: a frozen rnn.bias_ih_l*; the fused recurrent kernels train b_ih (as every "
                         "recurrent model does)")
    return Shape(net.rnn.mode, net.rnn.hidden_size, vocab, embedding, tuple(layers), head, model.loss == "sigmoid_ce")


def _block(n: int, most: int) -> int:
    """A tile side for n: a power of two, at least 16 (tl.dot's smallest), at most ``most``."""
    return min(most, max(16, triton.next_power_of_2(n)))


# ---- launching -------------------------------------------------------------------------------------------------


@dataclass
class _Round:
    """One round's buffers and arguments, allocated once (a chain step only launches kernels)."""

    shape: Shape
    rows: int
    batch: int
    seq: int
    params: int
    ids: torch.Tensor
    y: torch.Tensor
    batches: torch.Tensor
    active: torch.Tensor
    computes: int
    xpart: list[torch.Tensor]
    hs: list[torch.Tensor]
    cs: list[torch.Tensor]  # c (LSTM) or h_{t-1} W_hn^T + b_hn (GRU)
    acts: list[torch.Tensor]
    dgx: list[torch.Tensor]
    dgh: list[torch.Tensor]
    din: list[torch.Tensor]  # the gradient reaching each layer's h from the layer above (the top's: unused)
    carry: torch.Tensor
    dlast: torch.Tensor


def _buffers(shape: Shape, rows: int, batch: int, seq: int, device: torch.device) -> dict[str, Any]:
    g, h = shape.gates, shape.hidden
    n = rows * batch * seq

    def per_layer(width: int) -> list[torch.Tensor]:
        return [torch.empty(n * width, device=device) for _ in shape.layers]

    dgx = per_layer(g)
    return {"xpart": per_layer(g), "hs": per_layer(h), "cs": per_layer(h), "acts": per_layer(g), "dgx": dgx,
            "dgh": per_layer(g) if shape.mode == "GRU" else dgx, "din": per_layer(h),
            "carry": torch.empty(rows * batch * h, device=device), "dlast": torch.empty(rows * batch * h, device=device)}


def _weight(t: Tensor, theta: torch.Tensor, params: int) -> tuple[torch.Tensor, int, int]:
    """(pointer, row stride, offset) of a weight the kernels read."""
    return (theta, params, t.offset) if t.trainable else (t.frozen, 0, 0)


def _gradient(r: _Round, theta: torch.Tensor, grad: torch.Tensor, step: int) -> None:
    """grad [K, P] <- each active row's gradient of sum_b w_b loss_b at theta [K, P] on its minibatch at ``step``:
    2 S L + 2 L + 1 launches."""
    shape, k, b, s, p = r.shape, r.rows, r.batch, r.seq, r.params
    h, g = shape.hidden, shape.gates
    common = (r.active, step, r.computes, k)
    bb, bh = max(16, triton.next_power_of_2(b)), _block(h, CELL_BLOCK)  # a program holds its row's whole minibatch
    cells = (k, triton.cdiv(h, bh))
    last = len(shape.layers) - 1
    for i, layer in enumerate(shape.layers):
        e = layer.inputs
        src = _weight(shape.embedding, theta, p) if i == 0 else (r.hs[i - 1], b * s * e, 0)
        b1 = _weight(layer.b_ih, theta, p)
        b2 = _weight(layer.b_hh, theta, p)
        bm, bn, be = _block(b * s, GEMM_BLOCK), _block(g, GEMM_BLOCK), _block(e, INPUT_BLOCK)
        _input_part[(k, triton.cdiv(b * s, bm), triton.cdiv(g, bn))](
            r.ids, r.batches, *common, *src, theta, p, layer.w_ih, *b1, *b2, r.xpart[i], GATHER=i == 0,
            TWO_BIASES=shape.mode == "LSTM", B=b, S=s, E=e, G=g, BLOCK_M=bm, BLOCK_N=bn, BLOCK_E=be,
            num_warps=GEMM_WARPS)
        for t in range(s):
            if shape.mode == "LSTM":
                _lstm_forward[cells](r.xpart[i], r.hs[i], r.cs[i], r.acts[i], theta, p, layer.w_hh, r.active, step,
                                     r.computes, t, k, B=b, S=s, H=h, BLOCK_B=bb, BLOCK_H=bh, BLOCK_K=bh,
                                     num_warps=NUM_WARPS)
            else:
                _gru_forward[cells](r.xpart[i], r.hs[i], r.cs[i], r.acts[i], theta, p, layer.w_hh,
                                    *_weight(layer.b_hh, theta, p), r.active, step, r.computes, t, k, B=b, S=s, H=h,
                                    BLOCK_B=bb, BLOCK_H=bh, BLOCK_K=bh, num_warps=NUM_WARPS)
    (w1, b1o, c1, _), *rest = shape.head
    w2, b2o, c2, _ = rest[0] if rest else (0, 0, 1, c1)
    _head[(k,)](r.hs[last], r.y, r.batches, *common, theta, p, w1, b1o, w2, b2o, grad, r.dlast, B=b, S=s, H=h, C1=c1,
                C2=c2, TWO=bool(rest), SIGMOID=shape.sigmoid, BLOCK_B=bb, BLOCK_H=bh, BLOCK_C1=_block(c1, MAX_CLASSES),
                BLOCK_C2=_block(c2, MAX_CLASSES), num_warps=NUM_WARPS)
    for i in reversed(range(len(shape.layers))):
        layer = shape.layers[i]
        din = r.dlast if i == last else r.din[i]
        for t in reversed(range(s)):
            if shape.mode == "LSTM":
                _lstm_backward[cells](din, r.dgx[i], r.carry, r.acts[i], r.cs[i], theta, p, layer.w_hh, r.active,
                                      step, r.computes, t, k, TOP=i == last, B=b, S=s, H=h, BLOCK_B=bb, BLOCK_H=bh,
                                      BLOCK_K=bh, num_warps=NUM_WARPS)
            else:
                _gru_backward[cells](din, r.dgx[i], r.dgh[i], r.carry, r.acts[i], r.cs[i], r.hs[i], theta, p,
                                     layer.w_hh, r.active, step, r.computes, t, k, TOP=i == last, B=b, S=s, H=h,
                                     BLOCK_B=bb, BLOCK_H=bh, BLOCK_K=bh, num_warps=NUM_WARPS)
        e = layer.inputs
        bm, bn, be = _block(b * s, GEMM_BLOCK), _block(g, GEMM_BLOCK), _block(e, INPUT_BLOCK)
        tiles = triton.cdiv(g, bn) * (triton.cdiv(e, be) + triton.cdiv(h, be) + 1)
        if i > 0:
            dx, extra = 1, triton.cdiv(b * s, bm) * triton.cdiv(e, be)
        elif shape.embedding.trainable:
            dx, extra = 2, triton.cdiv(shape.vocab, bm) * triton.cdiv(e, be)
        else:
            dx, extra = 0, 0
        src = _weight(shape.embedding, theta, p) if i == 0 else (r.hs[i - 1], b * s * e, 0)
        _weight_grads[(k, tiles + extra)](
            r.ids, r.batches, *common, *src, r.hs[i], r.dgx[i], r.dgh[i], theta, p, layer.w_ih, grad,
            layer.b_ih.offset, layer.b_hh.offset, shape.embedding.offset, r.din[i - 1] if i > 0 else r.carry,
            GATHER=i == 0, TRAIN_BHH=layer.b_hh.trainable, DX=dx, B=b, S=s, E=e, H=h, G=g, V=shape.vocab, BLOCK_M=bm,
            BLOCK_N=bn, BLOCK_E=be, num_warps=NUM_WARPS)


def _prepare(form: UpdateForm, algorithm: Any, kernel: Any, bcast: Any, local: Any, x_prepared: torch.Tensor,
             y: torch.Tensor, cohort: Any) -> tuple[_Round, torch.Tensor, torch.Tensor, torch.Tensor, list]:
    shape = shape_of(kernel)
    ops = form.operands(algorithm, bcast, local)
    steps, rows, batch = cohort.batches.shape
    p = ops.state[0].shape[-1]
    if any(t.dtype != torch.float32 for t in ops.state + ops.vectors):
        raise ValueError(f"the fused recurrent kernels run fp32 only, got state "
                         f"{sorted({str(t.dtype) for t in ops.state + ops.vectors})}")
    if x_prepared.dim() != 2 or p != kernel.model.num_params:
        raise ValueError(f"the fused recurrent kernels need token ids [n, T] and {kernel.model.num_params} parameters, "
                         f"got inputs {tuple(x_prepared.shape)} and {p} parameters")
    if len(ops.state) != len(form.fields) or len(ops.vectors) != form.vectors or len(ops.scalars) > SCALARS:
        raise ValueError(f"{form.update.__name__}'s operands: {len(ops.state)} state and {len(ops.vectors)} "
                         f"read-only vectors and {len(ops.scalars)} scalars, where the form declares "
                         f"{len(form.fields)}, {form.vectors} and at most {SCALARS}")
    device = x_prepared.device
    state = torch.stack([t.expand(rows, p) for t in ops.state]).contiguous()  # a fresh buffer, updated in place
    vectors = (torch.stack([t.expand(rows, p) for t in ops.vectors]).contiguous() if ops.vectors
               else state.new_zeros(1))
    scalars = torch.zeros(SCALARS, rows, dtype=torch.float32, device=device)
    for j, value in enumerate(ops.scalars):  # on the device, never from the host: the setup can be graph-captured
        if isinstance(value, torch.Tensor):
            scalars[j].copy_(value.reshape(-1).expand(rows) if value.numel() == 1 else value.reshape(-1))
        else:
            scalars[j].fill_(float(value))
    computes = form.computes(algorithm, local)
    computes = steps if computes is None else min(computes, steps)
    seq = x_prepared.shape[1]
    r = _Round(shape, rows, batch, seq, p, x_prepared.contiguous(), y.contiguous(), cohort.batches.contiguous(),
               cohort.active.contiguous(), computes, **_buffers(shape, rows, batch, seq, device))
    g0, g1 = form.grad_codes()
    points = [state[c] if c < 4 else vectors[c - 4] for c in dict.fromkeys((g0, g1))]
    grads = [torch.empty(rows, p, device=device) for _ in points]
    return r, state, vectors, scalars, list(zip(points, grads))


def run_fused(algorithm: Any, kernel: Any, bcast: Any, local: Any, x_prepared: torch.Tensor, y: torch.Tensor,
              cohort: Any) -> Any:
    """fedbench.engine.static.run_static's local state from the fused recurrent kernels: a chain step is
    2 S L + 2 L + 1 launches a gradient point and 1 for the update. Same arguments as run_static (``local`` and a
    per-row ``bcast`` with the cohort's K rows); ``kernel`` is the rnn kernel (for its model)."""
    form = form_of(algorithm)
    if form is None:
        raise ValueError(f"{type(algorithm).__name__} has no fused form (its client_step's code is none of "
                         "fedbench.engine.fused.forms.CLIENT_STEPS); run the static path")
    r, state, vectors, scalars, points = _prepare(form, algorithm, kernel, bcast, local, x_prepared, y, cohort)
    grads = [grad for _, grad in points]
    g1 = grads[-1]
    grid = (r.rows, triton.cdiv(r.params, UPDATE_BLOCK))
    for step in range(cohort.batches.shape[0]):
        for theta, grad in points:
            _gradient(r, theta, grad, step)
        _update[grid](state, vectors, scalars, grads[0], g1, r.active, step, r.computes, r.rows, r.params,
                      UPDATE=form.update, NS=len(form.fields), NV=form.vectors, BLOCK=UPDATE_BLOCK,
                      num_warps=NUM_WARPS)
    return form.result(algorithm, local, list(state.unbind(0)), cohort.batches.shape[0])


def launches_per_step(kernel: Any, seq: int, gradients: int = 1) -> int:
    """The launches :func:`run_fused` makes a chain step: (2 S L + 2 L + 1) a gradient point, and the update."""
    layers = len(shape_of(kernel).layers)
    return gradients * (2 * seq * layers + 2 * layers + 1) + 1


# ---- the launch-count proxy ------------------------------------------------------------------------------------


@dataclass
class Launches:
    """Launches of the fused recurrent kernels while counting, by kernel name."""

    by_kernel: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_kernel.values())


@contextmanager
def count_launches(execute: bool = True):
    """Counts every launch of this module's kernels inside the block, at the Triton runtime's entry: a compiled
    kernel's ``run``, or under ``TRITON_INTERPRET=1`` the interpreter's grid executor. ``execute=False`` (the
    interpreter only) counts the launches without running them, so that the count at a full model's size costs
    nothing (the launches are the driver's, and do not depend on what the kernels compute)."""
    counts = Launches({k.__name__: 0 for k in KERNELS})
    names = set(counts.by_kernel)
    if _interpreted():
        from triton.runtime.interpreter import GridExecutor

        call = GridExecutor.__call__

        def counted_grid(self, *args, **kwargs):
            if self.fn.__name__ in names:
                counts.by_kernel[self.fn.__name__] += 1
                if not execute:
                    return None
            return call(self, *args, **kwargs)

        GridExecutor.__call__ = counted_grid
        try:
            yield counts
        finally:
            GridExecutor.__call__ = call
        return
    if not execute:
        raise ValueError("count_launches(execute=False) counts without running in Triton's interpreter only")
    patched = []
    for kern in KERNELS:
        def counted(*args, _run=kern.run, _name=kern.__name__, **kwargs):
            counts.by_kernel[_name] += 1
            return _run(*args, **kwargs)

        patched.append((kern, vars(kern).get("run")))
        kern.run = counted
    try:
        yield counts
    finally:
        for kern, own in patched:
            if own is None:
                del kern.run
            else:
                kern.run = own


def _interpreted() -> bool:
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(_update, InterpretedFunction)
