"""Run independent jobs in forked worker processes, or one after another in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import TypeVar

Job = TypeVar("Job")
Result = TypeVar("Result")


def _one_torch_thread() -> None:
    import torch

    torch.set_num_threads(1)  # the processes are the parallelism; one thread each keeps them from competing


def map_jobs(fn: Callable[[Job], Result], jobs: Iterable[Job], workers: int) -> list[Result]:
    """``[fn(job) for job in jobs]``, in order, on ``workers`` processes (one process: here, serially), each
    job with one torch thread.

    Workers are forked, so ``fn`` must be a top-level function, and they inherit what this process has
    imported and built (datasets built before the call are shared, not rebuilt). Fork is for the CPU only:
    a process that has used CUDA cannot be forked safely, so pass ``workers=1`` there.
    """
    jobs = list(jobs)
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork"),
                                 initializer=_one_torch_thread) as pool:
            return list(pool.map(fn, jobs))
    _one_torch_thread()
    return [fn(job) for job in jobs]
