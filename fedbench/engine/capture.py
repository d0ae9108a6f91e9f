"""The local-step loop of a round captured in one CUDA graph (``SimulationConfig.capture = "cuda_graph"``; issue 31,
item 4); fedbench.bench.capture_check measures it on a GPU.

On a GPU a small model's local step is a few microseconds of arithmetic and tens of microseconds of kernel
launches: FedProx's mclr step for the 1,400 clients of its 140-run synthetic study takes 183 us eager and 54 us
replayed from one CUDA graph on an H200 (../shared/measurements/gpu-h200-2026-11-27/graphstep.py). A graph
replays a fixed sequence of kernels on fixed buffers, so the loop must have one shape and read nothing back:
fedbench.engine.static gives it both (rows padded to the block's cohort, steps to the block's largest client,
finished rows masked), and one graph a row bucket (the steps' active rows a prefix of the sorted rows,
fedbench.engine.static.bucket_sizes). :class:`CapturedSteps` captures the T steps of fedbench.engine.static.run_static once per
(shape, algorithm object, kernel, non-tensor values of the local state and broadcast) and then, each round,
copies the round's local state, broadcast and schedule into the graph's input buffers and replays it
(PyTorch's ``torch.cuda.graph`` recipe: warm-up on a side stream, capture, replay).

Numbers. A replay launches the kernels the eager static path launches, with the same inputs: on one device the
two agree bit for bit where the kernels are deterministic, and within the CUDA == CPU tolerance of the GPU check
(1e-4 absolute on parameters of order 1, TF32 off; fedbench.bench.gpucheck) in any case.
fedbench.bench.capture_check measures both differences.

Deviations and limits:
1. A Python number the step reads (FedProx's mu when every run has the same, FedProxVR's counter, the lr of an
   algorithm that does not declare it in ``step_scalars``) is frozen into the graph: it is part of the cache key,
   so such a number changed every round captures a graph every round, which costs more than it saves. The fields
   an algorithm declares in ``step_scalars`` (lr: FedProx, FedAvg's form, FedLaAvg, sequential SGD) reach the
   graph as 0-dim tensors (fedbench.engine.round.step_form): the key holds their shape and dtype, each replay
   copies the round's value in, and a learning rate decayed every round (``lr_decay`` < 1) replays one graph.
   At most :data:`MAX_GRAPHS` graphs are kept (oldest dropped).
2. A kernel whose ``batch`` or ``grad`` copies from the host or reads a value back cannot be captured; capture
   then fails with CUDA's own error on the first round. The mclr, quadratic and vmap kernels do neither.
3. On the CPU there is nothing to capture: the setting is refused at build time in one line
   (fedbench.engine.simulation.build_stack); ``capture: static`` runs the same padded loop eagerly anywhere.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

from fedbench.engine import tree
from fedbench.engine.static import StaticCohort, run_static

CAPTURE_MODES = ("none", "static", "cuda_graph", "fused_step", "fused_round")
FUSED_MODES = ("fused_step", "fused_round")  # fedbench.engine.fused: one Triton launch a chain step, or a round
MAX_GRAPHS = 40  # captured loops kept per stack (each holds its own memory pool): one a row bucket of the stack's
# rows (fedbench.engine.static.bucket_sizes: 30 buckets up to 1,400 rows) and more than one algorithm key
GRAPH_STEPS = 16  # local steps in one graph: a round of T steps replays it ceil(T / 16) times (at most 15 padded
# steps a round: 0.1% of the FedProx synthetic study's chain of about 7,600 steps a round, fedbench.bench.lockstep)
WARMUP_RUNS = 2  # eager runs on a side stream before capture (PyTorch's recipe: lazy init, cuBLAS workspaces)
GPU_TOLERANCE = 1e-4  # captured vs eager parameters, absolute: the GPU check's CUDA == CPU bound (TF32 off)


def check_capture(mode: str, device: torch.device, local_path: str) -> None:
    """Refuse, in one line, a capture setting this stack cannot run (the fused modes' kernel and algorithms:
    :func:`check_fused`)."""
    if mode not in CAPTURE_MODES:
        raise ValueError(f"capture: {mode!r} is not allowed; allowed: {', '.join(CAPTURE_MODES)}")
    if mode == "cuda_graph" and device.type != "cuda":
        raise ValueError(f"capture: 'cuda_graph' needs a CUDA device, and this run trains on {device.type}; "
                         "use 'none' (the default) or 'static' (the same padded loop, eager)")
    if mode in FUSED_MODES and device.type != "cuda":
        raise ValueError(f"capture: {mode!r} needs a CUDA device (Triton kernels), and this run trains on "
                         f"{device.type}; use 'static' (the same padded loop, eager)")
    if mode in FUSED_MODES:
        from fedbench.engine import fused

        if not fused.available():
            raise ValueError(f"capture: {mode!r} needs Triton, which is not installed (it ships with torch's CUDA "
                             "wheels); use 'static' or 'cuda_graph'")
    if mode != "none" and local_path != "vectorized":
        raise ValueError(f"capture: {mode!r} runs the vectorized local path, not local_path={local_path!r}; "
                         "use capture 'none' with the reference path")


def check_fused(mode: str, kernel: Any, algorithms: list[Any]) -> None:
    """Refuse, in one line, a fused mode for a kernel no fused module runs (fedbench.engine.fused.family: mclr, the
    paper CNNs on the vmap kernel, the recurrent models on the rnn kernel), ``fused_round`` for any but mclr, or an
    algorithm whose client_step has no fused form (fedbench.engine.fused.forms)."""
    if mode not in FUSED_MODES:
        return
    from fedbench.engine.fused import family

    fam = family(kernel)
    if fam is None:
        raise ValueError(f"capture: {mode!r} runs the fused kernels of mclr, the paper CNNs (vmap kernel) and the "
                         f"recurrent models (rnn kernel), and this stack runs the {kernel.name!r} kernel on "
                         f"{getattr(getattr(kernel, 'model', None), 'name', 'its model')}; use 'static' or 'cuda_graph'")
    if mode == "fused_round" and fam != "mclr":
        raise ValueError(f"capture: 'fused_round' (one launch a round) is mclr's alone, and this stack runs the {fam} "
                         "family; use 'fused_step'")
    from fedbench.engine.fused.forms import form_of

    missing = sorted({type(a).__name__ for a in algorithms if form_of(a) is None})
    if missing:
        raise ValueError(f"capture: {mode!r}: {', '.join(missing)} has no fused form (its client_step is none of "
                         "fedbench.engine.fused.forms.CLIENT_STEPS); use 'static' or 'cuda_graph'")


def _signature(state: Any) -> tuple:
    """What a captured graph freezes of a state besides its tensors' values: each tensor's shape and dtype and every
    non-tensor field's value."""
    if state is None:
        return (None,)
    if isinstance(state, torch.Tensor):
        return ("t", tuple(state.shape), str(state.dtype), str(state.device))
    if dataclasses.is_dataclass(state):
        return (type(state).__name__,) + tuple((f.name, _signature(getattr(state, f.name)))
                                              for f in dataclasses.fields(state))
    return ("v", state)


