"""The stacks the study runner makes of a study's runs, for its cost (fedbench.study.costs, fedbench.study.drawn):
which runs share a stack, and the unit (model and batch) a measured cost is keyed by. Imports no torch."""

from __future__ import annotations

import dataclasses

from fedbench.study.scale import Scale


@dataclasses.dataclass(frozen=True)
class Stack:
    """One stack the study runner would run: ``runs`` runs of ``scale`` (its dissimilarity's cadence and samples are
    those of the runs that compute it), ``dissimilarity_runs`` of them computing the gradient dissimilarity. Whether a
    run computes it is a per-run setting (fedbench.engine.simulation.PER_RUN_SETTINGS; train.dissimilarity_variants
    and train.dissimilarity_stragglers), so runs with and without it share a stack."""

    scale: Scale
    runs: int
    dissimilarity_runs: int


def stack_groups(scales: tuple[Scale, ...] | list[Scale], max_stack: int | None = None) -> list[Stack]:
    """The stacks the study runner would make of the read ``scales``: scales equal in everything but ``runs``,
    ``read``, ``label`` and their dissimilarity (whether, how often and on how many samples: a run that does not compute
    it has no use for the rest) share stacks (they share model, rounds, cohort,
    batch, local work and evaluation, as fedbench.engine.simulation.stack_key asks of a stack; a Scale records no
    algorithm, so arms of different algorithm classes, which the engine stacks apart, are taken as one group: the
    gain is an upper bound there), each group cut into stacks of at most ``max_stack`` runs (None: one stack; a
    callable: the most for that group's scale, as the device's memory allows, fedbench.engine.stacking.memory_limits),
    the runs that compute the dissimilarity in the first stacks (each is priced per run: where they go does not
    change the sum)."""
    groups: dict[Scale, list[int]] = {}
    dissimilarity: dict[Scale, tuple[int, int]] = {}  # the cadence and samples of the runs that compute it
    for s in scales:
        if s.read:
            key = dataclasses.replace(s, runs=0, read=True, label="", dissimilarity_every=0, dissimilarity_samples=0)
            runs = groups.setdefault(key, [0, 0])
            runs[0] += s.runs
            if s.dissimilarity_every > 0:
                runs[1] += s.runs
                dissimilarity.setdefault(key, (s.dissimilarity_every, s.dissimilarity_samples))
    out = []
    for key, (runs, computing) in groups.items():
        every, samples = dissimilarity.get(key, (0, 0))
        scale = dataclasses.replace(key, dissimilarity_every=every, dissimilarity_samples=samples)
        cut = max_stack(scale) if callable(max_stack) else max_stack
        size = runs if cut is None else max(1, cut)
        for lo in range(0, runs, size):
            n = min(size, runs - lo)
            out.append(Stack(scale, n, min(n, max(0, computing - lo))))
    return out


def unit_key(scale: Scale) -> str:
    """What a measured unit cost is keyed by: the model and the batch (``model@B``)."""
    return f"{scale.model}@{scale.batch_size}"
