"""The fused CNN step (fedbench.engine.fused.cnn) in Triton's interpreter against the engine's reference,
fedbench.engine.static.run_static, on the same inputs:

- every algorithm that trains a CNN in a paper study (FedAvg, Delta-FL, sequential SGD, FedAvg with server momentum,
  FedAdam, the server-only optimisers, FedLaAvg, Mime and MimeLite with either base, FedProxVR's two estimators),
  and FedProx and SCAFFOLD for the remaining update forms, on a small conv-ReLU-pool-dense-ReLU-dense network:
  the local state after two steps of the second round of a short run (control variates, momentum, estimators from a
  real first round), with a last partial minibatch and a finished (masked) row, within 1e-5 in fp32;
- the paper networks' own layers: the CIFAR CNN at 32 x 32 (and its exact launch count against today's vmap step),
  Delta-FL's EMNIST ConvNet and LEAF's FEMNIST CNN (same padding) at 28 x 28, a no-padding network whose conv
  outputs are odd (the pooling floors), and blank image regions whose pooling windows tie (broken as torch breaks
  them: the first maximum);
- a model outside the family and an algorithm without a form refused in one line; every kernel compiles for sm_90
  (Triton's compiler and ptxas, no GPU).

Skipped where Triton is not installed. The interpreter costs ~0.3 ms an operation a program (~0.2-0.6 s a row-step
here), so rounds are cut to 1-2 rows of 1-2 steps and tiles are large (fewer programs)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn


@contextlib.contextmanager
def _interpreting():
    """TRITON_INTERPRET=1 inside the block, as it was outside (tests/engine/test_fused_mclr.py says why at
    collection)."""
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = before


with _interpreting():
    pytest.importorskip("triton", reason="Triton is not installed: the fused kernels' tests run in its interpreter "
                                         "(pip install triton; it ships with torch's CUDA wheels)")

from fedbench.algorithms import build_algorithm
from fedbench.algorithms.sequential_sgd import pool_clients, sequential_config
from fedbench.availability import AvailabilityConfig
from fedbench.bench.federation import BenchModel, make_federation
from fedbench.data.format import Split
from fedbench.engine import round as round_
from fedbench.engine import static, tree
from fedbench.engine.kernels import choose_kernel
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack
from fedbench.models import build_model
from fedbench.models.cifar_cnn import ImageInput
from fedbench.models.leaf_femnist_cnn import leaf_femnist_cnn
from fedbench.models.spec import Model

TOLERANCE = 1e-5  # fp32, issue 53's contract for the interpreter
TILES = {"m": 2048, "n": 128, "k": 512, "update": 65536}  # few programs a launch (the interpreter's cost)

# id -> (algorithm, hyperparameters (lr 0.05 unless given), SimulationConfig changes)
CASES = {
    "fedavg": ("fedavg", {}, {}),
    "delta_fl": ("delta_fl", {"theta": 0.5, "weighting": "exact", "quantile_period": 1}, {"clients_per_round": 3}),
    "sequential_sgd": ("sequential_sgd", {}, {}),
    "fedavg_momentum": ("fedavg_momentum", {"beta": 0.9, "server_lr": 1.0}, {}),
    "fedadam": ("fedadam", {"server_lr": 0.01, "beta1": 0.9, "beta2": 0.99}, {}),
    "server_only": ("server_only", {"base": "adam", "beta2": 0.99, "lr": 0.01}, {}),
    "fedlaavg": ("fedlaavg", {}, {"availability": AvailabilityConfig(model="diurnal", period=4, beta=0.5)}),
    "mime_sgdm": ("mime", {"variant": "mime", "base": "sgdm", "lr": 0.02}, {}),
    "mime_adam": ("mime", {"variant": "mime", "base": "adam", "lr": 0.02}, {}),
    "mimelite_sgdm": ("mime", {"variant": "mimelite", "base": "sgdm", "lr": 0.02}, {}),
    "mimelite_adam": ("mime", {"variant": "mimelite", "base": "adam", "lr": 0.02}, {}),
    "fedproxvr_svrg": ("fedproxvr", {"mu": 0.1, "tau": 5, "estimator": "svrg"}, {}),
    # tau 2: client_init computes w^(1), the first step w^(2), and the form's step bound (computes) stops the second
    "fedproxvr_sarah": ("fedproxvr", {"mu": 0.1, "tau": 2, "estimator": "sarah"}, {}),
    "fedprox": ("fedprox", {"mu": 1.0}, {}),
    "scaffold": ("scaffold", {"eta_g": 1.0, "control_variate": "II"}, {}),
}

BASE = SimulationConfig(rounds=2, clients_per_round=2, local_epochs=2, batch_size=4, seed=3, device="cpu",
                        capture="static", checkpoint_every=10_000)


@pytest.fixture(scope="module")
def fused():
    """fedbench.engine.fused.cnn built for Triton's interpreter, with TRITON_INTERPRET=1 while this module's tests
    run; the interpreter's per-call rebinding of triton.language done once per module of jit functions, and its
    int32 overflow check off (it recomputes every integer add and multiply in int64: a third of these tests' time;
    compiled kernels check nothing of the kind unless built with debug); the kernels' buffers poisoned
    (:func:`_poisoned`)."""
    import triton.language as tl
    from triton.runtime import interpreter
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(tl.zeros, InterpretedFunction):
        pytest.skip("Triton was imported before TRITON_INTERPRET=1 was set (its library is compiled-only in this "
                    "process): run tests/engine/test_fused_cnn.py on its own")
    with _interpreting(), pytest.MonkeyPatch.context() as patch:
        names = ("fedbench.engine.fused.forms", "fedbench.engine.fused.mclr", "fedbench.engine.fused.cnn")
        modules = [importlib.reload(sys.modules[n]) if n in sys.modules else importlib.import_module(n)
                   for n in names]
        assert modules[2]._interpreted()
        patch.setattr(interpreter, "_patch_lang", _once_per_module(interpreter._patch_lang))
        builder = interpreter.interpreter_builder
        patch.setattr(builder, "options", dataclasses.replace(builder.options, sanitize_overflow=False))
        patch.setattr(modules[2], "_buffers", _poisoned(modules[2]._buffers))
        yield modules[2]


def _poisoned(buffers):
    """The kernels' buffers filled with NaN (codes with 0) instead of left as they were allocated: a value read
    before a kernel wrote it then shows as a NaN difference, not as whatever the memory held."""

    def poisoned(*args):
        out = buffers(*args)
        for value in out.values():
            for t in value if isinstance(value, list) else [value]:
                t.fill_(float("nan") if t.is_floating_point() else 0)
        return out

    return poisoned


def _once_per_module(patch_lang):
    done = set()

    def once(fn):
        if id(fn.__globals__) not in done:
            patch_lang(fn)
            done.add(id(fn.__globals__))

    return once


def _run(fused, *args):
    return fused.run_fused(*args, tiles=fused.Tiles(**TILES))


def _small_model() -> Model:
    """The per-algorithm network: conv 3 x 3 (1 -> 4, same padding) - ReLU - maxpool 2 - dense 64 -> 16 - ReLU -
    dense 16 -> 10, on 8 x 8 images (9 launches a step)."""
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))
    return Model(name="test_small_cnn", config=(), module=ImageInput(net, (1, 8, 8)), loss="softmax_ce")


def _federation(model: Model, shape: tuple[int, ...], classes: int, sizes: list[int], blank: bool = False):
    data = make_federation(BenchModel("test", shape, classes), model, len(sizes), sizes=np.array(sizes))
    if blank:  # every image's left half 0, as a digit's empty margins: pooling windows there tie
        x = data.train.x.copy()
        x[..., : shape[-1] // 2] = 0.0
        data = dataclasses.replace(data, train=Split(x=x, y=data.train.y, offsets=data.train.offsets))
    return data


def _ties_at_a_positive_maximum(model: Model, theta: torch.Tensor, x: torch.Tensor) -> bool:
    """Whether the first conv layer's ReLU output at ``theta`` on images ``x`` has a pooling window whose maximum,
    > 0, is reached twice (where the tie-break decides which input gets the gradient)."""
    conv, params = model.module.net[0], model.unflatten(theta)
    out = torch.relu(torch.nn.functional.conv2d(x, params["net.0.weight"], params["net.0.bias"], padding=conv.padding))
    h, w = out.shape[-2] // 2 * 2, out.shape[-1] // 2 * 2
    windows = out[..., :h, :w].unfold(2, 2, 2).unfold(3, 2, 2).flatten(-2)
    top = windows.amax(-1)
    return bool((((windows == top.unsqueeze(-1)).sum(-1) > 1) & (top > 0)).any())


def _max_difference(a, b) -> float:
    leaves_a, leaves_b = tree.tree_leaves(a), tree.tree_leaves(b)
    assert len(leaves_a) == len(leaves_b)
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if not isinstance(getattr(a, f.name), torch.Tensor):
                assert getattr(a, f.name) == getattr(b, f.name), f.name
    assert all(x.shape == y.shape and x.dtype == y.dtype for x, y in zip(leaves_a, leaves_b))
    return max(float((x.double() - y.double()).abs().max()) for x, y in zip(leaves_a, leaves_b))


def _moved(after, before) -> float:
    """How far the local steps moved the local state's tensors (largest |change|)."""
    return max(float((x.double() - y.double()).abs().max())
               for x, y in zip(tree.tree_leaves(after), tree.tree_leaves(before)))


