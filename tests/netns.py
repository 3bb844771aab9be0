"""A private network namespace for multi-node tests: nodes at a routable address, no traffic out.

    with PrivateNetwork() as net:        # made once: loopback up, 10.250.0.1/24 on it, default route on lo
        with net.inside():               # this thread (and what it starts from now on) is in it
            subprocess.Popen([...])      # children inherit the namespace
            ...                          # back in the machine's namespace after the block

A network namespace belongs to a thread, not to a process: ``unshare(CLONE_NEWNET)`` moves only the
calling thread, ``setns`` moves it back, and threads and processes it starts in between are born
inside (and stay there). Sockets keep the namespace they were made in. Inside, the machine's own
interfaces do not exist: a packet to any address goes to ``lo`` and stays there, so a Ray node that
looks up its "outward" address finds :data:`TEST_ADDRESS`, as a node on a real network finds its own.

Needs root (``CAP_SYS_ADMIN``) and ``ip`` (iproute2); :func:`private_network_available` says whether
both are there.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["TEST_ADDRESS", "PrivateNetwork", "private_network_available"]

TEST_ADDRESS = "10.250.0.1"
_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def private_network_available() -> str | None:
    """None when this process can make a private network namespace, else the reason it cannot."""
    if os.geteuid() != 0:
        return "a private network namespace needs root"
    if shutil.which("ip") is None:
        return "`ip` (Debian package iproute2)"
    return None


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _setns(fd: int) -> None:
    _check(_libc.setns(fd, _CLONE_NEWNET), "setns(CLONE_NEWNET)")


class PrivateNetwork:
    """One network namespace with loopback up and :data:`TEST_ADDRESS` on it; entered per thread."""

    def __init__(self) -> None:
        self._home_fd: int | None = None
        self._ns_fd: int | None = None

    def create(self) -> PrivateNetwork:
        """Make the namespace and configure it (from a short-lived thread, so no caller moves)."""
        error: list[BaseException] = []

        def make() -> None:
            try:
                _check(_libc.unshare(_CLONE_NEWNET), "unshare(CLONE_NEWNET)")
                self._ns_fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
                for cmd in (["ip", "link", "set", "lo", "up"],
                            ["ip", "addr", "add", f"{TEST_ADDRESS}/24", "dev", "lo"],
                            ["ip", "route", "add", "default", "dev", "lo", "src", TEST_ADDRESS]):
                    subprocess.run(cmd, check=True, capture_output=True, timeout=10)
            except BaseException as exc:  # reported to the caller below
                error.append(exc)

        self._home_fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        worker = threading.Thread(target=make, name="netns-create")
        worker.start()
        worker.join(timeout=30)
        if error or self._ns_fd is None:
            self.close()
            raise RuntimeError(f"could not make a private network namespace: {error[0] if error else 'timed out'}")
        return self

    @contextmanager
    def inside(self) -> Iterator[None]:
        """Move the calling thread into the namespace for the block, then back where it was (so
        blocks nest: a thread already inside stays inside after an inner block)."""
        if self._ns_fd is None or self._home_fd is None:
            raise RuntimeError("the private network is not created (or already closed)")
        before = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            _setns(self._ns_fd)
            try:
                yield
            finally:
                _setns(before)
        finally:
            os.close(before)

    def run(self, cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess:
        """``subprocess.run`` with the child born inside the namespace."""
        with self.inside():
            return subprocess.run(cmd, **kwargs)  # type: ignore[call-overload]

    def popen(self, cmd: list[str], **kwargs: object) -> subprocess.Popen:
        """``subprocess.Popen`` with the child born inside the namespace."""
        with self.inside():
            return subprocess.Popen(cmd, **kwargs)  # type: ignore[call-overload]

    def close(self) -> None:
        """Drop our handles; the namespace goes when the last process or socket in it does."""
        for name in ("_ns_fd", "_home_fd"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)

    def __enter__(self) -> PrivateNetwork:
        return self.create()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
