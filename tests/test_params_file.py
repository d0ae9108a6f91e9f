"""params.yaml survives `dvc exp run -S` (issue 23 item 1): DVC applies -S overrides by loading the file with
ruamel, merging the overrides and dumping it again (dvc.utils.hydra.apply_overrides), which replaces every list,
drops comments attached to list items and re-wraps flow mappings wider than 80 columns. params.yaml is written so
that this round trip changes nothing but the overridden value: lists in block style, no comment between a list and
the next key, no flow mapping past 80 columns."""

import difflib
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("override, changed", [
    ("train.rounds=4", ("  rounds: 4 ",)),
    ("data.seed=3", ("  seed: 3 ",)),
    ("train.sampling=proportional", ("  sampling: proportional ",)),
    ("data.variants.mnist5k_fedprox.num_clients=50", ("      num_clients: 50",)),
])
def test_dvc_exp_run_set_param_changes_one_line(tmp_path, override, changed):
    from dvc.utils.hydra import apply_overrides

    path = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", path)
    before = path.read_text().splitlines()
    apply_overrides(path, [override])
    after = path.read_text().splitlines()
    diff = [d for d in difflib.unified_diff(before, after, lineterm="", n=0) if d[:1] in "+-" and d[:3] not in ("+++", "---")]
    removed, added = [d[1:] for d in diff if d[0] == "-"], [d[1:] for d in diff if d[0] == "+"]
    assert len(removed) == len(added) == len(changed), diff
    assert all(a.startswith(c) for a, c in zip(added, changed)), diff
    comments = [line.split("#", 1)[1] for line in before if "#" in line]
    assert comments == [line.split("#", 1)[1] for line in after if "#" in line]  # every comment kept
