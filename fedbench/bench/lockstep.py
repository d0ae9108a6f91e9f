"""How long a stack's lockstep chain is, counted from a study's drawn schedule (fedbench.engine.schedule): the
measurement behind the choice of how runs are dealt into stacks and how many rounds share one static shape
(issue 31, item 4: "runs in lockstep pay each round for the largest client of any run in the stack").

For a stack (a set of runs) and a block of ``block`` rounds:
- the *chain* is the local steps the stack runs one after another: on the ragged path (capture none) each round
  costs its own largest client's steps; at a static shape (capture static/cuda_graph) each round of a block
  costs the block's largest client's steps;
- the *padded row-steps* are the client minibatch steps a static shape computes and discards: per round,
  (block's largest client) x (rows: every run's largest cohort of the block) - the steps clients really take;
- the *out-of-phase chain* is the chain if each run of a stack started its next round as soon as its own ended,
  instead of waiting for the stack's longest client: the stack's longest run's own chain.

``python -m fedbench.bench.lockstep`` prints both for FedProx's 140-run synthetic study (as fedbench.bench.studies)
at 200 rounds, for its runs dealt into 1, 2, 4 and 7 stacks per group two ways: cost-sorted round robin (as
fedbench.engine.stacking.plan_stacks deals them) and sorted by each run's longest client into contiguous
pieces (runs of similar size together); and for blocks of 1, 20 and 200 rounds; and every run in one stack (the
algorithm classes merged), in lockstep and out of phase.
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


def _longest(steps: list[RunSteps], stack: list[int], block: int | None, multiple: int) -> np.ndarray:
    """[R] the stack's steps each round: its largest client's (``block``: the block's largest), rounded up to a
    multiple of ``multiple`` (a captured graph's steps)."""
    longest = np.max([steps[i].max_steps for i in stack], axis=0)
    longest = longest if block is None else _block_max(longest, block)
    return -(-longest // multiple) * multiple


def chain(steps: list[RunSteps], stacks: list[list[int]], block: int | None = None, multiple: int = 1) -> int:
    """Local steps run one after another by ``stacks`` (indices into ``steps``): each round its own largest
    client's steps (``block`` None, the ragged and the captured path) or its block's largest, rounded up to
    ``multiple``."""
    return sum(int(_longest(steps, stack, block, multiple).sum()) for stack in stacks)


def out_of_phase_chain(steps: list[RunSteps], stacks: list[list[int]]) -> int:
    """Local steps run one after another by ``stacks`` if each run of a stack started its next round as soon as its
    own round ended (its runs are independent; no round waits for another run's longest client): each stack
    lasts as long as its longest run's own chain, sum over stacks. A lower bound of :func:`chain` for the same
    stacks: no ordering of runs or clients does better, since a round cannot end before its longest client."""
    return sum(int(max(steps[i].max_steps.sum() for i in stack)) for stack in stacks)


def padded_row_steps(steps: list[RunSteps], stacks: list[list[int]], row_block: int, block: int | None = None,
                     multiple: int = 1) -> int:
    """Row-steps computed and discarded at a static shape: rows for every run's largest cohort of a block of
    ``row_block`` rounds, steps as :func:`chain` counts them."""
    total = 0
    for stack in stacks:
        rows = np.sum([_block_max(steps[i].rows, row_block) for i in stack], axis=0)
        total += int((_longest(steps, stack, block, multiple) * rows).sum() - np.sum([steps[i].row_steps for i in stack]))
    return total


def round_robin(order: list[int], pieces: int) -> list[list[int]]:
    """``order`` dealt into ``pieces`` stacks one by one (plan_stacks' g[j::n])."""
    return [order[j::pieces] for j in range(pieces)]


def contiguous(order: list[int], pieces: int) -> list[list[int]]:
    """``order`` cut into ``pieces`` consecutive stacks of about equal size."""
    return [list(p) for p in np.array_split(np.array(order), pieces) if len(p)]


# FedProx's synthetic study at the paper's settings, as fedbench.bench.studies.fedprox_study declares it (the engine
# may not import fedbench.bench; tests/bench/test_lockstep.py keeps the two equal): (dataset, algorithm, mu,
# straggler fraction, seed) of each of its 140 runs, and its settings
FEDPROX_SETTINGS = {"num_devices": 30, "clients_per_round": 10, "local_epochs": 20, "batch_size": 10, "lr": 0.01,
                    "rounds": 200}


def fedprox_synthetic_runs(seeds: tuple[int, ...] = (0, 1, 2, 3, 4)) -> list[tuple[str, str, float, float, int]]:
    runs = [(ds, alg, mu, f, s) for ds in ("synthetic_1_1", "synthetic_iid")
            for alg, mu in (("fedavg", 0.0), ("fedprox", 0.0), ("fedprox", 1.0))
            for f in (0.0, 0.1, 0.5, 0.9) for s in seeds]
    return runs + [(ds, alg, mu, 0.0, s) for ds in ("synthetic_0_0", "synthetic_0p5_0p5")
                   for alg, mu in (("fedavg", 0.0), ("fedprox", 1.0)) for s in seeds]


def main() -> None:  # pragma: no cover - a measurement, printed
    import dataclasses
    from functools import cache

    from fedbench.algorithms import FedAvg, FedProx
    from fedbench.data.synthetic import SYNTHETIC_DATASETS, generate_synthetic
    from fedbench.engine.simulation import RunSpec, SimulationConfig, build_stack, stack_key
    from fedbench.engine.stacking import run_cost
    from fedbench.models import build_model

    st = FEDPROX_SETTINGS
    rounds = st["rounds"]

    @cache
    def dataset(name: str):
        alpha, beta, iid = SYNTHETIC_DATASETS[name]
        return generate_synthetic(alpha, beta, iid, num_devices=st["num_devices"], seed=0)

    specs = [RunSpec(SimulationConfig(rounds=rounds, clients_per_round=st["clients_per_round"],
                                      local_epochs=st["local_epochs"], batch_size=st["batch_size"],
                                      straggler_fraction=f, seed=seed, device="cpu"), dataset(ds),
                     FedAvg(lr=st["lr"]) if alg == "fedavg" else FedProx(lr=st["lr"], mu=mu))
             for ds, alg, mu, f, seed in fedprox_synthetic_runs()]
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
    print("| stacks per group | dealt | chain: ragged | chain: captured (own steps, x16) | chain: steps per block "
          "of 20 | padded row-steps: captured (rows per block of 20) | padded row-steps: steps and rows per block of 20 "
          "| chain: out of phase |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
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
            print(f"| {pieces} | {name} | {chain(steps, stacks):,} | {chain(steps, stacks, multiple=16):,} | "
                  f"{chain(steps, stacks, block=20):,} | {padded_row_steps(steps, stacks, 20, multiple=16):,} | "
                  f"{padded_row_steps(steps, stacks, 20, block=20):,} | {out_of_phase_chain(steps, stacks):,} |")
    every = [list(range(len(specs)))]
    print(f"every run in one stack (the algorithm classes merged): chain {chain(steps, every):,} in lockstep, "
          f"{out_of_phase_chain(steps, every):,} out of phase")


if __name__ == "__main__":  # pragma: no cover
    main()
