"""Fixtures: a loopback OpenAI-compatible model and an MCP echo environment, both on 127.0.0.1."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from tests._require import require
from tests.server_utils import running_server

from .loopback_model import make_model


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    with running_server(make_model()) as url:
        yield url


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    from tests.peers010.mcp_tools_env import app

    with running_server(app) as url:
        yield url


@pytest.fixture
def inspect_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """inspect-ai present, quiet, its OpenAI provider keyed (the key only reaches the loopback model)."""
    require(importlib.util.find_spec("inspect_ai") is not None, "inspect-ai (pip install 'openenv[evals]')")
    require(importlib.util.find_spec("openai") is not None, "openai (inspect-ai's OpenAI-compatible provider)")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    monkeypatch.setenv("INSPECT_DISPLAY", "none")
    monkeypatch.setenv("OPENENV_EPISODES_DB", str(tmp_path / "default-episodes.db"))
