"""Timing several ways of doing the same work in one process, in turn, so that other jobs on a shared machine
slow all of them alike."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Timed:
    """Per-round seconds and samples of one path."""

    seconds: tuple[float, ...]
    samples: tuple[int, ...]

    @property
    def rates(self) -> np.ndarray:
        return np.asarray(self.samples, dtype=np.float64) / np.asarray(self.seconds)

    @property
    def samples_per_s(self) -> float:
        return float(np.median(self.rates))

    @property
    def round_s(self) -> float:
        return float(np.median(self.seconds))


def time_interleaved(paths: dict[str, Callable[[], int]], min_time: float, max_reps: int,
                     lead: str | None = None) -> dict[str, Timed]:
    """Each path is a callable that runs one round and returns the samples it trained. One warm-up round each,
    then rounds taken in turn (A B C A B C ...) until the ``lead`` path (default: the first) has ``min_time``
    seconds of timed rounds (at least one round) or ``max_reps`` rounds."""
    lead = lead or next(iter(paths))
    for fn in paths.values():
        fn()
    seconds: dict[str, list[float]] = {name: [] for name in paths}
    samples: dict[str, list[int]] = {name: [] for name in paths}
    while len(seconds[lead]) < max_reps and (not seconds[lead] or sum(seconds[lead]) < min_time):
        for name, fn in paths.items():
            t0 = time.perf_counter()
            n = fn()
            seconds[name].append(time.perf_counter() - t0)
            samples[name].append(int(n))
    return {name: Timed(tuple(seconds[name]), tuple(samples[name])) for name in paths}


def median_ratio(a: Timed, b: Timed) -> float:
    """Median over rounds of a's samples/s over b's (rounds taken in turn, so each pair saw the same load)."""
    return float(np.median(a.rates / b.rates))
