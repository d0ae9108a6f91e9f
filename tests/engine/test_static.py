"""The static-shape local loop (fedbench.engine.static) and the capture setting (fedbench.engine.capture) on the CPU:
padded and masked stacks give the ragged path's numbers bit for bit (every algorithm, stacked runs, a shape larger
than the round needs, the mclr and the vmap kernel); the loop reads nothing back from its tensors; the schedule
is padded as declared; the setting validates, and cuda_graph is refused on the CPU in one line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms import FedProx
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine import round as round_
from fedbench.engine import static
from fedbench.bench.capture_check import capture_check
from fedbench.engine.simulation import RunSpec, SimulationConfig, build_stack, simulate_stack
from fedbench.engine.static import StaticShape, pad_schedule
from fedbench.models import build_model
from tests.algorithms.cases import CASES
from tests.engine.test_stack import _specs


@pytest.fixture(scope="module")
def datasets():
    kw = {"num_devices": 12, "seed": 0, "lognormal_mean": 3.0, "lognormal_sigma": 0.7, "min_samples": 20}
    return generate_synthetic(1, 1, **kw), generate_synthetic(0, 0, **kw)


def _with(specs, **changes):
    return [dataclasses.replace(s, cfg=dataclasses.replace(s.cfg, **changes)) for s in specs]


def _same(a, b) -> None:
    for x, y in zip(a, b):
        assert torch.equal(x.theta, y.theta)
        assert len(x.history) == len(y.history)
        for rx, ry in zip(x.history, y.history):
            for key in ("train/loss", "test/accuracy", "train/dissimilarity"):
                assert rx[key] == ry[key] or (np.isnan(rx[key]) and np.isnan(ry[key])), (key, rx["round"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_static_loop_gives_the_ragged_loops_numbers_bit_for_bit(name, datasets):
    specs = _specs(name, datasets)  # a stack mixing seeds, straggler fractions, datasets and stack_varying fields
    model = build_model("mclr", specs[0].dataset.feature_shape, specs[0].dataset.num_classes)
    ragged = simulate_stack(model, specs)
    padded = simulate_stack(model, _with(specs, capture="static"))
    assert len({r.param_digest for r in ragged}) > 1
    _same(ragged, padded)
    alone = simulate_stack(model, _with(specs[:1], capture="static"))  # a stack of one, padded to its block
    _same(ragged[:1], alone)


def test_a_shape_larger_than_the_round_needs_changes_nothing(datasets):
    ds = datasets[0]
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    cfg = SimulationConfig(rounds=1, clients_per_round=4, local_epochs=2, batch_size=10, straggler_fraction=0.5,
                           seed=2, device="cpu", capture="static")
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), ds, FedProx(lr=0.05, mu=m)) for s, m in ((2, 0.0), (3, 1.0))]
    thetas = []
    for grow in (0, 5):  # the round's own rows, then 5 more padding rows
        stack, states = build_stack(model, specs)
        schedules = [round_.schedule_round(stack, st, 0) for st in states]
        round_.run_round(stack, schedules, rows=sum(len(s.steps) for s in schedules) + grow)
        thetas.append(torch.stack([st.state.theta for st in states]))
    assert torch.equal(thetas[0], thetas[1])
    # and 7 more steps (all masked), the loop called directly on the first run's cohort
    s = schedules[0]
    locals_ = []
    for extra in (0, 7):
        shape = StaticShape(rows=len(s.steps) + 3, steps=int(s.steps.max()) + extra, batch=10)
        cohort = pad_schedule([s.steps], [s.batches], shape, stack.device)
        out = static.run_static(s.algorithm, stack.kernel, s.bcast, static.pad_rows(s.local, shape.rows),
                                stack.x_prepared, stack.y, cohort)
        locals_.append(out[: len(s.steps)])
    assert torch.equal(locals_[0], locals_[1])


def test_the_vmap_kernel_also_gives_the_same_numbers_padded(datasets):
    ds = datasets[0]
    model = build_model("scaffold_mlp", ds.feature_shape, ds.num_classes)
    cfg = SimulationConfig(rounds=2, clients_per_round=3, local_epochs=2, batch_size=10, straggler_fraction=0.5,
                           seed=1, device="cpu", kernel="vmap")
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), ds, FedProx(lr=0.05, mu=1.0)) for s in (1, 2)]
    ragged = simulate_stack(model, specs)
    _same(ragged, simulate_stack(model, _with(specs, capture="static")))
    assert ragged[0].kernel == "vmap"


# ---- no host reads in the loop ---------------------------------------------------------------------------------

READS = ("item", "tolist", "numpy", "cpu", "__bool__", "__float__", "__int__", "__index__")


class _HostReads:
    """Counts reads of a tensor's value into Python (torch.Tensor's methods patched) while active."""

    def __init__(self, monkeypatch) -> None:
        self.count, self.active = 0, False
        for attr in READS:
            real = getattr(torch.Tensor, attr)
            monkeypatch.setattr(torch.Tensor, attr, self._counting(real))

    def _counting(self, real):
        def wrapper(t, *args, **kwargs):
            if self.active:
                self.count += 1
            return real(t, *args, **kwargs)

        return wrapper


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_static_loop_reads_nothing_back(name, datasets, monkeypatch):
    guard = _HostReads(monkeypatch)
    calls = []
    real = round_.run_static

    def guarded(*args, **kwargs):
        guard.active = True
        try:
            return real(*args, **kwargs)
        finally:
            guard.active = False
            calls.append(guard.count)

    monkeypatch.setattr(round_, "run_static", guarded)
    specs = _specs(name, datasets)[:4]
    model = build_model("mclr", specs[0].dataset.feature_shape, specs[0].dataset.num_classes)
    simulate_stack(model, _with(specs, capture="static"))
    assert calls and calls[-1] == 0  # every round's loop ran, with no read

    guard.active = True  # the guard itself sees a read
    torch.ones(1).item()
    bool(torch.ones(1))
    guard.active = False
    assert guard.count == 2


# ---- the padded schedule ---------------------------------------------------------------------------------------

def test_the_schedule_is_padded_to_the_shape_row_by_row():
    steps = [np.array([2, 1]), np.array([3])]
    batches = [np.array([[0, 1], [2, -1], [5, 6]]), np.array([[7, 8], [9, -1], [10, 11]])]
    cohort = pad_schedule(steps, batches, StaticShape(rows=4, steps=4, batch=2), torch.device("cpu"))
    assert cohort.rows == 3
    expected = np.full((4, 4, 2), -1)
    expected[0, 0], expected[1, 0] = [0, 1], [2, -1]  # run 0's first client: 2 steps
    expected[0, 1] = [5, 6]  # its second: 1 step
    expected[0, 2], expected[1, 2], expected[2, 2] = [7, 8], [9, -1], [10, 11]  # run 1's client: 3 steps
    assert np.array_equal(cohort.batches.numpy(), expected)
    assert cohort.active.numpy().tolist() == [[True, True, True, False], [True, False, True, False],
                                              [False, False, True, False], [False, False, False, False]]
    assert static.padded_row_steps(np.array([2, 1, 3]), StaticShape(rows=4, steps=4, batch=2)) == 16 - 6
    with pytest.raises(ValueError, match="does not fit the static shape"):
        pad_schedule(steps, batches, StaticShape(rows=2, steps=4, batch=2), torch.device("cpu"))


# ---- the setting ---------------------------------------------------------------------------------------------

def test_the_capture_setting_validates_and_cuda_graph_is_refused_on_the_cpu(datasets):
    ds = datasets[0]
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    with pytest.raises(ValueError, match=r"capture: 'graph' is not allowed; allowed: none, static, cuda_graph"):
        SimulationConfig(capture="graph")
    cfg = SimulationConfig(rounds=1, clients_per_round=2, device="cpu", capture="cuda_graph")
    with pytest.raises(ValueError, match=r"capture: 'cuda_graph' needs a CUDA device, and this run trains on cpu"):
        simulate_stack(model, [RunSpec(cfg, ds, FedProx(lr=0.1, mu=0.0))])
    cfg = SimulationConfig(rounds=1, clients_per_round=2, device="cpu", capture="static", local_path="reference")
    with pytest.raises(ValueError, match=r"capture: 'static' runs the vectorized local path"):
        simulate_stack(model, [RunSpec(cfg, ds, FedProx(lr=0.1, mu=0.0))])


@pytest.mark.skipif(torch.cuda.is_available(), reason="on CUDA the check measures (the GPU check runs it)")
def test_the_capture_check_says_it_skipped_without_cuda():
    assert capture_check() == {"skipped": "no CUDA device here; the captured path runs only on CUDA"}


# ---- the captured path's bookkeeping, with an eager stand-in for the graph --------------------------------------

class _EagerGraph:
    """Stands in for torch.cuda.CUDAGraph on the CPU: replay() runs the captured loop again on the same input
    buffers and writes its result into the same output buffers, which is what a replay does on a GPU."""

    def __init__(self, loop, out) -> None:
        self.loop, self.out = loop, out

    def replay(self) -> None:
        from fedbench.engine import tree

        for dst, src in zip(tree.tree_leaves(self.out), tree.tree_leaves(self.loop())):
            dst.copy_(src)


def _eager_record(loop):
    out = loop()
    return _EagerGraph(loop, out), out


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_captured_paths_chunks_give_the_static_numbers(name, datasets, monkeypatch):
    """cuda_graph's replays of GRAPH_STEPS steps (state copied in, schedule rows sliced, one graph per frozen
    value) give the eager static loop's numbers: with the graph replaced by an eager stand-in, on the CPU."""
    from fedbench.engine import capture, simulation

    monkeypatch.setattr(capture.CapturedSteps, "_record", staticmethod(_eager_record))
    monkeypatch.setattr(simulation, "check_capture", lambda *args: None)  # let the CPU take the cuda_graph path
    monkeypatch.setattr(capture, "GRAPH_STEPS", 3)  # several replays a round (rounds here take 4-14 steps)
    monkeypatch.setattr(round_, "GRAPH_STEPS", 3)
    replays = []
    monkeypatch.setattr(_EagerGraph, "replay", lambda self, real=_EagerGraph.replay: (replays.append(1), real(self)))
    specs = _specs(name, datasets)[:4]
    model = build_model("mclr", specs[0].dataset.feature_shape, specs[0].dataset.num_classes)
    captured = []
    real_init = capture.CapturedSteps.__init__

    def init(self):
        real_init(self)
        captured.append(self)

    monkeypatch.setattr(capture.CapturedSteps, "__init__", init)
    _same(simulate_stack(model, _with(specs, capture="static")),
          simulate_stack(model, _with(specs, capture="cuda_graph")))
    assert captured and captured[0].captures >= 1
    assert len(replays) >= 2 * specs[0].cfg.rounds  # every round more than one replay


