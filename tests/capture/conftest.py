"""Fixtures: the loopback engine (session-wide) and a capture proxy in front of it per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openenv.capture import CaptureServer
from openenv.recording import EpisodeStore
from tests.server_utils import running_server

from .fake_engine import make_engine

ENGINE_KEY = "sk-engine-secret-7f3a"


@pytest.fixture(scope="session")
def engine_url() -> Iterator[str]:
    with running_server(make_engine()) as url:
        yield url + "/v1"


def engine_requests(engine_url: str) -> list[dict]:
    return httpx.get(engine_url.removesuffix("/v1") + "/_requests", timeout=10).json()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EpisodeStore]:
    s = EpisodeStore(tmp_path / "episodes.db")
    yield s
    s.close()


@pytest.fixture
def proxy(engine_url: str, store: EpisodeStore) -> Iterator[CaptureServer]:
    with CaptureServer(llm_url=engine_url, port=0, api_key=ENGINE_KEY, store=store, label="cap-test") as server:
        yield server
