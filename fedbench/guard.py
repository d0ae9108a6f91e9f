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
    finished runs and the last checkpoint of the others: exit 130 or 143."""
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        fn()
        # the work is done and kept: a stop signal during the interpreter's exit (torch's and MLflow's finalizers, a
        # second or more) ends the process at once, not with a KeyboardInterrupt traceback from an atexit hook
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except FedbenchError as exc:
        refuse(exc)
    except (KeyboardInterrupt, Terminated) as exc:
        print(f"fedbench: {'interrupted' if isinstance(exc, KeyboardInterrupt) else 'terminated'}; finished runs are "
              "kept: rerun the same command to resume the others from their last checkpoint", file=sys.stderr)
        sys.exit(130 if isinstance(exc, KeyboardInterrupt) else 128 + signal.SIGTERM)
