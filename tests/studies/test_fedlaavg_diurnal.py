"""FedLaAvg diurnal study: the one-class partition and its groups, and a shortened run of the study."""

import numpy as np
import pytest

from fedbench.availability import majority_label_groups
from fedbench.studies import fedlaavg_diurnal as study
from tests.studies import assert_every_run_recorded, assert_valid_entries, spy_simulate


def test_one_class_clients_and_groups():
    ds = study.dataset()
    assert ds.num_clients == 100 and ds.train.sizes.sum() == 6000 and ds.test.sizes.sum() == 1000
    for k in range(ds.num_clients):
        _, y = ds.train.client(k)
        assert np.all(y == k // study.CLIENTS_PER_CLASS)
    sizes = ds.train.sizes.reshape(10, 10)
    assert sizes.min() >= 600 * 3 / 70 - 1 and sizes.max() <= 600 * 7 / 30 + 1  # weights clipped to [3, 7]
    np.testing.assert_array_equal(majority_label_groups(ds), np.repeat([0, 1], 50))  # classes 0-4 vs 5-9


def test_short_run_writes_claims_and_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "ROUNDS", 15)
    calls = spy_simulate(monkeypatch)
    claims = study.run(tmp_path, workers=1, seeds=(0, 1))
    assert_every_run_recorded(tmp_path, calls)
    assert_valid_entries(claims)
    assert [c["id"] for c in claims] == ["fedlaavg/synthetic/diurnal-gain"]  # CIFAR-10: fedlaavg_cifar10
    gain = claims[0]
    assert gain["fidelity"] == "smoke-check" and (gain["rounds_run"], gain["rounds_paper"]) == (15, 70000)
    assert gain["effect"]["n"] == 2 and gain["seeds"]["training"] == [0, 1]
    best = gain["reproduced"]
    assert gain["effect"]["per_seed"] == [pytest.approx(a - b, abs=1e-4) for a, b in
                                          zip(best["fedlaavg_best"], best["fedavg_best"])]
    assert (tmp_path / "fedlaavg_diurnal.png").stat().st_size > 10_000
