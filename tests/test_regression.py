"""CI regression check: the quick profile of the main pipeline against committed reference values."""

import json

import pytest

from fedbench.regression import REFERENCE, TOLERANCES, check, compare


@pytest.mark.numerics  # also run under the kernel paths of other CPUs: make test-kernel-paths (Makefile)
def test_quick_profile_matches_reference(quick_profile):
    problems = check(root=quick_profile)  # the session's profile runs (tests/conftest.py), read back where computed
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
