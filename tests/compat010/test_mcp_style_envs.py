"""MCP-style environments as 0.10 serves them: a ``step_async`` assigned on the instance (a
``functools.partial``) is used by ``/step`` and ``/mcp``; a ``tools/list`` or ``tools/call`` whose step
returns another observation class is a JSON-RPC error naming both classes. Same lines on both."""

from __future__ import annotations

import json
import sys

from tests.peer010 import PEERS010, peer010_python, run_with

PROBE = PEERS010 / "clients" / "mcp_style_probe.py"


def _lines(python: str) -> list[dict]:
    done = run_with(python, PROBE)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_mcp_style_envs_match_010() -> None:
    ours, theirs = _lines(sys.executable), _lines(peer010_python())
    assert ours == theirs
    assert ours[0] == {"step": {"ok": True}} and ours[2] == {"call": {"ok": True}}
    assert ours[3] == {"wrong_list": {"error": "MCP-style tools/list step returned Plain, expected ListToolsObservation"}}
    assert ours[4] == {"wrong_call": {"error": "MCP-style tools/call step returned Plain, expected CallToolObservation"}}
