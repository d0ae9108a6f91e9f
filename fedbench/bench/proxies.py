"""The GPU targets as counts the CPU measures exactly (issue 49, item 5; ``fedbench bench --parts proxies``).

A GPU is lent rarely, so each GPU target of the review (../shared/reference/gpu-design.md, section 6) is held as a
count that does not depend on the machine, and the H200 measurements already committed turn the counts into time
(fedbench.bench.drawn_cost). Counted here, on the engine's own round (simulate_stack; nothing copied):

- ``syncs_per_round``, ``syncs_per_block``: the host's waits for the device (fedbench.engine.host_sync.HostSyncs:
  values read back, blocking copies) in a round between evaluations, and in a block of SCHEDULE_BLOCK rounds, of a
  FedProx mclr stack evaluated at round 0 and on the final model only (a cadence protocol, as the claim studies
  declare). The round's waits are a 5-round simulation's minus a 3-round one's, halved (the start, the first and
  the final evaluation cancel); the block's are a (3 + block)-round one's minus the 3-round one's. The divergence
  signal stays on the device and is read back once a block (fedbench.engine.simulation._Window): 0 a round, 1 a
  block.
- ``uploads_per_block``: host-to-device uploads (fedbench.ops.to_device calls) in a block of SCHEDULE_BLOCK rounds
  of a FedProx stack at a static shape, at 1 and 10 runs, as CUDA runs it: the block's arrays in one transfer
  (fedbench.engine.uploads; fedbench.bench.block_uploads); ``..._round_by_round`` with each round moving its own.
- ``graph_breaks_per_round``: TorchDynamo's graph breaks tracing a FedProx stack's round (fedbench.bench.round_graph):
  its local steps on the device (``steps``: 0, one graph) and the whole run_round (``round``), with the reasons.
- ``graphs_per_block_decaying_lr``: the CUDA graphs a FedProx stack's captured loop needs in a block of
  SCHEDULE_BLOCK rounds whose lr decays every round (:func:`graph_keys`; D2's per-round scalars as tensors: 1).
- ``ops_outside_steps_per_round``: ATen operators dispatched in such a round outside the local steps (a
  ``TorchDispatchMode``, view operators excluded: on CUDA each counted operator is about one kernel launch), at
  1, 10 and 100 runs of a stack, with the slope in runs, as CUDA runs the work around the local steps
  (fedbench.engine.round.BATCHED_SIGNAL_DEVICES: the divergence signal one batched pass for the stack's runs, the
  cohorts one upload, client_init and server_update once for a group of runs: fedbench.engine.vmap_runs), with the
  CPU's default (all of it a run, bit for bit as alone) beside (``..._cpu_default``). The local steps are the engine's local path
  (fedbench.engine.local.LOCAL_PATHS, fedbench.engine.static.run_static): their operators are counted apart.
- ``synthetic_chain_steps``: the lockstep chain of FedProx's 140-run synthetic study (fedbench.bench.studies) at
  200 rounds, its runs stacked as the engine stacks them (one stack per ``stack_key``: FedAvg trains as FedProx
  with mu = 0, fedbench.engine.simulation.stacking_form, so its arms share FedProx's), from its drawn schedule
  (fedbench.bench.work.planned_work, the engine's round plan), and as one stack.
- ``eval_passes_per_round``: the model's forward passes in one evaluation of a stack of 1 and of 15 runs of the
  CIFAR CNN (train and test, every client; fedbench.engine.simulation's evaluation of round 0), as CUDA evaluates
  (fedbench.engine.kernels.generic.BATCHED_EVAL_DEVICES: M models in one pass), counted on the CPU;
  ``eval_passes_per_round_cpu_default`` as the CPU evaluates (a pass a model: the batched pass is not bit-identical
  there).
- ``dissimilarity_backward_calls``: the backward calls of one dissimilarity evaluation of 1 and of 15 CIFAR-CNN
  models, as CUDA runs it (one segmented backward for every (model, client) pair), with the CPU's beside.
- ``dissimilarity_runs``: per paper study, the runs the gradient dissimilarity is computed for (as its train
  settings declare: ``dissimilarity_variants`` and ``dissimilarity_stragglers``, fedbench.config.TrainConfig) and
  those a claim reads it of (fedbench.study.paper_profile.READ: the runs without stragglers).
- ``step_launches`` (issue 53): per model family (mclr, the CIFAR CNN, the Shakespeare and Sent140 LSTMs, the GRU)
  the ATen operators a chain step of the static path dispatches and the fused kernels' Triton launches, counted in
  Triton's interpreter in a subprocess, and executed FLOPs over the model's training FLOPs a row-step
  (fedbench.bench.step_launches).
- ``row_padding`` (issue 53, D4): padded row-steps over useful ones of a CNN stack and a recurrent stack at FedProx
  Table 1's heavy-tailed client sizes and of the synthetic study, in lockstep (the static path before row buckets)
  and at row buckets (fedbench.bench.row_padding).

Timings are not counted; the GPU figures these counts imply come from the cost model beside them.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
from typing import Any

SCHEDULE_BLOCK = 20  # fedbench.engine.simulation.SCHEDULE_BLOCK (kept equal by tests/bench/test_proxies.py)
RUNS = (1, 10, 100)  # stack sizes of the ops count
CNN_RUNS = (1, 15)  # stack sizes of the evaluation-pass count
PROTOCOL_EVERY = 10_000  # evaluated at round 0 and on the final model only

# The targets (issue 49's table): key -> (today, target, how "met" is decided)
TARGETS = {
    "syncs_per_round": ("2 a round", "0"),
    "syncs_per_block": ("40 a block of 20", "<= 1"),
    "ops_slope": ("+26 a run", "slope 0; <= 30 a stack-round"),
    "synthetic_chain_steps": ("3.02 M", "<= 1.51 M"),
    "eval_passes": ("grows with runs", "the same at 1 and 15 CNN runs"),
    "dissimilarity_runs": ("all 20 (Sent140)", "only those a claim reads"),
    "projected_profile": ("not priced (61.3 from means)", "priced; <= 8 GPU-hours"),
}
# issue 53's table, the rows a CPU counts exactly (fedbench.bench.step_launches, fedbench.bench.row_padding)
MCLR_LAUNCHES = 4  # launches a chain step, mclr (fused: 1)
CNN_LAUNCHES = 25  # launches a local step, CNN
PADDING = 1.25  # padded row-steps / useful
FLOPS = 1.15  # executed FLOPs / the model's training FLOPs, per row-step
RECURRENT = (("shakespeare_lstm", "Shakespeare LSTM"), ("sent140_lstm", "Sent140 LSTM"), ("gru", "Delta-FL GRU"))
HEAVY_TAILED = (("femnist", "a CNN stack"), ("shakespeare", "a recurrent stack"))


def recurrent_target(row: dict[str, Any]) -> int:
    """Issue 53: <= 2 x timesteps x layers + 10 launches a local step."""
    return 2 * row["timesteps"] * row["layers"] + 10


class OpCount(contextlib.ExitStack):
    """Within ``with OpCount() as ops:``, ``ops.outside`` and ``ops.inside`` count the ATen operators dispatched
    outside and inside the engine's local steps (view operators excluded), ``ops.by_name`` the outside ones by
    name. The local steps are found by wrapping the engine's local paths for the duration."""

    def __init__(self) -> None:
        super().__init__()
        self.outside = 0
        self.inside = 0
        self.by_name: collections.Counter = collections.Counter()
        self._depth = 0

    def __enter__(self) -> OpCount:
        super().__enter__()
        import fedbench.engine.round as round_module
        from fedbench.engine.local import LOCAL_PATHS

        for name, fn in list(LOCAL_PATHS.items()):
            LOCAL_PATHS[name] = self._inside(fn)
            self.callback(LOCAL_PATHS.__setitem__, name, fn)
        static = round_module.run_static
        round_module.run_static = self._inside(static)
        self.callback(setattr, round_module, "run_static", static)
        self.enter_context(_dispatch_mode()(self))
        return self

    def _inside(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            self._depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth -= 1
        return wrapped

    def _count(self, func) -> None:
        if func.is_view:
            return
        if self._depth:
            self.inside += 1
        else:
            self.outside += 1
            self.by_name[str(func.overloadpacket.__name__)] += 1


def _dispatch_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Mode(TorchDispatchMode):
        def __init__(self, counter: OpCount) -> None:
            super().__init__()
            self.counter = counter

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.counter._count(func)
            return func(*args, **(kwargs or {}))

    return Mode


@dataclasses.dataclass(frozen=True)
class RoundSetup:
    """The stack the round counts run: FedProx (mu 1) with mclr on generated Synthetic(1,1), ``devices`` devices,
    K clients a round doing ``local_steps`` minibatch steps of batch 10 (no stragglers: they are defined in epochs), evaluated at round 0 and
    on the final model only, without the dissimilarity."""

    devices: int = 30
    clients_per_round: int = 10
    local_steps: int = 1
    straggler_fraction: float = 0.0


@functools.cache
def _synthetic(devices: int):
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.models import build_model

    data = generate_synthetic(1.0, 1.0, False, num_devices=devices, seed=0, train_fraction=0.9)
    return data, build_model("mclr", data.feature_shape, data.num_classes)


def _simulate(setup: RoundSetup, runs: int, rounds: int, counters, capture: str = "none") -> None:
    from fedbench.algorithms import build_algorithm
    from fedbench.engine.evaluation import EvalSpec
    from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack

    data, model = _synthetic(setup.devices)
    protocol = (EvalSpec("train", every=PROTOCOL_EVERY), EvalSpec("test", every=PROTOCOL_EVERY))
    cfg = SimulationConfig(rounds=rounds, clients_per_round=setup.clients_per_round, local_epochs=1, batch_size=10,
                           local_steps=setup.local_steps, straggler_fraction=setup.straggler_fraction, device="cpu",
                           evaluations=protocol, dissimilarity_every=0, checkpoint_every=10**9, capture=capture)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), data, build_algorithm("fedprox", lr=0.05, mu=1.0))
             for s in range(runs)]
    with contextlib.ExitStack() as stack:
        for c in counters:
            stack.enter_context(c)
        simulate_stack(model, specs)


