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
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fedbench.bench.work import client_steps
from fedbench.engine.sampling import plan_round
from fedbench.engine.static import BUCKET_GROWTH, bucketed_row_steps


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
    (fedbench.bench.workload.group_stacks), from its drawn schedule."""
    from fedbench.bench.studies import fedprox_study
    from fedbench.bench.workload import group_stacks
    from fedbench.engine.simulation import RunSpec

    w = fedprox_study(seeds)
    total = rounds or w.rounds
    specs = [RunSpec(w.config(r, total, "cpu"), w.dataset(r.dataset), w.algorithm(r)) for r in w.runs]
    counts = {"useful": 0, "lockstep": 0, "bucketed": 0}
    for stack in group_stacks(specs, tuple(range(len(specs)))):
        runs = [(specs[i].cfg, specs[i].dataset.train.sizes, specs[i].algorithm.keeps_partial_work) for i in stack]
        for k, v in stack_padding(runs, total).items():
            counts[k] += v
    return {**ratios(counts), "runs": len(specs), "rounds": total}