def _tensor_fields(algorithm: Any) -> list[str]:
    """The fields of an algorithm object that are tensors (its step_scalars, as fedbench.engine.round.step_form
    hands them): buffers of a captured graph, not part of its key."""
    if not dataclasses.is_dataclass(algorithm):
        return []
    return [f.name for f in dataclasses.fields(algorithm) if isinstance(getattr(algorithm, f.name), torch.Tensor)]


def _algorithm_key(algorithm: Any) -> Any:
    if _tensor_fields(algorithm):  # the tensors' shapes and dtypes, every other field's value
        return (type(algorithm), _signature(algorithm))
    try:
        hash(algorithm)
        return algorithm
    except TypeError:  # an unhashable algorithm object: one graph per object
        return ("id", id(algorithm))


def _with_buffers(algorithm: Any) -> Any:
    """``algorithm`` with its tensor fields cloned (a graph's own buffers; no __post_init__, as step_form)."""
    names = _tensor_fields(algorithm)
    if not names:
        return algorithm
    own = copy.copy(algorithm)
    for name in names:
        object.__setattr__(own, name, getattr(algorithm, name).clone())
    return own


@dataclass
class _Graph:
    graph: Any  # torch.cuda.CUDAGraph
    local: Any  # input buffers, the local state's shape
    bcast: Any
    algorithm: Any  # the algorithm object the graph was captured with: its tensor fields are input buffers
    batches: torch.Tensor
    active: torch.Tensor
    out: Any  # output buffers (overwritten by the next replay)


