"""The proximal operator of the squared-distance penalty h(w) = (mu/2)||w - anchor||^2, in closed form.

FedProxVR (Dinh et al., ICPP 2020; the talk slides, "Algorithm Design"):

    prox_{eta h}(x) = argmin_w  h(w) + (1/(2 eta)) ||w - x||^2
                    = (eta / (1 + eta mu)) (mu anchor + x / eta)
                    = (x + eta mu anchor) / (1 + eta mu)

(set the gradient mu (w - anchor) + (w - x)/eta to zero). The last form is what is computed; it is the
same number and avoids dividing by eta. Row-wise: x [a, P] or [P], anchor broadcasting against it.
"""

from __future__ import annotations

import torch


def prox_squared_distance(x: torch.Tensor, anchor: torch.Tensor, eta: float, mu: float) -> torch.Tensor:
    """argmin_w (mu/2)||w - anchor||^2 + ||w - x||^2 / (2 eta)."""
    if eta <= 0 or mu < 0:
        raise ValueError(f"the proximal step needs eta > 0 and mu >= 0, got eta={eta}, mu={mu}")
    if mu == 0:
        return x
    return (x + (eta * mu) * anchor) / (1.0 + eta * mu)  # plain operations: row-independent
