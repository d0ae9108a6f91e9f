"""The paper CNNs' local step as im2col GEMMs with the clients on the batch axis, a handful of Triton launches a chain
step (issue 53, item 2; design D3 of ../shared/reference/gpu-design.md).

The family: images -> [conv k x k (stride 1, zero padding p) - ReLU - maxpool 2] x n -> flatten -> [dense - ReLU]
x m -> dense -> softmax cross-entropy. It holds every paper CNN (fedbench.models: cifar_cnn, fashion_cnn,
deltafl_emnist_cnn, leaf_femnist_cnn, fedproxvr_cnn); :func:`network_of` reads a model's layers and refuses, in one
line, a model outside it.

Today's CUDA path is vmap over ``functional_call`` (fedbench.engine.kernels.vmap): grouped convolutions at a batch
of one client's minibatch, 120 ATen operators for a static step of the CIFAR CNN (torch 2.13, counted on the CPU;
the review counted 87 for its gradient alone). Here every layer is one batched GEMM over all rows R (clients, and a
second gradient point where the form takes two), the im2col done inside the GEMM's loads (implicit im2col: no
unfolded buffer), its epilogues fused:

    forward   conv l:   gather (layer 1: the row's minibatch from its indices) - GEMM - bias - ReLU - maxpool 2,
                        storing the pooled map and which of the 4 window positions won (first maximum, as torch;
                        -1 where the ReLU gave 0)
              dense j:  GEMM - bias - ReLU; the last one also softmax, the one-hot residual and the sample weights
                        (1/count on real samples, 0 on padding, as the engine's) -> dlogits
    backward  dense j:  dW, db (one GEMM over the samples); dX (one GEMM) with the ReLU mask of its input as epilogue
              conv l:   dW, db and dX as implicit-im2col GEMMs whose prologue routes the pooled gradient to the
                        window's winner (the maxpool and ReLU backward, fused); dX a gather, no atomics
    update    the algorithm's step in its elementwise form (fedbench.engine.fused.forms), as the mclr kernels'
              epilogue, over [K, P]; rows not active at the step (finished, padding) keep their state, and every
              kernel skips them

so a local step is 3 x (conv layers + dense layers) launches (the first conv has no dX; the update is one): 15 for
the CIFAR CNN and Fashion-MNIST's copy of it, 12 for LEAF's and FedProxVR's CNN, 9 for Delta-FL's. A form that
takes two gradients a step (Mime, FedProxVR) runs both in the same launches, its 2K rows on the batch axis. Every
GEMM is fp32 with ``input_precision="ieee"`` (no TF32; D6 declares that mode).

Numbers. The local state is fedbench.engine.static.run_static's up to the rounding of the GEMMs' sums (another
order than MKL's or cuDNN's): tests/engine/test_fused_cnn.py holds every algorithm within 1e-5 in Triton's
interpreter (measured: 1.5e-8 to 7.5e-8; Mime and MimeLite with Adam 7.5e-7 and 9.6e-7, through Adam's division;
the paper networks' own layers 7.5e-9 to 4.5e-8). One departure is possible in principle: where two positions of a
pooling window differ by a rounding error, this kernel and the reference may pick different winners (exact ties,
as the blank margins of MNIST's images give, are broken alike: the first maximum in row-major order). Registers
(ptxas for sm_90, 4 warps, the default :class:`Tiles`): 32-162 a kernel, 254 for a conv layer's dX, no spills
(:func:`compile_step`). It is a GPU path: the CPU default stays the engine's static or ragged path, bit for bit.
Not yet measured on a GPU: time, and the fraction of fp32 peak (:mod:`fedbench.bench.fused_cnn_check` measures
both when a GPU is lent).
"""

from __future__ import annotations

import collections
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl
from torch import nn

from fedbench.engine.fused.forms import SCALARS, SLOTS, form_of
from fedbench.engine.fused.mclr import _load_slots, _per_row, _scalars, _store_slots

# ---- the network -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conv:
    """conv (cin -> cout, ks x ks, stride 1, zero padding pad) - ReLU - maxpool 2 on [cin, h, w] inputs; its weight
    [cout, cin, ks, ks] and bias [cout] at ``w_off`` and ``b_off`` of theta."""

    cin: int
    h: int
    w: int
    cout: int
    ks: int
    pad: int
    w_off: int
    b_off: int

    @property
    def ph(self) -> int:  # the pooled map's height (MaxPool2d(2) floors)
        return (self.h + 2 * self.pad - self.ks + 1) // 2

    @property
    def pw(self) -> int:
        return (self.w + 2 * self.pad - self.ks + 1) // 2

    @property
    def pooled(self) -> int:
        return self.cout * self.ph * self.pw


@dataclass(frozen=True)
class Dense:
    """dense fin -> fout (weight [fout, fin], bias [fout]), ReLU after it unless it is the last layer."""

    fin: int
    fout: int
    relu: bool
    w_off: int
    b_off: int


@dataclass(frozen=True)
class Network:
    convs: tuple[Conv, ...]
    dense: tuple[Dense, ...]
    params: int

    @property
    def classes(self) -> int:
        return self.dense[-1].fout

    @property
    def launches_per_step(self) -> int:
        """Forward one a layer; backward dW one a layer and dX one a layer but the first; the update one."""
        return 3 * (len(self.convs) + len(self.dense))


