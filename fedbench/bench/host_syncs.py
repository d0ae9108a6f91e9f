"""How often a round makes the host wait for the device (issue 31, item 3), per algorithm, alone and stacked.

Every registered algorithm (tests/algorithms/cases.py's configuration, as the prepared GPU check's algorithms part)
runs on generated Synthetic(1,1) with mclr, evaluated at round 0 and on the final model only, so that the rounds
between run on the divergence signal, as a study's cadence protocol makes them. The waits of a round between
evaluations are a 5-round simulation's minus a 3-round one's, halved: the start, the first and the final
evaluation cancel, and so does the signal's one read of each (it stays on the device and is read back once a block
of rounds, fedbench.engine.simulation._Window; fedbench.bench.proxies counts that read a block). They are counted
two ways:

- ``reads`` and ``copies``: fedbench.engine.host_sync.HostSyncs (values read back to the host, copies to a device
  without non_blocking), the same count on the CPU as on CUDA, with the fedbench line of each;
- ``torch``: on CUDA only, torch's own count of synchronising operations (``torch.cuda.set_sync_debug_mode``), which
  also sees those inside torch (a data-dependent output size: ``nonzero``, a boolean mask).

A round of a stack should wait once per stack: ``per_run``, what each run beyond the first adds, is 0 except where
an algorithm's state hook reads the device (fedbench.engine.simulation's docstring lists them).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Any

PROTOCOL_EVERY = 10_000  # evaluated at round 0 and on the final model only
STACKED = 3  # runs of the stacked count
# The waits each run adds to a round, by algorithm, and why: a state hook that reads the model's losses (Delta-FL's
# filter_cohort: .cpu() and .numpy() of one read). Every other algorithm adds none.
PER_RUN = {"delta_fl": 2}


def round_syncs(name: str, hyper: dict[str, Any], changes: dict[str, Any], runs: int, device: str = "cpu") -> dict:
    """The waits of one round between evaluations of a stack of ``runs`` runs of algorithm ``name`` (``hyper``: its
    hyperparameters, lr 0.05 unless given; ``changes``: SimulationConfig fields): {"reads", "copies", "torch" (None
    off CUDA), "lines": {"kind@file:line": count}}."""
    import torch

    from fedbench.algorithms import build_algorithm
    from fedbench.engine.evaluation import EvalSpec
    from fedbench.engine.host_sync import HostSyncs
    from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack

    data, model = _setup()
    protocol = (EvalSpec("train", every=PROTOCOL_EVERY), EvalSpec("test", every=PROTOCOL_EVERY))
    cuda = torch.device(device).type == "cuda"
    counts, torch_counts = [], []
    for rounds in (3, 5):
        cfg = SimulationConfig(rounds=rounds, clients_per_round=5, local_epochs=1, batch_size=10, device=device,
                               evaluations=protocol, dissimilarity_every=0, **changes)
        specs = [RunSpec(dataclasses.replace(cfg, seed=s), data, build_algorithm(name, **{"lr": 0.05, **hyper}))
                 for s in range(runs)]
        with warnings.catch_warnings(record=True) as caught, HostSyncs() as syncs:
            warnings.simplefilter("always")
            if cuda:
                torch.cuda.set_sync_debug_mode("warn")
            try:
                simulate_stack(model, specs)
            finally:
                if cuda:
                    torch.cuda.set_sync_debug_mode("default")
        counts.append(syncs.count)
        torch_counts.append(sum("synchronizing" in str(w.message) for w in caught))
    lines = {}
    for key in counts[1] | counts[0]:
        diff = counts[1][key] - counts[0][key]
        if diff % 2:
            raise RuntimeError(f"{name}: the waits at {key} differ between rounds ({diff} over 2 rounds)")
        if diff:
            lines[f"{key[0]}@{key[1]}"] = diff // 2
    return {"reads": sum(n for k, n in lines.items() if k.startswith("read@")),
            "copies": sum(n for k, n in lines.items() if k.startswith("copy@")),
            "torch": (torch_counts[1] - torch_counts[0]) / 2 if cuda else None, "lines": lines}


@functools.cache
def _setup():
    """The data and model every count runs on, made once per process."""
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.models import build_model

    data = generate_synthetic(1.0, 1.0, False, num_devices=30, seed=0, train_fraction=0.9)
    return data, build_model("mclr", data.feature_shape, data.num_classes)


def measure(cases: dict[str, tuple[dict, dict]], device: str = "cpu") -> list[dict]:
    """Every case's waits a round, one run alone and :data:`STACKED` runs stacked, and what each further run adds."""
    out = []
    for name in sorted(cases):
        if name == "sequential_sgd":  # one model on pooled data: no stack of federated runs
            continue
        hyper, changes = cases[name]
        one, many = (round_syncs(name, hyper, changes, runs, device) for runs in (1, STACKED))
        waits = [r["reads"] + r["copies"] for r in (one, many)]
        per_run = (waits[1] - waits[0]) / (STACKED - 1)
        out.append({"algorithm": name, "alone": one, "stacked": many, "per_run": per_run,
                    "as_declared": per_run == PER_RUN.get(name, 0) and one["copies"] == many["copies"] == 0})
    return out


def table(rows: list[dict]) -> list[str]:
    """Markdown: each algorithm's waits a round, alone and stacked, and what each further run adds."""
    lines = [f"| algorithm | waits a round, 1 run | {STACKED} runs stacked | each further run | torch's syncs (CUDA) |",
             "|---|---|---|---|---|"]
    for r in rows:
        one, many = r["alone"], r["stacked"]
        t = "-" if one["torch"] is None else f"{one['torch']:g} / {many['torch']:g}"
        lines.append(f"| {r['algorithm']} | {one['reads'] + one['copies']} | {many['reads'] + many['copies']} | "
                     f"{r['per_run']:g} | {t} |")
    return lines