class CapturedSteps:
    """The graphs of one stack's local-step loops (module docstring). A graph holds :data:`GRAPH_STEPS` steps at
    the stack's rows; a round of T steps (padded to a multiple of GRAPH_STEPS, fedbench.engine.round) replays it
    T / GRAPH_STEPS times, each time on the next GRAPH_STEPS rows of the round's schedule, so one graph serves
    every round whatever its largest client, and the lockstep chain is each round's own
    (fedbench.bench.lockstep)."""

    def __init__(self) -> None:
        self.graphs: OrderedDict[tuple, _Graph] = OrderedDict()
        self.captures = 0  # graphs captured so far (capture_check reads it)

    def run(self, algorithm: Any, kernel: Any, bcast: Any, local: Any, x_prepared: torch.Tensor, y: torch.Tensor,
            cohort: StaticCohort) -> Any:
        """fedbench.engine.static.run_static's result, from replays of the captured steps. With ``cohort.buckets``
        each GRAPH_STEPS steps replay the graph of their first step's row bucket (the largest of theirs: the
        active rows only shrink) on the state's first rows, and none where no row is active. The result may be a
        graph's own output buffer: copy what must outlive the next replay."""
        total, rows, batch = cohort.batches.shape
        if total % GRAPH_STEPS:
            raise ValueError(f"a captured round needs a multiple of {GRAPH_STEPS} steps, got {total}")
        state = local
        for t0 in range(0, total, GRAPH_STEPS):
            b = rows if cohort.buckets is None else cohort.buckets[t0]
            if not b:
                break
            part, part_bcast = (state, bcast) if b == rows else (
                tree.head(state, b), tree.head(bcast, b) if cohort.row_bcast else bcast)
            entry = self._entry(algorithm, kernel, part_bcast, part, x_prepared, y, b, batch)
            for dst, src in zip(tree.tree_leaves(entry.local), tree.tree_leaves(part)):
                dst.copy_(src)
            for dst, src in zip(tree.tree_leaves(entry.bcast), tree.tree_leaves(part_bcast)):
                dst.copy_(src)
            for name in _tensor_fields(algorithm):  # the round's lr into the graph's own
                getattr(entry.algorithm, name).copy_(getattr(algorithm, name))
            entry.batches.copy_(cohort.batches[t0: t0 + GRAPH_STEPS, :b])
            entry.active.copy_(cohort.active[t0: t0 + GRAPH_STEPS, :b])
            entry.graph.replay()
            state = entry.out if b == rows else tree.concat([entry.out, tree.rows(state, b, rows)])
        return state

    def _entry(self, algorithm, kernel, bcast, local, x_prepared, y, rows: int, batch: int) -> _Graph:
        key = (rows, batch, _algorithm_key(algorithm), id(kernel), x_prepared.data_ptr(), y.data_ptr(),
               _signature(local), _signature(bcast))
        entry = self.graphs.get(key)
        if entry is not None:
            self.graphs.move_to_end(key)
            return entry
        entry = self._capture(algorithm, kernel, bcast, local, x_prepared, y, rows, batch)
        self.graphs[key] = entry
        while len(self.graphs) > MAX_GRAPHS:
            self.graphs.popitem(last=False)
        return entry

    def _capture(self, algorithm, kernel, bcast, local, x_prepared, y, rows: int, batch: int) -> _Graph:
        local_in = tree.tree_map(torch.clone, local)
        bcast_in = tree.tree_map(torch.clone, bcast)
        algorithm = _with_buffers(algorithm)
        batches = torch.full((GRAPH_STEPS, rows, batch), -1, dtype=torch.int64, device=x_prepared.device)
        active = torch.zeros(GRAPH_STEPS, rows, dtype=torch.bool, device=x_prepared.device)
        static = StaticCohort(batches=batches, active=active, rows=rows)

        def loop():
            return run_static(algorithm, kernel, bcast_in, local_in, x_prepared, y, static)

        graph, out = self._record(loop)
        self.captures += 1
        return _Graph(graph=graph, local=local_in, bcast=bcast_in, algorithm=algorithm, batches=batches,
                      active=active, out=out)

    @staticmethod
    def _record(loop) -> tuple[Any, Any]:
        """(graph, output buffers) of ``loop`` captured on the current CUDA device: warm-up runs on a side stream,
        then one capture (PyTorch's torch.cuda.graph recipe)."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_RUNS):
                loop()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = loop()
        return graph, out
