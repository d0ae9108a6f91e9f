"""Weighted quantiles and superquantiles of a few scalars (per-client losses), written once.

Delta-FL (Pillutla, Laguel, Malick, Harchaoui, "Device Heterogeneity in Federated Learning: A Superquantile
Approach", arXiv 2002.11223, section 3, Property 2) uses, for losses F_i with weights alpha_i and a
conformity level theta in (0, 1]:

    F_theta = max { sum_i pi_i F_i : pi in the simplex, pi_i <= alpha_i / theta }                 (1)
            = min_eta  eta + (1 / theta) sum_i alpha_i (F_i - eta)_+                             (2)

and the minimising eta is the alpha-weighted (1 - theta)-quantile of the F_i. Everything here works in the
units of the given weights (n_i, the clients' sample counts) rather than normalised alpha_i = n_i / n: with
integer counts the sums are exact in float64, so theta = 1 gives back the counts bit for bit.
"""

from __future__ import annotations

import numpy as np

# Relative slack when comparing a cumulative weight with p * total: (1 - theta) * n is often an integer
# that floating point lands just above (1 - 0.7 = 0.30000000000000004), which would skip a client.
REL_TOL = 1e-12


def _check(values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, weights = np.asarray(values, np.float64), np.asarray(weights, np.float64)
    if values.ndim != 1 or values.shape != weights.shape or len(values) == 0:
        raise ValueError(f"need matching non-empty 1-D values and weights, got {values.shape} and {weights.shape}")
    if np.any(weights < 0) or not np.all(np.isfinite(weights)) or weights.sum() <= 0:
        raise ValueError("weights must be finite, non-negative and not all zero")
    return values, weights


def weighted_quantile(values, weights, p: float) -> float:
    """The lower weighted p-quantile: the smallest v_j with sum_{i: v_i <= v_j} w_i >= p sum_i w_i.

    For integer weights this is the authors' quantile (simplicial-fl models/server.py): each value repeated
    w_i times, sorted, element ceil(p n) - 1, and the smallest value when p = 0. Zero-weight values are
    ignored, as a value repeated zero times would be.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"quantile level p={p} must be in [0, 1]")
    values, weights = _check(values, weights)
    keep = weights > 0
    values, weights = values[keep], weights[keep]
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    target = p * cumulative[-1] * (1.0 - REL_TOL)
    j = int(np.searchsorted(cumulative, target, side="left"))
    return float(values[order[min(j, len(values) - 1)]])


def superquantile_weights(values, weights, theta: float) -> np.ndarray:
    """The maximising pi of (1), scaled to sum to sum_i w_i: clients in decreasing order of value get their
    cap w_i / theta until the mass runs out; the boundary client (the one at the (1 - theta)-quantile) gets
    the fractional remainder, everyone below it 0. Ties are broken by position (stable), which changes
    which tied client gets the remainder but not the value of (1).
    """
    if not 0.0 < theta <= 1.0:
        raise ValueError(f"conformity level theta={theta} must be in (0, 1]")
    values, weights = _check(values, weights)
    order = np.argsort(-values, kind="stable")
    cap = weights[order] / theta
    before = np.concatenate([[0.0], np.cumsum(cap)[:-1]])  # mass given to larger values
    out = np.empty_like(values)
    out[order] = np.clip(weights.sum() - before, 0.0, cap)
    return out


def superquantile(values, weights, theta: float) -> float:
    """F_theta of (1): the pi-weighted mean with the weights of :func:`superquantile_weights`."""
    values, weights = _check(values, weights)
    pi = superquantile_weights(values, weights, theta)
    return float(pi @ values / weights.sum())