def test_params_yaml_train_capture_is_validated_and_reaches_the_run():
    import yaml

    from fedbench.config import ConfigError, parse_config
    from fedbench.study.experiments import run_params

    with open("params.yaml") as f:
        raw = yaml.safe_load(f)
    assert parse_config(raw).train.capture == "none"  # the committed default
    with pytest.raises(ConfigError, match=r"train.capture: 'graph' is not allowed .*; allowed: none, static, cuda_graph"):
        parse_config(raw | {"train": raw["train"] | {"capture": "graph"}})
    with pytest.raises(ConfigError, match=r"train.capture: cuda_graph needs a CUDA device, and train.device is cpu"):
        parse_config(raw | {"train": raw["train"] | {"capture": "cuda_graph", "device": "cpu"}})
    cfg = parse_config(raw | {"train": raw["train"] | {"capture": "static"}})
    dataset, variant = cfg.data.datasets[0], next(iter(cfg.algorithms))
    assert run_params(cfg, dataset, variant, 0.0, 0)["capture"] == "static"  # a run records a capture that is on
    assert "capture" not in run_params(parse_config(raw), dataset, variant, 0.0, 0)  # and none as before


# ---- row buckets (issue 53 item 4, design D4) -------------------------------------------------------------------

def test_row_buckets_sort_the_rows_and_give_each_step_the_bucket_of_its_active_rows():
    steps = [np.array([2, 1]), np.array([3])]
    batches = [np.array([[0, 1], [2, -1], [5, 6]]), np.array([[7, 8], [9, -1], [10, 11]])]
    shape = StaticShape(rows=4, steps=4, batch=2)
    cohort = pad_schedule(steps, batches, shape, torch.device("cpu"), order=np.array([2, 0, 1]), buckets=True)
    assert cohort.buckets == (3, 2, 1, 0)  # 3, 2, 1 and no rows active; buckets 1, 2, 3, 4
    assert cohort.batches[:, 0].tolist() == [[7, 8], [9, -1], [10, 11], [-1, -1]]  # run 1's client first: 3 steps
    assert cohort.batches[:, 1].tolist() == [[0, 1], [2, -1], [-1, -1], [-1, -1]]
    assert cohort.active[:, 2].tolist() == [True, False, False, False]
    with pytest.raises(ValueError, match="row buckets need the rows sorted by steps"):
        pad_schedule(steps, batches, shape, torch.device("cpu"), buckets=True)


