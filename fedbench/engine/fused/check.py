"""The fused mclr kernels against the engine's static path on a real round, for the prepared GPU check (issue 53,
item 6): the same round's local work three ways, from the same inputs (the engine's own: a short simulation's last
round, taken where the engine hands it to fedbench.engine.static.run_static, as fedbench.bench.proxies counts it):

- ``static``: run_static, the reference;
- ``step``: one launch of the fused step kernel a chain step;
- ``round``: one launch of the fused round kernel.

For each: the largest |difference| from the reference's local state, the launches a chain step (the fused ones
counted at Triton's launch entry, fedbench.engine.fused.mclr.count_launches) and, on CUDA, the median time of a chain
step over ``repeats`` runs after one warm-up run (which compiles the kernels). On the CPU (Triton's interpreter)
the times mean nothing and are not reported.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

import torch

from fedbench.engine import round as round_module
from fedbench.engine import tree
from fedbench.engine.fused.mclr import count_launches, run_fused


def last_round(model: Any, runs: Sequence[Any]) -> tuple[tuple, Any]:
    """run_static's arguments and result in the last round of ``fedbench.engine.simulation.simulate_stack(model,
    runs)`` (the runs' ``capture`` must be static or cuda_graph: the engine then calls run_static every round)."""
    from fedbench.engine.simulation import simulate_stack

    seen = []
    real = round_module.run_static

    def recorded(*args):
        out = real(*args)
        seen.append((args, out))
        return out

    round_module.run_static = recorded
    try:
        simulate_stack(model, list(runs))
    finally:
        round_module.run_static = real
    if not seen:
        raise ValueError("no round ran the static path: give the runs capture='static'")
    return seen[-1]


def compare(args: tuple, reference: Any, repeats: int = 5, block_d: int | None = None) -> dict[str, dict]:
    """The static path, the fused step and the fused round on run_static's ``args`` (its ``reference`` result):
    {path: {max_abs_diff, launches_per_chain_step, us_per_chain_step (CUDA only)}}."""
    cohort = args[-1]
    steps = cohort.batches.shape[0]
    cuda = cohort.batches.is_cuda
    paths = {"static": lambda: round_module.run_static(*args),
             "step": lambda: run_fused(*args, persistent=False, block_d=block_d),
             "round": lambda: run_fused(*args, persistent=True, block_d=block_d)}
    out = {}
    for name, run in paths.items():
        with count_launches() as launches:
            result = run()  # the warm-up run compiles the kernels
        row = {"max_abs_diff": _max_abs_diff(result, reference),
               "launches_per_chain_step": (launches.step + launches.round) / steps if name != "static" else None}
        if cuda:
            times = []
            for _ in range(repeats):
                torch.cuda.synchronize()
                start = time.perf_counter()
                run()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
            row["us_per_chain_step"] = 1e6 * statistics.median(times) / steps
        out[name] = row
    return out


def _max_abs_diff(a: Any, b: Any) -> float:
    return max(float((x.double() - y.double()).abs().max()) for x, y in zip(tree.tree_leaves(a), tree.tree_leaves(b)))
