"""Which runs share a stack, and how a study's stacks are spread over worker processes.

Runs that can share a stack (fedbench.engine.simulation.stack_key) are grouped; each group is then cut into
pieces so that the pieces, packed onto ``workers`` processes longest first, keep every process about equally
busy. A piece pays a fixed cost per local step (the stack's longest client chain, whatever the number of
runs in it) and a cost per row-step (one client's minibatch step); cutting a group into more pieces balances
the load but pays the per-step cost once more per piece, so a group is cut only while that pays.

The cost model (:func:`run_cost`) counts work, not seconds: its two constants are the per-step and per-row
costs of the mclr kernel measured on 2 CPU cores (``fedbench bench``); only their ratio matters here.

On CUDA a group is also cut so that each stack's step fits the device's free memory (:class:`StepMemory`, per
model: parameters and the algorithm's server, per-client and local state, activations, evaluation chunks), so a
9-run FEMNIST study or a 33-run CIFAR study runs without an out-of-memory and without a person choosing sizes. On
the CPU stacks are not cut for memory.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STEP_COST = 20.0  # microseconds per local step of a stack (operation overhead, independent of its rows)
ROW_COST = 2.0  # microseconds per client minibatch step (arithmetic), mclr on the synthetic data


@dataclass(frozen=True)
class RunCost:
    steps: float  # expected local steps per round of the run's longest client chain
    rows: float  # expected client minibatch steps per round


def run_cost(spec) -> RunCost:
    """Expected per-round work of one run (a fedbench.engine.simulation.RunSpec) from its data sizes and settings:
    K of the N clients with training data train, each ceil(n_k / B) steps an epoch for E epochs (or exactly
    local_steps); stragglers do about half their epochs (U{1..E-1}) when their work is kept, none otherwise."""
    cfg = spec.cfg
    sizes = spec.dataset.train.sizes
    sizes = sizes[sizes > 0]
    per_epoch = -(-sizes // cfg.batch_size)
    steps = np.full(len(sizes), cfg.local_steps) if cfg.local_steps else per_epoch * cfg.local_epochs
    k = min(cfg.clients_per_round, len(sizes))
    f = cfg.straggler_fraction
    kept = 0.5 if getattr(spec.algorithm, "keeps_partial_work", True) else 0.0
    rows = k * float(steps.mean()) * ((1 - f) + f * kept)
    return RunCost(steps=float(steps.max()), rows=rows)


def piece_cost(costs: Sequence[RunCost]) -> float:
    return STEP_COST * max(c.steps for c in costs) + ROW_COST * sum(c.rows for c in costs)


LARGEST_COHORT = 1_000_000  # rows of a step when planning memory: the kernel chosen for the largest stack
MAX_PIECES = 4  # a group is cut into at most this many stacks
EXHAUSTIVE_PLANS = 4096  # up to this many ways of cutting the groups, every way is tried; beyond, a greedy search


def plan_stacks(specs: Sequence, workers: int, key=None, model_of=None,
                free_bytes: int | None | str = "device") -> list[list[int]]:
    """Indices of ``specs`` grouped into stacks, cut and ordered for ``workers`` processes (costliest first).

    Runs are grouped by ``key`` (default: fedbench.engine.simulation.stack_key; every spec here must use the
    same model). Each group is cut into 1..MAX_PIECES stacks of about equal cost (runs dealt out by cost);
    the cuts chosen are those whose pieces, packed longest first, give the smallest largest load, and among
    equal loads the fewest pieces. With one worker every group stays whole. Where the ways of cutting exceed
    EXHAUSTIVE_PLANS (a study of many small groups: the SCAFFOLD quadratics' 66 groups of 3 have 3^66), the
    cuts grow greedily from every group whole, one cut at a time, the one that lowers that score most, until
    none does (the plan decides only how busy the workers are; a run's numbers never depend on it).

    Memory: given ``model_of`` (spec -> Model), a group is also cut into enough pieces that each piece's step
    fits ``free_bytes`` (:class:`StepMemory`; default "device": the free memory of the CUDA device the runs train
    on, no limit on the CPU; None: no limit)."""
    if key is None:
        from fedbench.engine.simulation import stack_key as key
    groups: dict = {}
    for i, spec in enumerate(specs):
        groups.setdefault(key(spec), []).append(i)
    costs = [run_cost(s) for s in specs]
    groups_list = [sorted(g, key=lambda i: -costs[i].rows) for g in groups.values()]
    workers = max(1, workers)
    if free_bytes == "device":
        free_bytes = free_device_memory(specs) if model_of is not None else None
    fit = memory_limits(specs, model_of, free_bytes) if model_of is not None else [len(specs)] * len(specs)
    least = [math.ceil(len(g) / min(fit[i] for i in g)) for g in groups_list]  # pieces memory needs
    limits = [max(lo, min(MAX_PIECES, len(g)) if workers > 1 else 1) for g, lo in zip(groups_list, least)]

    def plan(cuts) -> tuple[list[list[int]], tuple[float, int]]:
        pieces = [g[j::n] for g, n in zip(groups_list, cuts) for j in range(n)]
        return pieces, (max(_pack(pieces, costs, workers)), len(pieces))

    if math.prod(hi - lo + 1 for lo, hi in zip(least, limits)) <= EXHAUSTIVE_PLANS:
        best, _ = min((plan(cuts) for cuts in itertools.product(*(range(lo, hi + 1) for lo, hi in zip(least, limits)))),
                      key=lambda p: p[1])
    else:
        cuts = list(least)
        best, score = plan(cuts)
        while True:
            trials = [(plan(c), c) for c in (cuts[:i] + [cuts[i] + 1] + cuts[i + 1:] for i in range(len(cuts))
                                             if cuts[i] < limits[i])]
            better = [(s, c, p) for (p, s), c in trials if s < score]
            if not better:
                break
            score, cuts, best = min(better, key=lambda t: t[0])
    return sorted(best, key=lambda p: -piece_cost([costs[i] for i in p]))


def _pack(pieces: list[list[int]], costs: list[RunCost], workers: int) -> list[float]:
    """Loads of ``workers`` processes taking the pieces longest first, each to the least loaded process."""
    loads = [0.0] * workers
    for c in sorted((piece_cost([costs[i] for i in p]) for p in pieces), reverse=True):
        loads[loads.index(min(loads))] += c
    return loads


# ---- memory: how many runs' client rows fit in one stack step (issue 20) --------------------------------------

MEMORY_SHARE = 0.8  # of the device's free memory a stack may plan to use (the rest: the allocator's slack, cuDNN
# workspaces, kernels' temporaries not counted below)
UPDATE_TEMPORARIES = 2  # vectors of a local step besides the local state: the gradient, and lr * g before theta - lr * g


@dataclass(frozen=True)
class AlgorithmVectors:
    """The algorithm's state in units of one parameter vector P (float32): on the server per run, in its
    per-client table per client of the dataset, in one client's local state and in the broadcast."""

    server: float
    table: float
    local: float
    broadcast: float


def algorithm_vectors(algorithm, num_params: int, num_clients: int) -> AlgorithmVectors:
    """Counted by building the algorithm's state on the 'meta' device (shapes only, no memory, no arithmetic):
    ``init``, ``init_clients``, ``broadcast`` and ``client_init`` for a cohort of one. An algorithm whose
    client_init needs real values (a full-data gradient, say) is counted as 3 vectors of local state."""
    import torch

    from fedbench.engine import tree
    from fedbench.engine.round import Cohort

    def vectors(state, rows: int = 1) -> float:
        return sum(t.numel() for t in tree.tree_leaves(state)) / (num_params * rows) if state is not None else 0.0

    theta0 = torch.zeros(num_params, device="meta")
    state = algorithm.init(theta0, num_clients)
    table = algorithm.init_clients(num_clients, theta0) if hasattr(algorithm, "init_clients") else None
    bcast = algorithm.broadcast(state)
    try:
        one = torch.zeros(1, dtype=torch.int64, device="meta")
        cohort = Cohort(clients=one, num_samples=one, epochs=one, steps=one,
                        client_rows=tree.take_rows(table, torch.zeros(1, dtype=torch.int64, device="meta"))
                        if table is not None else None,
                        full_grad=lambda th: torch.zeros_like(th), weights=torch.ones(1, device="meta"))
        local = vectors(algorithm.client_init(bcast, cohort))
    except Exception:  # noqa: BLE001 - any client_init that needs values: the conservative count
        local = 3.0
    return AlgorithmVectors(server=vectors(state), table=vectors(table, num_clients), local=local,
                            broadcast=vectors(bcast))


@dataclass(frozen=True)
class StepMemory:
    """Bytes one step of a stack of one model needs, by part (float32 parameters):

    - per run: the server state (theta and the algorithm's server vectors) and the per-client table of its
      dataset's clients, where it is kept on the device;
    - per client row: the local state twice (before and after the step), the update's temporaries, and the
      broadcast's vectors (a stack gives each row its run's broadcast: fedbench.engine.round.row_broadcast);
    - activations of one training call: batch_size samples' layer outputs, saved and their gradients (2x); the
      per-client loop holds one row's at a time, a batched kernel every row's;
    - one evaluation chunk: eval_batch samples' layer outputs (no gradients), once per stack.
    Activation sizes are counted by running the network on one sample and summing every leaf module's output."""

    model: str
    num_params: int
    per_run: int
    per_row: int
    activations_per_sample: int  # bytes of one training sample's layer outputs
    batch_size: int
    batched_activations: bool
    evaluation: int

    def bytes(self, runs: int, rows_per_run: int) -> int:
        rows = runs * rows_per_run
        activations = self.activations_per_sample * self.batch_size * 2 * (rows if self.batched_activations else 1)
        return runs * self.per_run + rows * self.per_row + activations + self.evaluation

    def runs_that_fit(self, rows_per_run: int, free_bytes: int, share: float = MEMORY_SHARE) -> int:
        """The most runs of ``rows_per_run`` client rows each whose step fits in ``share`` of ``free_bytes``
        (0: not even one)."""
        budget = share * free_bytes
        fixed = self.bytes(0, rows_per_run)
        per_run = self.bytes(1, rows_per_run) - fixed
        return max(0, int((budget - fixed) // per_run)) if budget >= fixed else 0


def layer_output_floats(model, sample) -> int:
    """Sum of every leaf module's output elements for one sample (the activations a backward pass keeps)."""
    import torch

    total = 0

    def hook(_module, _inputs, output) -> None:
        nonlocal total
        outs = output if isinstance(output, tuple) else (output,)
        for o in outs:
            for t in (o if isinstance(o, tuple) else (o,)):
                if isinstance(t, torch.Tensor):
                    total += t.numel()

    leaves = [m for m in model.module.modules() if not list(m.children())]
    handles = [m.register_forward_hook(hook) for m in leaves]
    try:
        with torch.no_grad():
            model.forward(torch.zeros(model.num_params), sample[:1])
    finally:
        for h in handles:
            h.remove()
    return total


def step_memory(model, vectors: AlgorithmVectors, sample, batch_size: int, eval_batch: int,
                num_clients: int, batched_activations: bool = False, table_on_device: bool = True) -> StepMemory:
    """:class:`StepMemory` of ``model`` under an algorithm's ``vectors`` (:func:`algorithm_vectors`), on inputs
    like ``sample`` (one training sample or more; only its shape matters), for runs over ``num_clients`` clients."""
    p_bytes = 4 * model.num_params
    acts = 4 * layer_output_floats(model, sample)
    per_run = p_bytes * (vectors.server + (vectors.table * num_clients if table_on_device else 0.0))
    per_row = p_bytes * (2 * vectors.local + UPDATE_TEMPORARIES + vectors.broadcast)
    return StepMemory(model=model.name, num_params=model.num_params, per_run=int(per_run), per_row=int(per_row),
                      activations_per_sample=acts, batch_size=batch_size, batched_activations=batched_activations,
                      evaluation=acts * eval_batch)


def memory_limits(specs: Sequence, model_of, free_bytes: int | None) -> list[int]:
    """For each spec, the most runs of its kind one stack may hold in ``free_bytes`` (None: no limit)."""
    if free_bytes is None:
        return [len(specs)] * len(specs)
    import torch

    from fedbench.engine.kernels import choose_kernel
    from fedbench.engine.kernels.generic import EVAL_CHUNK_SAMPLES
    from fedbench.engine.simulation import resolve_device

    out = []
    for spec in specs:
        model, cfg = model_of(spec), spec.cfg
        n = spec.dataset.num_clients
        sample = torch.zeros(1, *spec.dataset.train.x.shape[1:], dtype=model.input_dtype)
        # every row's activations; sized for the largest stack (the kernel a big stack would choose), so that the
        # memory a stack is planned in is never less than what its kernel needs (the CPU's choice has no cohort)
        batched = choose_kernel(model, resolve_device(cfg.device), cfg.kernel, cohort=LARGEST_COHORT).name != "loop"
        memory = step_memory(model, algorithm_vectors(spec.algorithm, model.num_params, n), sample, cfg.batch_size,
                             EVAL_CHUNK_SAMPLES, n, batched_activations=batched)
        out.append(max(1, memory.runs_that_fit(min(cfg.clients_per_round, n), free_bytes)))
    return out


def free_device_memory(specs: Sequence) -> int | None:
    """Free memory of the CUDA device the specs train on (None on the CPU: stacks are not cut for memory there;
    host memory is checked by the caller's workers, not planned)."""
    import torch

    from fedbench.engine.simulation import resolve_device

    devices = {resolve_device(s.cfg.device) for s in specs}
    cuda = [d for d in devices if d.type == "cuda"]
    if not cuda:
        return None
    return min(torch.cuda.mem_get_info(d)[0] for d in cuda)