def _bucket_round(rows: int = 7):
    """run_static's arguments for one FedProx round of mclr on 6 clients (steps 6, 5, 5, 3, 2, 1) at ``rows`` rows,
    with and without row buckets."""
    from fedbench.engine.kernels import choose_kernel

    g = torch.Generator().manual_seed(0)
    model = build_model("mclr", (5,), 3)
    kernel = choose_kernel(model, "cpu", "mclr")
    x, y = torch.randn(40, 5, generator=g), torch.randint(0, 3, (40,), generator=g)
    steps = np.array([6, 5, 5, 3, 2, 1])
    flat = torch.randint(0, 40, (int(steps.sum()), 2), generator=g).numpy()
    flat[np.cumsum(steps) - 1, 1] = -1  # every client's last minibatch partial
    shape = StaticShape(rows=rows, steps=6, batch=2)
    cohorts = [pad_schedule([steps], [flat], shape, torch.device("cpu"), buckets=b) for b in (True, False)]
    algorithm = FedProx(lr=0.1, mu=1.0)
    theta0 = model.init(g)
    local = theta0 + 0.01 * torch.randn(rows, theta0.numel(), generator=g)
    bcast = algorithm.broadcast(algorithm.init(theta0, rows))
    return (algorithm, kernel, bcast, local, kernel.prepare(x), y), cohorts