# ---- every algorithm ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    model = _small_model()
    return model, _federation(model, (1, 8, 8), 10, [10, 7, 9, 6, 11, 5])


def _spec(case: str, data) -> RunSpec:
    name, hyper, changes = CASES[case]
    cfg = dataclasses.replace(BASE, **changes)
    if name == "sequential_sgd":
        cfg, data = sequential_config(cfg, clients_per_round=1, local_steps=3), pool_clients(data)
    return RunSpec(cfg, data, build_algorithm(name, **({"lr": 0.05} | hyper)))


def _last_round(monkeypatch, model, spec):
    """run_static's arguments in the last round of a short static-path run (the engine's own inputs: broadcast, local
    state after client_init, padded cohort)."""
    calls = []
    real = round_.run_static

    def recorded(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(round_, "run_static", recorded)
    simulate_stack(model, [spec])
    monkeypatch.undo()
    return calls[-1]


def _two_steps(cohort: static.StaticCohort) -> static.StaticCohort:
    """The round cut to two steps: row 0's first minibatch, then its last partial one where it has one (else its
    second); the other rows' first minibatch, then finished (masked, all padding)."""
    batches, active = cohort.batches, cohort.active
    partial = active[:, 0] & ((batches[:, 0] >= 0).sum(-1) < batches.shape[-1])
    second = int(partial.nonzero()[-1]) if partial.any() else 1
    out = batches[:2].clone()
    out[1] = -1
    out[1, 0] = batches[second, 0]
    keep = torch.zeros_like(active[:2])
    keep[0] = active[0]
    keep[1, 0] = True
    return static.StaticCohort(batches=out, active=keep, rows=cohort.rows)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_algorithm_gets_the_static_paths_local_state(case, fused, small, monkeypatch):
    model, data = small
    spec = _spec(case, data)
    args = _last_round(monkeypatch, model, spec)
    cohort = _two_steps(args[-1])
    rows = cohort.batches.shape[1]
    assert args[1].name == "loop" and rows <= 3  # the CPU's reference kernel; the interpreter's budget
    if rows > 1:
        assert not cohort.active[1, 1:].any()  # finished rows
    if not spec.cfg.local_steps:
        assert (cohort.batches[1, 0] < 0).any() and (cohort.batches[1, 0] >= 0).any()  # a last partial minibatch
    reference = static.run_static(*args[:-1], cohort)
    with fused.count_launches() as launches:
        result = _run(fused, *args[:-1], cohort)
    assert sum(launches.values()) == 2 * fused.network_of(model).launches_per_step == 18
    assert _max_difference(result, reference) <= TOLERANCE
    moved = _moved(reference, args[3])
    assert moved > 100 * TOLERANCE, moved  # the steps changed the state


# ---- the paper networks' layers ----------------------------------------------------------------------------------


def _direct(model: Model, data, batches: list[list[list[int]]], active: list[list[bool]], lr: float = 0.05):
    """FedAvg's inputs built by hand: K rows of the model's init, each nudged (rows differ), and the cohort
    [T, K, B] ``batches`` (-1 padding) with its mask; the reference kernel the CPU runs (choose_kernel)."""
    kernel = choose_kernel(model, "cpu")
    theta0 = model.init(torch.Generator().manual_seed(0))
    k = len(batches[0])
    local = theta0 + 0.01 * torch.randn(k, theta0.numel(), generator=torch.Generator().manual_seed(1))
    cohort = static.StaticCohort(batches=torch.tensor(batches), active=torch.tensor(active), rows=k)
    x = kernel.prepare(torch.as_tensor(data.train.x))
    return (build_algorithm("fedavg", lr=lr), kernel, theta0, local, x, torch.as_tensor(data.train.y), cohort)


def _check_direct(fused, args, launches_per_step: int) -> float:
    reference = static.run_static(*args)
    with fused.count_launches() as launches:
        result = _run(fused, *args)
    steps = args[-1].batches.shape[0]
    assert sum(launches.values()) == launches_per_step * steps
    assert _moved(reference, args[3]) > 100 * TOLERANCE
    return _max_difference(result, reference)


def _count_ops(fn) -> int:
    """ATen operators ``fn`` dispatches, views excluded (fedbench.bench.proxies counts them so)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not func.is_view:
                Count.n += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return Count.n


def test_the_cifar_cnn_in_15_launches_a_step(fused):
    """The launch-count proxy (issue 53: a CNN's local step, target <= 25): the fused step of FedLaAvg's CIFAR CNN
    launches exactly 15 kernels (forward 5, dW 5, dX 4, update 1), counted at Triton's launch entry; one row of a
    partial minibatch (1 image of 2) at 32 x 32 gives the loop kernel's state within 1e-5."""
    model = build_model("cifar_cnn", (3, 32, 32), 10)
    data = _federation(model, (3, 32, 32), 10, [8])
    assert fused.network_of(model).launches_per_step == 15
    args = _direct(model, data, [[[5, -1]]], [[True]])
    assert _check_direct(fused, args, 15) <= TOLERANCE


def test_todays_vmap_step_of_the_cifar_cnn_dispatches_120_operators():
    """Today's CUDA path for the same step, the static step over the vmap kernel, dispatches 120 ATen operators
    (views excluded) for 3 rows of batch 5 on torch 2.13 (the review counted 87 for its gradient alone):
    the 15 launches above replace them."""
    model = build_model("cifar_cnn", (3, 32, 32), 10)
    vmap = choose_kernel(model, "cpu", "vmap")
    theta = model.init(torch.Generator().manual_seed(0))
    x, y = torch.randn(8, 3, 32, 32, generator=torch.Generator().manual_seed(1)), torch.arange(8) % 10
    idx, rows, active = torch.arange(15).view(3, 5) % 8, theta.expand(3, -1).clone(), torch.ones(3, dtype=torch.bool)
    fedavg = build_algorithm("fedavg", lr=0.05)
    assert _count_ops(lambda: static.static_step(fedavg, vmap, x, y, rows, theta, idx, active)) == 120


def test_deltafl_emnist_convnet(fused):
    """conv 5 x 5 1 -> 32 and 32 -> 64 without padding, one dense layer to 62 classes: 9 launches a step."""
    model = build_model("deltafl_emnist_cnn", (1, 28, 28), 62)
    data = _federation(model, (1, 28, 28), 62, [6])
    args = _direct(model, data, [[[3, -1]]], [[True]])
    assert _check_direct(fused, args, 9) <= TOLERANCE


def test_leaf_femnist_cnn_with_same_padding_and_blank_margins(fused):
    """LEAF's FEMNIST CNN (conv 32 and 64 with same padding; a 32-unit dense layer for the test, the authors' 2048
    aside) on images whose left half is blank: its pooling windows tie exactly at a positive value (there the conv
    outputs are the bias), and the kernel breaks the ties as torch does."""
    model = leaf_femnist_cnn(62, dense=32)
    data = _federation(model, (1, 28, 28), 62, [4], blank=True)
    args = _direct(model, data, [[[0, 2]]], [[True]])
    assert _ties_at_a_positive_maximum(model, args[3][0], torch.as_tensor(data.train.x[[0, 2]]))
    assert _check_direct(fused, args, 12) <= TOLERANCE


def test_no_padding_odd_conv_outputs_and_three_dense_layers_over_two_rows_and_steps(fused):
    """conv 5 x 5 (3 -> 6) and 3 x 3 (6 -> 16) without padding on 15 x 15 images (conv outputs 11 x 11 and 3 x 3: the
    pooling drops the last row and column), then dense 16 -> 24 -> 20 -> 10 (the CIFAR CNN's shape, small); blank
    margins with positive biases, so that windows tie at a value > 0; two rows of two steps, the second row
    finished after one, the first's second minibatch partial."""
    net = nn.Sequential(nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 3), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 24), nn.ReLU(), nn.Linear(24, 20), nn.ReLU(),
                        nn.Linear(20, 10))
    model = Model(name="test_valid_cnn", config=(), module=ImageInput(net, (3, 15, 15)), loss="softmax_ce")
    data = _federation(model, (3, 15, 15), 10, [5, 5], blank=True)
    args = _direct(model, data, [[[0, 1, 2], [5, 6, 7]], [[3, 4, -1], [-1, -1, -1]]], [[True, True], [True, False]])
    assert _ties_at_a_positive_maximum(model, args[3][0], torch.as_tensor(data.train.x[:3]))
    assert _check_direct(fused, args, 15) <= TOLERANCE


