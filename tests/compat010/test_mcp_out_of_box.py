"""MCP after a plain install: fastmcp is a core dependency (imported only by MCP environments),
and an in-process ``step(CallToolAction)`` gives fastmcp's ``CallToolResult`` as 0.10 does, with
the same wire form."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.peer010 import PEERS010, ROOT, peer010_python, run_with

PROBE = PEERS010 / "clients" / "mcp_inprocess_probe.py"
ENV = PEERS010 / "envs" / "mcp_echo_env.py"


def _lines(python: str) -> list[dict]:
    done = run_with(python, PROBE, str(ENV), "McpEchoEnvironment")
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_fastmcp_is_a_core_dependency() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(dep.replace(" ", "").startswith("fastmcp") for dep in project["dependencies"])


def test_a_plain_server_still_imports_no_fastmcp_but_mcp_environment_imports() -> None:
    code = (
        "import sys\n"
        "from openenv.envs.echo.app import app\n"
        "assert 'fastmcp' not in sys.modules, 'a plain env server imported fastmcp'\n"
        "from openenv.core.env_server.mcp_environment import MCPEnvironment\n"
        "print(MCPEnvironment.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert done.returncode == 0 and done.stdout.strip() == "MCPEnvironment", done.stderr[-2000:]


def test_in_process_call_tool_result_matches_010() -> None:
    ours, theirs = _lines(sys.executable), _lines(peer010_python())
    assert ours[0] == theirs[0] == {"tools": ["echo_message", "echo_with_length"]}
    for mine, want in zip(ours[1:], theirs[1:], strict=True):
        assert mine["tool"] == want["tool"]
        if want["error_type"] is None:
            assert mine["type"] == want["type"] == "CallToolResult"
            assert mine["data"] == want["data"] and mine["is_error"] is want["is_error"] is False
            assert mine["content_types"] == want["content_types"]
            assert mine["wire"] == want["wire"]  # the JSON a server sends is unchanged
        else:  # an unknown tool: an error observation on both (ours words the message its own way)
            assert mine["error_type"] == want["error_type"] and mine["type"] == want["type"] == "NoneType"
    assert ours[1]["data"] == "hi" and ours[2]["data"] == {"message": "abc", "length": 3}


def test_a_subclass_counting_in_step_and_step_async_counts_each_step_once() -> None:
    # The catalogue's jupyter_env/terminus_env/coding_tools_env count steps in both overrides;
    # our step() used to go through self.step_async(), so an MCP action was counted twice.
    probe = PEERS010 / "clients" / "mcp_step_count_probe.py"
    runs = [run_with(python, probe) for python in (sys.executable, peer010_python())]
    for done in runs:
        assert done.returncode == 0, done.stderr[-2000:]
    ours, theirs = (json.loads(done.stdout.strip().splitlines()[-1]) for done in runs)
    assert ours == theirs == {"counts": [1, 2, 3, 4, 5, 6]}
