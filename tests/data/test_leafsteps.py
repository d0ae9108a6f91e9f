"""LEAF's sample -> remove users -> split, replayed with LEAF's draws and sorted file listings."""

import random

import numpy as np
import pytest

from fedbench.data.leafsteps import (
    LeafCommand,
    LeafFile,
    fraction_label,
    remove_users,
    run_leaf,
    sample_iid,
    sample_niid,
    split_by_sample,
    split_by_user,
)


def users(name, sizes, start=0, hierarchies=False):
    rows, out = start, []
    for n in sizes:
        out.append(np.arange(rows, rows + n))
        rows += n
    names = [f"{name}_u{i}" for i in range(len(sizes))]
    return LeafFile(name, names, out, [f"play{i}" for i in range(len(sizes))] if hierarchies else None)


def test_niid_sampling_replays_leafs_draws_and_cuts_the_last_user():
    f = users("all_data.json", [5, 3, 4, 6], hierarchies=True)
    (out,) = sample_niid([f], 0.5, seed=7)
    rng = random.Random(7)  # LEAF: shuffle the (user, hierarchy) pairs, take users until int(0.5 * 18) = 9
    order = list(range(4))
    rng.shuffle(order)
    taken, expected = 0, []
    for k in order:
        n = len(f.samples[k])
        if taken + n > 9:
            c = 9 - taken
            expected.append((f.users[k], f.samples[k][rng.sample(range(c), c)].tolist()))
            break
        expected.append((f.users[k], f.samples[k].tolist()))
        taken += n
        if taken == 9:
            break
    assert [(u, s.tolist()) for u, s in zip(out.users, out.samples)] == expected
    assert out.hierarchies == [f"play{f.users.index(u)}" for u in out.users]
    assert out.name == "all_data_niid_5.json" and sum(len(s) for s in out.samples) == 9


def test_files_are_read_in_sorted_name_order_and_renamed_as_leaf_does():
    a, b = users("all_data_1.json", [4, 4]), users("all_data_10.json", [4, 4], start=8)
    out = sample_niid([b, a], 1.0, seed=0)
    assert [f.name for f in out] == ["all_data_1_niid_0.json", "all_data_10_niid_0.json"]
    kept = remove_users(out, 3, strict=True)
    assert [f.name for f in kept] == ["all_data_10_niid_0_keep_3.json", "all_data_1_niid_0_keep_3.json"]
    assert fraction_label(0.05) == "05" and fraction_label(1.0) == "0"


def test_remove_users_strict_and_not():
    f = users("a.json", [2, 3, 4])
    assert remove_users([f], 3, strict=False)[0].users == ["a.json_u1", "a.json_u2"]  # LEAF HEAD: >= k
    assert remove_users([f], 3, strict=True)[0].users == ["a.json_u2"]  # FedProx's and Delta-FL's copies: > k


def test_split_by_sample_rules():
    f = users("a.json", [1, 2, 10], hierarchies=True)
    split = split_by_sample([f], 0.8, seed=3)
    assert [s.user for s in split] == ["a.json_u1", "a.json_u2"]  # fewer than 2 samples: dropped
    assert (len(split[0].train), len(split[0].test)) == (1, 1)  # n = 2: one each
    rng = random.Random(3)
    rng.sample(range(2), 1)
    picked = sorted(rng.sample(range(10), 8))
    assert split[1].train.tolist() == [3 + i for i in picked] and split[1].hierarchy == "play2"
    gap = split_by_sample([users("s.json", [200, 85])], 0.9, seed=0, nonoverlap_gap=79)
    # LEAF HEAD's Shakespeare rule: train = the first 180, test = 180 + 79 .. 199 (none left: dropped); 85: dropped
    assert gap == [] and split_by_sample([users("s.json", [1000])], 0.9, 0, nonoverlap_gap=79)[0].test.tolist() == \
        list(range(979, 1000))


def test_split_by_user_and_run_leaf():
    f = users("all_data.json", [5, 6, 7, 8])
    train, test = split_by_user([f], 0.5, seed=1)
    chosen = set(random.Random(1).sample(range(4), 2))
    assert [t.user for t in train] == [f.users[i] for i in sorted(chosen)]
    assert all(len(t.test) == 0 for t in train) and all(len(t.train) == 0 for t in test)
    command = LeafCommand(sample="niid", fraction=1.0, min_samples=5, strict=True, split="user", train_fraction=0.5,
                          sampling_seed=0, split_seed=1)
    train, test = run_leaf([f], command)
    assert sorted(t.user for t in train + test) == f.users[1:]  # > 5 keeps 6, 7, 8
    with pytest.raises(ValueError, match="split must be 'sample' or 'user'"):
        LeafCommand(sample="niid", fraction=1.0, min_samples=None, strict=True, split="both", train_fraction=0.5,
                    sampling_seed=0, split_seed=0)


def test_iid_sampling_makes_new_users_across_files():
    out = sample_iid([users("b.json", [10, 10, 10]), users("a.json", [4, 4], start=30)], 0.5, 0.5, seed=0)
    assert [f.name for f in out] == ["a_iid_5_5.json", "b_iid_5_5.json"]
    assert [f.users for f in out] == [["0"], ["1", "2"]]  # round(0.5 * 2) = 1, round(0.5 * 3) = 2 (banker's)
    assert [len(s) for s in out[1].samples] == [7, 8] and out[1].hierarchies is None