def test_the_bucketed_loop_runs_each_step_on_its_bucket_and_gives_the_same_numbers(monkeypatch):
    args, (bucketed, padded) = _bucket_round()
    assert bucketed.buckets == (7, 5, 4, 3, 3, 1) and padded.buckets is None  # a_t = 6, 5, 4, 3, 3, 1
    ran = []
    step = static.static_step
    monkeypatch.setattr(static, "static_step", lambda *a: (ran.append(a[6].shape[0]), step(*a))[1])
    got = static.run_static(*args, bucketed)
    assert ran == [7, 5, 4, 3, 3, 1]  # 23 row-steps for 22 useful (42 in lockstep)
    assert torch.equal(got, static.run_static(*args, padded))


def test_the_captured_loop_replays_one_graph_a_row_bucket(monkeypatch):
    from fedbench.engine import capture

    monkeypatch.setattr(capture.CapturedSteps, "_record", staticmethod(_eager_record))
    monkeypatch.setattr(capture, "GRAPH_STEPS", 2)
    args, (bucketed, padded) = _bucket_round()
    captured = capture.CapturedSteps()
    got = captured.run(*args, bucketed)
    assert captured.captures == 3 and sorted(k[0] for k in captured.graphs) == [3, 4, 7]  # steps 0, 2, 4's buckets
    assert torch.equal(got, static.run_static(*args, padded))
    assert torch.equal(captured.run(*args, bucketed), got) and captured.captures == 3  # replayed, not recaptured
