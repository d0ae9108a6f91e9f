"""The kernel-path runs (tests/test_kernel_paths.py) collect only the files whose text marks tests ``numerics``:
every test marked ``numerics`` that this session collected must sit in one of them, or it would never be rerun under
another CPU's kernel paths."""

import pytest

from tests.conftest import NUMERICS_FILES, _slow_first
from tests.test_kernel_paths import numerics_files


def test_every_numerics_test_sits_in_a_file_the_kernel_path_runs_collect(request):
    listed = set(numerics_files())
    assert {"tests/test_regression.py", "tests/engine/test_kernels.py"} <= listed
    assert request.config.stash[NUMERICS_FILES] <= listed, "a numerics test in a file numerics_files() misses"


class _Item:
    def __init__(self, name: str, slow: bool = False, together: bool = False):
        self.name, self.mark = name, (pytest.mark.slow(together=True) if together else pytest.mark.slow if slow else None)

    def get_closest_marker(self, name):
        return self.mark.mark if self.mark is not None and name == "slow" else None


def test_each_test_process_starts_with_its_part_of_the_slow_tests():
    items = [_Item(f"f{i}") for i in range(6)] + [_Item("s0", slow=True), _Item("s1", slow=True),
                                                   _Item("s2", slow=True), _Item("r0", together=True),
                                                   _Item("r1", together=True)]
    two = [i.name for i in _slow_first(items, 2)]
    # worksteal's shares: 11 // 2 = 5 to the first process, the other 6 to the second
    assert two[:5] == ["r0", "r1", "s1", "f0", "f1"] and two[5:] == ["s0", "s2", "f2", "f3", "f4", "f5"]
    assert [i.name for i in _slow_first(items, 1)] == ["r0", "r1", "s0", "s1", "s2"] + [f"f{i}" for i in range(6)]
    three = [i.name for i in _slow_first(items, 3)]  # shares of 3, 4 and 4
    assert three == ["r0", "r1", "s2", "s0", "f0", "f1", "f2", "s1", "f3", "f4", "f5"]
