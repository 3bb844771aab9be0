"""Session-wide fixtures (a served app cannot be served twice: its executor stops with it): the tic-tac-toe test env (``pkgs/openspiel_env``) and the echo env served by ours on
127.0.0.1, the loopback OpenAI-compatible engine (tests/capture/fake_engine.py), a store per test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.recording import EpisodeStore
from tests.capture.fake_engine import make_engine
from tests.server_utils import running_server

PKGS = Path(__file__).parent / "pkgs"
if str(PKGS) not in sys.path:
    sys.path.insert(0, str(PKGS))


@pytest.fixture(scope="session")
def ttt_url() -> Iterator[str]:
    from openspiel_env.server import app

    with running_server(app) as url:
        yield url


@pytest.fixture(scope="session")
def echo_url() -> Iterator[str]:
    from openenv.envs.echo.app import app

    with running_server(app) as url:
        yield url


@pytest.fixture(scope="session")
def engine_url() -> Iterator[str]:
    with running_server(make_engine()) as url:
        yield url


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EpisodeStore]:
    s = EpisodeStore(tmp_path / "episodes.db")
    yield s
    s.close()
