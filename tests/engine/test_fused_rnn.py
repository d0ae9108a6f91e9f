"""The fused recurrent kernels (fedbench.engine.fused.rnn) in Triton's interpreter: on the last round of a short
static-path run of the engine, for the algorithms that train the recurrent models (FedAvg and FedProx on FedProx's
LSTMs, Delta-FL on its LSTM and GRU; and Mime, a form of two gradients a step), the local state is
fedbench.engine.static.run_static's within 1e-5 in fp32, with rows that finish at different steps (the finished-row
mask) and last partial minibatches, both checked present; each of the four models' structures is run small (the
same builders: a trainable embedding or a frozen table, TF's single-bias LSTM or PyTorch's two biases, one or two
head layers, softmax or sigmoid), and once with every dimension in several tiles; a padding row keeps its state; a
chain step launches exactly 2 x timesteps x layers + 2 x layers + 2 kernels and no ATen operation, within issue 53's
2 x timesteps x layers + 10 at the four paper models' full sizes; the kernels compile for sm_90 without spilling; an
algorithm without a form is refused in one line.

Skipped where Triton is not installed. The interpreter costs tens of ms a program on this CPU, so rounds are 1-3
rows of 2-3 timesteps and 1-3 chain steps, hidden sizes 4-6 (18 where every dimension takes several tiles)."""

from __future__ import annotations

import dataclasses
import importlib
import sys

import numpy as np
import pytest
import torch
from torch import nn

from tests.engine.test_fused_mclr import _interpreting, _max_difference, _once_per_module

with _interpreting():
    pytest.importorskip("triton", reason="Triton is not installed: the fused kernels' tests run in its interpreter "
                                         "(pip install triton; it ships with torch's CUDA wheels)")

from fedbench.algorithms import build_algorithm
from fedbench.data.format import FederatedDataset, Split
from fedbench.engine import round as round_
from fedbench.engine import tree
from fedbench.engine.kernels.rnn import RecurrentKernel
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack
from fedbench.models import (
    deltafl_sent140_lstm,
    deltafl_shakespeare_gru,
    fedprox_sent140_lstm,
    fedprox_shakespeare_lstm,
)
from fedbench.models.recurrent import FROZEN_TABLE, SequenceClassifier, single_bias_lstm
from fedbench.models.spec import Model

TOLERANCE = 1e-5  # fp32, issue 53's contract for the interpreter
VOCAB = 6


@pytest.fixture(scope="module")
def fused():
    """fedbench.engine.fused.rnn built for Triton's interpreter (its forms and mclr helpers reloaded first), with
    TRITON_INTERPRET=1 while this module's tests run, _patch_lang once per module of jit functions, and the
    interpreter's int32-overflow sanitizer off (it doubles the time; the kernels' row offsets are int64)."""
    import triton.language as tl
    from triton.runtime import interpreter
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(tl.zeros, InterpretedFunction):
        pytest.skip("Triton was imported before TRITON_INTERPRET=1 was set (its library is compiled-only in this "
                    "process): run tests/engine/test_fused_rnn.py on its own")
    with _interpreting(), pytest.MonkeyPatch.context() as patch:
        names = ("fedbench.engine.fused.forms", "fedbench.engine.fused.mclr", "fedbench.engine.fused.rnn")
        modules = [importlib.reload(sys.modules[n]) if n in sys.modules else importlib.import_module(n)
                   for n in names]
        assert modules[2]._interpreted()
        patch.setattr(interpreter, "_patch_lang", _once_per_module(interpreter._patch_lang))
        patch.setattr(interpreter.interpreter_builder, "options",
                      dataclasses.replace(interpreter.interpreter_builder.options, sanitize_overflow=False))
        yield modules[2]


# ---- the four models' structures, small ------------------------------------------------------------------------

_TABLE = torch.randn(VOCAB, 5, generator=torch.Generator().manual_seed(11))  # a small frozen word table


def _fedprox_shakespeare_like() -> Model:
    """fedprox_shakespeare_lstm's structure: trainable embedding, 2 x TF single-bias LSTM, one dense, softmax."""
    lstm, frozen = single_bias_lstm(3, 5, 2, forget_bias=1.0)
    with torch.device("meta"):
        net = SequenceClassifier(lstm, [nn.Linear(5, 4)], embedding=nn.Embedding(VOCAB, 3))
    return Model(name="shakespeare_like", config=(), module=net, loss="softmax_ce", input_dtype=torch.int64,
                 frozen={f"rnn.{k}": v for k, v in frozen.items()})


