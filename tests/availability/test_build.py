"""AvailabilityConfig -> availability model, and the config's own checks."""

import numpy as np
import pytest

from fedbench.availability import (
    AlwaysAvailable,
    AvailabilityConfig,
    DiurnalAvailability,
    RandomDropout,
    TraceAvailability,
    build_availability,
)
from tests.algorithms.handmade import handmade_dataset


def test_builds_each_model(tmp_path):
    ds = handmade_dataset()  # 3 clients, 2 classes; majority labels 0, 1, 0 (client c: 0, 0, 1, 1 -> tie -> 0)
    assert isinstance(build_availability(AvailabilityConfig(), ds), AlwaysAvailable)
    diurnal = build_availability(AvailabilityConfig(model="diurnal", period=2, beta=0.5), ds)
    assert isinstance(diurnal, DiurnalAvailability)
    np.testing.assert_array_equal(diurnal.groups, [0, 1, 0])
    given = build_availability(AvailabilityConfig(model="diurnal", period=2, beta=0.5, groups=(1, 1, 0)), ds)
    np.testing.assert_array_equal(given.groups, [1, 1, 0])
    assert isinstance(build_availability(AvailabilityConfig(model="dropout", probability=0.5), ds), RandomDropout)
    path = tmp_path / "t.csv"
    path.write_text("client_id,available_from,available_to\nb,0,3\n")
    trace = build_availability(AvailabilityConfig(model="trace", trace=str(path)), ds)
    assert isinstance(trace, TraceAvailability)
    np.testing.assert_array_equal(trace.mask(0, 2), [False, True, False])


def test_config_errors():
    with pytest.raises(ValueError, match="availability.model"):
        AvailabilityConfig(model="sometimes")
    with pytest.raises(ValueError, match="never be available"):
        AvailabilityConfig(model="diurnal", period=1, beta=0.5)
    with pytest.raises(ValueError, match="probability"):
        AvailabilityConfig(model="dropout", probability=-0.1)
    with pytest.raises(ValueError, match="needs the path"):
        AvailabilityConfig(model="trace")
    with pytest.raises(ValueError, match="3 clients"):
        build_availability(AvailabilityConfig(model="diurnal", groups=(0, 1)), handmade_dataset())
