"""The closed-form proximal step of FedProxVR against its definition, solved numerically."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from fedbench.proximal import prox_squared_distance


@pytest.mark.parametrize("eta,mu", [(0.1, 0.5), (1.0, 3.0), (0.02, 0.01)])
def test_closed_form_is_the_argmin(eta, mu):
    g = np.random.default_rng(0)
    x, anchor = g.normal(size=7), g.normal(size=7)

    def objective(w):  # h(w) + ||w - x||^2 / (2 eta), h(w) = (mu/2)||w - anchor||^2
        return 0.5 * mu * np.sum((w - anchor) ** 2) + np.sum((w - x) ** 2) / (2 * eta)

    numeric = minimize(objective, np.zeros(7), method="BFGS", options={"gtol": 1e-10}).x
    closed = prox_squared_distance(torch.from_numpy(x), torch.from_numpy(anchor), eta, mu).numpy()
    slides = eta / (1 + eta * mu) * (mu * anchor + x / eta)  # the form printed in the FedProxVR slides
    np.testing.assert_allclose(closed, slides, rtol=0, atol=1e-12)
    np.testing.assert_allclose(closed, numeric, rtol=0, atol=1e-6)


def test_rowwise_and_limits():
    x = torch.tensor([[1.0, -2.0], [3.0, 0.5]])
    anchor = torch.tensor([0.5, 0.5])
    both = prox_squared_distance(x, anchor, 0.5, 2.0)
    for i in range(2):
        torch.testing.assert_close(both[i], prox_squared_distance(x[i], anchor, 0.5, 2.0))
    assert torch.equal(prox_squared_distance(x, anchor, 0.5, 0.0), x)  # mu = 0: no pull
    far = prox_squared_distance(x, anchor, 0.5, 1e9)  # mu -> infinity: the anchor
    torch.testing.assert_close(far, anchor.expand_as(x), rtol=0, atol=1e-6)
    with pytest.raises(ValueError):
        prox_squared_distance(x, anchor, 0.0, 1.0)