def round_syncs(setup: RoundSetup = RoundSetup(), runs: int = 1, block: int = SCHEDULE_BLOCK) -> dict[str, Any]:
    """The host's waits (reads + blocking copies) a round between evaluations and in a block of ``block`` rounds of
    a stack of ``runs`` runs, with the fedbench line of each wait of a round."""
    from fedbench.engine.host_sync import HostSyncs

    counts = {}
    for rounds in (3, 5, 3 + block):
        syncs = HostSyncs()
        _simulate(setup, runs, rounds, [syncs])
        counts[rounds] = syncs.count
    per_round = (sum(counts[5].values()) - sum(counts[3].values())) / 2
    lines = {f"{k[0]}@{k[1]}": (counts[5][k] - counts[3][k]) / 2 for k in counts[5] if counts[5][k] != counts[3][k]}
    return {"runs": runs, "per_round": per_round,
            "per_block": sum(counts[3 + block].values()) - sum(counts[3].values()), "block": block, "lines": lines}


def graph_keys(rounds: int = SCHEDULE_BLOCK, lr_decay: float = 0.99, runs: int = 2) -> dict[str, Any]:
    """The CUDA graphs a stack's static loop would capture in ``rounds`` rounds with a learning rate decayed every
    round: the distinct capture keys (fedbench.engine.capture: shape, algorithm object, broadcast) of the loops the
    engine runs, counted on the CPU's ``capture: static`` (the same loop, eager). One where the round's lr reaches
    the graph as a tensor (the algorithm's ``step_scalars``); a graph a round where it is a Python number."""
    import fedbench.engine.round as round_
    from fedbench.algorithms import build_algorithm
    from fedbench.engine.capture import _algorithm_key, _signature
    from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack

    data, model = _synthetic(RoundSetup().devices)
    cfg = SimulationConfig(rounds=rounds, clients_per_round=10, local_epochs=1, batch_size=10, local_steps=1,
                           device="cpu", capture="static", lr_decay=lr_decay, dissimilarity_every=0,
                           evaluations=(), checkpoint_every=10**9)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), data, build_algorithm("fedprox", lr=0.05, mu=1.0))
             for s in range(runs)]
    keys: set = set()
    run_static = round_.run_static

    def recorded(algorithm, kernel, bcast, local, *args, **kwargs):
        keys.add((_algorithm_key(algorithm), _signature(bcast), _signature(local)))
        return run_static(algorithm, kernel, bcast, local, *args, **kwargs)

    round_.run_static = recorded
    try:
        simulate_stack(model, specs)
    finally:
        round_.run_static = run_static
    return {"rounds": rounds, "lr_decay": lr_decay, "runs": runs, "graphs": len(keys)}


