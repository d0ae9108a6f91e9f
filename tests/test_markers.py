"""The kernel-path runs (tests/test_kernel_paths.py) collect only the files whose text marks tests ``numerics``:
every test marked ``numerics`` that this session collected must sit in one of them, or it would never be rerun under
another CPU's kernel paths."""

from tests.conftest import NUMERICS_FILES
from tests.test_kernel_paths import numerics_files


def test_every_numerics_test_sits_in_a_file_the_kernel_path_runs_collect(request):
    listed = set(numerics_files())
    assert {"tests/test_regression.py", "tests/engine/test_kernels.py"} <= listed
    assert request.config.stash[NUMERICS_FILES] <= listed, "a numerics test in a file numerics_files() misses"
