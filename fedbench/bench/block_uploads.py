"""Host-to-device uploads a block of rounds (issue 49, item 3; D2: "upload the indices [T, rows, B] and active
[T, rows] once per block"), counted on the CPU as CUDA runs the round (fedbench.engine.round.BATCHED_SIGNAL_DEVICES
forced to include the CPU, as fedbench.bench.proxies.round_ops forces it).

An upload is a call of fedbench.ops.to_device, the one way the engine and the algorithms move a host array to the
device (fedbench.engine.host_sync): on CUDA each is a pinned staging copy and one host-to-device transfer. The
count of a block is a (3 + block)-round simulation's minus a 3-round one's (the start, the evaluations at round 0
and of the final model cancel), of a FedProx mclr stack (fedbench.bench.proxies.RoundSetup) at a static shape
(``capture: static``, the loop a CUDA graph replays), evaluated at round 0 and on the final model only.
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
    from fedbench.bench.proxies import RoundSetup, _simulate

    setup = RoundSetup()
    devices, budget = round_.BATCHED_SIGNAL_DEVICES, uploads.BLOCK_UPLOAD_BYTES
    round_.BATCHED_SIGNAL_DEVICES = devices + ("cpu",)
    uploads.BLOCK_UPLOAD_BYTES = budget if staged else 0
    counts = {}
    try:
        for rounds in (3, 3 + block):
            with UploadCount() as count:
                _simulate(setup, runs, rounds, [], capture=capture)
            counts[rounds] = count.count
    finally:
        round_.BATCHED_SIGNAL_DEVICES, uploads.BLOCK_UPLOAD_BYTES = devices, budget
    return {"runs": runs, "block": block, "capture": capture, "staged": staged,
            "per_block": counts[3 + block] - counts[3]}