def round_ops(setup: RoundSetup = RoundSetup(), runs: int = 1, batched: bool = False) -> dict[str, Any]:
    """ATen operators a round between evaluations of a stack of ``runs`` runs, outside and inside the local steps,
    with the outside ones by name; ``batched``: as the devices of fedbench.engine.round.BATCHED_SIGNAL_DEVICES (CUDA)
    run the work around the local steps (batched over the stack's runs), counted here on the CPU."""
    import fedbench.engine.round as round_

    counts = {}
    devices = round_.BATCHED_SIGNAL_DEVICES
    round_.BATCHED_SIGNAL_DEVICES = devices + ("cpu",) if batched else devices
    try:
        for rounds in (3, 5):
            ops = OpCount()
            _simulate(setup, runs, rounds, [ops])
            counts[rounds] = ops
    finally:
        round_.BATCHED_SIGNAL_DEVICES = devices
    a, b = counts[3], counts[5]
    names = {k: (b.by_name[k] - a.by_name[k]) / 2 for k in b.by_name if b.by_name[k] != a.by_name[k]}
    return {"runs": runs, "outside": (b.outside - a.outside) / 2, "inside": (b.inside - a.inside) / 2,
            "outside_by_name": dict(sorted(names.items(), key=lambda kv: -kv[1]))}


