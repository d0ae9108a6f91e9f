"""How a fedbench process ends (fedbench.guard.run_guarded): a user's error is one line and exit 2, Ctrl-C and SIGTERM
exit 130 and 143 with one line, and once the work is done a stop signal during the interpreter's exit ends it at once
(before: a KeyboardInterrupt traceback from an atexit hook of torch's, exit 0)."""

from __future__ import annotations

import signal

import pytest

from fedbench.errors import ConfigError
from fedbench.guard import run_guarded
from fedbench.parallel import Terminated


@pytest.fixture(autouse=True)
def handlers():
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGINT, saved[0])
    signal.signal(signal.SIGTERM, saved[1])


def test_done_work_leaves_the_default_handlers_for_the_exit():
    seen = []
    run_guarded(lambda: seen.append(signal.getsignal(signal.SIGTERM).__name__))
    assert seen == ["raise_terminated"]  # while it works: SIGTERM unwinds it like Ctrl-C
    assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.parametrize("raised, code, line", [
    (ConfigError("train.rounds: must be >= 1, got 0"), 2, "fedbench: config error: train.rounds: must be >= 1, got 0"),
    (KeyboardInterrupt(), 130, "fedbench: interrupted; finished runs are kept"),
    (Terminated(), 143, "fedbench: terminated; finished runs are kept"),
])
def test_an_error_or_a_stop_is_one_line_and_its_exit_code(capsys, raised, code, line):
    def fail():
        raise raised

    with pytest.raises(SystemExit) as exited:
        run_guarded(fail)
    assert exited.value.code == code
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1
