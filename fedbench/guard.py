"""How a fedbench process ends on a problem the user can fix or on a stop signal: one line and an exit code, the
same for the CLI and the DVC stage scripts (pipelines/*.py). Low in the house (it imports only the errors and the
worker processes' stop signal), so a stage script needs no CLI to use it."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

from fedbench.errors import FedbenchError
from fedbench.parallel import Terminated, raise_terminated


def refuse(exc: FedbenchError) -> NoReturn:
    """A problem the user can fix: its one line, exit 2."""
    print(f"fedbench: {exc.label}: {exc}", file=sys.stderr)
    sys.exit(2)


def run_guarded(fn: Callable[[], object]) -> None:
    """Run ``fn``; a problem the user can fix (a config, data or run-file error) prints one line and exits 2
    (nothing has been written by then); a file the system refused (no permission, a file where a folder goes, a full
    disk) one line naming it, exit 1. Ctrl-C and SIGTERM stop at once (worker processes included), keeping
    finished runs and the last checkpoint of the others: exit 130 or 143, also where a library re-raised the stop
    as an error of its own (:func:`interruption`)."""
    signal.signal(signal.SIGTERM, raise_terminated)
    hook, sys.unraisablehook = sys.unraisablehook, _sent_again(sys.unraisablehook)
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
        if stop is not None:
            print(f"fedbench: {'interrupted' if isinstance(stop, KeyboardInterrupt) else 'terminated'}; finished runs "
                  "are kept: rerun the same command to resume the others from their last checkpoint", file=sys.stderr)
            sys.exit(130 if isinstance(stop, KeyboardInterrupt) else 128 + signal.SIGTERM)
        if not isinstance(exc, OSError) or exc.filename is None:  # a bug: its traceback
            raise
        where = exc.filename if exc.filename2 is None else f"{exc.filename} -> {exc.filename2}"
        print(f"fedbench: file error: {where}: {exc.strerror or exc}; fix it and rerun the same command (finished runs "
              "are kept)", file=sys.stderr)
        sys.exit(1)
    finally:
        sys.unraisablehook = hook


RESEND_S = 0.05  # how long after Python ignored a stop it is sent again (this hook has returned by then)


def _sent_again(hook: Callable[[object], object]) -> Callable[[object], object]:
    """``sys.unraisablehook`` that sends a stop again where Python had to ignore it: a SIGTERM or Ctrl-C whose
    handler ran inside a finalizer or a garbage-collector callback (measured: SQLAlchemy's, while MLflow's store was
    created) is printed as "Exception ignored" and the command went on, exiting 0. Sent again, it is raised in the
    main thread's own code; anything else goes to ``hook``."""
    def unraisable(event) -> None:
        if isinstance(event.exc_value, (KeyboardInterrupt, Terminated)):
            sig = signal.SIGINT if isinstance(event.exc_value, KeyboardInterrupt) else signal.SIGTERM
            again = threading.Timer(RESEND_S, os.kill, (os.getpid(), sig))  # from a thread, a moment later: its
            again.daemon = True  # handler then runs in the main thread's own code, not in this hook
            again.start()
        else:
            hook(event)

    return unraisable


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


@contextmanager
def stops_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM held until the block ends (renames that must happen together, e.g. a report's files and
    figures): a stop that arrives meanwhile is sent again once the block is done, to the handlers there were before.
    Outside the main thread (where no handler can be set) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in before:
        signal.signal(sig, lambda signum, frame: arrived.append(signum))
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        if arrived:
            os.kill(os.getpid(), arrived[0])
