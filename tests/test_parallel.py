"""fedbench.parallel: a child forked from a fedbench command exits quietly on SIGTERM while it starts up."""

import os
import signal
import time

from fedbench import parallel


def test_a_child_forked_from_a_terminating_process_exits_at_once_on_sigterm():
    """The parent raises Terminated on SIGTERM (raise_terminated); its forked child, before installing a handler of
    its own, exits at once with 128 + SIGTERM instead of raising the inherited Terminated (a worker stopped while its
    pool starts: tests/faults/test_process_lifetime.py saw its traceback)."""
    old = signal.signal(signal.SIGTERM, parallel.raise_terminated)
    try:
        pid = os.fork()
        if pid == 0:  # the child: signal itself; the inherited handler would raise, and exit 0 below
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGTERM
        assert signal.getsignal(signal.SIGTERM) is parallel.raise_terminated  # the parent's own is untouched
    finally:
        signal.signal(signal.SIGTERM, old)
