"""How far two floating-point evaluations of the same sums may differ: the tolerance of every test that compares
two implementations (or two kernel paths) of one computation, derived from the computation instead of fitted to
one machine.

A sum of n terms computed in floating point, in any order (what BLAS, oneDNN and ATen's vectorised kernels do,
each with its own blocking per instruction set), differs from the exact sum by at most gamma_n * sum|terms|,
gamma_n = n u / (1 - n u), u = eps / 2 the unit roundoff (Higham, Accuracy and Stability of Numerical Algorithms,
2nd ed., chapters 3 and 4). That worst case assumes every rounding error has the same sign; with rounding errors
independent and of mean zero it becomes lambda * sqrt(n) * u * sum|terms| to first order in u, with probability at
least 1 - 2 n exp(-lambda^2 / 2) (Higham and Mary, "A New Approach to Probabilistic Rounding Error Analysis",
SIAM J. Sci. Comput., 2019). A chain of sums (layer after layer, forward and backward) adds the errors of its
links, so n is the sum of the reduction lengths along the chain. Two implementations each within that bound of
the exact value differ by at most twice it.

LAMBDA = 6: the bound holds with probability at least 1 - 3e-4 for n up to 10^4 (2 n exp(-18) = 3.0e-4). The
scale (sum|terms|) and n are taken as maxima over the whole result, so each element's own bound is smaller than
the one asserted. A real bug (a wrong mask, weight or padding slot) moves elements by the size of the terms
themselves, 1 / (2 LAMBDA sqrt(n) u) times the scale: about 10^4 times the bound for float32 at n = 10^4.
"""

from __future__ import annotations

import math

import torch

LAMBDA = 6.0


def unit_roundoff(dtype: torch.dtype) -> float:
    """u = eps / 2: 6.0e-8 for float32, 1.1e-16 for float64."""
    return torch.finfo(dtype).eps / 2


def two_evaluations_bound(n: int, scale: float, dtype: torch.dtype) -> float:
    """The largest difference allowed between two evaluations in ``dtype`` of sums of total length ``n`` whose
    terms have absolute values summing to at most ``scale``: 2 * LAMBDA * sqrt(n) * u * scale."""
    return 2 * LAMBDA * math.sqrt(n) * unit_roundoff(dtype) * scale
