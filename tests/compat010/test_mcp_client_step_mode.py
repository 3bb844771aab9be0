"""``MCPToolClient.use_production_mode = False`` sends ``list_tools``/``call_tool`` as steps, as 0.10
does (the server counts them); ``True`` goes back to ``/mcp``. Ours and the published 0.10 client
print the same transcript against the same 0.10 server."""

from __future__ import annotations

import json
import sys

from tests.peer010 import PEERS010, peer010_python, run_with, serving_published

ENV = PEERS010 / "envs" / "mcp_echo_env.py"
DRIVE = PEERS010 / "clients" / "mcp_step_mode_drive.py"


def _rows(done) -> list[dict]:
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_step_mode_tool_calls_match_010() -> None:
    with serving_published(ENV) as url:
        ours = _rows(run_with(sys.executable, DRIVE, url))
        theirs = _rows(run_with(peer010_python(), DRIVE, url))
    assert ours == theirs
    assert ours == [
        {"tools": ["echo_message", "echo_with_length"]},
        {"value": "hi", "steps": 2},
        {"error": True, "steps": 3},
        {"value": "yo", "steps": 3},
    ]
