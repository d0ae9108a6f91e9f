"""The code check of the ``ray`` executor (fedbench.executors): a unit refuses to run on a node whose fedbench files
differ from the driver's, naming both hashes. The hash is over the files' names and bytes (every process of a cluster
computes it once: parsing the package's syntax trees took 3 s of a loaded 2-core machine)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from fedbench import executors
from fedbench.errors import FedbenchError


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_package_hash_is_over_the_names_and_bytes_of_the_py_files(tmp_path):
    root = _package(tmp_path / "a", {"x.py": "A = 1\n", "sub/y.py": "B = 2  # two\n", "notes.txt": "not code"})
    expected = hashlib.sha256(b"sub/y.py\x0013\x00B = 2  # two\n" + b"x.py\x006\x00A = 1\n").hexdigest()[:16]
    assert executors.package_hash(root) == expected
    same = _package(tmp_path / "b", {"x.py": "A = 1\n", "sub/y.py": "B = 2  # two\n"})
    assert executors.package_hash(same) == expected  # where the package lies, and files not .py, change nothing
    comment = _package(tmp_path / "c", {"x.py": "A = 1\n", "sub/y.py": "B = 2  # 2\n"})
    moved = _package(tmp_path / "d", {"x.py": "A = 1\n", "y.py": "B = 2  # two\n"})
    assert len({expected, executors.package_hash(comment), executors.package_hash(moved)}) == 3


class _Board:
    class started:  # stands in for an actor method: board.started.remote(index)
        @staticmethod
        def remote(index: int) -> None:
            return None


def test_a_unit_refuses_a_node_whose_fedbench_differs_naming_both_hashes():
    ran = []
    setup = executors._Setup(code="0123456789abcdef", env={})
    with pytest.raises(FedbenchError) as refused:
        executors._run_unit(ran.append, "job", 0, setup, _Board(), storage=None)
    here = executors._code_hash()
    assert ran == [] and here != setup.code
    assert f"has code {here}, the driver's is 0123456789abcdef; install the driver's fedbench" in str(refused.value)
    threads = torch.get_num_threads()  # a unit sets one torch thread: this test process's is given back
    try:
        assert executors._run_unit(ran.append, "job", 0, executors._Setup(code=here, env={}), _Board(), None) is None
    finally:
        torch.set_num_threads(threads)
    assert ran == ["job"]
