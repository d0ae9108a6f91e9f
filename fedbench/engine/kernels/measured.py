"""The measurements :func:`fedbench.engine.kernels.choose_kernel` picks from: samples/s of each execution kernel
per (model, device type) and cohort size, from ``fedbench bench`` (its JSON's ``kernel_table``: the engine's own
round, FedAvg, client batch 10, kernels timed in turn in one run).

The rule (:func:`fastest`): among the kernels measured at every cohort of the pair, those at least as fast as the
per-client loop at every cohort; of these, the one with the largest geometric-mean speed-up over the loop; the
loop when none is faster or the pair was not measured with the loop. So the chosen kernel is never slower than
the loop where it was measured. A pair not in the table falls back to the family rule in choose_kernel.

Which kernel runs changes a run's numbers within the kernels' stated tolerances (tests/engine/test_kernels.py),
so the table changes only with a new measurement, and a run records its kernel.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

# (model, device type) -> {cohort: {kernel: samples/s}}
MEASURED: dict[tuple[str, str], dict[int, dict[str, float]]] = {
    # reports/bench/bench.json: fedbench bench --quick, 2-core CPU, one torch thread (commit b84662d)
    ("mclr", "cpu"): {10: {"mclr": 294_980, "vmap": 62_315, "loop": 54_131},
                      100: {"mclr": 931_600, "vmap": 327_959, "loop": 72_600}},
    ("fedprox_shakespeare_lstm", "cpu"): {10: {"loop": 334.8, "rnn": 136.1}},
    ("fedprox_sent140_lstm", "cpu"): {10: {"loop": 1914, "rnn": 1689}, 100: {"loop": 1534, "rnn": 1041}},
    # the CNNs after issue 20's per-tensor differentiation (loop and vmap): fedbench bench --quick --parts
    # throughput --models leaf_femnist_cnn,cifar_cnn --cohorts 10,100, same machine, load average 3.3 (commit
    # f157c32). vmap is 1.26x the loop for the CIFAR CNN at cohort 100 but 0.85x at cohort 10: the loop stays
    ("leaf_femnist_cnn", "cpu"): {10: {"loop": 241.9, "vmap": 192.6}, 100: {"loop": 237.6, "vmap": 181.4}},
    ("cifar_cnn", "cpu"): {10: {"loop": 3757.7, "vmap": 3211.1}, 100: {"loop": 2407.0, "vmap": 3033.8}},
}


def fastest(measured: Mapping[int, Mapping[str, float]], allowed: Iterable[str]) -> str | None:
    """The kernel the rule above picks from one pair's measurements, among ``allowed`` (None: no loop measured)."""
    allowed = set(allowed)
    if not measured or any("loop" not in by_kernel for by_kernel in measured.values()):
        return None
    common = set.intersection(*(set(by_kernel) for by_kernel in measured.values())) & allowed
    best, best_gain = "loop", 0.0
    for kernel in sorted(common - {"loop"}):
        ratios = [by_kernel[kernel] / by_kernel["loop"] for by_kernel in measured.values()]
        if min(ratios) < 1.0:
            continue
        gain = sum(math.log(r) for r in ratios) / len(ratios)
        if gain > best_gain:
            best, best_gain = kernel, gain
    return best


def table_from_cases(cases: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """``fedbench bench``'s throughput cases as this module's table, keyed 'model/device' (JSON keys)."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    for c in cases:
        device = str(c["device"]).split(":")[0]
        table.setdefault(f"{c['model']}/{device}", {})[str(c["cohort"])] = {
            k: round(float(v["samples_per_s"]), 1) for k, v in c["kernels"].items()}
    return table
