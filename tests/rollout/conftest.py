"""Fixtures: the loopback model server, the MCP-shaped env, a fresh store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openenv.recording import EpisodeStore
from tests.server_utils import running_server

from .fake_openai import make_app


@pytest.fixture(scope="session")
def model_url() -> Iterator[str]:
    """The fake OpenAI-compatible server's base URL (with ``/v1``)."""
    with running_server(make_app()) as url:
        yield url + "/v1"


@pytest.fixture(scope="session")
def tools_url() -> Iterator[str]:
    from .mcp_env import app

    with running_server(app) as url:
        yield url


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EpisodeStore]:
    s = EpisodeStore(tmp_path / "episodes.db")
    yield s
    s.close()


def model_requests(model_url: str, model: str) -> list[dict]:
    seen = httpx.get(model_url.removesuffix("/v1") + "/_requests").json()
    return [r for r in seen if r["model"] == model]