def _fedprox_sent140_like() -> Model:
    """fedprox_sent140_lstm's: frozen table, 2 x TF single-bias LSTM, two dense layers, one sigmoid logit."""
    lstm, frozen = single_bias_lstm(5, 4, 2, forget_bias=1.0)
    with torch.device("meta"):
        net = SequenceClassifier(lstm, [nn.Linear(4, 3), nn.Linear(3, 1)], table_shape=tuple(_TABLE.shape))
    return Model(name="sent140_like", config=(), module=net, loss="sigmoid_ce", input_dtype=torch.int64,
                 frozen={FROZEN_TABLE: _TABLE, **{f"rnn.{k}": v for k, v in frozen.items()}})


def _deltafl_sent140_like() -> Model:
    """deltafl_sent140_lstm's: frozen table, one PyTorch LSTM (two trainable biases), one dense, sigmoid."""
    with torch.device("meta"):
        net = SequenceClassifier(nn.LSTM(5, 5, batch_first=True), [nn.Linear(5, 1)], table_shape=tuple(_TABLE.shape))
    return Model(name="deltafl_sent140_like", config=(), module=net, loss="sigmoid_ce", input_dtype=torch.int64,
                 frozen={FROZEN_TABLE: _TABLE})


def _deltafl_gru_like() -> Model:
    """deltafl_shakespeare_gru's: trainable embedding, one GRU (b_hn inside the reset gate), one dense, softmax."""
    with torch.device("meta"):
        net = SequenceClassifier(nn.GRU(3, 6, batch_first=True), [nn.Linear(6, 4)], embedding=nn.Embedding(VOCAB, 3))
    return Model(name="gru_like", config=(), module=net, loss="softmax_ce", input_dtype=torch.int64)


# id -> (model, timesteps, algorithm, hyperparameters, straggler fraction (cut in minibatch steps), clients a round)
CASES = {
    "shakespeare_fedavg": (_fedprox_shakespeare_like, 2, "fedavg", {}, 0.0, 2),
    "shakespeare_fedprox": (_fedprox_shakespeare_like, 2, "fedprox", {"mu": 1.0}, 0.5, 2),
    "sent140_fedprox": (_fedprox_sent140_like, 2, "fedprox", {"mu": 0.5}, 0.5, 2),
    "deltafl_sent140_delta_fl": (_deltafl_sent140_like, 3, "delta_fl", {"theta": 0.5, "weighting": "exact",
                                                                         "quantile_period": 1}, 0.0, 3),
    "deltafl_gru_fedavg": (_deltafl_gru_like, 3, "fedavg", {}, 0.0, 2),
    # a form with two gradients a step (at y and at the server's x): two passes, one update
    "gru_mime": (_deltafl_gru_like, 2, "mime", {"variant": "mime", "base": "sgdm"}, 0.0, 2),
}


def _dataset(model: Model, timesteps: int) -> FederatedDataset:
    """Three clients of 1, 3 and 5 token sequences (ids stored as float32, as the datasets store them): 1, 2 and 3
    minibatches of 2 an epoch, each client's last one partial."""
    g = np.random.default_rng(5)
    classes = 2 if model.loss == "sigmoid_ce" else 4
    sizes = (1, 3, 5)
    xs = [g.integers(0, VOCAB, (n, timesteps)).astype(np.float32) for n in sizes]
    ys = [g.integers(0, classes, n) for n in sizes]
    split = Split.from_clients(xs, ys, (timesteps,))
    return FederatedDataset(name="tokens", client_ids=("a", "b", "c"), train=split, test=split, num_classes=classes)


def _last_round(monkeypatch, model: Model, *specs: RunSpec):
    """run_static's arguments and result in the last round of a short static-path run of ``specs`` stacked (the
    engine's own inputs)."""
    calls = []
    real = round_.run_static

    def recorded(*args):
        out = real(*args)
        calls.append((args, out))
        return out

    monkeypatch.setattr(round_, "run_static", recorded)
    simulate_stack(model, list(specs))
    monkeypatch.undo()
    return calls[-1]


