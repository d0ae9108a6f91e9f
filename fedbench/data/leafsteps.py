"""LEAF's preprocessing steps after ``all_data``: sample -> remove users -> split, replayed exactly.

LEAF = TalwalkarLab/leaf @09ec454, data/utils/{sample,remove_users,split_data}.py and preprocess.sh
(real-data.md section 1). Users are held as a list of :class:`LeafFile`, one per JSON file LEAF would write,
with each user's samples as row ids in LEAF's order; each step returns the files the next step would read,
named as LEAF names them. Draws use one ``random.Random(seed)`` per step, consumed in LEAF's order, so a
given seed selects what LEAF selects from the same files.

Where LEAF depends on ``os.listdir`` order, this sorts: every step reads its files in sorted file-name order
(the names change between steps, so the order can too: 'all_data_10_niid_05.json' sorts before
'all_data_1_niid_05.json' although 'all_data_1.json' sorts before 'all_data_10.json'), and user files are
listed sorted. LEAF's own order is whatever the file system returns, so its selections are not reproducible
across machines; ours are.

The variants of the copies in other papers' repositories are parameters: remove_users keeps ``> k`` in the
FedProx and Delta-FL copies (``strict=True``) and ``>= k`` in LEAF HEAD; split_data's default fraction is 0.9 in
LEAF and Delta-FL, 0.8 in FedProx's copy; LEAF HEAD splits Shakespeare without overlap (``nonoverlap_gap``),
the copies at random like every other dataset. LEAF's preprocess.sh quirks (``-tf`` ignored, missing seeds
taken from the clock) are the callers' to decide; here every fraction and seed is explicit.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

from fedbench.data.partition import PartitionError


@dataclass
class LeafFile:
    """One LEAF JSON file: its name, users in order, each user's sample ids, and hierarchies if present."""

    name: str
    users: list[str]
    samples: list[np.ndarray]
    hierarchies: list[str] | None = None

    def __post_init__(self) -> None:
        if len(self.users) != len(self.samples):
            raise ValueError(f"{self.name}: {len(self.users)} users but {len(self.samples)} sample lists")
        if self.hierarchies is not None and len(self.hierarchies) != len(self.users):
            raise ValueError(f"{self.name}: {len(self.hierarchies)} hierarchies for {len(self.users)} users")

    @property
    def total(self) -> int:
        return sum(len(s) for s in self.samples)


def fraction_label(value: float) -> str:
    """LEAF's file-name tag for a fraction: str(value)[2:] ('0.05' -> '05', '1.0' -> '0')."""
    return str(value)[2:]


def _stem(name: str) -> str:
    return name[:-5] if name.endswith(".json") else name


def _sorted(files: list[LeafFile]) -> list[LeafFile]:
    return sorted(files, key=lambda f: f.name)


def sample_niid(files: list[LeafFile], fraction: float, seed: int) -> list[LeafFile]:
    """sample.py without --iid: per file, shuffle the users (with their hierarchies) and take users until
    int(fraction * file total) samples; the last user is cut to the remaining count c, keeping its first c
    samples in the order rng.sample(range(c), c)."""
    rng = random.Random(seed)
    out = []
    for f in _sorted(files):
        target = int(fraction * f.total)
        order = list(range(len(f.users)))
        rng.shuffle(order)  # LEAF shuffles the users (or the zipped (user, hierarchy) pairs): same draws
        users, samples, hierarchies, taken, i = [], [], [], 0, 0
        while taken < target:
            k = order[i]
            rows = f.samples[k]
            if taken + len(rows) > target:
                c = target - taken
                rows = rows[np.array(rng.sample(range(c), c), dtype=np.int64)] if c else rows[:0]
            users.append(f.users[k])
            samples.append(rows)
            if f.hierarchies is not None:
                hierarchies.append(f.hierarchies[k])
            taken += len(rows)
            i += 1
        out.append(LeafFile(f"{_stem(f.name)}_niid_{fraction_label(fraction)}.json", users, samples,
                            hierarchies if f.hierarchies is not None else None))
    return out


