"""The recurrent models (fedbench.models.recurrent and the four papers' models built on it): FedProx's LSTMs
equal TF's BasicLSTMCell computed independently; Sent140's sigmoid loss exact on a hand-made case; TF's
initialisation; float token ids; Delta-FL's GRU and LSTM sizes."""

from __future__ import annotations

import math

import torch
from torch.func import functional_call

from fedbench.models import (
    deltafl_sent140_lstm,
    deltafl_shakespeare_gru,
    fedprox_sent140_lstm,
    fedprox_shakespeare_lstm,
)
from fedbench.models.recurrent import FROZEN_TABLE
from fedbench.seeding import torch_generator


def _tf_basic_lstm(seq: torch.Tensor, kernel: torch.Tensor, bias: torch.Tensor, forget_bias: float) -> torch.Tensor:
    """TF1's rnn.BasicLSTMCell over seq [n, T, d] from a zero state, written from its definition: one kernel
    [d + H, 4H] on [x_t, h], gates in TF's order (i, j, f, o), c = c sigmoid(f + forget_bias) + sigmoid(i) tanh(j),
    h = sigmoid(o) tanh(c). Returns every step's h [n, T, H]."""
    hidden = kernel.shape[1] // 4
    h = seq.new_zeros(seq.shape[0], hidden)
    c = torch.zeros_like(h)
    outs = []
    for t in range(seq.shape[1]):
        i, j, f, o = (torch.cat([seq[:, t], h], 1) @ kernel + bias).split(hidden, 1)
        c = c * torch.sigmoid(f + forget_bias) + torch.sigmoid(i) * torch.tanh(j)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(h)
    return torch.stack(outs, 1)