# ---- refusals and compilation -------------------------------------------------------------------------------------


def test_a_model_outside_the_family_and_an_algorithm_without_a_form_are_refused_in_one_line(fused, small):
    mlp = build_model("mclr", (60,), 10)
    with pytest.raises(ValueError, match="not an image network") as err:
        fused.network_of(mlp)
    assert "\n" not in str(err.value) and not fused.supports(mlp)
    avg_pool = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(36, 10))
    other = Model(name="test_avg_pool", config=(), module=ImageInput(avg_pool, (1, 8, 8)), loss="softmax_ce")
    with pytest.raises(ValueError, match="layer 0 is not conv") as err:
        fused.network_of(other)
    assert "\n" not in str(err.value)
    for name in ("cifar_cnn", "fashion_cnn", "deltafl_emnist_cnn", "leaf_femnist_cnn", "fedproxvr_cnn"):
        shape = (3, 32, 32) if name == "cifar_cnn" else (1, 28, 28)
        assert fused.supports(build_model(name, shape, 10)), name

    @dataclasses.dataclass(frozen=True)
    class Unknown:
        lr: float = 0.1

        def client_step(self, theta, grad_fn, bcast):
            return theta

    model, data = small
    args = _direct(model, data, [[[0, 1]]], [[True]])
    with pytest.raises(ValueError, match="has no fused form") as err:
        _run(fused, Unknown(), *args[1:])
    assert "\n" not in str(err.value)


