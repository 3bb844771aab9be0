"""The same HarnessEnvironment scenario on the published 0.10 and on ours, compared call by call.

In process (``scenario.py`` in each interpreter) and served (``harness_app.py`` behind each
package's ``create_app``, driven over the WebSocket): a real fake harness process, a real MCP
bridge, a real loopback model. Observations, metadata, errors and error types must be equal.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from websockets.sync.client import connect

from tests.peer010 import peer010_python, run_with, serving_ours, serving_published

HERE = Path(__file__).parent
SCENARIO = HERE / "scenario.py"
APP = HERE / "harness_app.py"


def _lines(result) -> list[dict]:
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{"call"')]


def test_inprocess_scenario_matches_010(fake_model):
    peer = _lines(run_with(peer010_python(), SCENARIO, fake_model.url, timeout=180))
    ours = _lines(run_with(sys.executable, SCENARIO, fake_model.url, timeout=180))
    assert [p["call"] for p in peer] == [o["call"] for o in ours]
    for p, o in zip(peer, ours, strict=True):
        assert o == p, p["call"]
    by_call = {o["call"]: o for o in ours}
    # The scenario covers what matters, so equality above is not vacuous.
    assert by_call["reset"]["metadata"]["injected_tools"] == ["add", "env_read_file"]
    assert by_call["tool-renamed"]["metadata"]["response"] == "env_read_file -> remember the milk"
    assert by_call["ask"]["metadata"]["turn_events"][1]["type"] == "llm_response"
    assert by_call["crash"]["metadata"]["error_type"] == "harness_crashed"
    assert by_call["hang"]["metadata"]["error_type"] == "turn_timeout"
    assert by_call["after-crash"]["error"] == "HarnessNotRunningError"
    assert by_call["alive-after-close"]["alive"] is False


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("timestamp", "episode_id")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _drive(base_url: str) -> list[dict]:
    """One WebSocket session: reset, turns (echo, tool, model, crash), reset, hang, state."""
    frames = [
        {"type": "step", "data": {"message": "too early"}},
        {"type": "reset", "data": {}},
        {"type": "step", "data": {"message": "hello"}},
        {"type": "step", "data": {"message": 'tool add {"a": 1, "b": 2}'}},
        {"type": "step", "data": {"message": 'tool env_read_file {"path": "notes.txt"}'}},
        {"type": "step", "data": {"message": "ask ping"}},
        {"type": "state"},
        {"type": "step", "data": {"message": "crash"}},
        {"type": "step", "data": {"message": "hello again"}},
        {"type": "reset", "data": {}},
        {"type": "step", "data": {"message": "hang"}},
        {"type": "step", "data": {"message": "x", "bogus": 1}},
    ]
    out = []
    with connect(base_url.replace("http://", "ws://") + "/ws", open_timeout=30, max_size=None) as ws:
        for frame in frames:
            ws.send(json.dumps(frame))
            reply = json.loads(ws.recv(timeout=60))
            data = reply.get("data") or {}
            if reply["type"] == "error":
                out.append({"error": data.get("code")})
            elif reply["type"] == "state":
                out.append({"state": {"step_count": data.get("step_count")}})
            else:
                obs = dict(data.get("observation") or {})
                out.append({"obs": _strip(obs.get("metadata") or {}), "done": data.get("done"),
                            "reward": data.get("reward")})
    return out


@pytest.mark.timeout(300)
def test_served_over_websocket_matches_010(fake_model):
    env = {"FAKE_MODEL_URL": fake_model.url, "FAKE_TURN_TIMEOUT": "8"}
    with serving_published(APP, extra_env=env) as url:
        peer = _drive(url)
    with serving_ours(APP, extra_env=env) as url:
        started = time.monotonic()
        ours = _drive(url)
        took = time.monotonic() - started
    # A step before any reset goes to the fresh env on both (the harness env raises: EXECUTION_ERROR).
    assert ours == peer
    assert peer[0] == {"error": "EXECUTION_ERROR"}
    assert peer[8] == {"error": "EXECUTION_ERROR"}  # a step after the crash ended the episode
    assert peer[2]["obs"]["response"] == "echo: hello (turn 1)"
    assert peer[4]["obs"]["response"] == "env_read_file -> remember the milk"
    assert peer[7]["obs"]["error_type"] == "harness_crashed" and peer[7]["done"] is True
    assert peer[10]["obs"]["error_type"] == "turn_timeout"
    assert took < 60  # the hang ended at its 8 s budget, not a stuck session
