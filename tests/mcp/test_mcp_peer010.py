"""Differential: one 0.10-style MCP env module served by ours and by the published 0.10, same scripts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.peer010 import PEERS010, peer010_python, run_with, serving_ours, serving_published

MODULE = PEERS010 / "mcp_tools_env.py"
SCRIPT = PEERS010 / "mcp_client_script.py"


def _run(python: str, *args: str) -> dict:
    done = run_with(python, SCRIPT, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def servers():
    peer = peer010_python()
    with serving_ours(MODULE) as ours, serving_published(MODULE) as theirs:
        yield peer, ours, theirs


def test_same_tools_results_and_steps_over_raw_jsonrpc_and_ws(servers):
    _, ours, theirs = servers
    mine, published = _run(sys.executable, ours, "raw"), _run(sys.executable, theirs, "raw")
    assert mine["tools"] == published["tools"]
    assert mine["calls"] == published["calls"]
    assert mine["in_session"] == published["in_session"] == ["m", "m", "m", 3]
    assert mine["steps"] == published["steps"]
    assert mine["attached"] == published["attached"]
    assert mine["closed"] == published["closed"]
    assert mine["errors"] == published["errors"]
    assert mine["ws_mcp"] == published["ws_mcp"]
    assert [r.get("error") for r in mine["ws_mcp"][-2:]] == [-32700, -32601]


def test_published_mcp_tool_client_against_ours_matches_against_theirs(servers):
    peer, ours, theirs = servers
    assert _run(peer, ours, "client") == _run(peer, theirs, "client")


def test_our_mcp_tool_client_drives_a_published_server(servers):
    peer, ours, theirs = servers
    mine = _run(sys.executable, theirs, "client")
    assert mine == _run(peer, theirs, "client")
    assert mine == _run(sys.executable, ours, "client")


def test_published_validate_passes_against_our_mcp_and_plain_servers(servers):
    peer, ours, _ = servers
    openenv_cli = str(Path(peer).parent / "openenv")
    plain = PEERS010 / "plain_echo_env.py"
    with serving_ours(plain) as plain_url:
        for url in (ours, plain_url):
            done = subprocess.run([openenv_cli, "validate", "--url", url], capture_output=True, text=True, timeout=120, cwd="/")
            assert done.returncode == 0, done.stdout + done.stderr
            assert "PASS  mcp_endpoint" in done.stdout
            assert "Verdict: PASS" in done.stdout
