"""How much training a schedule holds, counted without running it: the samples trained and the local steps of
every client, round by round, from the engine's own round plan (fedbench.engine.sampling.plan_round), so that
measured rounds can be projected to a whole run and the floor counted exactly."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedbench.engine.sampling import plan_round


def samples_of_steps(n: np.ndarray, batch: int, steps: np.ndarray) -> np.ndarray:
    """Samples trained by ``steps`` minibatch steps over a client's ``n`` samples, in epochs of ceil(n / B)
    batches whose last one is partial (the engine's minibatch order): whole epochs hold n samples, and the
    first ``steps mod per_epoch`` batches of an epoch are full."""
    n, steps = np.asarray(n, dtype=np.int64), np.asarray(steps, dtype=np.int64)
    per_epoch = np.maximum(-(-n // batch), 1)
    epochs, rest = np.divmod(steps, per_epoch)
    return np.where(n > 0, epochs * n + np.minimum(rest * batch, n), 0)


def client_steps(n: np.ndarray, batch: int, epochs: np.ndarray, local_steps: int = 0) -> np.ndarray:
    """Local steps of clients of ``n`` samples: ``epochs`` epochs, or exactly ``local_steps`` when > 0."""
    per_epoch = -(-np.asarray(n, dtype=np.int64) // batch)
    if local_steps:
        return np.where(per_epoch > 0, local_steps, 0)
    return np.asarray(epochs, dtype=np.int64) * per_epoch


@dataclass(frozen=True)
class RoundWork:
    samples: np.ndarray  # [rounds] samples trained in each round (padding excluded)
    row_steps: np.ndarray  # [rounds] local steps summed over the round's clients
    chain: np.ndarray  # [rounds] the longest client's local steps (dependent steps of the round)


def planned_work(cfg, sizes: np.ndarray, keeps_partial_work: bool, rounds: int) -> RoundWork:
    """The work of rounds 0..rounds-1 of a run with SimulationConfig ``cfg`` on clients of ``sizes`` training
    samples, every client available (the engine drops stragglers of algorithms that do not keep partial work)."""
    samples, row_steps, chain = (np.zeros(rounds, np.int64) for _ in range(3))
    for r in range(rounds):
        plan = plan_round(cfg.seed if cfg.cohort_seed is None else cfg.cohort_seed, r, sizes, cfg.clients_per_round, cfg.sampling, cfg.straggler_fraction,
                          cfg.local_epochs, cfg.straggler_epochs, batch_size=cfg.batch_size)
        keep = np.ones(len(plan.clients), bool) if keeps_partial_work else ~plan.straggler
        n = sizes[plan.clients[keep]]
        steps = client_steps(n, cfg.batch_size, plan.epochs[keep], cfg.local_steps)
        steps = steps if plan.steps is None else np.minimum(steps, plan.steps[keep])
        samples[r] = samples_of_steps(n, cfg.batch_size, steps).sum()
        row_steps[r] = steps.sum()
        chain[r] = steps.max() if len(steps) else 0
    return RoundWork(samples=samples, row_steps=row_steps, chain=chain)
