"""Shared fixtures: a real echo server in a thread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.ray_cluster import ray_cluster, ray_driver, ray_network  # noqa: F401 - one Ray cluster per session, for every test dir
from tests.ray_reports import (  # noqa: F401 - checks, restarts and reports on that cluster
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_terminal_summary,
)
from tests.server_utils import running_server


@pytest.fixture(scope="session")
def echo_url() -> Iterator[str]:
    """A real echo server (``openenv.envs.echo``) on 127.0.0.1, shared by a test session."""
    from openenv.core.env_server import create_app
    from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation

    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo")
    with running_server(app) as url:
        yield url
