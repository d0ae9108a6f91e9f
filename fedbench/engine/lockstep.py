"""How long a stack's lockstep chain is, counted from a study's drawn schedule (fedbench.engine.schedule): the
measurement behind the choice of how runs are dealt into stacks and how many rounds share one static shape
(issue 31, item 4: "runs in lockstep pay each round for the largest client of any run in the stack").

For a stack (a set of runs) and a block of ``block`` rounds:
- the *chain* is the local steps the stack runs one after another: on the ragged path (capture none) each round
  costs its own largest client's steps; at a static shape (capture static/cuda_graph) each round of a block
  costs the block's largest client's steps;
- the *padded row-steps* are the client minibatch steps a static shape computes and discards: per round,
  (block's largest client) x (rows: every run's largest cohort of the block) - the steps clients really take.

``python -m fedbench.engine.lockstep`` prints both for FedProx's 140-run synthetic study (fedbench.bench.studies)
at 200 rounds, for its runs dealt into 1, 2, 4 and 7 stacks per group two ways: cost-sorted round robin (as
fedbench.engine.stacking.plan_stacks deals them) and sorted by each run's longest client into contiguous
pieces (runs of similar size together); and for blocks of 1, 20 and 200 rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedbench.engine.schedule import schedule_block


@dataclass(frozen=True)
class RunSteps:
    """One run's drawn local work per round: its largest client's steps, its cohort's rows and its steps in all."""

    max_steps: np.ndarray  # [R]
    rows: np.ndarray  # [R]
    row_steps: np.ndarray  # [R]


def run_steps(run, rounds: int) -> RunSteps:
    """From the run's own draws (a fedbench.engine.round.RunState of an algorithm without state hooks)."""
    draws = schedule_block(run, 0, rounds)
    if any(d.work is None for d in draws):
        raise ValueError("run_steps counts drawn work; this run's algorithm decides its cohort from its state")
    return RunSteps(max_steps=np.array([d.max_steps for d in draws]), rows=np.array([len(d.work.steps) for d in draws]),
                    row_steps=np.array([int(d.work.steps.sum()) for d in draws]))


def _block_max(values: np.ndarray, block: int) -> np.ndarray:
    """Each round's value replaced by the maximum of its block ([..., R])."""
    r = values.shape[-1]
    out = values.copy()
    for lo in range(0, r, block):
        out[..., lo: lo + block] = values[..., lo: lo + block].max(-1, keepdims=True)
    return out


def chain(steps: list[RunSteps], stacks: list[list[int]], block: int | None) -> int:
    """Local steps run one after another by ``stacks`` (indices into ``steps``); ``block`` None: the ragged path
    (each round its own largest client), else a static shape per block of rounds."""
    total = 0
    for stack in stacks:
        longest = np.max([steps[i].max_steps for i in stack], axis=0)  # [R]
        total += int((longest if block is None else _block_max(longest, block)).sum())
    return total


def padded_row_steps(steps: list[RunSteps], stacks: list[list[int]], block: int) -> int:
    """Row-steps computed and discarded at a static shape per block (module docstring)."""
    total = 0
    for stack in stacks:
        t = _block_max(np.max([steps[i].max_steps for i in stack], axis=0), block)
        rows = np.sum([_block_max(steps[i].rows, block) for i in stack], axis=0)
        total += int((t * rows).sum() - np.sum([steps[i].row_steps for i in stack]))
    return total


def round_robin(order: list[int], pieces: int) -> list[list[int]]:
    """``order`` dealt into ``pieces`` stacks one by one (plan_stacks' g[j::n])."""
    return [order[j::pieces] for j in range(pieces)]


def contiguous(order: list[int], pieces: int) -> list[list[int]]:
    """``order`` cut into ``pieces`` consecutive stacks of about equal size."""
    return [list(p) for p in np.array_split(np.array(order), pieces) if len(p)]


def main() -> None:  # pragma: no cover - a measurement, printed
    import dataclasses

    from fedbench.bench.studies import fedprox_study
    from fedbench.engine.simulation import RunSpec, build_stack, stack_key
    from fedbench.engine.stacking import run_cost
    from fedbench.models import build_model

    study = fedprox_study()
    rounds = study.rounds
    specs = [RunSpec(study.config(run, rounds, "cpu"), study.dataset(run.dataset), study.algorithm(run))
             for run in study.runs]
    ds0 = specs[0].dataset
    model = build_model("mclr", ds0.feature_shape, ds0.num_classes)
    steps = [run_steps(build_stack(model, [s])[1][0], rounds) for s in specs]
    groups: dict = {}
    for i, s in enumerate(specs):
        groups.setdefault(stack_key(dataclasses.replace(s, cfg=dataclasses.replace(s.cfg, seed=0))), []).append(i)
    costs = [run_cost(s) for s in specs]
    useful = sum(int(s.row_steps.sum()) for s in steps)
    print(f"FedProx synthetic study: {len(specs)} runs in {len(groups)} groups, {rounds} rounds, "
          f"{useful:,} client minibatch steps in all")
    print("| stacks per group | dealt | ragged chain | static chain, block 1 / 20 / 200 | padded row-steps, "
          "block 1 / 20 / 200 |")
    print("|---|---|---|---|---|")
    for pieces in (1, 2, 4, 7):
        for name, how in (("cost round robin", "rr"), ("by size, contiguous", "size")):
            if pieces == 1 and how == "size":
                continue
            stacks = []
            for g in groups.values():
                if how == "rr":
                    stacks += round_robin(sorted(g, key=lambda i: -costs[i].rows), pieces)
                else:
                    stacks += contiguous(sorted(g, key=lambda i: -int(steps[i].max_steps.max())), pieces)
            statics = " / ".join(f"{chain(steps, stacks, b):,}" for b in (1, 20, 200))
            pads = " / ".join(f"{padded_row_steps(steps, stacks, b):,}" for b in (1, 20, 200))
            print(f"| {pieces} | {name} | {chain(steps, stacks, None):,} | {statics} | {pads} |")


if __name__ == "__main__":  # pragma: no cover
    main()
