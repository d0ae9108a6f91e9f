"""How a fedbench process ends on a problem the user can fix or on a stop signal: one line and an exit code, the
same for the CLI and the DVC stage scripts (pipelines/*.py). Low in the house (it imports only the errors and the
worker processes' stop signal), so a stage script needs no CLI to use it."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import NoReturn

from fedbench.errors import FedbenchError
from fedbench.parallel import Terminated, raise_terminated


def refuse(exc: FedbenchError) -> NoReturn:
    """A problem the user can fix: its one line, exit 2."""
    print(f"fedbench: {exc.label}: {exc}", file=sys.stderr)
    sys.exit(2)


def run_guarded(fn: Callable[[], object]) -> None:
    """Run ``fn``; a problem the user can fix (a config, data or run-file error) prints one line and exits 2
    (nothing has been written by then). Ctrl-C and SIGTERM stop at once (worker processes included), keeping
    finished runs and the last checkpoint of the others: exit 130 or 143, also where a library re-raised the stop
    as an error of its own (:func:`interruption`)."""
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        fn()
        # the work is done and kept: a stop signal during the interpreter's exit (torch's and MLflow's finalizers, a
        # second or more) ends the process at once, not with a KeyboardInterrupt traceback from an atexit hook
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except FedbenchError as exc:
        refuse(exc)
    except (KeyboardInterrupt, Terminated, Exception) as exc:  # Exception: a stop a library raised as its own error
        stop = interruption(exc)
        if stop is None:  # a bug: its traceback
            raise
        print(f"fedbench: {'interrupted' if isinstance(stop, KeyboardInterrupt) else 'terminated'}; finished runs are "
              "kept: rerun the same command to resume the others from their last checkpoint", file=sys.stderr)
        sys.exit(130 if isinstance(stop, KeyboardInterrupt) else 128 + signal.SIGTERM)


def interruption(exc: BaseException) -> KeyboardInterrupt | Terminated | None:
    """The Ctrl-C or SIGTERM that ``exc`` is or stands for, else None. A library that runs our signal handler
    inside its own code may raise the stop as an error of its own, the stop its cause: Ray's ``ray.wait`` raises
    ``SystemError: <cyfunction CoreWorker.wait> returned a result with an exception set`` with the Terminated
    that fedbench's SIGTERM handler raised as its ``__cause__``. Only causes are followed: an error raised while a
    stop unwound (a clean-up that failed) has the stop as its ``__context__``, and is that error, shown with its
    traceback, not the stop."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, (KeyboardInterrupt, Terminated)):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__
    return None
