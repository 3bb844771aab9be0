"""0.10's code mode (``get_callables``/``execute_code``), mode-aware tools (``@self.tool(mode=)``)
and client mode (``mode=``, ``OPENENV_CLIENT_MODE``, ``MCPToolClient`` production-only): one probe
script prints the same lines under ours and under the published 0.10."""

from __future__ import annotations

import json
import sys

from tests.peer010 import PEERS010, peer010_python, run_with

PROBE = PEERS010 / "clients" / "code_mode_probe.py"


def _lines(python: str) -> dict[str, object]:
    done = run_with(python, PROBE)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {row["check"]: row["value"] for row in rows}


def test_code_mode_mode_aware_tools_and_client_mode_match_010() -> None:
    ours, theirs = _lines(sys.executable), _lines(peer010_python())
    assert ours == theirs
    assert len(ours) == 21  # every check printed (a failing one stops the probe)
    assert ours["code"] == {"result": "sim:5"} and ours["call_prod"]["data"] == "prod:q"
    assert ours["mcp_client"] == ["production", True, "https://example.com/env/mcp"]
