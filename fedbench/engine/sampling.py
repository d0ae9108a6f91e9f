"""Which clients train in a round, with which aggregation weights, and how much local work each does.

Every draw comes from fedbench.seeding streams keyed by (seed, round, purpose), so two algorithms run with
the same seed select the same clients and the same stragglers (FedProx section 5.1: "we fix the randomly
selected devices, the stragglers, and mini-batch orders across all runs").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedbench.seeding import rng

SAMPLING_SCHEMES = ("uniform", "proportional")
STRAGGLER_EPOCHS = ("authors_code", "paper", "minibatches")


@dataclass(frozen=True)
class RoundPlan:
    """The cohort of one round. Arrays are in selection order; ``epochs`` is the local work of each client
    (E for the active ones, fewer for stragglers), ``straggler`` marks the clients with partial work; ``steps``
    caps each client's local steps where stragglers are cut in minibatch steps (straggler_epochs 'minibatches';
    None: the epochs decide)."""

    clients: np.ndarray  # [K] dataset indices
    straggler: np.ndarray  # [K] bool
    epochs: np.ndarray  # [K] int
    weights: np.ndarray  # [K] aggregation weight of each client if its update is received
    steps: np.ndarray | None = None  # [K] int: local steps allowed, or None


def select_clients(seed: int, round_: int, sizes: np.ndarray, k: int, scheme: str,
                   available: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pick ``k`` clients among the available ones, and their aggregation weights (before dropping any).

    - ``uniform``: K clients uniformly without replacement, updates averaged with weights n_k (the
      FedProx experiments, section 5.1 and appendix C.2, after McMahan et al.).
    - ``proportional``: K clients drawn with probability p_k = n_k / n, then a simple average (FedProx
      Algorithms 1 and 2). Deviation: drawn without replacement so a client trains once per round.

    ``available`` (bool [N], default all) restricts the draw to the available clients, and K becomes
    min(K, #available) (as Delta-FL's and FedLaAvg's code: "num_clients = min(num_clients, len(possible))").
    With every client available the draws are exactly those of the unrestricted selection.
    """
    n = len(sizes)
    if not 1 <= k <= n:
        raise ValueError(f"clients_per_round={k} must be between 1 and the number of clients ({n})")
    pool = np.arange(n) if available is None else np.flatnonzero(available)
    if available is not None and len(available) != n:
        raise ValueError(f"availability mask has {len(available)} entries for {n} clients")
    k = min(k, len(pool))
    if k == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    g = rng(seed, round_, "select")
    if scheme == "uniform":
        picked = g.choice(len(pool), size=k, replace=False)
    elif scheme == "proportional":
        picked = g.choice(len(pool), size=k, replace=False, p=sizes[pool] / sizes[pool].sum())
    else:
        raise ValueError(f"unknown sampling scheme {scheme!r}; allowed: {list(SAMPLING_SCHEMES)}")
    clients = np.sort(pool[picked])
    return clients, aggregation_weights(sizes, clients, scheme)


def aggregation_weights(sizes: np.ndarray, clients: np.ndarray, scheme: str) -> np.ndarray:
    """The weights :func:`select_clients` gives a cohort: n_k under ``uniform``, equal under ``proportional``."""
    if scheme == "uniform":
        return sizes[clients].astype(np.float64)
    if scheme == "proportional":
        return np.ones(len(clients))
    raise ValueError(f"unknown sampling scheme {scheme!r}; allowed: {list(SAMPLING_SCHEMES)}")