def ops_outside(setup: RoundSetup = RoundSetup(), runs: tuple[int, ...] = RUNS, batched: bool = False) -> dict[str, Any]:
    """:func:`round_ops` at each of ``runs``, and the slope in runs (least squares over the points)."""
    import numpy as np

    points = [round_ops(setup, r, batched) for r in runs]
    x = np.array(runs, dtype=np.float64)
    y = np.array([p["outside"] for p in points])
    slope = float(np.polyfit(x, y, 1)[0]) if len(runs) > 1 else 0.0
    return {"at": {str(p["runs"]): p["outside"] for p in points}, "slope_per_run": round(slope, 3),
            "inside_at": {str(p["runs"]): p["inside"] for p in points},
            "top_outside": {str(p["runs"]): dict(list(p["outside_by_name"].items())[:8]) for p in points}}


class ForwardCount(contextlib.ExitStack):
    """Within ``with ForwardCount() as passes:``, ``passes.count`` is the forward passes made with grad mode off
    (evaluation): calls of a model's forward (fedbench.models.spec.Model.forward, forward_params) or of the rnn
    kernel's forward over stacked models, the outermost one counted (one vmapped call over M models is one pass)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __enter__(self) -> ForwardCount:
        super().__enter__()
        import torch

        from fedbench.engine.kernels.rnn import RecurrentKernel
        from fedbench.models.spec import Model

        depth = [0]  # Model.forward calls forward_params: a pass is the outermost call
        for owner, name in ((Model, "forward"), (Model, "forward_params"), (RecurrentKernel, "forward")):
            fn = getattr(owner, name)

            def wrapped(*args, _fn=fn, **kwargs):
                if not torch.is_grad_enabled() and not depth[0]:
                    self.count += 1
                depth[0] += 1
                try:
                    return _fn(*args, **kwargs)
                finally:
                    depth[0] -= 1

            setattr(owner, name, functools.wraps(fn)(wrapped))
            self.callback(setattr, owner, name, fn)
        return self


def eval_passes(runs: int, clients: int = 6, samples: int = 5, kernel: str = "auto",
                batched: bool = False) -> dict[str, Any]:
    """The forward passes of one evaluation of a stack of ``runs`` CIFAR-CNN runs (train and test, every client, no
    dissimilarity) on a generated CIFAR-shaped federation of ``clients`` clients of ``samples`` images (the engine's
    evaluation of round 0, as simulate_stack runs it); ``kernel``: the stack's execution kernel; ``batched``: as the
    devices of fedbench.engine.kernels.generic.BATCHED_EVAL_DEVICES (CUDA) evaluate, counted here on the CPU."""
    import fedbench.engine.kernels.generic as generic
    from fedbench.algorithms import build_algorithm
    from fedbench.bench.federation import bench_model
    from fedbench.engine.simulation import RunSpec, SimulationConfig, _evaluate, _plan, build_stack

    model = bench_model("cifar_cnn").build()
    data = _cifar(clients, samples)
    cfg = SimulationConfig(rounds=1, clients_per_round=2, local_steps=1, batch_size=5, device="cpu",
                           dissimilarity_every=0, kernel=kernel, checkpoint_every=10**9)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), data, build_algorithm("fedprox", lr=0.01, mu=0.1))
             for s in range(runs)]
    stack, states = build_stack(model, specs)
    plans = [_plan(run, 0) for run in states]
    devices = generic.BATCHED_EVAL_DEVICES
    generic.BATCHED_EVAL_DEVICES = devices + ("cpu",) if batched else devices
    try:
        with ForwardCount() as passes:
            _evaluate(stack, states, plans)
    finally:
        generic.BATCHED_EVAL_DEVICES = devices
    return {"runs": runs, "passes": passes.count, "kernel": stack.kernel.name}


def dissimilarity_passes(models: int, clients: int = 4, batched: bool = False) -> dict[str, Any]:
    """The backward calls (``kernel.grad``) of one dissimilarity evaluation of ``models`` CIFAR-CNN models (vmap
    kernel, every client's full gradient), as the CPU runs it or (``batched``) as CUDA does
    (fedbench.engine.kernels.generic.BATCHED_EVAL_DEVICES: one segmented backward for every (model, client) pair)."""
    import torch

    import fedbench.engine.kernels.generic as generic
    from fedbench.bench.federation import bench_model
    from fedbench.engine.kernels import choose_kernel
    from fedbench.engine.metrics import DeviceData, evaluate_many

    model = bench_model("cifar_cnn").build()
    data = DeviceData.build(_cifar(clients, 3), torch.device("cpu"))
    kernel = choose_kernel(model, "cpu", "vmap")
    thetas = torch.stack([model.init(torch.Generator().manual_seed(i)) for i in range(models)])
    calls = [0]
    real = kernel.grad

    def counted(*args):
        calls[0] += 1
        return real(*args)

    kernel.grad = counted
    devices = generic.BATCHED_EVAL_DEVICES
    generic.BATCHED_EVAL_DEVICES = devices + ("cpu",) if batched else devices
    try:
        evaluate_many(kernel, thetas, data, True, splits=())
    finally:
        generic.BATCHED_EVAL_DEVICES = devices
    return {"models": models, "backward_calls": calls[0]}


@functools.cache
def _cifar(clients: int, samples: int):
    import numpy as np

    from fedbench.bench.federation import bench_model, make_federation

    spec = bench_model("cifar_cnn")
    return make_federation(spec, spec.build(), clients, sizes=np.full(clients, samples))


def synthetic_chain(rounds: int | None = None, seeds: tuple[int, ...] = (0, 1, 2, 3, 4)) -> dict[str, Any]:
    """The lockstep chain of FedProx's synthetic study (fedbench.bench.studies.fedprox_study) from its drawn
    schedule: stacked as the engine stacks it today (``stacks``: one per stack_key), and as one stack; with the
    row-steps in all."""
    import numpy as np

    from fedbench.bench.studies import fedprox_study
    from fedbench.bench.work import planned_work
    from fedbench.bench.workload import group_stacks
    from fedbench.engine.simulation import RunSpec

    w = fedprox_study(seeds)
    total = rounds or w.rounds
    specs = [RunSpec(w.config(r, total, "cpu"), w.dataset(r.dataset), w.algorithm(r)) for r in w.runs]
    work = [planned_work(s.cfg, s.dataset.train.sizes, s.algorithm.keeps_partial_work, total) for s in specs]
    stacks = group_stacks(specs, tuple(range(len(specs))))

    def chain(groups) -> int:
        return int(sum(np.max([work[i].chain for i in g], axis=0).sum() for g in groups))

    return {"runs": len(specs), "rounds": total, "stacks": [len(g) for g in stacks], "chain": chain(stacks),
            "one_stack_chain": chain([list(range(len(specs)))]),
            "row_steps": int(sum(x.row_steps.sum() for x in work))}


def dissimilarity_runs(seeds: int = 5) -> dict[str, dict[str, int]]:
    """Per paper study with the dissimilarity on: the runs it is computed for, as the study's train settings declare
    them (:func:`computing_dissimilarity`), and the runs a claim reads it of (fedbench.study.paper_profile.READ: the
    runs without stragglers; none in an E = 1 study, whose claims read loss and accuracy)."""
    from fedbench.study.paper_profile import PAPER, READ, STUDIES

    out = {}
    for name in PAPER:
        s = STUDIES[name]
        if not any(sc.dissimilarity_every > 0 for sc in s.scales(seeds)):
            continue
        computed = computing_dissimilarity(s.study()["train"], s.algorithms, s.stragglers, seeds)
        read = 0 if s.partial_work else sum(1 for _, f in READ if f == 0.0) * seeds
        out[name] = {"computed": computed, "read": read}
    return out


def computing_dissimilarity(train: dict[str, Any], variants: list[str], stragglers: list[float], seeds: int) -> int:
    """How many of a study's runs (``variants`` x ``stragglers`` x ``seeds``) compute the dissimilarity under its
    ``train`` settings (fedbench.config.TrainConfig.computes_dissimilarity, as the train stage decides)."""
    from fedbench.config import TrainConfig

    keys = ("dissimilarity_variants", "dissimilarity_stragglers")
    t = dataclasses.replace(TrainConfig(), **{k: tuple(train[k]) for k in keys if k in train})
    return sum(t.computes_dissimilarity(v, f) for v in variants for f in stragglers) * seeds


def measure(quick: bool = False, log=lambda _: None) -> dict[str, Any]:
    """Every proxy (module docstring), with the cost model's projection on the H200 calibration
    (fedbench.bench.drawn_cost) and each target met or not."""
    import fedbench.bench.drawn_cost as drawn_cost

    setup = RoundSetup()
    log("  proxies: host syncs a round and a block")
    syncs = round_syncs(setup, 1)
    syncs_many = round_syncs(setup, 10, block=1) if not quick else None
    log("  proxies: ATen ops outside the local steps at " + ", ".join(map(str, RUNS)) + " runs")
    ops = ops_outside(setup, RUNS[:2] if quick else RUNS, batched=True)
    ops_cpu = ops_outside(setup, RUNS[:2] if quick else RUNS)
    log("  proxies: evaluation passes at " + " and ".join(map(str, CNN_RUNS)) + " CNN runs")
    passes = {str(r): eval_passes(r, batched=True)["passes"] for r in CNN_RUNS}
    passes_cpu = {str(r): eval_passes(r)["passes"] for r in CNN_RUNS}
    dissim_calls = {str(r): dissimilarity_passes(r, batched=True)["backward_calls"] for r in CNN_RUNS}
    dissim_calls_cpu = {str(r): dissimilarity_passes(r)["backward_calls"] for r in CNN_RUNS}
    graphs = graph_keys()
    log("  proxies: host-to-device uploads a block")
    import fedbench.bench.block_uploads as block_uploads

    upload_runs = (1,) if quick else (1, 10)
    uploads = {str(n): block_uploads.uploads_per_block(n)["per_block"] for n in upload_runs}
    uploads_before = {str(n): block_uploads.uploads_per_block(n, staged=False)["per_block"] for n in upload_runs}
    log("  proxies: graph breaks of a round under torch.compile(fullgraph=True) (TorchDynamo's explain)")
    import fedbench.bench.round_graph as round_graph

    breaks = {part: round_graph.explain(part) for part in ("steps", "round")}
    log("  proxies: the synthetic study's chain from its drawn schedule")
    chain = synthetic_chain(rounds=20 if quick else None)
    log("  proxies: launches and FLOPs a local step, per model family (Triton's interpreter, a subprocess)")
    import fedbench.bench.row_padding as row_padding
    import fedbench.bench.step_launches as step_launches

    steps = step_launches.measure(quick)
    log("  proxies: padded row-steps at heavy-tailed client sizes")
    padding = {d: row_padding.heavy_tailed(d) for d, _ in HEAVY_TAILED}
    padding["synthetic"] = row_padding.synthetic_study(rounds=20 if quick else None)
    log("  proxies: the cost model on the H200 calibration")
    priced = drawn_cost.price_proxies(chain=chain, log=log)
    result = {
        "syncs_per_round": syncs["per_round"],
        "syncs_per_block": syncs["per_block"],
        "syncs_lines": syncs["lines"],
        "syncs_per_round_10_runs": None if syncs_many is None else syncs_many["per_round"],
        "ops_outside_steps_per_round": ops["at"],
        "ops_outside_steps_slope": ops["slope_per_run"],
        "ops_inside_steps_per_round": ops["inside_at"],
        "ops_outside_top": ops["top_outside"],
        "ops_outside_steps_per_round_cpu_default": ops_cpu["at"],
        "ops_outside_steps_slope_cpu_default": ops_cpu["slope_per_run"],
        "ops_outside_top_cpu_default": ops_cpu["top_outside"],
        "graphs_per_block_decaying_lr": graphs["graphs"],
        "uploads_per_block": uploads,
        "uploads_per_block_round_by_round": uploads_before,
        "graph_breaks_per_round": {part: b["graph_breaks"] for part, b in breaks.items()},
        "graph_break_reasons": {part: b["reasons"] for part, b in breaks.items()},
        "synthetic_chain_steps": chain["chain"],
        "synthetic_chain": chain,
        "eval_passes_per_round": passes,
        "eval_passes_per_round_cpu_default": passes_cpu,
        "dissimilarity_runs": dissimilarity_runs(),
        "dissimilarity_backward_calls": dissim_calls,
        "dissimilarity_backward_calls_cpu_default": dissim_calls_cpu,
        # the profile as the engine stacks it: its FedAvg and FedProx arms in one stack where the synthetic study's
        # do (drawn_cost's merged pricing), else apart
        "arms_share_a_stack": len(chain["stacks"]) == 1,
        "projected_gpu_hours": priced["gpu_hours_one_stack_a_study" if len(chain["stacks"]) == 1 else "gpu_hours"],
        "projected_gpu_hours_arms_apart": priced["gpu_hours"],
        "projected_gpu_hours_one_stack_a_study": priced["gpu_hours_one_stack_a_study"],
        "projected_synthetic_s": None if priced["synthetic_s"] is None else priced["synthetic_s"]["stacked_as_today"],
        "projected_synthetic_one_stack_s": None if priced["synthetic_s"] is None else priced["synthetic_s"]["one_stack"],
        "calibration": priced["calibration"],
        "step_launches": steps,
        "row_padding": padding,
        "quick": quick,
    }
    result["targets"] = targets(result)
    return result


def targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 49's table: each proxy's value today, its target, met or not (None: not measured)."""
    at = r["ops_outside_steps_per_round"]
    largest = max(at, key=int)
    passes = r["eval_passes_per_round"]
    dissim = r["dissimilarity_runs"]
    over = {k: v for k, v in dissim.items() if v["computed"] > v["read"]}
    total = (r["projected_gpu_hours"] or {}).get("total")
    rows = [
        ("host syncs a round", f"{r['syncs_per_round']:g}", TARGETS["syncs_per_round"][1],
         r["syncs_per_round"] == 0),
        (f"host syncs a block of {SCHEDULE_BLOCK} rounds", f"{r['syncs_per_block']:g}", TARGETS["syncs_per_block"][1],
         r["syncs_per_block"] <= 1),
        ("ATen ops outside the local steps a round (slope in runs; at " + ", ".join(at) + " runs; the CUDA path"
         + ("" if "ops_outside_steps_slope_cpu_default" not in r else
            f"; the CPU's: {r['ops_outside_steps_slope_cpu_default']:+.1f} a run") + ")",
         f"{r['ops_outside_steps_slope']:+.1f} a run; " + ", ".join(f"{v:g}" for v in at.values()),
         TARGETS["ops_slope"][1], abs(r["ops_outside_steps_slope"]) < 0.5 and at[largest] <= 30),
        (f"the synthetic study's chain (lockstep, stacked as today, {r['synthetic_chain']['rounds']} rounds)",
         f"{r['synthetic_chain_steps']:,}",
         TARGETS["synthetic_chain_steps"][1],
         None if r["synthetic_chain"]["rounds"] != 200 else r["synthetic_chain_steps"] <= 1_512_120),
        ("evaluation passes a round, " + " vs ".join(passes) + " CNN runs (the CUDA path; the CPU's: "
         + " vs ".join(map(str, r.get("eval_passes_per_round_cpu_default", {}).values())) + ")",
         " vs ".join(map(str, passes.values())),
         TARGETS["eval_passes"][1], len(set(passes.values())) == 1),
        ("dissimilarity: backward calls, " + " vs ".join(r.get("dissimilarity_backward_calls", {})) + " CNN models "
         "(the CUDA path; the CPU's: " + " vs ".join(map(str, r.get("dissimilarity_backward_calls_cpu_default",
                                                                  {}).values())) + ")",
         " vs ".join(map(str, r.get("dissimilarity_backward_calls", {}).values())) or "-", "the same at 1 and 15",
         None if not r.get("dissimilarity_backward_calls")
         else len(set(r["dissimilarity_backward_calls"].values())) == 1),
        ("dissimilarity: runs it is computed for / read (paper studies)",
         "; ".join(f"{k} {v['computed']}/{v['read']}" for k, v in dissim.items() if v["computed"]) or "none",
         TARGETS["dissimilarity_runs"][1], not over),
        ("projected profile from drawn schedules (GPU-hours, H200)", "-" if total is None else f"{total:.1f}",
         TARGETS["projected_profile"][1], None if total is None else total <= 8.0),
    ]
    rows[2:2] = block_rows(r)
    rows += step_rows(r)
    return [{"proxy": p, "value": v, "target": t, "met": m} for p, v, t, m in rows]


def block_rows(r: dict[str, Any]) -> list[tuple]:
    """Item 3's rows where measured: uploads a block (fedbench.bench.block_uploads) and graph breaks of a round
    (fedbench.bench.round_graph)."""
    rows = []
    if r.get("uploads_per_block"):
        rows.append((f"host-to-device uploads a block of {SCHEDULE_BLOCK} rounds, static path (at "
                     + ", ".join(r["uploads_per_block"]) + " runs; each round its own: "
                     + ", ".join(map(str, r.get("uploads_per_block_round_by_round", {}).values())) + ")",
                     ", ".join(map(str, r["uploads_per_block"].values())), "1",
                     all(v <= 1 for v in r["uploads_per_block"].values())))
    if r.get("graph_breaks_per_round"):
        rows.append(("graph breaks under torch.compile(fullgraph=True): the local steps; the whole round",
                     "; ".join(f"{k} {v}" for k, v in r["graph_breaks_per_round"].items()), "0",
                     all(v == 0 for v in r["graph_breaks_per_round"].values())))
    return rows



def step_rows(r: dict[str, Any]) -> list[tuple]:
    """Issue 53's rows: launches a local step per family (static path's ATen ops; fused kernels' launches), padded
    row-steps / useful, FLOPs executed / trained (None: not measured)."""
    steps, padding = r.get("step_launches"), r.get("row_padding")
    if not steps or not padding:
        return []

    def fused(row):
        return "-" if row["fused_launches_per_step"] is None else f"{row['fused_launches_per_step']:g}"

    def met(row, target):
        return None if row["fused_launches_per_step"] is None else row["fused_launches_per_step"] <= target

    m, c = steps["mclr"], steps["cnn"]
    rows = [(f"launches a chain step, mclr (static path's ATen ops {m['static_ops_per_step']:g}; fused)", fused(m),
             f"<= {MCLR_LAUNCHES} (fused: 1)", met(m, 1)),
            (f"launches a local step, CNN (static path's ATen ops {c['static_ops_per_step']:g}; fused)", fused(c),
             f"<= {CNN_LAUNCHES}", met(c, CNN_LAUNCHES))]
    for key, name in RECURRENT:
        row = steps[key]
        rows.append((f"launches a local step, {name} ({row['timesteps']} timesteps x {row['layers']} layers; static "
                     f"path's ATen ops {row['static_ops_per_step']:g}; fused)", fused(row),
                     f"<= {recurrent_target(row)}", met(row, recurrent_target(row))))
    for key, name in HEAVY_TAILED + (("synthetic", "FedProx's synthetic study as stacked"),):
        p = padding[key]
        rows.append((f"padded row-steps / useful, {name} ({key} sizes, {p['rounds']} rounds; in lockstep, "
                     f"the static path before row buckets: {p['lockstep_ratio']:.2f})",
                     f"{p['bucketed_ratio']:.3f} (row buckets: the static path)",
                     f"<= {PADDING}", p["bucketed_ratio"] <= PADDING))
    flops = {k: v["flops"]["ratio"] for k, v in steps.items() if "flops" in v}
    rows.append(("executed FLOPs / the model's training FLOPs a row-step, static path (" + ", ".join(flops) + ")",
                 ", ".join(f"{v:.3f}" for v in flops.values()), f"<= {FLOPS} each",
                 all(v <= FLOPS for v in flops.values())))
    return rows


def table(r: dict[str, Any]) -> list[str]:
    lines = ["| proxy | today | target | met |", "|---|---|---|---|"]
    for row in r["targets"]:
        met = "not measured" if row["met"] is None else ("yes" if row["met"] else "no")
        lines.append(f"| {row['proxy']} | {row['value']} | {row['target']} | {met} |")
    if r.get("projected_synthetic_s") is not None:
        lines.append(f"\nFedProx's synthetic study on the H200 calibration: {r['projected_synthetic_s']:.0f} s stacked as "
                     f"today, {r['projected_synthetic_one_stack_s']:.0f} s as one stack (target <= 60 s)")
    one = r.get("projected_gpu_hours_one_stack_a_study") or {}
    if "total" in r.get("projected_gpu_hours", {}) and "total" in one:
        apart = (r.get("projected_gpu_hours_arms_apart") or {}).get("total")
        lines.append(f"The paper profile from drawn schedules on the H200 calibration: {r['projected_gpu_hours']['total']:.1f} "
                     f"GPU-hours as stacked today ({one['total']:.1f} with one stack a study"
                     + ("" if apart is None else f", {apart:.1f} with FedAvg and FedProx apart") + "; "
                     f"{r['calibration']['baseline_profile_hours']} projected from mean sizes)")
    return lines
