"""Local and client state are a tensor or a frozen dataclass of tensors (other fields pass through);
these helpers slice, write back and stack such states along the leading cohort axis."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch


def tree_map(fn: Callable[[torch.Tensor], Any], state: Any) -> Any:
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return fn(state)
    if dataclasses.is_dataclass(state):
        changes = {f.name: tree_map(fn, getattr(state, f.name)) for f in dataclasses.fields(state)
                   if isinstance(getattr(state, f.name), torch.Tensor) or dataclasses.is_dataclass(getattr(state, f.name))}
        return dataclasses.replace(state, **changes)
    return state


def tree_leaves(state: Any) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    tree_map(lambda t: out.append(t), state)
    return out


def unflatten(template: Any, leaves: list[torch.Tensor]) -> Any:
    """``template`` with its tensors replaced by ``leaves``, in the order :func:`tree_leaves` lists them."""
    it = iter(leaves)
    return tree_map(lambda _: next(it), template)


def take_rows(state: Any, index: torch.Tensor) -> Any:
    return tree_map(lambda t: t[index], state)


def head(state: Any, a: int) -> Any:
    """The first ``a`` rows (a view)."""
    return tree_map(lambda t: t[:a], state)


def rows(state: Any, lo: int, hi: int) -> Any:
    """Rows lo..hi-1 (a view)."""
    return tree_map(lambda t: t[lo:hi], state)


def write_rows(state: Any, new: Any, lo: int, hi: int) -> Any:
    """``state`` with rows lo..hi-1 replaced by ``new`` (in place, unless ``new`` covers every row)."""
    if lo == 0 and hi == _rows(state):
        return new
    for o, n in zip(tree_leaves(state), tree_leaves(new)):
        o[lo:hi].copy_(n)
    return state


def _rows(state: Any) -> int:
    leaves = tree_leaves(state)
    return leaves[0].shape[0] if leaves else 0


def concat(states: list[Any]) -> Any:
    first = states[0]
    if first is None:
        return None
    if isinstance(first, torch.Tensor):
        return torch.cat(states)
    changes = {}
    for f in dataclasses.fields(first):
        v = getattr(first, f.name)
        if isinstance(v, torch.Tensor) or dataclasses.is_dataclass(v):
            changes[f.name] = concat([getattr(s, f.name) for s in states])
    return dataclasses.replace(first, **changes)


def scatter_rows(table: Any, index: torch.Tensor, rows: Any) -> Any:
    """Write ``rows`` into ``table`` at ``index`` (per-client state kept by the engine), in place."""
    for t, r in zip(tree_leaves(table), tree_leaves(rows)):
        t[index] = r
    return table