def network_of(model: Any) -> Network:
    """The layers of ``model`` (a fedbench.models.spec.Model) as this module's kernels run them; ValueError in one
    line where the model is not of the family (module docstring)."""

    def refuse(why: str) -> ValueError:
        return ValueError(f"model {model.name}: {why}; the fused CNN kernels run conv-ReLU-maxpool2 blocks, then "
                          "dense layers (ReLU between them), with softmax cross-entropy")

    shape = getattr(model.module, "shape", None)
    net = getattr(model.module, "net", None)
    if model.loss != "softmax_ce" or not isinstance(net, nn.Sequential) or shape is None or len(shape) != 3:
        raise refuse("not an image network (fedbench.models.cifar_cnn.ImageInput over nn.Sequential)")
    offsets = {s.name: s.offset for s in model.layout}
    layers = list(net.named_children())
    convs, dense, (c, h, w), i = [], [], shape, 0
    while i < len(layers) and isinstance(layers[i][1], nn.Conv2d):
        name, conv = layers[i]
        pool = layers[i + 2][1] if i + 2 < len(layers) else None
        pad = conv.padding[0] if isinstance(conv.padding, tuple) else conv.padding
        if (conv.stride != (1, 1) or conv.dilation != (1, 1) or conv.groups != 1 or conv.bias is None
                or conv.kernel_size[0] != conv.kernel_size[1] or conv.padding_mode != "zeros"
                or isinstance(conv.padding, str) or conv.padding[0] != conv.padding[1] or conv.in_channels != c
                or not isinstance(layers[i + 1][1], nn.ReLU) or not isinstance(pool, nn.MaxPool2d)
                or pool.kernel_size not in (2, (2, 2)) or pool.stride not in (2, (2, 2)) or pool.padding not in (0, (0, 0))
                or pool.dilation not in (1, (1, 1)) or pool.ceil_mode):
            raise refuse(f"layer {name} is not conv(stride 1, square, zero padding) - ReLU - MaxPool2d(2)")
        layer = Conv(c, h, w, conv.out_channels, conv.kernel_size[0], pad, offsets[f"net.{name}.weight"],
                     offsets[f"net.{name}.bias"])
        if layer.ph < 1 or layer.pw < 1:
            raise refuse(f"layer {name} leaves no pooled output on {h} x {w} inputs")
        convs.append(layer)
        c, h, w = layer.cout, layer.ph, layer.pw
        i += 3
    if not convs or i >= len(layers) or not isinstance(layers[i][1], nn.Flatten):
        raise refuse("no conv block followed by Flatten")
    i += 1
    features = c * h * w
    while i < len(layers):
        name, lin = layers[i]
        relu = i + 1 < len(layers) and isinstance(layers[i + 1][1], nn.ReLU)
        if not isinstance(lin, nn.Linear) or lin.bias is None or lin.in_features != features:
            raise refuse(f"layer {name} is not a dense layer with a bias on {features} features")
        dense.append(Dense(features, lin.out_features, relu, offsets[f"net.{name}.weight"], offsets[f"net.{name}.bias"]))
        features = lin.out_features
        i += 2 if relu else 1
    if not dense or dense[-1].relu:
        raise refuse("the last layer must be a dense layer without ReLU (the logits)")
    return Network(tuple(convs), tuple(dense), model.num_params)


def supports(model: Any) -> bool:
    """Whether :func:`network_of` reads ``model``."""
    try:
        network_of(model)
    except ValueError:
        return False
    return True


# ---- shared pieces of the kernels --------------------------------------------------------------------------------


@triton.jit
def _row(active_ptr, step, computes, K):
    """Program axis 0 is the row r of R = K x points; its client row k and whether it trains at ``step``."""
    r = tl.program_id(0)
    k = r % K
    go = (tl.load(active_ptr + step * K + k) != 0) & (step < computes)
    return r, k, go


@triton.jit
def _params(slots_ptr, r, k, K, P, S0: tl.constexpr, S1: tl.constexpr):
    """Row r's parameters: slot S0 of the [slots, K, P] buffer for the first K rows, S1 for the next K."""
    slot = tl.where(r < K, S0, S1)
    return slots_ptr + (slot * K + k).to(tl.int64) * P


@triton.jit
def _images(src_ptr, idx_ptr, r, k, b, step, K, B: tl.constexpr, IMAGE: tl.constexpr, FIRST: tl.constexpr):
    """Where samples b [BM] of row r's input maps start, and which are real: the first layer reads the minibatch's
    images from the training inputs at the row's indices (-1: padding, read as zeros); later layers read the row's
    own pooled maps."""
    if FIRST:
        sample = tl.load(idx_ptr + (step * K + k) * B + b, mask=b < B, other=-1)
        ok = sample >= 0
        base = tl.where(ok, sample, 0).to(tl.int64) * IMAGE
    else:
        ok = b < B
        base = (r * B + b).to(tl.int64) * IMAGE
    return src_ptr + base, ok


