"""The measurements :func:`fedbench.engine.kernels.choose_kernel` picks from: samples/s of each execution kernel
per (model, device type) and cohort size, from ``fedbench bench`` (its JSON's ``kernel_table``: the engine's own
round, FedAvg, client batch 10, kernels timed in turn in one run). :data:`PROVENANCE` says where each pair was
measured (card or CPU, date, commit, the file that holds the measurement).

The rules, for one pair's measurements:
- at a known cohort K (:func:`fastest_at`): the measurements at the largest measured cohort <= K (the smallest
  measured one when K is below them all); of the kernels measured there, the fastest; the loop when none is
  faster. Below the lower cohort's choice a batched kernel only gains with K in every pair measured (the loop's
  samples/s is flat in K, a batched kernel's grows), so taking the cohort at or below K never picks a kernel that
  was measured slower at a larger cohort than K.
- at an unknown cohort (:func:`fastest`): among the kernels measured at every cohort of the pair, those at least
  as fast as the per-client loop at every cohort; of these, the one with the largest geometric-mean speed-up over
  the loop; the loop when none is faster.
Both are None where the pair was not measured with the loop; choose_kernel then falls back to its family rule.
So the chosen kernel is never slower than the loop where it was measured at the cohort it runs. The known-cohort
rule applies on the device types of :data:`PER_COHORT` only: the CPU keeps the unknown-cohort rule at every
cohort, so that no CPU run changes kernel (and numbers) against the regression reference, although vmap was
measured 1.26x the loop for the CIFAR CNN at cohort 100 there.

Which kernel runs changes a run's numbers within the kernels' stated tolerances (tests/engine/test_kernels.py),
so the table changes only with a new measurement, and a run records its kernel.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

_CPU_B84662D = "2-core CPU, one torch thread, commit b84662d, reports/bench/bench.json (fedbench bench --quick)"
_CPU_F157C32 = ("2-core CPU, one torch thread, commit f157c32, load average 3.3 (fedbench bench --quick --parts "
                "throughput --models leaf_femnist_cnn,cifar_cnn --cohorts 10,100)")
_H200 = ("NVIDIA H200, torch 2.11.0+cu130, CUDA 13.0, 2026-11-27, commit f3d2e18, reports/bench-gpu/bench.json "
         "(its kernel_table; python -m fedbench.bench.gpucheck, quick local work)")

# (model, device type) -> {cohort: {kernel: samples/s}}
MEASURED: dict[tuple[str, str], dict[int, dict[str, float]]] = {
    ("mclr", "cpu"): {10: {"mclr": 294_980, "vmap": 62_315, "loop": 54_131},
                      100: {"mclr": 931_600, "vmap": 327_959, "loop": 72_600}},
    ("fedprox_shakespeare_lstm", "cpu"): {10: {"loop": 334.8, "rnn": 136.1}},
    ("fedprox_sent140_lstm", "cpu"): {10: {"loop": 1914, "rnn": 1689}, 100: {"loop": 1534, "rnn": 1041}},
    # the CNNs after issue 20's per-tensor differentiation (loop and vmap). vmap is 1.26x the loop for the CIFAR CNN
    # at cohort 100 but 0.85x at cohort 10
    ("leaf_femnist_cnn", "cpu"): {10: {"loop": 241.9, "vmap": 192.6}, 100: {"loop": 237.6, "vmap": 181.4}},
    ("cifar_cnn", "cpu"): {10: {"loop": 3757.7, "vmap": 3211.1}, 100: {"loop": 2407.0, "vmap": 3033.8}},
    # CUDA: reports/bench-gpu/bench.json's kernel_table, copied exactly (tests/engine/test_kernel_table.py keeps
    # them equal). The rnn kernel is 0.89x the loop for the Shakespeare LSTM at cohort 10 and 9-45x both LSTMs' loop
    # at cohorts 100 and 1000 (the loop is flat at about 1k and 3k samples/s: one client at a time)
    ("mclr", "cuda"): {10: {"mclr": 145111.9, "vmap": 25226.5, "loop": 10110.6},
                       100: {"mclr": 400788.9, "vmap": 153697.9, "loop": 9222.4},
                       1000: {"mclr": 651114.7, "vmap": 474722.1, "loop": 9841.6}},
    ("leaf_femnist_cnn", "cuda"): {10: {"vmap": 13654.4, "loop": 5046.2}, 100: {"vmap": 35849.4, "loop": 4488.6}},
    ("cifar_cnn", "cuda"): {10: {"vmap": 13871.0, "loop": 4331.9}, 100: {"vmap": 58860.7, "loop": 5127.1},
                            1000: {"vmap": 138270.5, "loop": 4762.4}},
    ("fedprox_shakespeare_lstm", "cuda"): {10: {"loop": 920.5, "rnn": 821.2}, 100: {"loop": 1030.9, "rnn": 9326.7},
                                           1000: {"loop": 1030.7, "rnn": 28952.9}},
    ("fedprox_sent140_lstm", "cuda"): {10: {"loop": 2861.2, "rnn": 3580.1}, 100: {"loop": 3082.1, "rnn": 28509.3},
                                       1000: {"loop": 2645.3, "rnn": 120072.4}},
}

# (model, device type) -> where its row of MEASURED was measured
PROVENANCE: dict[tuple[str, str], str] = {
    ("mclr", "cpu"): _CPU_B84662D, ("fedprox_shakespeare_lstm", "cpu"): _CPU_B84662D,
    ("fedprox_sent140_lstm", "cpu"): _CPU_B84662D,
    ("leaf_femnist_cnn", "cpu"): _CPU_F157C32, ("cifar_cnn", "cpu"): _CPU_F157C32,
    **{(name, "cuda"): _H200 for name in ("mclr", "leaf_femnist_cnn", "cifar_cnn", "fedprox_shakespeare_lstm",
                                          "fedprox_sent140_lstm")},
}

PER_COHORT = frozenset({"cuda"})  # device types whose choice follows the cohort (the known-cohort rule)

# a recurrent model with no row of its own on a device follows the choice on which every one of these agrees at
# its cohort (the loop where they disagree): on CUDA the two measured LSTMs (0.24M and 0.82M parameters, 80 and 25
# tokens) agree on rnn from cohort 100 on; Delta-FL's Sent140 LSTM and Shakespeare GRU are not measured on a GPU
RECURRENT_MEASURED: dict[str, tuple[str, ...]] = {"cuda": ("fedprox_shakespeare_lstm", "fedprox_sent140_lstm")}


def fastest(measured: Mapping[int, Mapping[str, float]], allowed: Iterable[str]) -> str | None:
    """The kernel the unknown-cohort rule above picks from one pair's measurements, among ``allowed`` (None: no
    loop measured)."""
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


def fastest_at(measured: Mapping[int, Mapping[str, float]], allowed: Iterable[str], cohort: int) -> str | None:
    """The kernel the known-cohort rule above picks for ``cohort`` rows from one pair's measurements, among
    ``allowed`` (None: no loop measured at the cohort the rule reads)."""
    if not measured:
        return None
    below = [k for k in measured if k <= cohort]
    by_kernel = measured[max(below) if below else min(measured)]
    if "loop" not in by_kernel:
        return None
    allowed = set(allowed)
    return max((k for k in sorted(by_kernel) if k in allowed), key=lambda k: (by_kernel[k], k == "loop"),
               default="loop")


def table_from_cases(cases: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """``fedbench bench``'s throughput cases as this module's table, keyed 'model/device' (JSON keys)."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    for c in cases:
        device = str(c["device"]).split(":")[0]
        table.setdefault(f"{c['model']}/{device}", {})[str(c["cohort"])] = {
            k: round(float(v["samples_per_s"]), 1) for k, v in c["kernels"].items()}
    return table


def as_measured(table: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[tuple[str, str], dict[int, dict[str, float]]]:
    """:func:`table_from_cases`'s JSON form back as :data:`MEASURED`'s keys."""
    return {tuple(key.split("/", 1)): {int(k): dict(v) for k, v in by_cohort.items()} for key, by_cohort in table.items()}
