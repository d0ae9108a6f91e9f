"""A run's schedule for a block of rounds, computed before any of them runs: who can train, who is selected, who
straggles, how many local steps each client takes and on which minibatches (fedbench.engine.sampling).

Every draw comes from a (seed, round, purpose) stream (fedbench.seeding), so round r's schedule depends on the
run's settings and r alone, never on the rounds before it: the schedule of rounds [r0, r0 + B) computed at once
equals the one computed round by round, for any B and from any r0, a resume point included (tested). Computing
it for a block lets the engine pad a stack's local steps to one static shape for the whole block
(fedbench.engine.static) and move the block's minibatch indices to the device in one copy.

What an algorithm decides from its state is not scheduled ahead: a ``choose_clients`` hook (FedLaAvg picks the
clients absent longest) leaves the round's selection to the round itself, and a ``filter_cohort`` hook (Delta-FL
weighs the selected clients by their losses at the current model) leaves the cohort's weights and its dropped
clients to it. For those rounds the block holds what is known (the availability mask, the selection where the
algorithm does not choose) and a bound on the local steps of any client that may train, so that the static shape
still covers the round.

Deviation from a GPU-resident schedule (issue 31, item 3: "on the device where it helps"): the draws are numpy's
(the streams every other part of fedbench reads), made on the host; the block's indices then travel to the device
once per block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedbench.engine.sampling import RoundPlan, minibatch_order, plan_round


@dataclass(frozen=True)
class RoundWork:
    """One run's local work in one round, in the engine's work-sorted order (most local steps first, stable)."""

    clients: np.ndarray  # [K] dataset indices
    epochs: np.ndarray  # [K] local epochs
    steps: np.ndarray  # [K] local steps
    weights: np.ndarray  # [K] aggregation weights before normalisation
    batches: np.ndarray  # [sum(steps), batch_size] indices into the stack's inputs (padding -1), client after client


@dataclass(frozen=True)
class RoundDraw:
    """What round ``round`` of a run draws before any local work: ``work`` is None where a state hook of the
    algorithm decides the cohort (module docstring); ``max_steps`` and ``max_clients`` bound the round's
    local work (exact where ``work`` is known)."""

    round: int
    available: np.ndarray  # bool [N]: clients that can be selected (available, with training data)
    plan: RoundPlan | None  # the selection and stragglers; None where the algorithm chooses its clients
    work: RoundWork | None
    max_steps: int
    max_clients: int


def draw_round(run, r: int) -> RoundDraw:
    """Round ``r`` of ``run`` (a fedbench.engine.round.RunState) as far as its streams decide it."""
    cfg, sizes, algorithm = run.cfg, run.sizes, run.algorithm
    available = run.availability.mask(cfg.seed, r) & (sizes > 0)  # a client without training data never trains
    k = min(cfg.clients_per_round, int(available.sum()))
    plan = None
    if not hasattr(algorithm, "choose_clients"):
        plan = plan_round(cohort_seed(cfg), r, sizes, cfg.clients_per_round, cfg.sampling, cfg.straggler_fraction,
                          cfg.local_epochs, cfg.straggler_epochs, available=available, batch_size=cfg.batch_size)
    work = None
    if plan is not None and not hasattr(algorithm, "filter_cohort"):
        keep = np.ones(len(plan.clients), bool) if algorithm.keeps_partial_work else ~plan.straggler
        work = local_work(run, r, plan.clients[keep], plan.epochs[keep], plan.weights[keep],
                          None if plan.steps is None else plan.steps[keep])
    if work is not None:
        max_steps = int(work.steps.max()) if len(work.steps) else 0
    else:  # any available client could train its full local work
        max_steps = int(client_steps(cfg, sizes[available], np.full(int(available.sum()), cfg.local_epochs))[0].max(
            initial=0))
    return RoundDraw(round=r, available=available, plan=plan, work=work, max_steps=max_steps,
                     max_clients=k if work is None else len(work.clients))


def schedule_block(run, r0: int, count: int) -> list[RoundDraw]:
    """Rounds r0, ..., r0 + count - 1 of ``run`` (those before cfg.rounds), each as :func:`draw_round` draws it."""
    if count < 1:
        raise ValueError(f"a block of rounds needs count >= 1, got {count}")
    return [draw_round(run, r) for r in range(r0, min(r0 + count, run.cfg.rounds))]


def cohort_seed(cfg) -> int:
    """The seed of the clients' and stragglers' draws (SimulationConfig.cohort_seed; None: the run's seed)."""
    return cfg.seed if cfg.cohort_seed is None else cfg.cohort_seed


def client_steps(cfg, sizes: np.ndarray, epochs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(steps, epochs) of clients with ``sizes`` training samples and ``epochs`` local epochs: ceil(n_k / B) steps
    an epoch, or exactly cfg.local_steps steps (cycling through fresh permutations: FedLaAvg's local iterations)."""
    per_epoch = -(-sizes // cfg.batch_size)
    if cfg.local_steps:
        steps = np.where(per_epoch > 0, cfg.local_steps, 0)
        return steps, -(-steps // np.maximum(per_epoch, 1))
    return epochs * per_epoch, epochs


def local_work(run, r: int, clients: np.ndarray, epochs: np.ndarray, weights: np.ndarray,
               allowed: np.ndarray | None = None) -> RoundWork:
    """The work-sorted local work of ``clients`` (with their drawn epochs and weights) in round ``r`` of ``run``:
    their step counts (at most ``allowed``, the plan's steps where stragglers are cut in minibatch steps: the first
    steps of the full schedule) and every step's minibatch, from the (seed, round, 'minibatch', client) streams."""
    cfg, sizes, data = run.cfg, run.sizes, run.data
    steps, epochs = client_steps(cfg, sizes[clients], epochs)
    if allowed is not None:
        steps = np.minimum(steps, allowed)
    order = np.argsort(-steps, kind="stable")  # most local steps first, so active clients form a prefix
    clients, epochs, weights, steps = clients[order], epochs[order], weights[order], steps[order]
    parts = [np.zeros((0, cfg.batch_size), np.int64)]
    for c, e, s in zip(clients, epochs, steps):
        local_idx = minibatch_order(cfg.seed, r, int(c), int(sizes[c]), int(e), cfg.batch_size)[:s]
        parts.append(np.where(local_idx >= 0, local_idx + (data.train_offsets[c] + run.base), -1))
    return RoundWork(clients=clients, epochs=epochs, steps=steps, weights=weights, batches=np.concatenate(parts))