def test_every_kernel_compiles_for_sm90_without_spilling(fused):
    """The interpreter runs Python, not compiled Triton: each kernel of a CNN's step (its first launch; the
    update as FedProxVR-SARAH's, the widest form, with two gradient points) compiled for sm_90 by Triton's own
    compiler and ptxas on this CPU, in a process without TRITON_INTERPRET: LEAF's FEMNIST CNN at the authors' size
    (dense 2048; same padding, so the bounds checks are compiled too)."""
    ptxas = os.path.join(os.path.dirname(sys.modules["triton"].__file__), "backends", "nvidia", "bin", "ptxas")
    if not os.path.exists(ptxas):
        pytest.skip(f"Triton's wheel ships no ptxas here ({ptxas})")
    code = ("import json; from fedbench.engine.fused.cnn import compile_step; from fedbench.models import build_model; "
            "from fedbench.engine.fused.forms import PROX_SARAH; "
            "print(json.dumps(compile_step(build_model('leaf_femnist_cnn', (1, 28, 28), 62), 10, points=2, form=PROX_SARAH, "
            "first_of_each=True)))")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(r["kernel"] for r in rows) == sorted(k.__name__ for k in fused.KERNELS)
    assert all(0 < r["registers"] <= 255 and r["spill_bytes"] == 0 for r in rows), rows


