"""Padded row-steps over useful ones, counted from a stack's drawn rounds (issue 53's Targets: "padded row-steps /
useful <= 1.25, CNN and recurrent stacks"; design D4 of ../shared/reference/gpu-design.md).

Each round of a stack's runs is planned as the engine plans it (fedbench.engine.sampling.plan_round, the steps of
fedbench.bench.work.client_steps; stragglers dropped where the algorithm drops them), and its rows are the runs'
cohorts together. Counted per round and summed:

- ``useful``: the client minibatch steps taken, sum_k s_k;
- ``lockstep``: what the static path computes today, every row every step of the round's largest client,
  T x K (its own rows: the round loop's block rows can only add more);
- ``bucketed``: every step t on the smallest row bucket holding its a_t active rows (rows sorted by steps:
  fedbench.engine.static.bucketed_row_steps, buckets fedbench.engine.static.bucket_sizes).

The ratios are ``lockstep / useful`` and ``bucketed / useful``. ``bucketed`` is the eager static path's count at
the round's own rows; the captured path pays a little more (each GRAPH_STEPS steps at their first step's bucket,
fedbench.engine.capture), and so does a block whose rows exceed the round's (its largest bucket is the block's).

Runs out of phase (issue 53, item 4: "a run starts its next round when its own clients finish"; D4), a count only
(the engine's round loop still runs a stack's runs in lockstep), from the same drawn rounds:

- ``out_of_phase``: each run's round at its own rows for its own largest client's steps, and no run waits for
  another's (a run whose rounds are done computes nothing): sum over runs and rounds of max_k s_k x K_run;
- ``out_of_phase_bucketed``: the stack's runs on one step axis, each run's round r starting when its round r - 1's
  largest client ends (aggregation costs no step here), and each step on the smallest row bucket of the stack's
  row slots (the runs' largest cohorts together) that holds the rows active then, sum_t bucket(a_t): what a task
  table of (run, round, client) segments packed onto row slots would compute;
- ``lockstep_chain`` and ``out_of_phase_chain``: the steps one after another, sum over rounds of the stack's largest
  client against the longest run's own chain (fedbench.bench.lockstep.out_of_phase_chain's count).

Ratios ``out_of_phase / useful`` and ``out_of_phase_bucketed / useful``; all counts are row-steps computed,
padding included (so 1.0 is no padding), as the lockstep ones.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fedbench.bench.work import client_steps
from fedbench.engine.sampling import plan_round
from fedbench.engine.static import BUCKET_GROWTH, bucket_sizes, bucketed_row_steps


def round_steps(cfg, sizes: np.ndarray, keeps_partial_work: bool, round_: int) -> np.ndarray:
    """The local steps of each client of round ``round_`` of a run with SimulationConfig ``cfg`` (as
    fedbench.bench.work.planned_work plans them)."""
    plan = plan_round(cfg.seed if cfg.cohort_seed is None else cfg.cohort_seed, round_, sizes, cfg.clients_per_round,
                      cfg.sampling, cfg.straggler_fraction, cfg.local_epochs, cfg.straggler_epochs,
                      batch_size=cfg.batch_size)
    keep = np.ones(len(plan.clients), bool) if keeps_partial_work else ~plan.straggler
    steps = client_steps(sizes[plan.clients[keep]], cfg.batch_size, plan.epochs[keep], cfg.local_steps)
    return steps if plan.steps is None else np.minimum(steps, plan.steps[keep])


def stack_padding(runs: list[tuple[Any, np.ndarray, bool]], rounds: int,
                  growth: float = BUCKET_GROWTH) -> dict[str, int]:
    """``runs``: (cfg, sizes, keeps_partial_work) of each run of one stack; its useful, lockstep and bucketed
    row-steps over ``rounds`` rounds (module docstring)."""
    useful = lockstep = bucketed = 0
    for r in range(rounds):
        steps = np.concatenate([round_steps(cfg, sizes, keeps, r) for cfg, sizes, keeps in runs])
        if not len(steps):
            continue
        useful += int(steps.sum())
        lockstep += int(steps.max()) * len(steps)
        bucketed += bucketed_row_steps(steps, len(steps), growth)
    return {"useful": useful, "lockstep": lockstep, "bucketed": bucketed}


def out_of_phase_padding(runs: list[tuple[Any, np.ndarray, bool]], rounds: int,
                         growth: float = BUCKET_GROWTH) -> dict[str, int]:
    """``runs`` as :func:`stack_padding`'s; their useful row-steps, and the row-steps and chains if each run started
    its next round when its own clients finished (module docstring: out_of_phase, out_of_phase_bucketed,
    lockstep_chain, out_of_phase_chain)."""
    useful = own = slots = 0
    starts, ends, longest = [], [], np.zeros(rounds, np.int64)
    for cfg, sizes, keeps in runs:
        clock, widest = 0, 0
        for r in range(rounds):
            steps = round_steps(cfg, sizes, keeps, r).astype(np.int64)
            if not len(steps):
                continue
            useful += int(steps.sum())
            own += int(steps.max()) * len(steps)
            starts.append(np.full(len(steps), clock))
            ends.append(clock + steps)
            longest[r] = max(longest[r], int(steps.max()))
            clock += int(steps.max())
            widest = max(widest, len(steps))
        slots += widest
    out = {"useful": useful, "out_of_phase": own, "out_of_phase_bucketed": 0, "lockstep_chain": int(longest.sum()),
           "out_of_phase_chain": 0}
    if not starts:
        return out
    # a_t, the rows active at step t: +1 where a client's span starts, -1 where it ends; constant between events
    times = np.concatenate(starts + ends)
    change = np.concatenate([np.ones(len(times) // 2, np.int64), -np.ones(len(times) // 2, np.int64)])
    order = np.argsort(times, kind="stable")
    times, active = times[order], np.cumsum(change[order])
    at, last = np.unique(times[::-1], return_index=True)  # each event time, and the last event at it
    active = active[len(times) - 1 - last][:-1]  # a_t from each event time to the next
    span = np.diff(at)
    buckets = np.array(bucket_sizes(slots, growth))
    rows = np.where(active > 0, buckets[np.searchsorted(buckets, active)], 0)
    out["out_of_phase_bucketed"] = int((rows * span).sum())
    out["out_of_phase_chain"] = int(at[-1])
    return out


def ratios(counts: dict[str, int]) -> dict[str, Any]:
    return {**counts, "lockstep_ratio": counts["lockstep"] / max(counts["useful"], 1),
            "bucketed_ratio": counts["bucketed"] / max(counts["useful"], 1)}


def heavy_tailed(dataset: str, seeds: int = 5, rounds: int = 20, clients_per_round: int = 10, local_epochs: int = 20,
                 batch_size: int = 10) -> dict[str, Any]:
    """A stack of ``seeds`` FedProx runs (E 20, B 10, 10 clients a round: the FedProx paper's settings) on the
    client sizes of FedProx Table 1's ``dataset`` (fedbench.study.drawn.client_sizes: the prepared data's own
    where built, else a lognormal of the published mean and sd)."""
    from fedbench.engine.simulation import SimulationConfig
    from fedbench.study.drawn import client_sizes

    sizes, source = client_sizes(f"fedprox_{dataset}", None)
    cfg = SimulationConfig(rounds=rounds, clients_per_round=clients_per_round, local_epochs=local_epochs,
                           batch_size=batch_size, device="cpu")
    runs = [(dataclasses.replace(cfg, seed=s), sizes, True) for s in range(seeds)]
    return {**ratios(stack_padding(runs, rounds)), "dataset": dataset, "sizes": source, "runs": seeds,
            "rounds": rounds}


def synthetic_study(rounds: int | None = None, seeds: tuple[int, ...] = (0, 1, 2, 3, 4)) -> dict[str, Any]:
    """FedProx's synthetic study (fedbench.bench.studies.fedprox_study) stacked as the engine stacks it
    (fedbench.bench.workload.group_stacks), from its drawn schedule: in lockstep, at row buckets, and out of phase
    (each stack's runs advancing on their own, :func:`out_of_phase_padding`; chains summed over the stacks)."""
    from fedbench.bench.studies import fedprox_study
    from fedbench.bench.workload import group_stacks
    from fedbench.engine.simulation import RunSpec

    w = fedprox_study(seeds)
    total = rounds or w.rounds
    specs = [RunSpec(w.config(r, total, "cpu"), w.dataset(r.dataset), w.algorithm(r)) for r in w.runs]
    counts = {"useful": 0, "lockstep": 0, "bucketed": 0}
    phase = dict.fromkeys(("out_of_phase", "out_of_phase_bucketed", "lockstep_chain", "out_of_phase_chain"), 0)
    for stack in group_stacks(specs, tuple(range(len(specs)))):
        runs = [(specs[i].cfg, specs[i].dataset.train.sizes, specs[i].algorithm.keeps_partial_work) for i in stack]
        for k, v in stack_padding(runs, total).items():
            counts[k] += v
        for k, v in out_of_phase_padding(runs, total).items():
            if k != "useful":
                phase[k] += v
    useful = max(counts["useful"], 1)
    return {**ratios(counts), **phase, "out_of_phase_ratio": phase["out_of_phase"] / useful,
            "out_of_phase_bucketed_ratio": phase["out_of_phase_bucketed"] / useful, "runs": len(specs),
            "rounds": total}