def _spec(case: str) -> tuple[Model, RunSpec]:
    make, timesteps, name, hyper, stragglers, clients = CASES[case]
    model = make()
    cfg = SimulationConfig(rounds=2, clients_per_round=clients, local_epochs=1, batch_size=2, seed=0, device="cpu",
                           capture="static", kernel="rnn", straggler_fraction=stragglers,
                           straggler_epochs="minibatches", checkpoint_every=10_000)
    return model, RunSpec(cfg, _dataset(model, timesteps), build_algorithm(name, lr=0.5, **hyper))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fused_step_gives_the_static_paths_local_state(case, fused, monkeypatch):
    model, spec = _spec(case)
    args, reference = _last_round(monkeypatch, model, spec)
    _, kernel, _, local, x, _, cohort = args
    assert isinstance(kernel, RecurrentKernel)
    steps = cohort.active[:, : cohort.rows].sum(0).tolist()
    partial = ((cohort.batches >= 0).sum(-1) % cohort.batches.shape[-1] != 0) & cohort.active
    assert 2 <= cohort.rows <= 3 and 2 <= cohort.batches.shape[0] <= 3  # the interpreter's budget
    assert partial.any(), "no last partial minibatch in the round: the case tests less than it says"
    assert len(set(steps)) >= 2, f"rows of {steps} steps: the finished-row mask is not exercised"
    with fused.count_launches() as launches:
        result = fused.run_fused(*args)
    layers, timesteps = model.module.rnn.num_layers, x.shape[1]
    gradients = len(set(fused.form_of(args[0]).grad_codes()))
    assert launches.total == cohort.batches.shape[0] * (gradients * (2 * timesteps * layers + 2 * layers + 1) + 1)
    assert launches.total == cohort.batches.shape[0] * fused.launches_per_step(kernel, timesteps, gradients)
    difference = _max_difference(result, reference)
    assert difference <= TOLERANCE, difference
    moved = max(float((a - b).abs().max()) for a, b in zip(tree.tree_leaves(reference), tree.tree_leaves(local)))
    assert moved > 100 * TOLERANCE  # the state moved: a difference of 1e-5 would show


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_every_dimension_in_several_tiles(cell, fused, monkeypatch):
    """Tiles of 16 (the smallest tl.dot takes) on a model whose every dimension needs two or more of them: 18 hidden
    units (two cell programs a row, two blocks of the recurrent products), 17 input features, 72 or 54 gate columns,
    a 2-layer stack (the input gradient of layer 1 in tiles), a trainable embedding; one row's FedProx step on a
    partial minibatch against run_static."""
    from fedbench.engine.static import StaticCohort, run_static

    for name in ("CELL_BLOCK", "GEMM_BLOCK", "INPUT_BLOCK"):
        monkeypatch.setattr(fused, name, 16)
    rnn_cls = (lambda *a: single_bias_lstm(*a, forget_bias=1.0)) if cell == "LSTM" else (
        lambda *a: (nn.GRU(*a, batch_first=True, device="meta"), {}))
    rnn, frozen = rnn_cls(17, 18, 2)
    with torch.device("meta"):
        net = SequenceClassifier(rnn, [nn.Linear(18, 4)], embedding=nn.Embedding(VOCAB, 17))
    model = Model(name="wide", config=(), module=net, loss="softmax_ce", input_dtype=torch.int64,
                  frozen={f"rnn.{k}": v for k, v in frozen.items()})
    kernel = RecurrentKernel(model)
    g = torch.Generator().manual_seed(7)
    x = torch.randint(0, VOCAB, (4, 2), generator=g).float()
    y = torch.randint(0, 4, (4,), generator=g)
    theta = model.init(g).expand(1, -1).contiguous()
    algorithm = build_algorithm("fedprox", lr=0.5, mu=1.0)
    bcast = algorithm.broadcast(algorithm.init(theta[0] + 0.1, 1))
    cohort = StaticCohort(batches=torch.tensor([[[2, 0, -1]]]), active=torch.tensor([[True]]), rows=1)
    reference = run_static(algorithm, kernel, bcast, theta, x, y, cohort)
    result = fused.run_fused(algorithm, kernel, bcast, theta, x, y, cohort)
    assert _max_difference(result, reference) <= TOLERANCE
    assert float((reference - theta).abs().max()) > 100 * TOLERANCE


def test_stacked_runs_with_their_own_mu(fused, monkeypatch):
    """Two FedProx runs in one stack, one row each: per-row anchors and mu [K, 1]
    (fedbench.engine.round.row_broadcast)."""
    model, spec = _spec("shakespeare_fedprox")
    cfg = dataclasses.replace(spec.cfg, clients_per_round=1, straggler_fraction=0.0)
    specs = [RunSpec(dataclasses.replace(cfg, seed=seed), spec.dataset, build_algorithm("fedprox", lr=0.5, mu=mu))
             for mu, seed in ((1.0, 0), (0.25, 1))]
    args, reference = _last_round(monkeypatch, model, *specs)
    bcast = args[2]
    assert isinstance(bcast.mu, torch.Tensor) and bcast.mu.unique().numel() == 2 and bcast.theta.dim() == 2
    assert _max_difference(fused.run_fused(*args), reference) <= TOLERANCE


