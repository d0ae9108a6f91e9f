"""A block's host arrays moved to the device in one transfer (issue 49, item 3; design D2 of
../shared/reference/gpu-design.md: "upload the indices [T, rows, B] and active [T, rows] once per block").

Where the engine batches a stack's runs (fedbench.engine.round.BATCHED_SIGNAL_DEVICES: CUDA), the round loop draws
each block of SCHEDULE_BLOCK rounds ahead for all its runs (fedbench.engine.schedule) and builds, on the host, every
array those rounds will move to the device: the cohorts (clients, n_k, epochs, steps, weights), the rows of the
per-client tables, the divergence signal's sample indices and segments, and the local steps' schedule (the static
loop's [T, K, B] minibatch indices and [T, K] mask, or the ragged loop's minibatches and row orders). They are laid
one after another in one byte buffer (each at an 8-byte boundary) and moved with one fedbench.ops.to_device; each
round then takes views of it (no operator on the device).

A round still builds its own arrays, and takes the block's view of one only where the block holds an array equal
to it, element for element (:meth:`BlockUploads.take`); otherwise it moves its own, as it did before. So what a round
computes never depends on the block: a round the block did not foresee (a run that left the stack, a window's
replay, a state hook that picked the cohort: FedLaAvg's choose_clients, Delta-FL's filter_cohort) moves its
arrays itself, and its numbers are those of the round uploaded on its own (tested bit for bit on the CPU:
tests/engine/test_block_uploads.py). The comparison costs host time (a memcmp of each array), which the device
does not wait for.

Limit: the static loop's schedule is padded, [T, K, B] a round, with every finished row's minibatches -1. A block
holds at most :data:`BLOCK_UPLOAD_BYTES`; the rounds past it move their own arrays (FedProx's synthetic study at
1,400 rows and ~7,600 steps a round would need ~0.9 GB a round). Storing only each step's row bucket
(fedbench.engine.static.step_buckets: ~1.1x the useful row-steps) would lift the limit, but the fused kernels
(fedbench.engine.fused) read the padded [T, K, B] layout.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import torch

from fedbench.ops import to_device

BLOCK_UPLOAD_BYTES = 256 * 2**20  # at most this many bytes staged for one block (module docstring: Limit)
ALIGN = 8  # every array starts at a multiple of 8 bytes of the buffer, so that any dtype's view is aligned


class BlockUploads:
    """The arrays staged for the current block on ``device`` (:meth:`stage`), taken by the rounds (:meth:`take`).
    ``transfers`` counts the blocks' transfers, ``taken`` and ``missed`` the arrays a round took from the block or
    moved itself."""

    def __init__(self, device: torch.device, budget: int | None = None) -> None:
        self.device = torch.device(device)
        self.budget = BLOCK_UPLOAD_BYTES if budget is None else budget
        self.host: dict[Hashable, np.ndarray] = {}
        self.views: dict[Hashable, torch.Tensor] = {}
        self.transfers = 0
        self.taken = 0
        self.missed = 0

    def stage(self, arrays: dict[Hashable, np.ndarray]) -> None:
        """Replace the staged block by ``arrays`` (in their order; those past the budget are left out), moved to
        the device in one transfer."""
        self.host, self.views = {}, {}
        layout, end = [], 0
        for key, array in arrays.items():
            array = np.ascontiguousarray(array)
            start = -(-end // ALIGN) * ALIGN
            if start + array.nbytes > self.budget:
                break
            layout.append((key, array, start))
            end = start + array.nbytes
        if not layout:
            return
        buffer = np.zeros(end, np.uint8)
        for _, array, start in layout:
            buffer[start: start + array.nbytes] = array.reshape(-1).view(np.uint8)
        device_buffer = to_device(buffer, self.device)
        self.transfers += 1
        for key, array, start in layout:
            dtype = torch.from_numpy(np.zeros(0, array.dtype)).dtype
            self.host[key] = array
            self.views[key] = device_buffer[start: start + array.nbytes].view(dtype).view(array.shape)

    def take(self, key: Hashable, array: np.ndarray) -> torch.Tensor | None:
        """The block's view of ``key`` where the block holds an array equal to ``array`` (its dtype, shape and
        every element); None where it does not (the caller moves ``array`` itself)."""
        held = self.host.get(key)
        if (held is None or held.dtype != array.dtype or held.shape != array.shape
                or not np.array_equal(held, array)):
            self.missed += 1
            return None
        self.taken += 1
        return self.views[key]