def draw_stragglers(seed: int, round_: int, k: int, fraction: float, local_epochs: int,
                    mode: str = "authors_code") -> tuple[np.ndarray, np.ndarray]:
    """Mark stragglers among ``k`` selected clients and draw their epochs.

    As the authors' code (flearn/trainers/fedprox.py): round(K (1 - fraction)) clients chosen uniformly
    stay active and run E epochs; every other one is a straggler running e ~ U{1, ..., E-1} epochs
    (numpy's randint(1, E), upper bound exclusive). ``mode='paper'`` draws e ~ U{1, ..., E} as section 5.2
    says. ``mode='minibatches'`` keeps every client's E epochs here: its stragglers are cut in minibatch steps
    (:func:`straggler_steps`), which E = 1 needs (Figures 9 and 10). Python's round() is used, as in the authors'
    code (0.5 stragglers of K=10: 5 active).
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"straggler fraction {fraction} must be in [0, 1]")
    if mode not in STRAGGLER_EPOCHS:
        raise ValueError(f"unknown straggler_epochs {mode!r}; allowed: {list(STRAGGLER_EPOCHS)}")
    g = rng(seed, round_, "stragglers")
    n_active = int(round(k * (1.0 - fraction)))
    straggler = np.ones(k, dtype=bool)
    straggler[g.choice(k, size=n_active, replace=False)] = False
    epochs = np.full(k, local_epochs, dtype=np.int64)
    n_strag = int(straggler.sum())
    if n_strag:
        if mode == "minibatches":
            pass  # E epochs, cut in steps by straggler_steps
        elif mode == "authors_code":
            if local_epochs < 2:
                raise ValueError("straggler_epochs='authors_code' needs local_epochs >= 2 "
                                 "(randint(1, E) is empty for E=1); use straggler_epochs='paper'")
            epochs[straggler] = g.integers(1, local_epochs, size=n_strag)
        else:  # "paper"
            epochs[straggler] = g.integers(1, local_epochs + 1, size=n_strag)
    return straggler, epochs


def straggler_steps(seed: int, round_: int, straggler: np.ndarray, full_steps: np.ndarray) -> np.ndarray:
    """The local steps each client may take when stragglers are cut in minibatch steps (straggler_epochs
    'minibatches'): an active client its ``full_steps`` S_k (E epochs of ceil(n_k / B) steps), a straggler
    s ~ U{1, ..., S_k - 1}, the authors' U{1..E-1} epochs at the granularity of minibatches, the rule
    fedbench.studies.fedprox_stragglers applies on synthetic data (the paper does not say how its E = 1 runs drew
    the stragglers' work); a straggler with S_k = 1 runs its one step. Its own (seed, round, 'stragglers', 1)
    stream, so the clients and stragglers drawn are those of every other mode."""
    full = np.asarray(full_steps, dtype=np.int64)
    g = rng(seed, round_, "stragglers", 1)
    cut = np.asarray(straggler, bool) & (full > 1)
    steps = full.copy()
    steps[cut] = g.integers(1, full[cut])  # upper bound exclusive: 1..S_k-1
    return steps


def plan_round(seed: int, round_: int, sizes: np.ndarray, k: int, scheme: str, straggler_fraction: float,
               local_epochs: int, straggler_epochs: str = "authors_code", available: np.ndarray | None = None,
               chosen: np.ndarray | None = None, batch_size: int | None = None) -> RoundPlan:
    """The cohort of one round: selected among the ``available`` clients (default all), or the clients an
    algorithm ``chosen`` itself (weighted as the scheme weights them), then stragglers among them (in minibatch
    steps of ``batch_size`` where ``straggler_epochs`` is 'minibatches')."""
    if chosen is None:
        clients, weights = select_clients(seed, round_, sizes, k, scheme, available)
    else:
        clients = np.asarray(chosen, dtype=np.int64)
        weights = aggregation_weights(sizes, clients, scheme)
    straggler, epochs = draw_stragglers(seed, round_, len(clients), straggler_fraction, local_epochs, straggler_epochs)
    steps = None
    if straggler_epochs == "minibatches":
        if batch_size is None:
            raise ValueError("straggler_epochs='minibatches' cuts stragglers in minibatch steps: plan_round needs "
                             "batch_size")
        steps = straggler_steps(seed, round_, straggler, epochs * -(-sizes[clients] // batch_size))
    return RoundPlan(clients=clients, straggler=straggler, epochs=epochs, weights=weights, steps=steps)


def minibatch_order(seed: int, round_: int, client_id: int, num_samples: int, epochs: int,
                    batch_size: int) -> np.ndarray:
    """Sample indices for ``epochs`` passes over a client's data, as [steps, batch_size] with -1 padding.

    Each epoch is a fresh permutation cut into ceil(n / B) batches, the last one partial (as the authors'
    batch_data). Drawn from the (seed, round, 'minibatch', client) stream, so a client sees the same batches
    under every algorithm, and a straggler's e epochs are the first e epochs of the full schedule.
    """
    g = rng(seed, round_, "minibatch", client_id)
    per_epoch = -(-num_samples // batch_size)
    out = np.full((epochs, per_epoch * batch_size), -1, dtype=np.int64)
    # one permutation per epoch, row after row: the same draws as ``epochs`` calls of g.permutation(n)
    out[:, :num_samples] = g.permuted(np.broadcast_to(np.arange(num_samples), (epochs, num_samples)), axis=1)
    return out.reshape(epochs * per_epoch, batch_size)
