"""Always available: every client in every round."""

import numpy as np

from fedbench.availability import AlwaysAvailable


def test_every_client_every_round():
    model = AlwaysAvailable(5)
    for r in range(4):
        mask = model.mask(seed=0, round_=r)
        assert mask.dtype == bool and mask.shape == (5,) and mask.all()
    np.testing.assert_array_equal(model.mask(1, 0), model.mask(2, 99))
