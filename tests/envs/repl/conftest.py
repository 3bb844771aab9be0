"""REPL fixtures: environments with short limits, and a real REPL server on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from openenv.envs.repl.config import Limits
from openenv.envs.repl.environment import REPLEnvironment
from openenv.envs.repl.models import REPLAction, REPLObservation
from tests.server_utils import running_server

CELL_LIMIT_S = 1.5
GRACE_S = 1.0  # roomy: a loaded machine may take a while to schedule the interrupted worker
SERVER_CELL_LIMIT_S = 3.0
MARGIN_S = 3.0  # generous: the machine is shared with other test runs


def test_limits(**overrides: object) -> Limits:
    """Short limits for tests, independent of the caller's OPENENV_REPL_* variables."""
    base: dict[str, object] = {"cell_timeout_s": CELL_LIMIT_S, "interrupt_grace_s": GRACE_S, "memory_mb": 512,
                               "max_processes": 24}
    return Limits.from_env({}, **{**base, **overrides})


test_limits.__test__ = False  # type: ignore[attr-defined]


@pytest.fixture
def make_env() -> Iterator[Callable[..., REPLEnvironment]]:
    """Build reset REPL environments; all are closed after the test."""
    made: list[REPLEnvironment] = []

    def factory(*, limits: Limits | None = None, reset: dict | None = None, **kwargs: object) -> REPLEnvironment:
        env = REPLEnvironment(limits=limits or test_limits(), **kwargs)  # type: ignore[arg-type]
        made.append(env)
        env.reset(**(reset or {}))
        return env

    yield factory
    for env in made:
        env.close()


def run(env: REPLEnvironment, code: str) -> REPLObservation:
    """Execute one cell."""
    return env.step(REPLAction(code=code))


@pytest.fixture(scope="module")
def repl_url() -> Iterator[str]:
    """A real REPL server with short limits, shared by a test module."""
    from openenv.core.env_server.http_server import create_app

    limits = test_limits(cell_timeout_s=SERVER_CELL_LIMIT_S)

    def make() -> REPLEnvironment:
        return REPLEnvironment(limits=limits, llm=None)

    app = create_app(make, REPLAction, REPLObservation, env_name="repl", web=False)
    with running_server(app) as url:
        yield url


def pid_gone(pid: int, within_s: float = 5.0) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within ``within_s``; it may vanish between
    opening its ``/proc`` file and reading it (ESRCH), which counts as gone."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):  # dead; only waiting for an init that may never reap it
            return True
        time.sleep(0.05)
    return False