def _as_tf(views: dict[str, torch.Tensor], layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Our layer's trainable tensors as TF's one kernel [d + H, 4H] and one bias, gate blocks reordered from
    PyTorch's (i, f, g, o) to TF's (i, j, f, o)."""
    w = torch.cat([views[f"rnn.weight_ih_l{layer}"], views[f"rnn.weight_hh_l{layer}"]], 1)  # [4H, d + H]
    order = [0, 2, 1, 3]
    kernel = torch.cat([w.chunk(4, 0)[g] for g in order], 0).T
    bias = torch.cat([views[f"rnn.bias_ih_l{layer}"].chunk(4)[g] for g in order])
    return kernel, bias


def test_fedprox_shakespeare_lstm_is_tfs_basic_lstm_cell():
    model = fedprox_shakespeare_lstm(num_classes=9)
    assert [s.name for s in model.layout] == ["embedding.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0",
                                             "rnn.bias_ih_l0", "rnn.weight_ih_l1", "rnn.weight_hh_l1",
                                             "rnn.bias_ih_l1", "head.0.weight", "head.0.bias"]
    g = torch.Generator().manual_seed(0)
    theta = torch.randn(model.num_params, generator=g, dtype=torch.float64) * 0.1
    x = torch.randint(0, 9, (3, 6), generator=g)
    views = model.unflatten(theta)
    seq = views["embedding.weight"][x]
    for layer in range(2):
        seq = _tf_basic_lstm(seq, *_as_tf(views, layer), forget_bias=1.0)
    want = seq[:, -1] @ views["head.0.weight"].T + views["head.0.bias"]
    frozen64 = {k: v.double() for k, v in model.frozen.items()}
    got = functional_call(model.module, {**views, **frozen64}, (x,))
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    # the frozen b_hh is the constant forget bias: 1 on the forget gate's rows, 0 elsewhere
    for layer in range(2):
        b = model.frozen[f"rnn.bias_hh_l{layer}"]
        assert b[256:512].eq(1).all() and b[:256].eq(0).all() and b[512:].eq(0).all()


def test_fedprox_sent140_sigmoid_loss_exact_on_a_hand_made_case():
    """All weights 0 but layer 2's cell-input bias a, dense1[0, 0] = 1, dense2[0] = 1 and dense2's bias beta,
    over two tokens: layer 2's units have c_1 = sigmoid(0) tanh(a), c_2 = sigmoid(0 + 1) c_1 + c_1 (the forget bias
    1.0), h_2 = sigmoid(0) tanh(c_2), so the logit is s = h_2 + beta and the losses are log(1 + e^-s) for label 1
    and log(1 + e^s) for label 0."""
    table = torch.randn(5, 4, generator=torch.Generator().manual_seed(1))
    model = fedprox_sent140_lstm(table)
    views = model.unflatten(torch.zeros(model.num_params, dtype=torch.float64))
    a, beta = 0.7, -0.2
    views["rnn.bias_ih_l1"][200:300] = a  # the cell input g of layer 2 (PyTorch's gate order i, f, g, o)
    views["head.0.weight"][0, 0] = 1.0
    views["head.1.weight"][0, 0] = 1.0
    views["head.1.bias"][0] = beta
    theta = model.flatten(views)
    c1 = 0.5 * math.tanh(a)
    c2 = 1 / (1 + math.exp(-1.0)) * c1 + c1
    s = 0.5 * math.tanh(c2) + beta
    x = torch.tensor([[1, 3], [4, 0]])  # the words do not matter: layer 1 is all zero
    y = torch.tensor([1, 0])
    frozen64 = {k: v.double() for k, v in model.frozen.items()}
    out = functional_call(model.module, {**model.unflatten(theta), **frozen64}, (x,))
    torch.testing.assert_close(out.reshape(-1), torch.tensor([s, s], dtype=torch.float64), rtol=0, atol=1e-15)
    losses = model.example_losses(out, y)
    want = torch.tensor([math.log1p(math.exp(-s)), math.log1p(math.exp(s))], dtype=torch.float64)
    torch.testing.assert_close(losses, want, rtol=0, atol=1e-15)
    assert model.correct(out, y).tolist() == [s > 0, s <= 0]


def test_tf_initialisation_of_the_fedprox_lstm():
    model = fedprox_shakespeare_lstm(80)
    views = model.unflatten(model.init(torch_generator(0, -1, "init")))
    limits = {"embedding.weight": math.sqrt(6 / (80 + 8)),  # a plain tf.get_variable [80, 8]
              "rnn.weight_ih_l0": math.sqrt(6 / (8 + 256 + 1024)), "rnn.weight_hh_l0": math.sqrt(6 / (8 + 256 + 1024)),
              "rnn.weight_ih_l1": math.sqrt(6 / (512 + 1024)), "rnn.weight_hh_l1": math.sqrt(6 / (512 + 1024)),
              "head.0.weight": math.sqrt(6 / (256 + 80))}
    for name, limit in limits.items():
        assert views[name].abs().max() <= limit and views[name].abs().max() > 0.95 * limit, name
    for name in ("rnn.bias_ih_l0", "rnn.bias_ih_l1", "head.0.bias"):
        assert not views[name].any(), name


def test_float_token_ids_are_read_as_integers():
    model = deltafl_shakespeare_gru(53)
    theta = model.init(torch_generator(0, -1, "init"))
    x = torch.randint(0, 53, (4, 20), generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(model.forward(theta, x.float()), model.forward(theta, x), rtol=0, atol=0)


def test_deltafl_recurrent_sizes():
    gru = deltafl_shakespeare_gru(53)
    theta = gru.init(torch_generator(0, -1, "init"))
    out = gru.forward(theta, torch.zeros(2, 20, dtype=torch.int64))
    assert out.shape == (2, 128)  # the authors' fc has n_hidden = 128 outputs, not 53
    lstm = deltafl_sent140_lstm(torch.zeros(9, 12))
    assert lstm.num_params == 4 * 12 * (12 + 12) + 2 * 4 * 12 + 12 + 1  # hidden = the table's dimension
    assert lstm.num_frozen == 9 * 12 and FROZEN_TABLE in lstm.frozen
