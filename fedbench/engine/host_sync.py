"""Counting the points where a round would make the host wait for a CUDA device (issue 31, item 3), on any device.

On CUDA the host runs ahead of the device and queues work, unless it reads a value the device computed (``.item()``,
``.cpu()``, ``.tolist()``, a Python branch on a tensor: ``bool``, ``int``, ``float``) or copies host memory to the
device without ``non_blocking`` (PyTorch then synchronises the stream after the copy, so the host waits for every
queued kernel). Each such point is a synchronisation: the host idles while the device drains, and the device idles
while the host prepares the next work. A round of a stack should make them once per stack, not once per run.

:class:`HostSyncs` counts these calls by kind and by the fedbench line that made them, through a
``TorchFunctionMode``, so the count is the same on the CPU as on CUDA: the CPU tests assert it
(tests/engine/test_host_sync.py) and the prepared GPU check prints it (fedbench.bench.host_syncs). What it cannot
see: numpy's own reads of a CPU tensor through the buffer protocol (``torch.from_numpy`` shares memory, no copy),
and synchronisations inside torch itself (a kernel that sizes its output from data, such as ``nonzero`` or a boolean
mask; the GPU check counts those with torch's own sync debug mode). fedbench.ops.to_device is the one way the engine
and the algorithms move a host array (a round's schedule) to the device without a wait.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

READS = {torch.Tensor.item, torch.Tensor.cpu, torch.Tensor.tolist, torch.Tensor.numpy, torch.Tensor.__bool__,
         torch.Tensor.__int__, torch.Tensor.__float__, torch.Tensor.__index__, torch.Tensor.__array__}
COPIES = {torch.Tensor.to, torch.Tensor.cuda, torch.tensor, torch.as_tensor}
PACKAGE = str(Path(__file__).resolve().parents[1])


class HostSyncs(TorchFunctionMode):
    """Within ``with HostSyncs() as syncs:``, ``syncs.count`` holds (kind, "file:line") -> calls, kind "read" (a value
    read back to the host) or "copy" (a copy to a device without non_blocking=True); the line is the innermost
    fedbench one. A ``.numpy()`` right after ``.cpu()`` counts as a second read, as on CUDA it costs nothing more:
    compare counts, not their absolute values."""

    def __init__(self) -> None:
        super().__init__()
        self.count: collections.Counter = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in READS:
            self.count[("read", _caller())] += 1
        elif func in COPIES and _blocking_copy(func, args, kwargs):
            self.count[("copy", _caller())] += 1
        return func(*args, **kwargs)

    def total(self, kind: str | None = None) -> int:
        return sum(n for (k, _), n in self.count.items() if kind is None or k == kind)


def _blocking_copy(func, args, kwargs) -> bool:
    """A call that copies to a device and waits for it: ``.cuda()``, or ``.to``/``tensor``/``as_tensor`` with a device
    argument, without non_blocking=True (``.to(dtype)`` moves nothing)."""
    if kwargs.get("non_blocking"):
        return False
    if func is torch.Tensor.cuda:
        return True
    if func is torch.Tensor.to:
        return "device" in kwargs or any(isinstance(a, (torch.device, str)) for a in args[1:])
    return kwargs.get("device") is not None


def _caller() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(PACKAGE) and not name.endswith("host_sync.py"):
            return f"{Path(name).relative_to(PACKAGE).as_posix()}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"

