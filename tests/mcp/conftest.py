"""MCP tests need the optional ``fastmcp`` (the ``mcp`` extra, installed with ``test``)."""

from __future__ import annotations

import importlib.util

import pytest

from tests._require import require


@pytest.fixture(autouse=True)
def _needs_fastmcp() -> None:
    require(importlib.util.find_spec("fastmcp") is not None, "fastmcp (pip install fastmcp)")
