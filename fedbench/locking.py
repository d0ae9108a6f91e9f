"""An exclusive lock between processes on one machine, held for a block of code (POSIX ``flock``).

The lock belongs to the open file, so a holder that is killed (even by SIGKILL) releases it at once: a lock is
never left stale. Lock files are created on first use and never deleted (deleting one while another process
waits on it would let two processes each hold "the" lock, on two different files).
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def file_lock(path: str | os.PathLike, what: str = "") -> Iterator[None]:
    """Hold the lock ``path`` for the block; wait while another process holds it (saying so once on stderr,
    naming ``what`` it waits for, when ``what`` is given)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if what:
                print(f"fedbench: waiting for {what} (another process holds {path})", file=sys.stderr)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
