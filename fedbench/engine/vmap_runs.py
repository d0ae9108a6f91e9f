"""An algorithm's own per-run method (client_init, client_result, server_update) called once for a group of runs,
vectorised over the runs with ``torch.func.vmap`` (issue 49, item 3: the operators around the local steps a stack
pays once, not once a run). The algorithm still states what one run does; the engine batches the runs, as it
batches the clients of a cohort, and knows no algorithm by name.

Only on the devices where the engine batches its runs (fedbench.engine.round.BATCHED_SIGNAL_DEVICES: CUDA). On the
CPU every run calls its methods itself, bit for bit as alone.

A group is the runs whose calls can be one: an equal algorithm object (dataclass equality: FedProx runs with
different mu are different groups), arguments with the same structure, tensor shapes and dtypes (an equal cohort
size K), and equal non-tensor values (a Python number in a state: FedProx-adaptive's mu and last loss, Delta-FL's
eta; a host array: FedLaAvg's last rounds). A run alone in its group calls the method itself. The cohort
(fedbench.engine.round.Cohort) is the exception: its tensors are batched, its non-tensor fields that differ between
the runs (the host arrays, the seed, the callables full_grad and client_grads that close over one run's clients) are
replaced by :class:`Unshared`, which raises on any use: a method that reads one cannot be vmapped and falls back. The
full gradient of each run's clients (``full_grad``) is the exception to the exception: for runs on one dataset and
kernel it becomes one call of the kernel's client_grads on all the group's (run, client) rows, each at its run's theta
(:class:`ClientsFullGrad`, through a custom vmap rule), so Mime's client_init and SCAFFOLD's client_result with
control variate I group like the others, within float32 rounding (bit for bit on this machine's CPU: the mclr
kernel's client_grads computes each client's rows on their own).

A method that cannot run under vmap (it reads an :class:`Unshared` field, reads a tensor's value on the host,
draws random numbers, or returns tensors in a container other than a frozen dataclass) raises inside vmap; the
group then calls it run by run, and every later call of that algorithm's method does so at once (:data:`FALLBACKS`,
with the reason). Among ours: FedProxVR's client_init (it draws each client's output iterate from the run's seed
on the host) and FedDane's where it takes gradients of devices beyond the cohort (drawn the same way).

Numbers: the elementwise operations under vmap are the per-run kernels on more rows; a reduction over the clients
becomes a batched one (tensordot over K: ``bmm`` instead of ``mm``), whose summation order may differ in the last
bits (tests/engine/test_vmap_runs.py holds the batched path to the per-run path within float32 rounding).

Inputs are stacked with :func:`stack_rows`, a view where the runs' tensors already lie one after another in one
buffer (the cohort's upload, the rows of the merged local work, the states the previous round's vmap returned):
in a steady stack the group's inputs cost no copy at all.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from fedbench.engine import tree

# (algorithm class, method, its fields but lr) -> why that method is called run by run (the first failure's error)
FALLBACKS: dict[tuple, str] = {}


class NotStackable(RuntimeError):
    """A method of a group of runs used a value that is not the same in every run of the group."""


class Unshared:
    """A cohort field whose value differs between the runs of a group: any use raises NotStackable, so that a
    method reading it falls back to a call a run (it never silently reads one run's value for all)."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _refuse(self, *_args, **_kwargs):
        raise NotStackable(f"cohort.{object.__getattribute__(self, '_name')} differs between the runs of a group")

    def __getattr__(self, _attr):
        self._refuse()

    __call__ = __len__ = __iter__ = __getitem__ = __bool__ = __array__ = __index__ = __int__ = __float__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __contains__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __hash__ = None


def stack_rows(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """``torch.stack(tensors)``, as a view (no copy, no operator on the device) where the tensors are contiguous,
    of one shape and dtype, and lie one after another in one buffer."""
    first = tensors[0]
    n = first.numel()
    if n and first.is_contiguous():
        storage, base = first.untyped_storage(), first.storage_offset()
        if (all(t.is_contiguous() and t.shape == first.shape and t.dtype == first.dtype and t.device == first.device
                and t.untyped_storage().data_ptr() == storage.data_ptr() and t.storage_offset() == base + j * n
                for j, t in enumerate(tensors))
                and (base + len(tensors) * n) * first.element_size() <= storage.nbytes()):
            return first.as_strided((len(tensors), *first.shape), (n, *first.stride()), base)
    return torch.stack(list(tensors))


def concat_rows(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """``torch.cat(tensors)`` along the rows, as a view where the tensors are contiguous, of one dtype and row shape,
    and lie one after another in one buffer (a group's rows handed back by one vmap call)."""
    first = tensors[0]
    if first.dim() and first.is_contiguous() and all(t.numel() for t in tensors):
        storage, base = first.untyped_storage(), first.storage_offset()
        offset, ok = base, True
        for t in tensors:
            ok = ok and (t.is_contiguous() and t.shape[1:] == first.shape[1:] and t.dtype == first.dtype
                         and t.device == first.device and t.untyped_storage().data_ptr() == storage.data_ptr()
                         and t.storage_offset() == offset)
            offset += t.numel()
        if ok and offset * first.element_size() <= storage.nbytes():
            rows = sum(t.shape[0] for t in tensors)
            return first.as_strided((rows, *first.shape[1:]), first.stride(), base)
    return torch.cat(list(tensors))


def same_value(a: Any, b: Any) -> bool:
    """Whether two non-tensor values are the same (arrays element by element, nan equal to nan)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - a value without a plain equality: not the same
        return False


def same_structure(a: Any, b: Any) -> bool:
    """Whether two states have the same fields, tensor shapes, dtypes and devices, and equal non-tensor values."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and a.dtype == b.dtype and a.device == b.device)
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(same_structure(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    return same_value(a, b)


class ClientsFullGrad:
    """A cohort's ``full_grad``: theta [K, P] -> the gradient of each of ``clients``' losses on all its training data
    (the kernel's client_grads on one dataset's stored arrays, ``data``: fedbench.engine.metrics.DeviceData). Runs of a
    group on the same dataset and kernel get one :class:`_GroupFullGrad` instead (:func:`_shared_cohort`)."""

    def __init__(self, kernel: Any, data: Any, clients: np.ndarray) -> None:
        self.kernel, self.data, self.clients = kernel, data, clients

    def __call__(self, theta: torch.Tensor) -> torch.Tensor:
        d = self.data
        return self.kernel.client_grads(theta, d.x_train, d.y_train, d.train_offsets, self.clients)


class _GroupFullGrad:
    """The ``full_grad`` of a group's shared cohort: called under the vmap over the group's runs on theta (each run's
    [K, P]), it computes every run's clients' gradients in one call of the kernel's client_grads on the R K rows (a
    segmented batched pass: :class:`_OverRuns`), run j's rows at its own theta."""

    def __init__(self, parts: list[ClientsFullGrad]) -> None:
        self.kernel, self.data = parts[0].kernel, parts[0].data
        self.clients = np.concatenate([p.clients for p in parts])
        self.runs = len(parts)

    def __call__(self, theta: torch.Tensor) -> torch.Tensor:
        return _OverRuns.apply(theta, self)


class _OverRuns(torch.autograd.Function):
    """One kernel call for the runs of a vmap group (torch.func's custom vmap rule: the rule gets the runs' theta
    [R, K, P] at once). Called outside that vmap it refuses: the group's cohort serves the vmapped call only."""

    @staticmethod
    def forward(theta, group):  # noqa: ARG004 - only the vmap rule computes
        raise NotStackable("a group's full gradient was called outside the vmap over its runs")

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def vmap(info, in_dims, theta, group):
        theta = theta.expand(info.batch_size, *theta.shape) if in_dims[0] is None else theta.movedim(in_dims[0], 0)
        if theta.shape[0] != group.runs or theta.dim() != 3:
            raise NotStackable(f"a group's full gradient needs each run's theta [K, P], got {tuple(theta.shape)}")
        runs, k, p = theta.shape
        d = group.data
        grads = group.kernel.client_grads(theta.reshape(runs * k, p), d.x_train, d.y_train, d.train_offsets,
                                          group.clients)
        return grads.view(runs, k, -1), 0


def _is_cohort(x: Any) -> bool:
    """A round's cohort (fedbench.engine.round.Cohort declares itself so: this module imports nothing above it)."""
    return getattr(type(x), "vmap_as_cohort", False)


def _same_cohort_shapes(a: Any, b: Any) -> bool:
    la, lb = tree.tree_leaves(a), tree.tree_leaves(b)
    return len(la) == len(lb) and all(same_structure(x, y) for x, y in zip(la, lb))


def _shared_cohort(cohorts: list[Any]) -> Any:
    """The group's cohort: the first run's, its non-tensor fields that differ between the runs :class:`Unshared`."""
    first = cohorts[0]
    changes = {}
    for f in dataclasses.fields(first):
        v = getattr(first, f.name)
        if isinstance(v, torch.Tensor) or dataclasses.is_dataclass(v):
            continue
        if not all(same_value(v, getattr(c, f.name)) for c in cohorts[1:]):
            parts = [getattr(c, f.name) for c in cohorts]
            if (all(isinstance(p, ClientsFullGrad) for p in parts) and all(p.kernel is parts[0].kernel and
                                                                            p.data is parts[0].data for p in parts)
                    and len({len(p.clients) for p in parts}) == 1):
                changes[f.name] = _GroupFullGrad(parts)  # one pass for the group's runs, each at its own theta
            else:
                changes[f.name] = Unshared(f.name)
    return dataclasses.replace(first, **changes)


def groups(algorithms: Sequence[Any], args: Sequence[tuple]) -> list[list[int]]:
    """The runs (indices) whose calls can be one vmap call: an equal algorithm and arguments of the same structure
    (a cohort: the same tensor shapes only), in order of first appearance."""
    out: list[list[int]] = []
    for j, (alg, a) in enumerate(zip(algorithms, args)):
        for g in out:
            i = g[0]
            if type(algorithms[i]) is type(alg) and algorithms[i] == alg and all(
                    _same_cohort_shapes(x, y) if _is_cohort(x) else same_structure(x, y) for x, y in zip(args[i], a)):
                g.append(j)
                break
        else:
            out.append([j])
    return out


def _key(algorithm: Any, method: str) -> tuple:
    fields = ()
    if dataclasses.is_dataclass(algorithm):
        fields = tuple((f.name, repr(getattr(algorithm, f.name))) for f in dataclasses.fields(algorithm)
                       if f.name != "lr")
    return type(algorithm), method, fields


def call_over_runs(method: str, algorithms: Sequence[Any], args: Sequence[tuple]) -> list[Any]:
    """``getattr(algorithms[j], method)(*args[j])`` for every run j: one vmap call for each group of two or more runs
    (:func:`groups`), run by run where the method cannot run under vmap (:data:`FALLBACKS`)."""
    out: list[Any] = [None] * len(args)
    for g in groups(algorithms, args):
        alg = algorithms[g[0]]
        key = _key(alg, method)
        if len(g) > 1 and key not in FALLBACKS:
            try:
                results = _vmapped(getattr(alg, method), [args[j] for j in g])
            except Exception as exc:  # noqa: BLE001 - whatever vmap refuses: the method run by run (module docstring)
                FALLBACKS[key] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            else:
                for j, res in zip(g, results):
                    out[j] = res
                continue
        for j in g:
            out[j] = getattr(algorithms[j], method)(*args[j])
    return out


def _check_plain(x: Any, where: str) -> None:
    """Refuse an output whose tensors are not all reachable as fields of frozen dataclasses (fedbench.engine.tree)."""
    if isinstance(x, (list, dict, set)) or (isinstance(x, tuple) and where != "top"):
        items = x.values() if isinstance(x, dict) else x
        if any(isinstance(v, torch.Tensor) or dataclasses.is_dataclass(v) or isinstance(v, (list, tuple, dict))
               for v in items):
            raise NotStackable("an output holds tensors in a container other than a dataclass")
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            _check_plain(getattr(x, f.name), "field")


def _vmapped(fn, group_args: list[tuple]) -> list[Any]:
    """``fn(*a)`` for every ``a`` of ``group_args`` (the runs of one group) as one vmap call over the runs."""
    templates = [_shared_cohort([a[i] for a in group_args]) if _is_cohort(x) else x
                 for i, x in enumerate(group_args[0])]
    stacked = [[stack_rows(leaves) for leaves in zip(*(tree.tree_leaves(a[i]) for a in group_args))]
               for i in range(len(templates))]
    seen: dict[str, Any] = {}  # the output of the one call, for its structure

    def one_run(*flat):
        out = fn(*(tree.unflatten(t, leaves) for t, leaves in zip(templates, flat)))
        parts = out if isinstance(out, tuple) else (out,)
        _check_plain(out, "top")
        for p in parts:
            _check_plain(p, "part")
        seen["out"] = out
        return tuple(tree.tree_leaves(p) for p in parts)

    leaves = torch.func.vmap(one_run, randomness="error")(*stacked)
    # a tensor made inside that depends on no run comes back expanded over the runs (stride 0): one copy, so that no
    # two runs share memory
    leaves = tuple([t.contiguous() if t.dim() and t.stride(0) == 0 and t.shape[0] > 1 else t for t in part]
                   for part in leaves)
    template = seen["out"]
    parts = template if isinstance(template, tuple) else (template,)
    results = []
    for j in range(len(group_args)):
        run = tuple(tree.unflatten(p, [t[j] for t in ls]) for p, ls in zip(parts, leaves))
        results.append(run if isinstance(template, tuple) else run[0])
    return results