def test_the_prepared_gpu_checks_comparison_runs_here(fused):
    """fedbench.bench.fused_cnn_check, which the GPU check runs at 5, 100 and 3,000 rows of the CIFAR CNN: here, on the
    CPU in the interpreter (2 rows, 1 step), the two paths agree, the fused one launches as declared, and no time is
    reported. Its FLOPs a row-step of the CIFAR CNN at batch 5 are the layers' GEMMs'."""
    from fedbench.bench import fused_cnn_check as cnn_check

    importlib.reload(cnn_check)  # bound to the interpreter's build of fedbench.engine.fused.cnn
    out = cnn_check.compare(_small_model(), rows=2, batch=3, steps=1, device="cpu", tiles=fused.Tiles(**TILES))
    assert out["static"]["max_abs_diff"] == 0.0 and out["fused"]["max_abs_diff"] <= TOLERANCE
    assert out["fused"]["launches_per_step"] == 9 < out["static"]["launches_per_step"]
    assert all("us_per_step" not in row for row in out.values())
    cifar = fused.network_of(build_model("cifar_cnn", (3, 32, 32), 10))
    # multiply-adds a sample: conv1 6 x 75 x 28 x 28 (forward and dW), conv2 16 x 150 x 10 x 10 (forward, dW, dX),
    # the dense layers 400 x 120, 120 x 84, 84 x 10 (three GEMMs each); 16.0 MFLOP, the review's figure
    assert cnn_check.train_flops(cifar, 5) == 2 * 5 * (352_800 * 2 + 240_000 * 3 + 3 * (48_000 + 10_080 + 840))


