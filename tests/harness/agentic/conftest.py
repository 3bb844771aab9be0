"""Fixtures: the loopback fake model; helpers to see whether a process still runs."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from .fake_model import FakeModel


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeModel]:
    with FakeModel() as model:
        yield model


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def reap_pids() -> Iterator[list[int]]:
    """Pids a test saw; any still alive at the end is killed (so a failing test leaks nothing)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if pid_alive(pid):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
