"""Worker processes never outlive the run that started them.

Joblib's process workers (loky) notice a dead parent only when they next talk to it, so a
sweep killed with SIGKILL could leave them running for minutes, holding pipes and cores.
``die_with_parent(parent_pid)``, called at the start of each task, asks Linux to SIGKILL the
worker when its parent dies (``prctl(PR_SET_PDEATHSIG)``), once per process. It does
nothing in the parent itself, in a process whose parent is not ``parent_pid`` (a dask
worker started by its nanny, a thread backend), or where prctl does not exist.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1
_armed: set[int] = set()  # the pids (this process, after forks) already armed


def die_with_parent(parent_pid: int) -> bool:
    """Arm this worker to be killed when ``parent_pid`` (its parent) dies; True if armed."""
    pid = os.getpid()
    if pid in _armed:
        return True
    if pid == parent_pid or os.getppid() != parent_pid or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    _armed.add(pid)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
    return True