def sample_iid(files: list[LeafFile], fraction: float, user_fraction: float, seed: int) -> list[LeafFile]:
    """sample.py --iid: per file, round(user_fraction * users) new users (at least 1) named "0", "1", ...
    across files; rng.sample of int(fraction * total) flattened samples, cut into contiguous groups (LEAF's
    iid_divide: the first groups floor(n / g), the last n - g floor(n / g) groups one more); no hierarchies."""
    rng = random.Random(seed)
    out, new_users = [], 0
    for f in _sorted(files):
        flat = np.concatenate(f.samples) if f.samples else np.zeros(0, np.int64)
        target = int(fraction * f.total)
        groups = max(1, int(round(user_fraction * len(f.users))))
        picked = flat[np.array(rng.sample(range(len(flat)), target), dtype=np.int64)]
        small = target // groups
        big = target - groups * small
        sizes = [small] * (groups - big) + [small + 1] * big
        cuts = np.concatenate([[0], np.cumsum(sizes)])
        users = [str(new_users + i) for i in range(groups)]
        new_users += groups
        label = f"{fraction_label(user_fraction)}_{fraction_label(fraction)}"
        out.append(LeafFile(f"{_stem(f.name)}_iid_{label}.json", users,
                            [picked[cuts[i]:cuts[i + 1]] for i in range(groups)]))
    return out


def remove_users(files: list[LeafFile], min_samples: int, strict: bool) -> list[LeafFile]:
    """remove_users.py: keep users with num_samples >= k (LEAF HEAD) or > k (``strict``: FedProx's and
    Delta-FL's copies); hierarchies kept only if every kept user has one."""
    out = []
    for f in _sorted(files):
        keep = [i for i, s in enumerate(f.samples) if (len(s) > min_samples if strict else len(s) >= min_samples)]
        out.append(LeafFile(f"{_stem(f.name)}_keep_{min_samples}.json", [f.users[i] for i in keep],
                            [f.samples[i] for i in keep],
                            [f.hierarchies[i] for i in keep] if f.hierarchies is not None else None))
    return out


@dataclass
class SplitUser:
    user: str
    train: np.ndarray
    test: np.ndarray
    hierarchy: str | None


def split_by_sample(files: list[LeafFile], fraction: float, seed: int,
                    nonoverlap_gap: int | None = None) -> list[SplitUser]:
    """split_data.py --by_sample: users with fewer than 2 samples dropped; ntrain = max(1, int(fraction * n))
    (1 when n = 2); train = rng.sample(range(n), ntrain), test = the rest, both in original order. With
    ``nonoverlap_gap`` (LEAF HEAD's Shakespeare rule, gap 79 = 80 - 1): train = the first ntrain samples, test
    = samples ntrain + gap .. n - 1 (no draw), users left without test samples dropped."""
    rng = random.Random(seed)
    out = []
    for f in _sorted(files):
        for i, (user, rows) in enumerate(zip(f.users, f.samples)):
            n = len(rows)
            if n < 2:
                continue
            n_train = 1 if n == 2 else max(1, int(fraction * n))
            if nonoverlap_gap is not None:
                train_idx = np.arange(n_train)
                test_idx = np.arange(n_train + nonoverlap_gap, n)
            else:
                train_idx = np.sort(np.array(rng.sample(range(n), n_train), dtype=np.int64))
                mask = np.ones(n, bool)
                mask[train_idx] = False
                test_idx = np.flatnonzero(mask)
            if len(train_idx) and len(test_idx):
                out.append(SplitUser(user, rows[train_idx], rows[test_idx],
                                     f.hierarchies[i] if f.hierarchies is not None else None))
    return out


def split_by_user(files: list[LeafFile], fraction: float, seed: int) -> tuple[list[SplitUser], list[SplitUser]]:
    """split_data.py --by_user: users collected across files (in file order); rng.sample(range(U),
    int(fraction * U)) are train users with all their samples, the rest test users with all theirs (both
    kept in collection order)."""
    rng = random.Random(seed)
    collected = [(user, rows, f.hierarchies[i] if f.hierarchies is not None else None)
                 for f in _sorted(files) for i, (user, rows) in enumerate(zip(f.users, f.samples))]
    chosen = set(rng.sample(range(len(collected)), int(fraction * len(collected))))
    empty = np.zeros(0, np.int64)
    train = [SplitUser(u, rows, empty, h) for i, (u, rows, h) in enumerate(collected) if i in chosen]
    test = [SplitUser(u, empty, rows, h) for i, (u, rows, h) in enumerate(collected) if i not in chosen]
    return train, test


