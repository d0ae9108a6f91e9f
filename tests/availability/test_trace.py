"""Replay of an availability trace from a tiny CSV, and clear errors on malformed files."""

import numpy as np
import pytest

from fedbench.availability import TraceAvailability

IDS = ("a", "b", "c", "d")


def _write(tmp_path, text):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    return path


def test_replay_tiny_trace(tmp_path):
    path = _write(tmp_path, "client_id,available_from,available_to\n"
                            "a,0,2\n"
                            "c,1,1\n"
                            "\n"
                            "a,5,6\n"
                            "b, 2 , 3\n")
    model = TraceAvailability.from_csv(path, IDS)
    expected = {  # round: available clients (both ends inclusive; d never appears)
        0: "a", 1: "ac", 2: "ab", 3: "b", 4: "", 5: "a", 6: "a", 7: "",
    }
    for r, clients in expected.items():
        np.testing.assert_array_equal(model.mask(seed=0, round_=r), [c in clients for c in IDS], err_msg=f"round {r}")
    assert not model.mask(0, 1000).any()


@pytest.mark.parametrize("text, message", [
    ("", "expected the header"),
    ("client,from,to\na,0,1\n", "expected the header"),
    ("client_id,available_from,available_to\n", "no availability intervals"),
    ("client_id,available_from,available_to\na,0\n", r"trace.csv:2: expected 3 fields"),
    ("client_id,available_from,available_to\na,0,1\nz,0,1\n", r"trace.csv:3: unknown client_id 'z'"),
    ("client_id,available_from,available_to\na,zero,1\n", r"trace.csv:2: .*must be integers"),
    ("client_id,available_from,available_to\na,1.5,2\n", r"trace.csv:2: .*must be integers"),
    ("client_id,available_from,available_to\na,5,4\n", r"trace.csv:2: need 0 <= available_from <= available_to"),
    ("client_id,available_from,available_to\na,-1,4\n", r"trace.csv:2: need 0 <="),
])
def test_malformed_files_raise_naming_the_line(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        TraceAvailability.from_csv(_write(tmp_path, text), IDS)


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        TraceAvailability.from_csv(tmp_path / "nope.csv", IDS)
