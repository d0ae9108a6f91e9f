"""Host-to-device uploads a block of rounds (issue 49, item 3; D2: "upload the indices [T, rows, B] and active
[T, rows] once per block"), counted on the CPU as CUDA runs the round (fedbench.engine.round.BATCHED_SIGNAL_DEVICES
forced to include the CPU, as fedbench.bench.proxies.round_ops forces it).

An upload is a call of fedbench.ops.to_device, the one way the engine and the algorithms move a host array to the
device (fedbench.engine.host_sync): on CUDA each is a pinned staging copy and one host-to-device transfer. The
count of a block is a (3 + block)-round simulation's minus a 3-round one's (the start, the evaluations at round 0
and of the final model cancel), of a FedProx mclr stack (fedbench.bench.proxies.RoundSetup) at a static shape
(``capture: static``, the loop a CUDA graph replays), evaluated at round 0 and on the final model only (its own copy of
the stack's settings: importing fedbench.bench.proxies here would make an import cycle).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

SCHEDULE_BLOCK = 20  # fedbench.engine.simulation.SCHEDULE_BLOCK (kept equal by tests/bench/test_block_uploads.py)


class UploadCount(contextlib.ExitStack):
    """Within ``with UploadCount() as uploads:``, ``uploads.count`` is the calls of fedbench.ops.to_device made by
    any fedbench module (each module's own reference to it wrapped for the duration)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __enter__(self) -> UploadCount:
        super().__enter__()
        import fedbench.ops as ops

        real = ops.to_device

        def counted(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        for name, module in list(sys.modules.items()):
            if (name == "fedbench" or name.startswith("fedbench.")) and getattr(module, "to_device", None) is real:
                setattr(module, "to_device", counted)
                self.callback(setattr, module, "to_device", real)
        return self


def uploads_per_block(runs: int = 10, block: int = SCHEDULE_BLOCK, staged: bool = True,
                      capture: str = "static") -> dict[str, Any]:
    """Uploads in a block of ``block`` rounds of a FedProx stack of ``runs`` runs, on CUDA's path (module docstring);
    ``staged`` False: with the block's one transfer turned off (each round moves its own arrays, as before)."""
    import fedbench.engine.round as round_
    import fedbench.engine.uploads as uploads

    devices, budget = round_.BATCHED_SIGNAL_DEVICES, uploads.BLOCK_UPLOAD_BYTES
    round_.BATCHED_SIGNAL_DEVICES = devices + ("cpu",)
    uploads.BLOCK_UPLOAD_BYTES = budget if staged else 0
    counts = {}
    try:
        for rounds in (3, 3 + block):
            with UploadCount() as count:
                _simulate(runs, rounds, capture)
            counts[rounds] = count.count
    finally:
        round_.BATCHED_SIGNAL_DEVICES, uploads.BLOCK_UPLOAD_BYTES = devices, budget
    return {"runs": runs, "block": block, "capture": capture, "staged": staged,
            "per_block": counts[3 + block] - counts[3]}


def _simulate(runs: int, rounds: int, capture: str, devices: int = 30) -> None:
    """fedbench.bench.proxies.RoundSetup's stack (FedProx mu 1, mclr on Synthetic(1,1) of ``devices`` devices, 10
    clients a round of 1 local step, evaluated at round 0 and on the final model), at ``capture``."""
    from fedbench.algorithms import build_algorithm
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.engine.evaluation import EvalSpec
    from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack
    from fedbench.models import build_model

    data = generate_synthetic(1.0, 1.0, False, num_devices=devices, seed=0, train_fraction=0.9)
    model = build_model("mclr", data.feature_shape, data.num_classes)
    protocol = (EvalSpec("train", every=10_000), EvalSpec("test", every=10_000))
    cfg = SimulationConfig(rounds=rounds, clients_per_round=10, local_epochs=1, batch_size=10, local_steps=1,
                           device="cpu", evaluations=protocol, dissimilarity_every=0, checkpoint_every=10**9,
                           capture=capture)
    simulate_stack(model, [RunSpec(SimulationConfig(**{**cfg.__dict__, "seed": s}), data,
                                   build_algorithm("fedprox", lr=0.05, mu=1.0)) for s in range(runs)])