def test_the_engine_runs_rounds_through_the_fused_cnn_kernels(fused, small, monkeypatch):
    """Two rounds of FedProx with capture 'fused_step' on the vmap kernel of a paper-family CNN (the CPU standing in
    for CUDA, the interpreter for the GPU) give the static path's model within 1e-5: the engine dispatches the step to
    fedbench.engine.fused.cnn (fedbench.engine.fused.family); 'fused_round' is refused for it in one line."""
    from fedbench.engine import capture, simulation
    from fedbench.engine.fused import family

    model, data = small
    spec = RunSpec(dataclasses.replace(BASE, local_epochs=1, kernel="vmap"), data, build_algorithm("fedprox", lr=0.05,
                                                                                                      mu=0.1))
    kernel = choose_kernel(model, "cpu", "vmap", 2)
    assert family(kernel) == "cnn"
    with pytest.raises(ValueError, match=r"^capture: 'fused_round' \(one launch a round\) is mclr's alone, and this "
                                         r"stack runs the cnn family; use 'fused_step'$"):
        capture.check_fused("fused_round", kernel, [spec.algorithm])
    check = capture.check_capture
    monkeypatch.setattr(simulation, "check_capture",
                        lambda mode, device, path: check("static" if mode in capture.FUSED_MODES else mode, device,
                                                         path))
    runs = {c: simulate_stack(model, [dataclasses.replace(spec, cfg=dataclasses.replace(spec.cfg, capture=c))])[0]
            for c in ("static", "fused_step")}
    assert 0 < _max_difference(runs["fused_step"].theta, runs["static"].theta) <= TOLERANCE


def test_a_fused_mode_on_a_kernel_no_fused_module_runs_is_one_line():
    from types import SimpleNamespace

    from fedbench.engine import capture

    kernel = SimpleNamespace(name="quadratic", model=SimpleNamespace(name="scalar_quadratics"))
    with pytest.raises(ValueError, match=r"^capture: 'fused_step' runs the fused kernels of mclr, the paper CNNs \(vmap "
                                         r"kernel\) and the recurrent models \(rnn kernel\), and this stack runs the "
                                         r"'quadratic' kernel on scalar_quadratics; use 'static' or 'cuda_graph'$"):
        capture.check_fused("fused_step", kernel, [])
