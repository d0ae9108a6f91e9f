"""How a fedbench process ends (fedbench.guard.run_guarded): a user's error is one line and exit 2, Ctrl-C and SIGTERM
exit 130 and 143 with one line, and once the work is done a stop signal during the interpreter's exit ends it at once
(before: a KeyboardInterrupt traceback from an atexit hook of torch's, exit 0). A stop that a library raised as an
error of its own ends the same way (before: Ray's SystemError, a traceback and exit 1)."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from fedbench.errors import ConfigError
from fedbench.guard import interruption, run_guarded
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


def _raised_by_ray(stop: BaseException) -> SystemError:
    """What Ray's ``ray.wait`` raised when fedbench's SIGTERM handler ran inside it: a SystemError, the stop its
    cause (reproduced with Ray 2.60 on a `fedbench run --set train.executor=ray`)."""
    wrapped = SystemError("<cyfunction CoreWorker.wait at 0x7ff0684f4380> returned a result with an exception set")
    wrapped.__cause__ = wrapped.__context__ = stop
    return wrapped


@pytest.mark.parametrize("raised, code, line", [
    (ConfigError("train.rounds: must be >= 1, got 0"), 2, "fedbench: config error: train.rounds: must be >= 1, got 0"),
    (KeyboardInterrupt(), 130, "fedbench: interrupted; finished runs are kept"),
    (Terminated(), 143, "fedbench: terminated; finished runs are kept"),
    (_raised_by_ray(Terminated()), 143, "fedbench: terminated; finished runs are kept"),
    (_raised_by_ray(KeyboardInterrupt()), 130, "fedbench: interrupted; finished runs are kept"),
])
def test_an_error_or_a_stop_is_one_line_and_its_exit_code(capsys, raised, code, line):
    def fail():
        raise raised

    with pytest.raises(SystemExit) as exited:
        run_guarded(fail)
    assert exited.value.code == code
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1


def test_the_stop_behind_an_error_is_its_cause_only():
    stop = Terminated()
    assert interruption(stop) is stop and interruption(_raised_by_ray(stop)) is stop
    try:  # raised while the stop unwound (the stop its context, not its cause): a clean-up's own failure
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise OSError("a clean-up failed")
    except OSError as during:
        assert isinstance(during.__context__, KeyboardInterrupt) and interruption(during) is None
    hidden = ValueError("raised from None")
    hidden.__context__, hidden.__suppress_context__ = Terminated(), True
    assert interruption(hidden) is None and interruption(ValueError("a bug")) is None
    looped = RuntimeError("a chain that loops")
    looped.__cause__ = SystemError()
    looped.__cause__.__cause__ = looped
    assert interruption(looped) is None


def test_a_bug_or_an_exit_is_not_taken_for_a_stop(capsys):
    def bug():
        raise ValueError("a bug")

    def exit_after_ctrl_c():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise SystemExit(3)

    with pytest.raises(ValueError, match="a bug"):  # its traceback, as before
        run_guarded(bug)
    with pytest.raises(SystemExit) as exited:  # a deliberate exit keeps its code
        run_guarded(exit_after_ctrl_c)
    assert exited.value.code == 3 and capsys.readouterr().err == ""


def test_a_stop_during_a_deferred_block_is_raised_once_it_is_done():
    from fedbench.guard import stops_deferred

    done = []
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (an xdist worker differs)
    with pytest.raises(KeyboardInterrupt):
        with stops_deferred():
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of renames that belong together
            done.append("the rest of the block")
        done.append("after the block")  # not reached: the stop is raised when the block ends
    assert done == ["the rest of the block"] and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    signal.signal(signal.SIGINT, before)


def test_a_stop_python_had_to_ignore_in_a_finalizer_is_sent_again(capsys):
    """SIGTERM whose handler ran in a garbage-collector callback was printed as "Exception ignored" and the command
    went on to exit 0 (an interrupt-and-resume audit: SQLAlchemy's callback while MLflow's store was created)."""
    import time

    class Finalized:
        def __del__(self):
            raise Terminated()  # what raise_terminated does when the signal lands in here

    def work():
        Finalized()  # finalized at once: Python can only ignore what its __del__ raises
        for _ in range(200):
            time.sleep(0.005)
        raise AssertionError("the stop was lost")

    hook = sys.unraisablehook
    with pytest.raises(SystemExit) as exited:
        run_guarded(work)
    assert exited.value.code == 143 and capsys.readouterr().err.startswith("fedbench: terminated; finished runs")
    assert sys.unraisablehook is hook
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_a_file_the_system_refused_is_one_line_naming_it(capsys):
    """`touch results/fedprox_main_job/pipeline/outcomes` then `fedbench run` ended in a FileExistsError traceback (an interrupt-and-resume
    audit); a file the system refuses is the user's to fix, and says which."""
    def refused():
        raise FileExistsError(17, "File exists", "results/fedprox_main_job/pipeline/outcomes")

    with pytest.raises(SystemExit) as exited:
        run_guarded(refused)
    assert exited.value.code == 1 and capsys.readouterr().err == (
        "fedbench: file error: results/fedprox_main_job/pipeline/outcomes: File exists; fix it and rerun the same "
        "command (finished runs are kept)\n")

    def bug():
        raise OSError("no file named")  # an OSError that names no file: a bug's traceback

    with pytest.raises(OSError, match="no file named"):
        run_guarded(bug)


def test_a_file_error_caused_by_a_stop_is_the_stop(capsys):
    def stopped_while_writing():
        try:
            raise Terminated()
        except Terminated as stop:
            raise OSError(5, "Input/output error", "results/fedprox_main_job/runs/simulations.jsonl") from stop

    with pytest.raises(SystemExit) as exited:
        run_guarded(stopped_while_writing)
    assert exited.value.code == 143 and capsys.readouterr().err.startswith("fedbench: terminated; finished runs")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
