"""CI regression check: the quick profile of the main pipeline against committed reference values."""

import json

from fedbench.regression import REFERENCE, TOLERANCES, check, compare


def test_quick_profile_matches_reference():
    problems = check()
    assert not problems, "regression check failed:\n" + "\n".join(problems)


def test_compare_names_the_number_that_moved():
    ref = json.loads(REFERENCE.read_text())
    key = sorted(ref["values"])[0]
    moved = dict(ref["values"])
    moved[key] += 10 * TOLERANCES[key.rsplit("/", 1)[1]]
    problems = compare(moved, ref)
    assert len(problems) == 1 and problems[0].startswith(f"{key}: ") and "tolerance" in problems[0]
    assert compare(dict(ref["values"]), ref) == []
    missing = dict(ref["values"])
    del missing[key]
    assert compare(missing, ref) == [f"{key}: in the reference but not produced by the quick profile"]


def test_reference_holds_under_another_cpu_code_path():
    """The same profile with torch's AVX2 kernels and MKL's conditional-reproducibility path, as on another CPU:
    numbers drift (by about 1e-6, see fedbench.regression), and stay within tolerance."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = os.environ | {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-m", "fedbench.cli", "regress"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "all key numbers within tolerance" in proc.stdout
