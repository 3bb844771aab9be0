"""Where a journal's committer runs: a child process (the default) or, failing that, a thread.

The child is started with ``posix_spawn`` in its own session (a Ctrl-C aimed at the recording
script does not stop it: the script's exit, seen as end of file on the wake pipe, does). It gets
the wake pipe as stdin, the ack pipe as stdout and ``/dev/null`` as stderr (it must not keep a
pipe of its parent's caller open: ``subprocess.run(capture_output=True)`` on a recording script
returns when the script ends); a failure is reported in the journal's control page instead.
``OPENENV_JOURNAL_COMMITTER=thread`` keeps it in-process.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from pathlib import Path

import openenv
from openenv.core._children import child_ended, wait_child
from openenv.stepjournal import committer

__all__ = ["CommitterHost", "start_committer"]

_ROOT = str(Path(openenv.__file__).resolve().parent.parent)
_BOOT = (
    "import sys; sys.path[0] = sys.argv.pop(1); "
    "from openenv.stepjournal.committer import main; main()"
)


class CommitterHost:
    """The writer's handle on its committer: wake it, wait for its ack, stop it."""

    def __init__(self, wake_w: int, ack_r: int, pid: int | None, thread: threading.Thread | None) -> None:
        self.wake_w, self.ack_r, self.pid, self.thread = wake_w, ack_r, pid, thread
        self.kind = "process" if pid is not None else "thread"

    def poke(self) -> None:
        """Ask for a commit now."""
        with contextlib.suppress(BlockingIOError, BrokenPipeError, OSError):
            os.write(self.wake_w, b"d")

    def wait_ack(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for an ack (or for the committer to end)."""
        if self.ack_r >= 0 and select.select([self.ack_r], [], [], timeout_s)[0]:
            with contextlib.suppress(BlockingIOError, OSError):
                os.read(self.ack_r, 4096)

    def alive(self) -> bool:
        if self.thread is not None:
            return self.thread.is_alive()
        if self.pid is None:
            return False
        if child_ended(self.pid):
            self.pid = None
        return self.pid is not None

    def finish(self, timeout_s: float) -> bool:
        """Tell the committer to commit everything and stop; ``True`` if it stopped in time."""
        self._close_fd("wake_w")
        stopped = True
        if self.thread is not None:
            self.thread.join(timeout_s)
            stopped = not self.thread.is_alive()
        elif self.pid is not None:
            stopped = wait_child(self.pid, timeout_s)
            if not stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, 9)
                wait_child(self.pid, 5.0)
            self.pid = None
        self._close_fd("ack_r")
        return stopped

    def abandon(self) -> None:
        """Let the committer finish on its own (end of file on its wake pipe); it is reaped later."""
        if self.pid is not None:
            _ORPHANS.append(self.pid)
            self.pid = None
        self._close_fd("wake_w")
        self._close_fd("ack_r")

    def forget(self) -> None:
        """In a forked child: let go of the parent's pipes (so the parent's exit still ends it)."""
        self._close_fd("wake_w")
        self._close_fd("ack_r")
        self.pid, self.thread = None, None

    def _close_fd(self, name: str) -> None:
        fd = getattr(self, name)
        if fd >= 0:
            setattr(self, name, -1)
            with contextlib.suppress(OSError):
                os.close(fd)


_ORPHANS: list[int] = []  # committers of journals dropped without close, reaped when they end


def _reap_orphans() -> None:
    for pid in list(_ORPHANS):
        if child_ended(pid):
            _ORPHANS.remove(pid)


def start_committer(journal_path: str, db_path: str, busy_timeout_ms: int, *, kind: str | None = None) -> CommitterHost:
    """Start the committer of ``journal_path``: a child process unless ``kind`` (or the
    ``OPENENV_JOURNAL_COMMITTER`` variable) says ``thread`` or the child cannot be started."""
    _reap_orphans()
    kind = kind or os.environ.get("OPENENV_JOURNAL_COMMITTER", "process")
    wake_r, wake_w = os.pipe()
    ack_r, ack_w = os.pipe()
    if kind == "process" and sys.executable and not getattr(sys, "frozen", False):  # a frozen app is no python
        args = [sys.executable, "-c", _BOOT, _ROOT, journal_path, db_path, str(int(busy_timeout_ms))]
        try:
            pid = os.posix_spawn(
                sys.executable,
                args,
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, wake_r, 0),
                    (os.POSIX_SPAWN_DUP2, ack_w, 1),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),  # never holds the caller's stderr open
                ],
                setsid=True,
            )
        except (OSError, NotImplementedError, TypeError):  # no posix_spawn or no setsid here: a thread
            pid = None
        if pid is not None:
            os.close(wake_r)
            os.close(ack_w)
            return CommitterHost(wake_w, ack_r, pid, None)
    thread = threading.Thread(
        target=committer.run,
        args=(journal_path, db_path, wake_r, ack_w, busy_timeout_ms),
        name="openenv-journal-committer",
        daemon=True,
    )
    thread.start()
    return CommitterHost(wake_w, ack_r, None, thread)
