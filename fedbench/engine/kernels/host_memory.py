"""Host memory of CPU training: freed tensors' memory kept in the process for the next ones, not handed back
to the operating system after each use.

glibc's malloc serves a large allocation (above a threshold that adapts up to 32 MiB) with its own ``mmap``
and unmaps it when it is freed, so every fresh tensor that size is page-faulted in and zeroed by the kernel on
first touch. A local step of the LEAF FEMNIST CNN allocates several such tensors per client (its gradient,
lr * g and theta - lr * g of 26 MB each per client row, the dense layer's 26 MB weight gradient): on one core
of the 2-core development machine, 10 clients' steps took 63-190 ms a client step with glibc's defaults and
40-45 ms with freed memory kept (issue 20; the rest of the step unchanged). :func:`keep_freed_memory` asks glibc
(``mallopt``) to serve large allocations from its heap and never to trim the heap: the process keeps its peak
host memory for reuse, as PyTorch's CUDA caching allocator keeps its peak device memory; :func:`release_freed_memory`
hands what is free back (``malloc_trim``). No number changes: where a tensor lives does not change what is
computed in it (fedbench/__init__.py pins MKL's reproducibility against alignment). Elsewhere than glibc
(macOS, musl) both are no-ops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_MAX = -4


@functools.cache
def _glibc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not hasattr(libc, "mallopt") or not hasattr(libc, "malloc_trim") or not hasattr(libc, "gnu_get_libc_version"):
        return None
    return libc


@functools.cache
def keep_freed_memory() -> bool:
    """Serve large allocations from the heap and keep freed memory (once per process; forked workers inherit
    it). Returns whether glibc took the settings."""
    libc = _glibc()
    if libc is None:
        return False
    no_mmap = libc.mallopt(M_MMAP_MAX, 0) == 1
    no_trim = libc.mallopt(M_TRIM_THRESHOLD, -1) == 1  # -1: never trim (mallopt(3))
    return no_mmap and no_trim


def release_freed_memory() -> None:
    """Hand the heap's free memory back to the operating system (between cases of a benchmark, say)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
