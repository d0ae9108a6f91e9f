"""The fused mclr kernels (fedbench.engine.fused.mclr) in Triton's interpreter: for every algorithm, one launch a
chain step and one launch a round give fedbench.engine.static.run_static's local state within 1e-5 in fp32, on
the second round of a short run (control variates, server momentum and FedProxVR's estimator from a real first
round) with stragglers (fewer steps a row), the finished-row mask and last partial minibatches, all checked present;
so do the blocked kernels (rows of more than one tile), stacked runs with their own mu and anchor per row, and
padding rows; each kernel launches exactly once a chain step, or once a round; an algorithm without a form is
refused in one line; the widest form compiles for sm_90 (Triton's compiler and ptxas, no GPU) without spilling.

Skipped where Triton is not installed. Interpreter cost is ~20-40 ms a row and step, so rounds are 1-2 rows of
12-24 steps."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import subprocess
import sys

import pytest
import torch


@contextlib.contextmanager
def _interpreting():
    """TRITON_INTERPRET=1 inside the block, as it was outside. Triton reads it when a function is decorated: at
    its own import (its library of jit functions: tl.sum, tl.zeros, ...), at this package's import, and when the
    interpreter rewrites a function it runs; so Triton is imported here, at collection, under it."""
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
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine import round as round_
from fedbench.engine import static, tree
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack
from fedbench.models import build_model
from fedbench.ops import sgd_step

TOLERANCE = 1e-5  # fp32, issue 53's contract for the interpreter

# id -> (algorithm name, hyperparameters (lr 0.05 unless given), SimulationConfig changes): every registered
# algorithm that trains on the mclr model, each variant of its update form once
CASES = {
    "fedavg": ("fedavg", {}, {}),
    "delta_fl": ("delta_fl", {"theta": 0.5, "weighting": "exact", "quantile_period": 1}, {"clients_per_round": 3}),
    "sequential_sgd": ("sequential_sgd", {}, {}),
    "fedavg_momentum": ("fedavg_momentum", {"beta": 0.9, "server_lr": 1.0}, {}),
    "fedadam": ("fedadam", {"server_lr": 0.01, "beta1": 0.9, "beta2": 0.99}, {}),
    "fedprox": ("fedprox", {"mu": 1.0}, {}),
    "fedprox_adaptive": ("fedprox_adaptive", {"mu_init": 0.1}, {}),
    "scaffold": ("scaffold", {"eta_g": 1.0, "control_variate": "II"}, {}),
    "fedlaavg": ("fedlaavg", {}, {"availability": AvailabilityConfig(model="diurnal", period=4, beta=0.5)}),
    "feddane": ("feddane", {"mu": 0.5, "gradient_clients": 4}, {}),
    "minibatch_sgd": ("minibatch_sgd", {}, {}),
    "server_only": ("server_only", {"base": "adam", "beta2": 0.99, "lr": 0.01}, {}),
    "mime_sgdm": ("mime", {"variant": "mime", "base": "sgdm", "lr": 0.005}, {}),
    "mime_adam": ("mime", {"variant": "mime", "base": "adam", "lr": 0.005}, {}),
    "mimelite_sgdm": ("mime", {"variant": "mimelite", "base": "sgdm", "lr": 0.005}, {}),
    "mimelite_adam": ("mime", {"variant": "mimelite", "base": "adam", "lr": 0.005}, {}),
    # tau - 1 = 4 steps change anything; the round has more (the form's step bound)
    "fedproxvr_svrg": ("fedproxvr", {"mu": 0.1, "tau": 5, "estimator": "svrg"}, {}),
    "fedproxvr_sarah": ("fedproxvr", {"mu": 0.1, "tau": 5, "estimator": "sarah"}, {}),
}

BASE = SimulationConfig(rounds=2, clients_per_round=2, local_epochs=2, batch_size=7, seed=3, device="cpu",
                        capture="static", checkpoint_every=10_000)


@pytest.fixture(scope="module")
def fused():
    """fedbench.engine.fused.mclr built for Triton's interpreter, with TRITON_INTERPRET=1 while this module's tests
    run (skipped, saying why, where Triton was imported before this module set it)."""
    import triton.language as tl
    from triton.runtime import interpreter
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(tl.zeros, InterpretedFunction):
        pytest.skip("Triton was imported before TRITON_INTERPRET=1 was set (its library is compiled-only in this "
                    "process): run tests/engine/test_fused_mclr.py on its own")
    with _interpreting(), pytest.MonkeyPatch.context() as patch:
        names = ("fedbench.engine.fused.forms", "fedbench.engine.fused.mclr")
        modules = [importlib.reload(sys.modules[n]) if n in sys.modules else importlib.import_module(n)
                   for n in names]
        assert modules[1]._interpreted()
        patch.setattr(interpreter, "_patch_lang", _once_per_module(interpreter._patch_lang))
        yield modules[1]


def _once_per_module(patch_lang):
    """The interpreter's _patch_lang(fn), which rebinds triton.language's builtins to the interpreter on every call
    of a jit function (half of these tests' time), run once per module of jit functions instead: the rebinding
    is idempotent and nothing undoes it."""
    done = set()

    def once(fn):
        if id(fn.__globals__) not in done:
            patch_lang(fn)
            done.add(id(fn.__globals__))

    return once


@pytest.fixture(scope="module")
def dataset():
    return generate_synthetic(1, 1, num_devices=8, seed=0, lognormal_mean=3.0, lognormal_sigma=0.3, min_samples=40)


def _last_round(monkeypatch, dataset, specs):
    """The arguments and result of the last round's fedbench.engine.static.run_static in a short static-path run of
    ``specs`` (the engine's own inputs: broadcast, local state after client_init, padded cohort)."""
    calls = []
    real = round_.run_static

    def recorded(*args):
        out = real(*args)
        calls.append((args, out))
        return out

    monkeypatch.setattr(round_, "run_static", recorded)
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    simulate_stack(model, specs)
    monkeypatch.undo()
    return calls[-1]


def _spec(case: str, dataset) -> RunSpec:
    name, hyper, changes = CASES[case]
    algorithm = build_algorithm(name, **({"lr": 0.05} | hyper))
    # a straggler where the algorithm trains it (a row of fewer steps), none where it would drop the row
    cfg = dataclasses.replace(BASE, straggler_fraction=0.5 if algorithm.keeps_partial_work else 0.0, **changes)
    if name == "sequential_sgd":
        cfg, dataset = sequential_config(cfg, clients_per_round=1, local_steps=16), pool_clients(dataset)
    return RunSpec(cfg, dataset, algorithm)


def _max_difference(a, b) -> float:
    """Largest |a - b| over the local states' tensors; their non-tensor fields must be equal."""
    leaves_a, leaves_b = tree.tree_leaves(a), tree.tree_leaves(b)
    assert len(leaves_a) == len(leaves_b)
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if not isinstance(getattr(a, f.name), torch.Tensor):
                assert getattr(a, f.name) == getattr(b, f.name), f.name
    assert all(x.shape == y.shape and x.dtype == y.dtype for x, y in zip(leaves_a, leaves_b))
    return max(float((x.double() - y.double()).abs().max()) for x, y in zip(leaves_a, leaves_b))


def _check(fused, args, reference) -> tuple[list[float], list]:
    """Both kernels against the reference: their max |difference| and their results."""
    differences, results = [], []
    for persistent in (False, True):
        with fused.count_launches() as launches:
            result = fused.run_fused(*args, persistent=persistent)
        steps = args[-1].batches.shape[0]
        assert (launches.step, launches.round) == ((0, 1) if persistent else (steps, 0))  # 1 a chain step / a round
        differences.append(_max_difference(result, reference))
        results.append(result)
    return differences, results


@pytest.mark.parametrize("case", sorted(CASES))
def test_both_kernels_give_the_static_paths_local_state(case, fused, dataset, monkeypatch):
    spec = _spec(case, dataset)
    args, reference = _last_round(monkeypatch, dataset, [spec])
    cohort = args[-1]
    steps = cohort.active[:, : cohort.rows].sum(0).tolist()
    partial = ((cohort.batches >= 0).sum(-1) % cohort.batches.shape[-1] != 0) & cohort.active
    assert 12 <= cohort.batches.shape[0] <= 24 and cohort.rows <= 2  # the interpreter's budget
    if not spec.cfg.local_steps:  # epochs of minibatches (sequential SGD's 16 steps end before its epoch does)
        assert partial.any(), "no last partial minibatch in the round: the case tests less than it says"
    if spec.cfg.clients_per_round > 1:  # rows that finish at different steps (a straggler, or less data)
        assert len(set(steps)) == 2, f"rows of {steps} steps: the finished-row mask is not exercised"
    if CASES[case][0] == "fedproxvr":
        assert min(steps) > spec.algorithm.tau - 1  # steps past w^(tau), which change nothing
    differences, _ = _check(fused, args, reference)
    assert max(differences) <= TOLERANCE, differences
    scale = max(float(t.abs().max()) for t in tree.tree_leaves(reference))
    assert scale > 100 * TOLERANCE  # the state moved: a difference of 1e-5 would show


@pytest.mark.parametrize("case", ["fedprox", "fedproxvr_sarah", "fedproxvr_svrg"])
def test_rows_in_blocks_of_features_give_the_same_state(case, fused, dataset, monkeypatch):
    """The blocked kernels (a row's parameters more than one tile, as MNIST's 785 x 10), forced here on the synthetic
    data's 61 features in blocks of 32 (the second block partly padding): a straggler and partial minibatches
    (FedProx), four state slots and a gradient at the previous iterate (SARAH), a gradient at a read-only vector
    (SVRG's at w^(0))."""
    args, reference = _last_round(monkeypatch, dataset, [_spec(case, dataset)])
    for persistent in (False, True):
        with fused.count_launches() as launches:
            result = fused.run_fused(*args, persistent=persistent, block_d=32)
        assert (launches.step, launches.round) == ((0, 1) if persistent else (args[-1].batches.shape[0], 0))
        assert _max_difference(result, reference) <= TOLERANCE


def test_stacked_runs_with_their_own_mu_and_padding_rows(fused, dataset, monkeypatch):
    """Two FedProx runs in one stack, one row each: per-row anchors and mu [K, 1]
    (fedbench.engine.round.row_broadcast), with a padding row (all -1, never active) that keeps its state."""
    base = dataclasses.replace(BASE, clients_per_round=1, straggler_fraction=0.0)
    specs = [RunSpec(dataclasses.replace(base, seed=seed), dataset, build_algorithm("fedprox", lr=0.05, mu=mu))
             for mu, seed in ((1.0, 3), (0.25, 4))]
    args, _ = _last_round(monkeypatch, dataset, specs)
    algorithm, kernel, bcast, local, x, y, cohort = args
    assert isinstance(bcast.mu, torch.Tensor) and bcast.mu.unique().numel() == 2 and bcast.theta.dim() == 2
    k = cohort.batches.shape[1]
    padded_cohort = static.StaticCohort(
        batches=torch.cat([cohort.batches, cohort.batches.new_full((cohort.batches.shape[0], 1,
                                                                    cohort.batches.shape[2]), -1)], 1),
        active=torch.cat([cohort.active, cohort.active.new_zeros(cohort.active.shape[0], 1)], 1), rows=cohort.rows)
    padded = (algorithm, kernel, static.pad_rows(bcast, k + 1), static.pad_rows(local, k + 1), x, y, padded_cohort)
    reference = static.run_static(*padded)
    differences, results = _check(fused, padded, reference)
    assert max(differences) <= TOLERANCE, differences
    for result in results:
        assert torch.equal(result[k:], padded[3][k:])  # the padding row, untouched


def test_launches_are_one_a_chain_step_or_one_a_round_whatever_the_rounds_length(fused, dataset, monkeypatch):
    """The launch-count proxy (issue 53: launches a chain step, mclr): the same round padded with 8 more steps, all
    masked, takes 8 more launches of the step kernel (1 a chain step) and still 1 of the round kernel, and gives
    the same state."""
    args, _ = _last_round(monkeypatch, dataset, [_spec("sequential_sgd", dataset)])  # one row of 16 steps
    cohort = args[-1]
    longer = static.StaticCohort(
        batches=torch.cat([cohort.batches, cohort.batches.new_full((8, *cohort.batches.shape[1:]), -1)]),
        active=torch.cat([cohort.active, cohort.active.new_zeros(8, cohort.active.shape[1])]), rows=cohort.rows)
    outs = []
    for c in (cohort, longer):
        steps = c.batches.shape[0]
        for persistent in (False, True):
            with fused.count_launches() as launches:
                outs.append(fused.run_fused(*args[:-1], c, persistent=persistent))
            assert (launches.step, launches.round) == ((0, 1) if persistent else (steps, 0))
    assert all(torch.equal(outs[0], out) for out in outs[2:])  # masked steps change nothing
    assert _max_difference(outs[0], outs[1]) <= TOLERANCE


def test_an_algorithm_without_a_form_is_refused_in_one_line(fused, dataset, monkeypatch):
    args, _ = _last_round(monkeypatch, dataset, [_spec("fedavg", dataset)])

    @dataclasses.dataclass(frozen=True)
    class Unknown:
        lr: float = 0.1

        def client_step(self, theta, grad_fn, bcast):
            return theta

    with pytest.raises(ValueError, match="has no fused form") as err:
        fused.run_fused(Unknown(), *args[1:])
    assert "\n" not in str(err.value)


def test_every_registered_algorithm_is_found_by_its_step_and_only_by_it(fused):
    """Every registered algorithm's client_step is the code of one declared form (the mclr studies run all of them),
    and each case above runs that algorithm; a step with other code has none."""
    from fedbench.algorithms import ALGORITHMS, algorithm_class
    from fedbench.engine.fused import forms

    assert [name for name in ALGORITHMS if forms.form_of(build_algorithm(name, **_hyper(name))) is None] == []
    assert {CASES[c][0] for c in CASES} == set(ALGORITHMS)
    fedavg = algorithm_class("fedavg")
    assert forms.form_of(fedavg(lr=0.1)) is forms.SGD

    @dataclasses.dataclass(frozen=True)
    class Changed(fedavg):  # the same class but a step that also clips: not FedAvg's code any more
        def client_step(self, theta, grad_fn, bcast):
            return sgd_step(theta, grad_fn(theta).clamp(-1, 1), self.lr)

    assert forms.form_of(Changed(lr=0.1)) is None


def _hyper(name: str) -> dict:
    return next({"lr": 0.05} | hyper for n, hyper, _ in CASES.values() if n == name)


def test_the_widest_form_compiles_for_sm90_without_spilling(fused):
    """The interpreter runs Python, not compiled Triton: FedProxVR-SARAH's kernels (4 state tiles, 2 gradients a
    step) compiled for sm_90 by Triton's own compiler and ptxas, on this CPU (fedbench.engine.fused.aot), in a
    process without TRITON_INTERPRET: both compile, and neither spills at the synthetic data's shape."""
    ptxas = os.path.join(os.path.dirname(sys.modules["triton"].__file__), "backends", "nvidia", "bin", "ptxas")
    if not os.path.exists(ptxas):
        pytest.skip(f"Triton's wheel ships no ptxas here ({ptxas})")
    code = ("import json; from fedbench.engine.fused.aot import compile_form; "
            "from fedbench.engine.fused.forms import PROX_SARAH; print(json.dumps(compile_form(PROX_SARAH)))")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert [r["kernel"] for r in rows] == ["_mclr_step", "_mclr_round"]
    assert all(0 < r["registers"] <= 255 and r["spill_bytes"] == 0 for r in rows), rows


def test_the_prepared_gpu_checks_comparison_runs_here(fused, dataset):
    """fedbench.engine.fused.check, which the GPU check runs at 1, 100 and 1,400 rows: on the CPU (interpreter) the
    three paths agree, each fused one launches as declared, and no time is reported."""
    from fedbench.engine.fused import check

    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    cfg = dataclasses.replace(BASE, rounds=1, clients_per_round=1, capture="static")
    args, reference = check.last_round(model, [RunSpec(cfg, dataset, build_algorithm("fedprox", lr=0.05, mu=1.0))])
    out = check.compare(args, reference)
    assert out["static"]["max_abs_diff"] == 0.0
    assert max(out["step"]["max_abs_diff"], out["round"]["max_abs_diff"]) <= TOLERANCE
    assert out["step"]["launches_per_chain_step"] == 1.0
    assert out["round"]["launches_per_chain_step"] == 1.0 / args[-1].batches.shape[0]
    assert all("us_per_chain_step" not in row for row in out.values())


# ---- the engine's dispatch (SimulationConfig.capture "fused_step" / "fused_round") ------------------------------


def _dispatch():
    from fedbench.engine import capture

    if not hasattr(capture, "FUSED_MODES"):
        pytest.skip("the engine does not dispatch to the fused kernels yet (capture modes fused_step / fused_round: "
                    "the patch in issue 53's item-1 report)")
    return capture


def test_a_fused_mode_is_refused_on_the_cpu_in_one_line(fused, dataset):
    _dispatch()
    cfg = dataclasses.replace(BASE, rounds=1, capture="fused_round")
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    with pytest.raises(ValueError, match="needs a CUDA device") as err:
        simulate_stack(model, [RunSpec(cfg, dataset, build_algorithm("fedprox", lr=0.05, mu=1.0))])
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("capture", ["fused_step", "fused_round"])
def test_the_engine_runs_rounds_through_the_fused_kernels(capture, fused, dataset, monkeypatch):
    """Two rounds of a FedProx run with a straggler, the local steps from the fused kernels (the CPU standing in for
    CUDA, the interpreter for the GPU), give the static path's model within 1e-5."""
    from fedbench.engine import simulation

    modes = _dispatch()
    check = modes.check_capture
    monkeypatch.setattr(simulation, "check_capture",
                        lambda mode, device, path: check("static" if mode in modes.FUSED_MODES else mode, device, path))
    cfg = dataclasses.replace(BASE, rounds=2, straggler_fraction=0.5)
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    runs = {c: simulate_stack(model, [RunSpec(dataclasses.replace(cfg, capture=c), dataset,
                                              build_algorithm("fedprox", lr=0.05, mu=1.0))])[0]
            for c in ("static", capture)}
    assert float((runs[capture].theta - runs["static"].theta).abs().max()) <= TOLERANCE


def test_the_gpu_checks_fused_part_builds_its_mclr_round_as_the_engine_runs_it(fused):
    """fedbench.bench.gpucheck's fused part (CUDA only) at its smallest size, run here on the CPU in the
    interpreter: one FedProx run's last round at 1 row, the step and round kernels within the part's tolerance of the
    static path and launching as declared."""
    import torch

    from fedbench.bench import gpucheck

    out = gpucheck._fused_mclr(1, torch.device("cpu"))
    assert out["static"]["max_abs_diff"] == 0.0
    assert max(out["step"]["max_abs_diff"], out["round"]["max_abs_diff"]) <= gpucheck.FUSED_TOL
    assert out["step"]["launches_per_chain_step"] == 1.0 and out["round"]["launches_per_chain_step"] < 1.0