def test_a_padding_row_keeps_its_state(fused, monkeypatch):
    """A row that never trains (all -1, never active: a stack's padding) is left exactly as it was, and the real
    rows are unchanged by its presence."""
    from fedbench.engine import static

    model, spec = _spec("deltafl_gru_fedavg")
    args, reference = _last_round(monkeypatch, model, spec)
    algorithm, kernel, bcast, local, x, y, cohort = args
    t, k, b = cohort.batches.shape
    padded = static.StaticCohort(batches=torch.cat([cohort.batches, cohort.batches.new_full((t, 1, b), -1)], 1),
                                 active=torch.cat([cohort.active, cohort.active.new_zeros(t, 1)], 1), rows=cohort.rows)
    local_padded = static.pad_rows(local, k + 1)
    result = fused.run_fused(algorithm, kernel, bcast, local_padded, x, y, padded)
    assert torch.equal(result[k:], local_padded[k:])
    assert _max_difference(result[:k], reference) <= TOLERANCE


def test_an_algorithm_without_a_form_is_refused_in_one_line(fused, monkeypatch):
    model, spec = _spec("deltafl_gru_fedavg")
    args, _ = _last_round(monkeypatch, model, spec)

    @dataclasses.dataclass(frozen=True)
    class Unknown:
        lr: float = 0.1

        def client_step(self, theta, grad_fn, bcast):
            return theta

    with pytest.raises(ValueError, match="has no fused form") as err:
        fused.run_fused(Unknown(), *args[1:])
    assert "\n" not in str(err.value)


def test_the_prepared_gpu_checks_comparison_runs_here(fused):
    """fedbench.bench.fused_rnn_check, which the GPU check runs at 1 and 200 rows of the paper models: on the CPU
    (the interpreter, a small GRU) its drawn round has rows that finish at different steps and partial minibatches,
    the fused step agrees with the static path, launches as declared, and no time is reported."""
    from fedbench.bench import fused_rnn_check as rnn_check

    args = rnn_check.draw_round(_deltafl_gru_like(), rows=2, steps=2, batch=2, seq=2)
    cohort = args[-1]
    partial = ((cohort.batches >= 0).sum(-1) < cohort.batches.shape[-1]) & cohort.active
    assert cohort.active.sum(0).tolist() == [2, 1] and partial.sum(0).tolist() == [1, 1]  # each row's last one
    out = rnn_check.compare(args, "cpu")
    assert out["static"]["max_abs_diff"] == 0.0 and out["fused"]["max_abs_diff"] <= TOLERANCE
    assert out["fused"]["launches_per_chain_step"] == 2 * 2 * 1 + 2 * 1 + 2
    assert all("us_per_chain_step" not in row for row in out.values())


def test_the_engine_runs_rounds_through_the_fused_recurrent_kernels(fused, monkeypatch):
    """Two rounds of a FedProx run with a straggler, capture 'fused_step' on the rnn kernel (the CPU standing in for
    CUDA, the interpreter for the GPU), give the static path's model within 1e-5: the engine dispatches the step to
    fedbench.engine.fused.rnn (fedbench.engine.fused.family); 'fused_round' is refused for it in one line."""
    from fedbench.engine import capture, simulation
    from fedbench.engine.fused import family

    model, spec = _spec("shakespeare_fedprox")
    assert family(RecurrentKernel(model)) == "rnn"
    capture.check_fused("fused_step", RecurrentKernel(model), [spec.algorithm])
    with pytest.raises(ValueError, match=r"^capture: 'fused_round' \(one launch a round\) is mclr's alone, and this "
                                         r"stack runs the rnn family; use 'fused_step'$"):
        capture.check_fused("fused_round", RecurrentKernel(model), [spec.algorithm])
    check = capture.check_capture
    monkeypatch.setattr(simulation, "check_capture",
                        lambda mode, device, path: check("static" if mode in capture.FUSED_MODES else mode, device,
                                                         path))
    runs = {c: simulate_stack(model, [dataclasses.replace(spec, cfg=dataclasses.replace(spec.cfg, capture=c))])[0]
            for c in ("static", "fused_step")}
    assert 0 < float((runs["fused_step"].theta - runs["static"].theta).abs().max()) <= TOLERANCE


# ---- the launch-count proxy at the paper models' full sizes -----------------------------------------------------

