"""Reaping child processes started without a ``Popen`` object (``posix_spawn``)."""

from __future__ import annotations

import os
import time

__all__ = ["child_ended", "wait_child"]


def child_ended(pid: int) -> bool:
    """Whether child ``pid`` has ended, reaping it if so (no zombie is left); a pid that is not
    (or no longer) our child counts as ended."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done != 0


def wait_child(pid: int, timeout_s: float) -> bool:
    """Reap child ``pid`` within ``timeout_s`` (polled with a growing sleep); whether it ended."""
    deadline = time.monotonic() + timeout_s
    delay = 0.001
    while not child_ended(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True
