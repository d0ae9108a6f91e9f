"""Replay of an availability trace, so users can bring real traces (e.g. device logs).

The trace is a CSV file with the header ``client_id,available_from,available_to`` and one row per interval
in which a client is available, in rounds, both ends included: ``f_00003,10,19`` makes client f_00003
available in rounds 10 to 19. A client may have several rows (several intervals, which may overlap); a
client with no row is never available, and after the last interval nobody is. ``client_id`` is matched
against the dataset's client ids as text.

A malformed file (wrong header, a missing or extra field, a non-integer or negative round, an interval that
ends before it starts, an unknown client id, no rows at all) raises ValueError naming the file and line.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

COLUMNS = ("client_id", "available_from", "available_to")


@dataclass(frozen=True, eq=False)
class TraceAvailability:
    num_clients: int
    client: np.ndarray = field(repr=False)  # [M] client index of each interval
    start: np.ndarray = field(repr=False)  # [M] first available round
    end: np.ndarray = field(repr=False)  # [M] last available round (inclusive)

    def __post_init__(self) -> None:
        for name in ("client", "start", "end"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        if not (self.client.shape == self.start.shape == self.end.shape) or self.client.ndim != 1:
            raise ValueError("trace availability: client, start and end must be 1-D arrays of one length")
        if np.any((self.client < 0) | (self.client >= self.num_clients)):
            raise ValueError(f"trace availability: client indices must be in 0..{self.num_clients - 1}")
        if np.any(self.start < 0) or np.any(self.end < self.start):
            raise ValueError("trace availability: intervals need 0 <= available_from <= available_to")

    def mask(self, seed: int, round_: int) -> np.ndarray:
        out = np.zeros(self.num_clients, dtype=bool)
        out[self.client[(self.start <= round_) & (round_ <= self.end)]] = True
        return out

    @staticmethod
    def from_csv(path: str | os.PathLike, client_ids: tuple[str, ...]) -> TraceAvailability:
        path = Path(path)
        index = {cid: k for k, cid in enumerate(client_ids)}
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise ValueError(f"{path}: availability trace not found") from None
        rows = list(csv.reader(text.splitlines()))
        if not rows or tuple(c.strip() for c in rows[0]) != COLUMNS:
            got = ",".join(rows[0]) if rows else "an empty file"
            raise ValueError(f"{path}:1: expected the header {','.join(COLUMNS)}, got {got!r}")
        client, start, end = [], [], []
        for line, row in enumerate(rows[1:], start=2):
            if not row or all(not c.strip() for c in row):
                continue  # blank line
            if len(row) != 3:
                raise ValueError(f"{path}:{line}: expected 3 fields ({','.join(COLUMNS)}), got {len(row)}")
            cid, lo, hi = (c.strip() for c in row)
            if cid not in index:
                raise ValueError(f"{path}:{line}: unknown client_id {cid!r} (not one of the dataset's "
                                 f"{len(client_ids)} clients, e.g. {client_ids[0]!r})")
            try:
                lo_i, hi_i = int(lo), int(hi)
            except ValueError:
                raise ValueError(f"{path}:{line}: available_from and available_to must be integers (rounds), "
                                 f"got {lo!r} and {hi!r}") from None
            if lo_i < 0 or hi_i < lo_i:
                raise ValueError(f"{path}:{line}: need 0 <= available_from <= available_to, got {lo_i} and {hi_i}")
            client.append(index[cid])
            start.append(lo_i)
            end.append(hi_i)
        if not client:
            raise ValueError(f"{path}: the trace has no availability intervals")
        return TraceAvailability(num_clients=len(client_ids), client=np.array(client), start=np.array(start),
                                 end=np.array(end))
