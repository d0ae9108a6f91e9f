"""The batched recurrent kernel: a cohort's LSTM or GRU written as batched matrix products, for GPUs.

It runs the sequence classifiers of fedbench.models.recurrent (embedding -> stacked LSTM/GRU -> last step ->
linear layers). ``vmap`` has no batching rule for ``nn.LSTM``/``nn.GRU``, and the per-client loop launches every
time step's kernels once per client; here every client's weights are stacked along a leading axis (the
recurrent weights of K rows as one [K, H, 4H] tensor, 3H for a GRU), so each time step of each layer is one
batched product for the whole cohort:

    LSTM  gates_t = x_t W_ih^T + b_ih + b_hh + h_{t-1} W_hh^T  (input part for all steps at once)
          i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of the four blocks (PyTorch's order)
          c_t = f c_{t-1} + i g,  h_t = o tanh(c_t)
    GRU   r, z = sigmoid(x_t W_i{r,z}^T + b_i{r,z} + h_{t-1} W_h{r,z}^T + b_h{r,z})
          n = tanh(x_t W_in^T + b_in + r (h_{t-1} W_hn^T + b_hn)),  h_t = (1 - z) n + z h_{t-1}

with zero initial states, as ``nn.LSTM``/``nn.GRU``. Gradients come from autograd on the sum over rows of each
row's weighted loss sum_b w_b loss_b: row k's loss depends only on row k's parameters, so the gradient of the sum
with respect to row k's parameters is that row's own gradient. Each parameter tensor is its own leaf [K, ...]
(slicing one flat [K, P] leaf would make every slice's backward write a full [K, P] buffer). Inside each recurrent
layer, backpropagation through time is written out (an autograd Function) so that dW_hh is one product over all
steps, not a [K, 4H, H] gradient formed and added at every step (at K = 100 on FedProx's Shakespeare LSTM that
was 160 buffers of 105 MB per minibatch, and half the speed on the CPU).

Frozen tensors (a GloVe table, the constant b_hh of a TF-style LSTM) are shared by all rows, not stacked.
Evaluation uses the module itself (fedbench.engine.kernels.generic), as the loop kernel does; on the devices where
several models are evaluated in one pass (generic.BATCHED_EVAL_DEVICES), it is this kernel's forward with the
models as rows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

import fedbench.engine.kernels.generic as generic
from fedbench.models import losses
from fedbench.models.recurrent import FROZEN_TABLE, SequenceClassifier
from fedbench.models.spec import Model


class RecurrentKernel(generic.GenericEvaluation):
    name = "rnn"

    def __init__(self, model: Model) -> None:
        if not self.supports(model):
            raise ValueError(f"the rnn kernel runs the sequence classifiers of fedbench.models.recurrent (an "
                             f"embedding, a stacked LSTM or GRU, linear layers), not {model.name}")
        self.model = model
        net = model.module
        self.trainable_embedding = net.embedding is not None
        self.mode = net.rnn.mode  # "LSTM" or "GRU"
        self.layers = net.rnn.num_layers
        self.head = len(net.head)

    @staticmethod
    def supports(model: Model) -> bool:
        net = model.module
        if not isinstance(net, SequenceClassifier) or net.rnn.mode not in ("LSTM", "GRU") or not net.rnn.bias:
            return False
        return all(isinstance(layer, nn.Linear) and layer.bias is not None for layer in net.head)

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def batch(self, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x, y, w

    # ---- evaluation of several models in one pass (fedbench.engine.kernels.generic.BATCHED_EVAL_DEVICES) ------

    def batches_models(self) -> bool:
        return True

    def forward_many(self, thetas: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Outputs [M, n, C] of M models thetas [M, P] on the same token ids x [n, T]: :meth:`forward` with the
        models as rows, every row reading the same samples."""
        m = thetas.shape[0]
        params = {s.name: thetas[:, s.offset: s.offset + s.numel].view(m, *s.shape) for s in self.model.layout}
        return self.forward(params, x.unsqueeze(0).expand(m, *x.shape))

    # ---- training ------------------------------------------------------------------------------------

    def grad(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """[K, P]: each row's gradient of sum_b w_b loss_b on its minibatch x [K, B, T], y [K, B], w [K, B]."""
        k, b = y.shape
        leaves = [theta[:, s.offset: s.offset + s.numel].detach().view(k, *s.shape).requires_grad_(True)
                  for s in self.model.layout]
        with torch.enable_grad():
            params = {s.name: leaf for s, leaf in zip(self.model.layout, leaves)}
            out = self.forward(params, x)  # [K, B, C]
            per_example = losses.per_example(self.model.loss, out.flatten(0, 1), y.flatten()).view(k, b)
            total = (per_example * w).sum()
            grads = torch.autograd.grad(total, leaves)
        return torch.cat([g.reshape(k, -1) for g in grads], dim=1)

    def forward(self, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Outputs [K, B, C] of K models (their parameters stacked [K, ...] by name) on token ids x [K, B, T]."""
        frozen = self.model.frozen
        ids = x.long() if x.is_floating_point() else x
        k = ids.shape[0]
        if self.trainable_embedding:  # row k looks up its own table: ids offset into the stacked [K * V, d]
            table = params["embedding.weight"]
            vocab = table.shape[1]
            offsets = torch.arange(k, device=ids.device).view(k, *[1] * (ids.dim() - 1)) * vocab
            seq = F.embedding(ids + offsets, table.flatten(0, 1))  # [K, B, T, d]
        else:
            seq = F.embedding(ids, frozen[FROZEN_TABLE])
        for layer in range(self.layers):
            get = _getter(params, frozen, "rnn.", f"_l{layer}")
            last = layer == self.layers - 1
            run = _lstm_layer if self.mode == "LSTM" else _gru_layer
            seq = run(seq, get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), last)
        z = seq  # [K, B, H]: the last layer's last step
        for i in range(self.head):
            weight, bias = params[f"head.{i}.weight"], params[f"head.{i}.bias"]
            z = torch.baddbmm(bias.unsqueeze(1), z, weight.transpose(1, 2))
        return z


def _getter(params: dict[str, torch.Tensor], frozen, prefix: str, suffix: str):
    """A layer's tensor by its PyTorch name: the rows' stacked parameter [K, ...], or the shared frozen one
    given a leading axis of 1 so it broadcasts over the rows."""

    def get(stem: str) -> torch.Tensor:
        name = f"{prefix}{stem}{suffix}"
        return params[name] if name in params else frozen[name].unsqueeze(0)

    return get


def _input_part(seq: torch.Tensor, w_ih: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """x_t W_ih^T + bias for every step at once: seq [K, B, T, in] -> [K, B, T, G]."""
    k, b, t, d = seq.shape
    return torch.baddbmm(bias.unsqueeze(1), seq.reshape(k, b * t, d), w_ih.transpose(1, 2)).view(k, b, t, -1)


def _shifted(hs: torch.Tensor) -> torch.Tensor:
    """h_{t-1} for every step t of hs [K, B, T, H] (h_{-1} = 0), as a contiguous [K, B * T, H]."""
    prev = torch.zeros_like(hs)
    prev[:, :, 1:] = hs[:, :, :-1]
    return prev.view(hs.shape[0], -1, hs.shape[-1])


class _LSTMRecurrence(torch.autograd.Function):
    """The recurrence of one LSTM layer, h_t from x_part [K, B, T, 4H] (input part with both biases) and W_hh
    [K, 4H, H]. Backward is backpropagation through time written out: the gate gradients step by step (each
    step one [K, B, 4H] x [K, 4H, H] product for dh_{t-1}), then dW_hh for all steps as one product
    dG^T [K, 4H, B*T] x h_{t-1} [K, B*T, H]; autograd would instead form and add a [K, 4H, H] gradient at
    every step (at K = 100 on the Shakespeare LSTM, 160 buffers of 105 MB per minibatch)."""

    @staticmethod
    def forward(ctx, x_part: torch.Tensor, w_hh: torch.Tensor) -> torch.Tensor:
        k, b, steps, gates = x_part.shape
        hidden = gates // 4
        acts = torch.empty_like(x_part)  # i, f, g, o after their nonlinearities
        cs = x_part.new_empty(k, b, steps, hidden)
        hs = x_part.new_empty(k, b, steps, hidden)
        w_t = w_hh.transpose(1, 2)
        for t in range(steps):
            pre = x_part[:, :, t] if t == 0 else torch.baddbmm(x_part[:, :, t], hs[:, :, t - 1], w_t)
            a = acts[:, :, t]
            a[..., : 2 * hidden] = torch.sigmoid(pre[..., : 2 * hidden])
            a[..., 2 * hidden: 3 * hidden] = torch.tanh(pre[..., 2 * hidden: 3 * hidden])
            a[..., 3 * hidden:] = torch.sigmoid(pre[..., 3 * hidden:])
            i, f, g, o = a.split(hidden, dim=-1)
            c = i * g if t == 0 else torch.addcmul(i * g, f, cs[:, :, t - 1])
            cs[:, :, t] = c
            hs[:, :, t] = o * torch.tanh(c)
        ctx.save_for_backward(acts, cs, hs, w_hh)
        return hs

    @staticmethod
    def backward(ctx, d_hs: torch.Tensor):
        acts, cs, hs, w_hh = ctx.saved_tensors
        k, b, steps, hidden = hs.shape
        d_gates = torch.empty_like(acts)
        dh_next = dc_next = None
        for t in reversed(range(steps)):
            i, f, g, o = acts[:, :, t].split(hidden, dim=-1)
            tc = torch.tanh(cs[:, :, t])
            dh = d_hs[:, :, t] if dh_next is None else d_hs[:, :, t] + dh_next
            dc = dh * o * (1 - tc * tc)
            if dc_next is not None:
                dc = dc + dc_next
            dg = d_gates[:, :, t]
            dg[..., :hidden] = dc * g * i * (1 - i)
            if t > 0:
                dg[..., hidden: 2 * hidden] = dc * cs[:, :, t - 1] * f * (1 - f)
            else:
                dg[..., hidden: 2 * hidden] = 0
            dg[..., 2 * hidden: 3 * hidden] = dc * i * (1 - g * g)
            dg[..., 3 * hidden:] = dh * tc * o * (1 - o)
            dc_next = dc * f
            if t > 0:
                dh_next = torch.bmm(dg, w_hh)
        d_w_hh = torch.bmm(d_gates.view(k, b * steps, -1).transpose(1, 2), _shifted(hs))
        return d_gates, d_w_hh


class _GRURecurrence(torch.autograd.Function):
    """The recurrence of one GRU layer, h_t from x_part [K, B, T, 3H] (input part with b_ih), W_hh [K, 3H, H] and
    b_hh [K or 1, 3H] (b_hn sits inside the reset gate's product, so it cannot join x_part); backpropagation
    through time written out as for the LSTM."""

    @staticmethod
    def forward(ctx, x_part: torch.Tensor, w_hh: torch.Tensor, b_hh: torch.Tensor) -> torch.Tensor:
        k, b, steps, gates = x_part.shape
        hidden = gates // 3
        acts = torch.empty_like(x_part)  # r, z, n after their nonlinearities
        hn = x_part.new_empty(k, b, steps, hidden)  # h_{t-1} W_hn^T + b_hn
        hs = x_part.new_empty(k, b, steps, hidden)
        w_t, bias = w_hh.transpose(1, 2), b_hh.unsqueeze(1)
        for t in range(steps):
            xt = x_part[:, :, t]
            h_part = bias.expand(k, b, gates) if t == 0 else torch.baddbmm(bias, hs[:, :, t - 1], w_t)
            a = acts[:, :, t]
            a[..., : 2 * hidden] = torch.sigmoid(xt[..., : 2 * hidden] + h_part[..., : 2 * hidden])
            hn[:, :, t] = h_part[..., 2 * hidden:]
            r, z, _ = a.split(hidden, dim=-1)
            n = torch.tanh(torch.addcmul(xt[..., 2 * hidden:], r, hn[:, :, t]))
            a[..., 2 * hidden:] = n
            hs[:, :, t] = n - z * n if t == 0 else torch.addcmul(n, z, hs[:, :, t - 1] - n)  # h_{-1} = 0
        ctx.save_for_backward(acts, hn, hs, w_hh)
        return hs

    @staticmethod
    def backward(ctx, d_hs: torch.Tensor):
        acts, hn, hs, w_hh = ctx.saved_tensors
        k, b, steps, hidden = hs.shape
        d_x = torch.empty_like(acts)  # gradients of x_part
        d_h = torch.empty_like(acts)  # gradients of h_part = h_{t-1} W_hh^T + b_hh
        dh_next = None
        for t in reversed(range(steps)):
            r, z, n = acts[:, :, t].split(hidden, dim=-1)
            dh = d_hs[:, :, t] if dh_next is None else d_hs[:, :, t] + dh_next
            h_prev = hs[:, :, t - 1] if t > 0 else torch.zeros_like(n)
            dn = dh * (1 - z) * (1 - n * n)
            dx, dhp = d_x[:, :, t], d_h[:, :, t]
            dx[..., :hidden] = dn * hn[:, :, t] * r * (1 - r)
            dx[..., hidden: 2 * hidden] = dh * (h_prev - n) * z * (1 - z)
            dx[..., 2 * hidden:] = dn
            dhp[..., : 2 * hidden] = dx[..., : 2 * hidden]
            dhp[..., 2 * hidden:] = dn * r
            if t > 0:
                dh_next = torch.addcmul(torch.bmm(dhp, w_hh), dh, z)
        d_w_hh = torch.bmm(d_h.view(k, b * steps, -1).transpose(1, 2), _shifted(hs))
        d_b_hh = d_h.sum((1, 2)) if ctx.needs_input_grad[2] else None  # a frozen (shared) b_hh needs none
        return d_x, d_w_hh, d_b_hh


def _lstm_layer(seq, w_ih, w_hh, b_ih, b_hh, last: bool) -> torch.Tensor:
    """One LSTM layer over seq [K, B, T, in]; returns every step's h [K, B, T, H], or only the last [K, B, H]."""
    hs = _LSTMRecurrence.apply(_input_part(seq, w_ih, b_ih + b_hh), w_hh)
    return hs[:, :, -1] if last else hs


def _gru_layer(seq, w_ih, w_hh, b_ih, b_hh, last: bool) -> torch.Tensor:
    """One GRU layer over seq [K, B, T, in]; returns every step's h [K, B, T, H], or only the last [K, B, H]."""
    hs = _GRURecurrence.apply(_input_part(seq, w_ih, b_ih), w_hh, b_hh)
    return hs[:, :, -1] if last else hs
