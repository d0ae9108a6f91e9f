"""Per-round scalars as device tensors (issue 49, D2): the static loop hands client_step the fields an algorithm
declares in ``step_scalars`` (the round's lr) as 0-dim tensors (fedbench.engine.round.step_form), so that a captured
graph replays one graph with each round's value instead of capturing a graph a round. On the CPU: the static loop
with a decaying lr gives the plain loop's numbers bit for bit, and a graph's key is the same in every round."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from fedbench.algorithms import ALGORITHMS, FedProx, algorithm_class
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine.capture import _algorithm_key, _with_buffers
from fedbench.engine.round import algorithm_at, step_form
from fedbench.engine.simulation import simulate_stack, stacking_form
from fedbench.models import build_model
from tests.engine.test_stack import _specs

DECLARING = ("fedavg", "fedprox", "fedlaavg", "sequential_sgd")  # FedAvg through its form, FedProx


@pytest.fixture(scope="module")
def datasets():
    kw = {"num_devices": 12, "seed": 0, "lognormal_mean": 3.0, "lognormal_sigma": 0.7, "min_samples": 20}
    return generate_synthetic(1, 1, **kw), generate_synthetic(0, 0, **kw)


def test_the_declaring_algorithms_are_those_named_here():
    declaring = {n for n in ALGORITHMS if "lr" in getattr(type(stacking_form(_build(n))), "step_scalars", ())}
    assert declaring == set(DECLARING)


def _build(name: str):
    from tests.algorithms.cases import CASES

    return algorithm_class(name)(**({"lr": 0.05} | CASES[name][0]))


@pytest.mark.parametrize("name", DECLARING)
def test_a_decaying_lr_as_a_tensor_gives_the_plain_loops_numbers_bit_for_bit(name, datasets):
    specs = [dataclasses.replace(s, cfg=dataclasses.replace(s.cfg, lr_decay=0.9)) for s in _specs(name, datasets)]
    model = build_model("mclr", specs[0].dataset.feature_shape, specs[0].dataset.num_classes)
    plain = simulate_stack(model, specs)
    static = simulate_stack(model, [dataclasses.replace(s, cfg=dataclasses.replace(s.cfg, capture="static"))
                                    for s in specs])
    for a, b in zip(plain, static):
        assert a.param_digest == b.param_digest
        assert [r["train/loss"] for r in a.history] == [r["train/loss"] for r in b.history]


def test_the_step_form_holds_the_rounds_lr_as_a_tensor_and_a_graph_key_is_every_rounds():
    local = torch.zeros(3, 4, dtype=torch.float64)
    forms = [step_form(algorithm_at(FedProx(lr=0.05, mu=1.0), 0.9, r), local) for r in (1, 2)]
    for r, form in zip((1, 2), forms):
        assert isinstance(form.lr, torch.Tensor) and form.lr.dtype == torch.float64 and form.lr.dim() == 0
        assert form.lr.item() == 0.05 * 0.9 ** r and form.mu == 1.0
    assert _algorithm_key(forms[0]) == _algorithm_key(forms[1])  # one captured graph serves both rounds
    assert _algorithm_key(FedProx(lr=0.05, mu=1.0)) != _algorithm_key(FedProx(lr=0.045, mu=1.0))  # numbers: keyed
    own = _with_buffers(forms[0])
    assert own.lr is not forms[0].lr and torch.equal(own.lr, forms[0].lr)  # the graph's own buffer
    scaffold = _build("scaffold")
    assert step_form(scaffold, local) is scaffold  # declares nothing: its numbers stay numbers