@dataclass(frozen=True)
class LeafCommand:
    """One ``preprocess.sh`` invocation, every choice explicit: ``sample`` "niid" | "iid" | None (LEAF's -s),
    ``fraction`` (--sf), ``user_fraction`` (--iu), ``min_samples`` (-k; None skips the step), ``strict``
    (> k as the FedProx and Delta-FL copies, else >= k as LEAF HEAD), ``split`` "sample" | "user" (-t),
    ``train_fraction`` (--tf; the copies' default when not given: LEAF 0.9, FedProx 0.8),
    ``nonoverlap_gap`` (LEAF HEAD's Shakespeare split), ``sampling_seed`` and ``split_seed``."""

    sample: str | None
    fraction: float
    min_samples: int | None
    strict: bool
    split: str
    train_fraction: float
    sampling_seed: int
    split_seed: int
    user_fraction: float = 0.01
    nonoverlap_gap: int | None = None

    def __post_init__(self) -> None:
        if self.sample not in ("niid", "iid", None):
            raise ValueError(f"sample must be 'niid', 'iid' or null, got {self.sample!r}")
        if self.split not in ("sample", "user"):
            raise ValueError(f"split must be 'sample' or 'user', got {self.split!r}")
        if not 0.0 < self.fraction <= 1.0 or not 0.0 < self.train_fraction < 1.0:
            raise ValueError(f"fraction must be in (0, 1] and train_fraction in (0, 1), got {self.fraction} and "
                             f"{self.train_fraction}")


def _users(files: list[LeafFile]) -> list[int]:
    """Each user's sample count, over all files."""
    return [len(s) for f in files for s in f.samples]


def run_leaf(files: list[LeafFile], command: LeafCommand, where: str = "data.variants.<variant>"
             ) -> tuple[list[SplitUser], list[SplitUser]]:
    """all_data -> (sample) -> (remove users) -> split; returns (train users, test-only users). Split by sample
    gives every user train and test rows and no test-only users. A step that leaves no client (or a by-user
    split that leaves no training user) raises PartitionError naming the parameter (under ``where``) that
    removed them, and the numbers."""
    c = command
    before = _users(files)
    if c.sample == "niid":
        files = sample_niid(files, c.fraction, c.sampling_seed)
    elif c.sample == "iid":
        files = sample_iid(files, c.fraction, c.user_fraction, c.sampling_seed)
    sampled = _users(files)
    if before and not sampled:
        raise PartitionError(f"no client is left: {where}.fraction = {c.fraction} (LEAF's --sf, sampling "
                             f"{c.sample}) kept none of the {len(before)} users; raise it")
    if c.min_samples is not None:
        files = remove_users(files, c.min_samples, c.strict)
        kept = _users(files)
        if sampled and not kept:
            rule = f"more than {c.min_samples}" if c.strict else f"at least {c.min_samples}"
            raise PartitionError(f"no client is left: {where}.min_samples = {c.min_samples} (LEAF's -k: keep users "
                                 f"with {rule} samples{', strict' if c.strict else ''}) removed all {len(sampled)} "
                                 f"users (the largest has {max(sampled)} samples); lower it")
    left = _users(files)
    if c.split == "user":
        train, test = split_by_user(files, c.train_fraction, c.split_seed)
        if left and not train:
            raise PartitionError(f"no training client is left: the by-user split ({where}.split = 'user', "
                                 f"train_fraction = {c.train_fraction}) of {len(left)} user(s) puts int("
                                 f"{c.train_fraction} * {len(left)}) = 0 in training, so no sample would be "
                                 f"trained on; it needs at least {math.ceil(1 / c.train_fraction)} users: lower "
                                 f"{where}.min_samples or raise {where}.fraction")
        return train, test
    train = split_by_sample(files, c.train_fraction, c.split_seed, c.nonoverlap_gap)
    if left and not train:
        gap = (f" and, with the non-overlapping split (gap {c.nonoverlap_gap}), those left with no test sample"
               if c.nonoverlap_gap is not None else "")
        raise PartitionError(f"no client is left: the by-sample split ({where}.split = 'sample') drops users with "
                             f"fewer than 2 samples{gap}: all {len(left)} users (the largest has {max(left)} "
                             f"samples); raise {where}.fraction or lower {where}.min_samples")
    return train, []