# model -> (its builder at full size, timesteps (the datasets' sequence length), issue 53's "today" ATen count)
PAPER_MODELS = {
    "fedprox_shakespeare_lstm": (lambda: fedprox_shakespeare_lstm(80), 80, 6749),
    "fedprox_sent140_lstm": (lambda: fedprox_sent140_lstm(torch.randn(10, 300)), 25, 2128),
    "deltafl_shakespeare_gru": (lambda: deltafl_shakespeare_gru(53), 20, 712),
    "deltafl_sent140_lstm": (lambda: deltafl_sent140_lstm(torch.randn(10, 50)), 25, None),
}


def _aten_ops_outside_launches(fn):
    """fn()'s ATen operators (views excluded) dispatched outside the fused kernels' launches (the interpreter's
    copies of a launch's arguments are not the device's work)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from triton.runtime.interpreter import GridExecutor

    count = {"ops": 0, "inside": 0}

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not func.is_view and not count["inside"]:
                count["ops"] += 1
            return func(*args, **(kwargs or {}))

    call = GridExecutor.__call__

    def inside(self, *args, **kwargs):
        count["inside"] += 1
        try:
            return call(self, *args, **kwargs)
        finally:
            count["inside"] -= 1

    with pytest.MonkeyPatch.context() as patch, Mode():
        patch.setattr(GridExecutor, "__call__", inside)
        fn()
    return count["ops"]


@pytest.mark.parametrize("name", sorted(PAPER_MODELS))
def test_launches_a_chain_step_at_the_paper_models_sizes(name, fused):
    """The launch-count proxy (issue 53: launches a local step, recurrent <= 2 x timesteps x layers + 10): FedProx's
    local step on one row of the model at its full size and sequence length, counted at Triton's launch entry
    without running the kernels (the launches are the driver's; what they compute does not change them), over 1 and
    3 chain steps: exactly 2 S L + 2 L + 2 launches a chain step, and no ATen operation in a chain step (the round's
    buffers are allocated once, before the first)."""
    from fedbench.engine.static import StaticCohort

    build, timesteps, today = PAPER_MODELS[name]
    model = build()
    kernel = RecurrentKernel(model)
    layers = model.module.rnn.num_layers
    x = torch.zeros(4, timesteps)
    y = torch.zeros(4, dtype=torch.int64)
    theta = torch.zeros(1, model.num_params)
    algorithm = build_algorithm("fedprox", lr=0.1, mu=1.0)
    bcast = algorithm.broadcast(algorithm.init(theta[0], 1))
    per_step = {}
    for steps in (1, 3):
        cohort = StaticCohort(batches=torch.zeros(steps, 1, 10, dtype=torch.int64),
                              active=torch.ones(steps, 1, dtype=torch.bool), rows=1)
        with fused.count_launches(execute=False) as launches:
            ops = _aten_ops_outside_launches(
                lambda c=cohort: fused.run_fused(algorithm, kernel, bcast, theta, x, y, c))
        per_step[steps] = (launches.total, ops)
    launches_a_step = (per_step[3][0] - per_step[1][0]) / 2
    assert per_step[1][0] == launches_a_step == 2 * timesteps * layers + 2 * layers + 2
    assert launches_a_step <= 2 * timesteps * layers + 10
    assert per_step[3][1] == per_step[1][1]  # ATen operations only in the round's setup, none a chain step
    if today is not None:
        assert launches_a_step < today / 6


@pytest.mark.slow
def test_the_cell_and_gradient_kernels_compile_for_sm90_without_spilling(fused):
    """The interpreter runs Python, not compiled Triton: the cell kernels (forward and backward, top and lower layer)
    and the weight gradients (embedding and input gradient) of FedProx's Shakespeare LSTM at its full size, compiled
    for sm_90 by Triton's compiler and ptxas on this CPU (fedbench.bench.fused_rnn_aot) in a process without
    TRITON_INTERPRET: each compiles, within 255 registers and without spilling (``python -m
    fedbench.bench.fused_rnn_aot`` compiles every kernel of the four paper models)."""
    import json
    import os
    import subprocess

    ptxas = os.path.join(os.path.dirname(sys.modules["triton"].__file__), "backends", "nvidia", "bin", "ptxas")
    if not os.path.exists(ptxas):
        pytest.skip(f"Triton's wheel ships no ptxas here ({ptxas})")
    code = ("import json; from fedbench.bench.fused_rnn_aot import compile_model; "
            "rows = compile_model('fedprox_shakespeare_lstm', kernels=('_lstm_forward', '_lstm_backward', "
            "'_weight_grads')); print(json.dumps(rows))")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(r["kernel"] for r in rows) == ["_lstm_backward", "_lstm_backward", "_lstm_forward", "_weight_grads",
                                                 "_weight_grads"]
    assert all(0 < r["registers"] <= 255 and r["spill_bytes"] == 0 for r in rows), rows
