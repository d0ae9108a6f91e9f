"""The model spec: theta's layout, frozen tensors, equality, and the losses a model can own."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from fedbench.models import losses
from fedbench.models.spec import Model, default_init


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("table", torch.empty(4, 3))  # a frozen lookup table, shared by all clients

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lin(self.table[ids])


def _tiny(frozen: torch.Tensor | None = None) -> Model:
    table = frozen if frozen is not None else torch.arange(12.0).view(4, 3)
    return Model(name="tiny", config=(), module=Tiny(), loss="softmax_ce", input_dtype=torch.int64,
                 frozen={"table": table})


def test_layout_offsets_and_round_trip():
    m = _tiny()
    assert [(s.name, s.shape, s.offset) for s in m.layout] == [("lin.weight", (2, 3), 0), ("lin.bias", (2,), 6)]
    assert m.num_params == 8 and m.num_frozen == 12  # the frozen table is not in theta
    theta = torch.arange(8.0)
    views = m.unflatten(theta)
    assert views["lin.weight"].tolist() == [[0, 1, 2], [3, 4, 5]] and views["lin.bias"].tolist() == [6, 7]
    assert torch.equal(m.flatten(views), theta)
    assert all(p.device.type == "meta" for p in m.module.parameters())  # a skeleton: shapes only


def test_forward_uses_theta_and_the_frozen_tensor():
    m = _tiny()
    theta = torch.tensor([1.0, 0, 0, 0, 0, 1, 0.5, -0.5])  # logit 0 = feature 0 + 0.5, logit 1 = feature 2 - 0.5
    out = m.forward(theta, torch.tensor([0, 2]))  # rows [0, 1, 2] and [6, 7, 8] of the table
    assert out.tolist() == [[0.5, 1.5], [6.5, 7.5]]


def test_frozen_tensors_are_never_trained():
    m = _tiny()
    theta = torch.zeros(8, requires_grad=True)
    loss = m.loss_fn(theta, torch.tensor([1, 3]), torch.tensor([0, 1]))
    (g,) = torch.autograd.grad(loss, theta)
    assert g.shape == (8,) and g.abs().sum() > 0
    assert torch.equal(m.frozen["table"], torch.arange(12.0).view(4, 3))
    assert m.frozen["table"].grad is None


def test_equality_is_by_name_and_config():
    assert _tiny() == _tiny(torch.zeros(4, 3))
    other = Model(name="tiny", config=(1,), module=Tiny(), loss="softmax_ce")
    assert _tiny() != other and hash(_tiny()) == hash(_tiny())


def test_bad_loss_and_bad_init_are_refused():
    with pytest.raises(ValueError, match="loss 'hinge' is not one of"):
        Model(name="x", config=(), module=nn.Linear(2, 2), loss="hinge")
    bad = Model(name="x", config=(), module=nn.Linear(2, 2), loss="softmax_ce", init_fn=lambda *a: torch.zeros(3))
    with pytest.raises(ValueError, match=r"init gave shape \(3,\), expected \(6,\)"):
        bad.init(torch.Generator())


def test_default_init_is_pytorch_default_from_our_generator():
    module = nn.Sequential(nn.Linear(4, 3), nn.Embedding(5, 2), nn.LSTM(2, 3)).to("meta")
    m = Model(name="x", config=(), module=module, loss="softmax_ce")
    theta = m.init(torch.Generator().manual_seed(0))
    assert theta.dtype == torch.float32 and theta.shape == (m.num_params,)
    views = m.unflatten(theta)
    assert views["0.weight"].abs().max() <= 0.5 and views["0.bias"].abs().max() <= 0.5  # 1/sqrt(fan_in = 4)
    assert views["2.weight_hh_l0"].abs().max() <= 1 / math.sqrt(3)  # recurrent: 1/sqrt(hidden)
    assert views["1.weight"].abs().max() > 1.0  # embeddings: standard normal
    assert torch.equal(theta, m.init(torch.Generator().manual_seed(0)))
    assert torch.equal(theta, default_init(module, m.layout, torch.Generator().manual_seed(0)))


def test_losses_exact_on_hand_made_cases():
    z = torch.tensor([[0.0, math.log(3.0)], [2.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([1, 1])
    # softmax CE: -log(3/4) and -log(1/(1 + e^2)); correct where the arg-max is the label
    ce = losses.per_example("softmax_ce", z, y)
    torch.testing.assert_close(ce, torch.tensor([-math.log(0.75), math.log(1 + math.e**2)], dtype=torch.float64))
    assert losses.correct("softmax_ce", z, y).tolist() == [True, False]
    # sigmoid CE on one logit: -log(sigmoid(s)) for label 1, -log(1 - sigmoid(s)) for label 0
    s = torch.tensor([[math.log(3.0)], [math.log(3.0)], [-1.0]], dtype=torch.float64)
    lab = torch.tensor([1, 0, 0])
    bce = losses.per_example("sigmoid_ce", s, lab)
    torch.testing.assert_close(bce, torch.tensor([-math.log(0.75), -math.log(0.25), math.log(1 + math.e**-1)],
                                                 dtype=torch.float64))
    assert losses.correct("sigmoid_ce", s, lab).tolist() == [True, False, True]
    # squared residual
    r = torch.tensor([[3.0, 4.0], [0.0, 1.0]])
    assert losses.per_example("squared", r, torch.zeros(2)).tolist() == [12.5, 0.5]
    assert torch.isnan(losses.correct("squared", r, torch.zeros(2))).all()