@triton.jit
def _routed(dpool_ptr, arg_ptr, at, window, ok):
    """The gradient at conv outputs (broadcast shapes): the pooled map's gradient at ``at`` where this output is
    the ``window``-th position (0-3, row-major) of its pooling window and won it with a value > 0 (the forward's
    code; -1 where the pooled value is 0), else 0: the maxpool and ReLU backward."""
    code = tl.load(arg_ptr + at, mask=ok, other=-1)
    return tl.where(code == window, tl.load(dpool_ptr + at, mask=ok, other=0.0), 0.0)


# ---- forward ---------------------------------------------------------------------------------------------------


@triton.jit
def _im2col(at, ih, iw, ok, H: tl.constexpr, W: tl.constexpr, PAD: tl.constexpr):
    """The input at ``at`` [BM, BK], which lies at row ``ih``, column ``iw`` of its map; zero outside the map (only
    a padded convolution reaches outside it)."""
    if PAD > 0:
        ok = ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    return tl.load(at, mask=ok, other=0.0)


@triton.jit
def _conv_forward(src_ptr, idx_ptr, slots_ptr, pooled_ptr, arg_ptr, active_ptr, step, computes, K, P, W_OFF, B_OFF,
                  S0: tl.constexpr, S1: tl.constexpr, FIRST: tl.constexpr, B: tl.constexpr, CIN: tl.constexpr,
                  H: tl.constexpr, W: tl.constexpr, KS: tl.constexpr, PAD: tl.constexpr, COUT: tl.constexpr,
                  PH: tl.constexpr, PW: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """conv - bias - ReLU - maxpool 2 of row r's minibatch: M = the row's B x PH x PW pooled positions (program axis
    1), N = output channels (axis 2), the reduction over (cin, kh, kw) read straight from the input maps. Four
    accumulators, one per window position, so the pooling is the epilogue; the winner (first maximum) is kept."""
    r, k, go = _row(active_ptr, step, computes, K)
    if go:
        theta = _params(slots_ptr, r, k, K, P, S0, S1)
        om = tl.program_id(1) * BM + tl.arange(0, BM)
        on = tl.program_id(2) * BN + tl.arange(0, BN)
        b = om // (PH * PW)
        pp = om % (PH * PW)
        oh = 2 * (pp // PW)  # the window's top-left conv output
        ow = 2 * (pp % PW)
        src, real = _images(src_ptr, idx_ptr, r, k, b, step, K, B, CIN * H * W, FIRST)
        slot_ok = om < B * PH * PW  # every sample slot is stored, padding too (from zero images: finite values)
        real = real & slot_ok
        corner = src + oh * W + ow  # the window's top-left input, less the padding
        acc0 = tl.zeros((BM, BN), tl.float32)
        acc1 = tl.zeros((BM, BN), tl.float32)
        acc2 = tl.zeros((BM, BN), tl.float32)
        acc3 = tl.zeros((BM, BN), tl.float32)
        for q0 in range(0, CIN * KS * KS, BK):
            oq = q0 + tl.arange(0, BK)
            q_ok = oq < CIN * KS * KS
            kh = (oq // KS) % KS - PAD
            kw = oq % KS - PAD
            wt = tl.load(theta + W_OFF + on[None, :] * (CIN * KS * KS) + oq[:, None],
                         mask=q_ok[:, None] & (on[None, :] < COUT), other=0.0)
            at = corner[:, None] + ((oq // (KS * KS)) * (H * W) + kh * W + kw)[None, :]
            ok = real[:, None] & q_ok[None, :]
            ih = oh[:, None] + kh[None, :]
            iw = ow[:, None] + kw[None, :]
            acc0 += tl.dot(_im2col(at, ih, iw, ok, H, W, PAD), wt, input_precision="ieee")
            acc1 += tl.dot(_im2col(at + 1, ih, iw + 1, ok, H, W, PAD), wt, input_precision="ieee")
            acc2 += tl.dot(_im2col(at + W, ih + 1, iw, ok, H, W, PAD), wt, input_precision="ieee")
            acc3 += tl.dot(_im2col(at + W + 1, ih + 1, iw + 1, ok, H, W, PAD), wt, input_precision="ieee")
        bias = tl.load(theta + B_OFF + on, mask=on < COUT, other=0.0)[None, :]
        best = acc0 + bias
        code = tl.zeros((BM, BN), tl.int8)
        z = acc1 + bias
        code = tl.where(z > best, 1, code)
        best = tl.where(z > best, z, best)
        z = acc2 + bias
        code = tl.where(z > best, 2, code)
        best = tl.where(z > best, z, best)
        z = acc3 + bias
        code = tl.where(z > best, 3, code)
        best = tl.where(z > best, z, best)
        at = (r * B + b[:, None]).to(tl.int64) * (COUT * PH * PW) + on[None, :] * (PH * PW) + pp[:, None]
        mask = slot_ok[:, None] & (on[None, :] < COUT)
        tl.store(pooled_ptr + at, tl.maximum(best, 0.0), mask=mask)
        tl.store(arg_ptr + at, tl.where(best > 0.0, code, -1).to(tl.int8), mask=mask)  # -1: the ReLU's 0


@triton.jit
def _dense_forward(in_ptr, slots_ptr, out_ptr, idx_ptr, y_ptr, active_ptr, step, computes, K, P, W_OFF, B_OFF,
                   S0: tl.constexpr, S1: tl.constexpr, B: tl.constexpr, FIN: tl.constexpr, FOUT: tl.constexpr,
                   RELU: tl.constexpr, LOSS: tl.constexpr, BB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr):
    """x W^T + b of row r's samples (axis 1) and outputs (axis 2), then ReLU; or (LOSS, one program holding every
    class) the weighted cross-entropy's gradient at the logits, w_b (softmax - onehot), stored in place of them."""
    r, k, go = _row(active_ptr, step, computes, K)
    if go:
        theta = _params(slots_ptr, r, k, K, P, S0, S1)
        ob = tl.program_id(1) * BM + tl.arange(0, BM)
        on = tl.program_id(2) * BN + tl.arange(0, BN)
        rows = (r * B + ob).to(tl.int64)
        acc = tl.zeros((BM, BN), tl.float32)
        for i0 in range(0, FIN, BK):
            oi = i0 + tl.arange(0, BK)
            a = tl.load(in_ptr + rows[:, None] * FIN + oi[None, :], mask=(ob[:, None] < B) & (oi[None, :] < FIN),
                        other=0.0)
            wt = tl.load(theta + W_OFF + on[None, :] * FIN + oi[:, None], mask=(oi[:, None] < FIN) & (on[None, :] < FOUT),
                         other=0.0)
            acc += tl.dot(a, wt, input_precision="ieee")
        z = acc + tl.load(theta + B_OFF + on, mask=on < FOUT, other=0.0)[None, :]
        if LOSS:
            every = tl.arange(0, BB)
            count = tl.sum((tl.load(idx_ptr + (step * K + k) * B + every, mask=every < B, other=-1) >= 0).to(tl.float32))
            sample = tl.load(idx_ptr + (step * K + k) * B + ob, mask=ob < B, other=-1)
            real = sample >= 0
            weight = real.to(tl.float32) / tl.maximum(count, 1.0)
            label = tl.load(y_ptr + tl.where(real, sample, 0), mask=real, other=-1)
            z = tl.where(on[None, :] < FOUT, z, float("-inf"))
            e = tl.exp(z - tl.max(z, axis=1)[:, None])
            p = e / tl.sum(e, axis=1)[:, None]
            z = (p - (label[:, None] == on[None, :]).to(tl.float32)) * weight[:, None]
        elif RELU:
            z = tl.maximum(z, 0.0)
        tl.store(out_ptr + rows[:, None] * FOUT + on[None, :], z, mask=(ob[:, None] < B) & (on[None, :] < FOUT))


# ---- backward --------------------------------------------------------------------------------------------------


@triton.jit
def _dense_grad_w(dz_ptr, in_ptr, grad_ptr, active_ptr, step, computes, K, P, W_OFF, B_OFF, B: tl.constexpr,
                  FIN: tl.constexpr, FOUT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """dW = dz^T x over row r's samples, outputs on axis 1 and inputs on axis 2; db = sum of dz (the axis-2 first
    programs)."""
    r, _, go = _row(active_ptr, step, computes, K)
    if go:
        on = tl.program_id(1) * BN + tl.arange(0, BN)
        oi = tl.program_id(2) * BK + tl.arange(0, BK)
        acc = tl.zeros((BN, BK), tl.float32)
        db = tl.zeros((BN,), tl.float32)
        for b0 in range(0, B, BM):
            ob = b0 + tl.arange(0, BM)
            rows = (r * B + ob).to(tl.int64)
            dz = tl.load(dz_ptr + rows[:, None] * FOUT + on[None, :], mask=(ob[:, None] < B) & (on[None, :] < FOUT),
                         other=0.0)
            a = tl.load(in_ptr + rows[:, None] * FIN + oi[None, :], mask=(ob[:, None] < B) & (oi[None, :] < FIN),
                        other=0.0)
            acc += tl.dot(tl.trans(dz), a, input_precision="ieee")
            db += tl.sum(dz, axis=0)
        grad = grad_ptr + r.to(tl.int64) * P
        tl.store(grad + W_OFF + on[:, None] * FIN + oi[None, :], acc, mask=(on[:, None] < FOUT) & (oi[None, :] < FIN))
        if tl.program_id(2) == 0:
            tl.store(grad + B_OFF + on, db, mask=on < FOUT)


@triton.jit
def _dense_grad_x(dz_ptr, slots_ptr, act_ptr, din_ptr, active_ptr, step, computes, K, P, W_OFF,
                  S0: tl.constexpr, S1: tl.constexpr, B: tl.constexpr, FIN: tl.constexpr, FOUT: tl.constexpr,
                  MASK: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """dx = dz W of row r's samples (axis 1) and inputs (axis 2); MASK: times the ReLU mask of the input (> 0),
    which makes it the previous layer's dz."""
    r, k, go = _row(active_ptr, step, computes, K)
    if go:
        theta = _params(slots_ptr, r, k, K, P, S0, S1)
        ob = tl.program_id(1) * BM + tl.arange(0, BM)
        oi = tl.program_id(2) * BN + tl.arange(0, BN)
        rows = (r * B + ob).to(tl.int64)
        acc = tl.zeros((BM, BN), tl.float32)
        for n0 in range(0, FOUT, BK):
            on = n0 + tl.arange(0, BK)
            dz = tl.load(dz_ptr + rows[:, None] * FOUT + on[None, :], mask=(ob[:, None] < B) & (on[None, :] < FOUT),
                         other=0.0)
            w = tl.load(theta + W_OFF + on[:, None] * FIN + oi[None, :], mask=(on[:, None] < FOUT) & (oi[None, :] < FIN),
                        other=0.0)
            acc += tl.dot(dz, w, input_precision="ieee")
        at = rows[:, None] * FIN + oi[None, :]
        mask = (ob[:, None] < B) & (oi[None, :] < FIN)
        if MASK:
            acc = tl.where(tl.load(act_ptr + at, mask=mask, other=0.0) > 0.0, acc, 0.0)
        tl.store(din_ptr + at, acc, mask=mask)


@triton.jit
def _conv_grad_w(dpool_ptr, arg_ptr, src_ptr, idx_ptr, grad_ptr, active_ptr, step, computes, K, P, W_OFF, B_OFF,
                 FIRST: tl.constexpr, B: tl.constexpr, CIN: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
                 KS: tl.constexpr, PAD: tl.constexpr, COUT: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """dW[cout, (cin, kh, kw)] = dz^T im2col(input) over row r's conv outputs that lie in a pooling window (the others
    have no gradient), output channels on axis 1, (cin, kh, kw) on axis 2; dz routed from the pooled gradient
    (:func:`_routed`); db = sum of dz (the axis-2 first programs)."""
    r, k, go = _row(active_ptr, step, computes, K)
    if go:
        on = tl.program_id(1) * BN + tl.arange(0, BN)
        oq = tl.program_id(2) * BK + tl.arange(0, BK)
        q_ok = oq < CIN * KS * KS
        kh = (oq // KS) % KS - PAD
        kw = oq % KS - PAD
        col = (oq // (KS * KS)) * (H * W) + kh * W + kw
        n_ok = on < COUT
        acc = tl.zeros((BN, BK), tl.float32)
        db = tl.zeros((BN,), tl.float32)
        for m0 in range(0, B * 4 * PH * PW, BM):  # conv outputs, by sample, pooled position and window position
            om = m0 + tl.arange(0, BM)
            b = om // (4 * PH * PW)
            pp = (om // 4) % (PH * PW)
            oh = 2 * (pp // PW) + (om % 4) // 2
            ow = 2 * (pp % PW) + om % 2
            src, real = _images(src_ptr, idx_ptr, r, k, b, step, K, B, CIN * H * W, FIRST)
            real = real & (om < B * 4 * PH * PW)
            at = (r * B + b).to(tl.int64) * (COUT * PH * PW) + pp
            dz = _routed(dpool_ptr, arg_ptr, at[:, None] + on[None, :] * (PH * PW), (om % 4)[:, None],
                         real[:, None] & n_ok[None, :])
            a = _im2col((src + oh * W + ow)[:, None] + col[None, :], oh[:, None] + kh[None, :],
                        ow[:, None] + kw[None, :], real[:, None] & q_ok[None, :], H, W, PAD)
            acc += tl.dot(tl.trans(dz), a, input_precision="ieee")
            db += tl.sum(dz, axis=0)
        grad = grad_ptr + r.to(tl.int64) * P
        tl.store(grad + W_OFF + on[:, None] * (CIN * KS * KS) + oq[None, :], acc, mask=n_ok[:, None] & q_ok[None, :])
        if tl.program_id(2) == 0:
            tl.store(grad + B_OFF + on, db, mask=n_ok)


@triton.jit
def _conv_grad_x(dpool_ptr, arg_ptr, slots_ptr, din_ptr, active_ptr, step, computes, K, P, W_OFF,
                 S0: tl.constexpr, S1: tl.constexpr, B: tl.constexpr, CIN: tl.constexpr, H: tl.constexpr,
                 W: tl.constexpr, KS: tl.constexpr, PAD: tl.constexpr, COUT: tl.constexpr, PH: tl.constexpr,
                 PW: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The gradient at the layer's input maps (the previous layer's pooled maps): for input position (b, ih, iw)
    (axis 1) and channel cin (axis 2), the sum over (cout, kh, kw) of dz at (ih - kh + pad, iw - kw + pad) times
    W[cout, cin, kh, kw]: a gather, so no two programs write one element (no atomics, deterministic)."""
    r, k, go = _row(active_ptr, step, computes, K)
    if go:
        theta = _params(slots_ptr, r, k, K, P, S0, S1)
        om = tl.program_id(1) * BM + tl.arange(0, BM)
        oc = tl.program_id(2) * BN + tl.arange(0, BN)
        b = om // (H * W)
        ih = (om % (H * W)) // W + PAD
        iw = om % W + PAD
        real = om < B * H * W
        first = (r * B + b).to(tl.int64) * (COUT * PH * PW)
        acc = tl.zeros((BM, BN), tl.float32)
        for q0 in range(0, COUT * KS * KS, BK):
            oq = q0 + tl.arange(0, BK)
            q_ok = oq < COUT * KS * KS
            co = oq // (KS * KS)
            oh = ih[:, None] - ((oq // KS) % KS)[None, :]  # the conv output this input feeds through (kh, kw)
            ow = iw[:, None] - (oq % KS)[None, :]
            ok = real[:, None] & q_ok[None, :] & (oh >= 0) & (ow >= 0) & (oh < 2 * PH) & (ow < 2 * PW)
            oh = tl.where(ok, oh, 0)
            ow = tl.where(ok, ow, 0)
            at = first[:, None] + (co * (PH * PW))[None, :] + (oh // 2) * PW + ow // 2
            dz = _routed(dpool_ptr, arg_ptr, at, (oh % 2) * 2 + ow % 2, ok)
            w = tl.load(theta + W_OFF + oc[None, :] * (KS * KS) + (co * (CIN * KS * KS) + oq % (KS * KS))[:, None],
                        mask=q_ok[:, None] & (oc[None, :] < CIN), other=0.0)
            acc += tl.dot(dz, w, input_precision="ieee")
        at = (r * B + b[:, None]).to(tl.int64) * (CIN * H * W) + oc[None, :] * (H * W) + (om % (H * W))[:, None]
        tl.store(din_ptr + at, acc, mask=real[:, None] & (oc[None, :] < CIN))


# ---- the update ------------------------------------------------------------------------------------------------


@triton.jit
def _update(slots_ptr, grad_ptr, a_ptr, active_ptr, step, computes, K, P, SLOT, UPDATE: tl.constexpr,
            NS: tl.constexpr, NV: tl.constexpr, TWO: tl.constexpr, BLOCK: tl.constexpr):
    """The algorithm's step (its form's UPDATE) on a block of row k's parameters (axis 1), in place; a row not
    active at ``step`` keeps its state. SLOT = K P, the stride between slots (from the host, so that Triton types it
    int64 where it passes int32: LEAF's CNN at 100 rows)."""
    k = tl.program_id(0)
    go = (tl.load(active_ptr + step * K + k) != 0) & (step < computes)
    if go:
        op = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = op < P
        offs = k.to(tl.int64) * P + op
        s = _load_slots(slots_ptr, NS, SLOT, offs, mask)
        v = _load_slots(slots_ptr + NS * SLOT, NV, SLOT, offs, mask)
        g0 = tl.load(grad_ptr + offs, mask=mask, other=0.0)
        g1 = g0
        if TWO:
            g1 = tl.load(grad_ptr + SLOT + offs, mask=mask, other=0.0)
        n0, n1, n2, n3 = UPDATE(s, (g0, g1), v, _scalars(a_ptr, k, K), step)
        _store_slots(slots_ptr, NS, SLOT, offs, mask, n0, n1, n2, n3)


KERNELS = (_conv_forward, _dense_forward, _dense_grad_w, _dense_grad_x, _conv_grad_w, _conv_grad_x, _update)


# ---- launching -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tiles:
    """Tile sizes: ``m`` samples or positions, ``n`` channels or features, ``k`` the reduction, each clamped to
    [16, the next power of two of the dimension] (``tl.dot``'s smallest is 16); ``update`` parameters a program of
    the update. The interpreter's tests take large tiles (fewer programs); a GPU takes the defaults."""

    m: int = 64
    n: int = 32
    k: int = 32
    update: int = 1024

    def __post_init__(self) -> None:
        for name in ("m", "n", "k", "update"):
            size = getattr(self, name)
            if size < 16 or size & (size - 1):
                raise ValueError(f"tiles.{name} = {size}: a power of two >= 16 (tl.dot's smallest)")


def _fit(size: int, dim: int) -> int:
    return max(16, min(size, triton.next_power_of_2(dim)))


def _launches(net: Network, tiles: Tiles, rows: int, k: int, batch: int, bufs: dict, x: torch.Tensor,
              idx: torch.Tensor, y: torch.Tensor, active: torch.Tensor, slots: torch.Tensor, grad: torch.Tensor,
              scalars: torch.Tensor, update: dict) -> list:
    """One chain step as a list of (kernel, grid, arguments before ``step``, arguments after it, constants), in launch
    order: the conv layers' forward, the dense layers' forward, the dense layers' backward from the last (dW, then dX),
    the conv layers' backward from the last (dW, then dX but for the first), the update."""
    cdiv, p, points = triton.cdiv, net.params, update["points"]

    def conv(c: Conv, first: bool) -> dict:
        return {"FIRST": first, "B": batch, "CIN": c.cin, "H": c.h, "W": c.w, "KS": c.ks, "PAD": c.pad,
                "COUT": c.cout, "PH": c.ph, "PW": c.pw}

    def dense(d: Dense) -> dict:
        return {"B": batch, "FIN": d.fin, "FOUT": d.fout}

    out = []
    for l, c in enumerate(net.convs):
        src = x if l == 0 else bufs["pooled"][l - 1]
        bm, bn, bk = _fit(tiles.m, batch * c.ph * c.pw), _fit(tiles.n, c.cout), _fit(tiles.k, c.cin * c.ks * c.ks)
        out.append((_conv_forward, (rows, cdiv(batch * c.ph * c.pw, bm), cdiv(c.cout, bn)),
                    (src, idx, slots, bufs["pooled"][l], bufs["arg"][l], active), (k, p, c.w_off, c.b_off),
                    points | conv(c, l == 0) | {"BM": bm, "BN": bn, "BK": bk}))
    last = len(net.dense) - 1
    for j, d in enumerate(net.dense):
        src = bufs["pooled"][-1] if j == 0 else bufs["act"][j - 1]
        dst = bufs["dz"][j] if j == last else bufs["act"][j]
        bm = _fit(tiles.m, batch)
        bn = max(16, triton.next_power_of_2(d.fout)) if j == last else _fit(tiles.n, d.fout)  # the loss: every class
        out.append((_dense_forward, (rows, cdiv(batch, bm), cdiv(d.fout, bn)),
                    (src, slots, dst, idx, y, active), (k, p, d.w_off, d.b_off),
                    points | dense(d) | {"RELU": d.relu, "LOSS": j == last, "BB": max(16, triton.next_power_of_2(batch)),
                                         "BM": bm, "BN": bn, "BK": _fit(tiles.k, d.fin)}))
    for j in range(last, -1, -1):
        d = net.dense[j]
        src = bufs["pooled"][-1] if j == 0 else bufs["act"][j - 1]
        bn, bk = _fit(tiles.n, d.fout), _fit(tiles.k, d.fin)
        out.append((_dense_grad_w, (rows, cdiv(d.fout, bn), cdiv(d.fin, bk)), (bufs["dz"][j], src, grad, active),
                    (k, p, d.w_off, d.b_off), dense(d) | {"BM": _fit(tiles.m, batch), "BN": bn, "BK": bk}))
        din = bufs["dpool"][-1] if j == 0 else bufs["dz"][j - 1]
        bm, bn = _fit(tiles.m, batch), _fit(tiles.n, d.fin)
        out.append((_dense_grad_x, (rows, cdiv(batch, bm), cdiv(d.fin, bn)), (bufs["dz"][j], slots, src, din, active),
                    (k, p, d.w_off),
                    points | dense(d) | {"MASK": j > 0, "BM": bm, "BN": bn, "BK": _fit(tiles.k, d.fout)}))
    for l in range(len(net.convs) - 1, -1, -1):
        c = net.convs[l]
        src = x if l == 0 else bufs["pooled"][l - 1]
        routed = (bufs["dpool"][l], bufs["arg"][l])
        bn, bk = _fit(tiles.n, c.cout), _fit(tiles.k, c.cin * c.ks * c.ks)
        out.append((_conv_grad_w, (rows, cdiv(c.cout, bn), cdiv(c.cin * c.ks * c.ks, bk)),
                    (*routed, src, idx, grad, active), (k, p, c.w_off, c.b_off),
                    conv(c, l == 0) | {"BM": _fit(tiles.m, batch * 4 * c.ph * c.pw), "BN": bn, "BK": bk}))
        if l > 0:
            bm, bn = _fit(tiles.m, batch * c.h * c.w), _fit(tiles.n, c.cin)
            constants = points | conv(c, False) | {"BM": bm, "BN": bn, "BK": _fit(tiles.k, c.cout * c.ks * c.ks)}
            del constants["FIRST"]
            out.append((_conv_grad_x, (rows, cdiv(batch * c.h * c.w, bm), cdiv(c.cin, bn)),
                        (*routed, slots, bufs["dpool"][l - 1], active), (k, p, c.w_off), constants))
    block = _fit(tiles.update, p)
    out.append((_update, (k, cdiv(p, block)), (slots, grad, scalars, active), (k, p, k * p),
                {"UPDATE": update["form"].update, "NS": update["ns"], "NV": update["nv"], "TWO": rows > k,
                 "BLOCK": block}))
    return out


def _buffers(net: Network, rows: int, batch: int, device: torch.device) -> dict:
    """Every buffer a step writes, allocated once a round: the rows' gradients [R, P], and activations and their
    gradients [R, B, ...]."""

    def f32(n: int) -> torch.Tensor:
        return torch.empty(rows, batch, n, dtype=torch.float32, device=device)

    return {"grad": torch.empty(rows, net.params, dtype=torch.float32, device=device),
            "pooled": [f32(c.pooled) for c in net.convs],
            "arg": [torch.empty(rows, batch, c.pooled, dtype=torch.int8, device=device) for c in net.convs],
            "dpool": [f32(c.pooled) for c in net.convs],
            "act": [f32(d.fout) for d in net.dense[:-1]],
            "dz": [f32(d.fout) for d in net.dense]}


def run_fused(algorithm: Any, kernel: Any, bcast: Any, local: Any, x_prepared: torch.Tensor, y: torch.Tensor,
              cohort: Any, tiles: Tiles = Tiles()) -> Any:
    """fedbench.engine.static.run_static's local state from the fused kernels, :attr:`Network.launches_per_step`
    launches a chain step. Same arguments as run_static (``local`` and a per-row ``bcast`` with the cohort's K rows);
    ``kernel`` is the engine's kernel of a CNN of the family (its ``model``)."""
    form = form_of(algorithm)
    if form is None:
        raise ValueError(f"{type(algorithm).__name__} has no fused form (its client_step's code is none of "
                         "fedbench.engine.fused.forms.CLIENT_STEPS); run the static path")
    net = network_of(kernel.model)
    ops = form.operands(algorithm, bcast, local)
    steps, rows, batch = cohort.batches.shape
    p = ops.state[0].shape[-1]
    tensors = ops.state + ops.vectors
    if x_prepared.dtype != torch.float32 or any(t.dtype != torch.float32 for t in tensors):
        raise ValueError(f"the fused CNN kernels run fp32 only, got inputs {x_prepared.dtype} and state "
                         f"{sorted({str(t.dtype) for t in tensors})}")
    c0 = net.convs[0]
    if p != net.params or x_prepared[0].numel() != c0.cin * c0.h * c0.w:
        raise ValueError(f"the fused CNN kernels need {net.params} parameters and inputs of {c0.cin * c0.h * c0.w} "
                         f"values, got {p} and {tuple(x_prepared.shape[1:])}")
    if len(ops.state) != len(form.fields) or len(ops.vectors) != form.vectors or len(ops.scalars) > SCALARS:
        raise ValueError(f"{form.update.__name__}'s operands: {len(ops.state)} state and {len(ops.vectors)} "
                         f"read-only vectors and {len(ops.scalars)} scalars, where the form declares "
                         f"{len(form.fields)}, {form.vectors} and at most {SCALARS}")
    device = x_prepared.device
    ns, nv = len(form.fields), form.vectors
    slots = torch.stack([t.expand(rows, p) for t in tensors]).contiguous()  # [NS + NV, K, P], state updated in place
    scalars = torch.zeros(SCALARS, rows, dtype=torch.float32, device=device)
    for j, value in enumerate(ops.scalars):
        scalars[j] = _per_row(value, rows, device)
    computes = form.computes(algorithm, local)
    computes = steps if computes is None else min(computes, steps)
    codes = form.grad_codes()  # 0-3 state slots, 4-7 read-only vectors (after the state slots in ``slots``)
    s0, s1 = (c if c < SLOTS else ns + c - SLOTS for c in codes)
    points = 2 if codes[1] != codes[0] else 1
    bufs = _buffers(net, points * rows, batch, device)
    grad = bufs["grad"]
    idx, active = cohort.batches.contiguous(), cohort.active.contiguous()
    launches = _launches(net, tiles, points * rows, rows, batch, bufs, x_prepared.contiguous(), idx, y.contiguous(),
                         active, slots, grad, scalars,
                         {"points": {"S0": s0, "S1": s1}, "form": form, "ns": ns, "nv": nv})
    for t in range(steps):
        for kern, grid, before, after, constants in launches:
            kern[grid](*before, t, computes, *after, **constants)
    return form.result(algorithm, local, list(slots[:ns].unbind(0)), steps)


# ---- the launch-count proxy ------------------------------------------------------------------------------------


@contextmanager
def count_launches():
    """Counts every launch of this module's kernels inside the block, by kernel name, at the Triton runtime's own
    entry (a compiled kernel's ``run``, or the interpreter's grid executor): yields a Counter that fills as they
    happen."""
    counts: collections.Counter = collections.Counter()
    names = {k.__name__ for k in KERNELS}
    if _interpreted():
        from triton.runtime.interpreter import GridExecutor

        execute = GridExecutor.__call__

        def counted_grid(self, *args, **kwargs):
            if self.fn.__name__ in names:
                counts[self.fn.__name__] += 1
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
            counts[_name] += 1
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


# ---- compiled for a GPU without one ----------------------------------------------------------------------------

_POINTER = {torch.float32: "*fp32", torch.int64: "*i64", torch.int8: "*i8", torch.bool: "*i1"}


def compile_step(model: Any, batch: int, rows: int = 2, points: int = 1, tiles: Tiles = Tiles(), arch: int = 90,
                 form: Any = None, first_of_each: bool = False) -> list[dict]:
    """Every launch of a chain step of ``model`` at minibatches of ``batch`` compiled for sm_``arch`` by Triton's own
    compiler and the ptxas its wheel ships, on a machine without a GPU (as fedbench.engine.fused.aot does for mclr):
    per launch its kernel, grid, registers and spill bytes (``first_of_each``: only each kernel's first launch).
    ``form`` defaults to plain SGD's. Must run without TRITON_INTERPRET."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from fedbench.engine.fused.aot import _ptxas_usage
    from fedbench.engine.fused.forms import SGD

    form = form or SGD
    net = network_of(model)
    ns, nv = len(form.fields), form.vectors
    f32 = torch.zeros(1)
    bufs = _buffers(net, 1, 1, torch.device("cpu"))
    launches = _launches(net, tiles, points * rows, rows, batch, bufs, f32, torch.zeros(1, dtype=torch.int64),
                         torch.zeros(1, dtype=torch.int64), torch.zeros(1, dtype=torch.bool), f32, f32, f32,
                         {"points": {"S0": 0, "S1": 0}, "form": form, "ns": ns, "nv": nv})
    out, seen = [], set()
    for kern, grid, before, after, constants in launches:
        if first_of_each and kern in seen:
            continue
        seen.add(kern)
        names = kern.arg_names
        values = [*before, 0, 0, *after]
        signature = {}
        for name, value in zip(names, values):
            signature[name] = (_POINTER[value.dtype] if isinstance(value, torch.Tensor)
                               else "i64" if abs(value) >= 2**31 else "i32")
        signature |= dict.fromkeys(constants, "constexpr")
        compiled = triton.compile(ASTSource(kern, signature, constexprs=dict(constants)),
                                  target=GPUTarget("cuda", arch, 32), options={"num_warps": 4})
        out.append({"kernel": kern.__name__, "grid": grid, **_ptxas_usage(compiled.asm["ptx"], arch)})
    return out
