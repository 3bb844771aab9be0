"""FastMCP tools that take a ``Context`` (``ctx.info``, ``ctx.get_state``/``set_state``,
``ctx.session_id``) work as on 0.10: state persists across the calls of one ``/mcp`` session and of
one WebSocket, and lives for one call in an in-process ``step``. Ours and the published 0.10 serve
the same module and give the same transcript."""

from __future__ import annotations

import json
import sys

from tests.peer010 import PEERS010, peer010_python, run_with, serving_ours, serving_published

ENV = PEERS010 / "envs" / "mcp_context_env.py"
DRIVE = PEERS010 / "clients" / "mcp_context_drive.py"
IN_PROCESS = PEERS010 / "clients" / "mcp_context_inprocess.py"


def _rows(done) -> list[dict]:
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_context_tools_over_the_wire_match_010() -> None:
    with serving_ours(ENV) as url:
        ours = _rows(run_with(sys.executable, DRIVE, url))
    with serving_published(ENV) as url:
        theirs = _rows(run_with(sys.executable, DRIVE, url))
    assert ours == theirs
    assert [r["value"] for r in ours] == ["1", "2", 3, True, 8, "1", "2", "3"]


def test_context_tools_in_process_match_010() -> None:
    ours = _rows(run_with(sys.executable, IN_PROCESS, str(ENV)))
    theirs = _rows(run_with(peer010_python(), IN_PROCESS, str(ENV)))
    assert ours == theirs
    assert [r["value"] for r in ours] == ["1", "1", 5, True, 2]
