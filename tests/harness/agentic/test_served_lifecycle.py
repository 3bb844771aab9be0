"""HarnessEnvironment behind our create_app (a real server subprocess): a WebSocket session that
ends takes its harness process group with it; a hung turn ends the episode, not the session."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from tests.peer010 import serving_ours

from .conftest import wait_gone

APP = Path(__file__).with_name("harness_app.py")


def _send(ws, frame, timeout=60):
    ws.send(json.dumps(frame))
    return json.loads(ws.recv(timeout=timeout))


def _response(reply) -> str:
    return reply["data"]["observation"]["metadata"]["response"]


def test_session_end_kills_the_harness_group_and_a_hang_ends_only_the_episode(fake_model, reap_pids):
    with serving_ours(APP, extra_env={"FAKE_MODEL_URL": fake_model.url, "FAKE_TURN_TIMEOUT": "3"}) as url:
        ws_url = url.replace("http://", "ws://") + "/ws"
        with connect(ws_url, open_timeout=30) as ws:
            assert _send(ws, {"type": "reset", "data": {}})["type"] == "observation"
            pid = json.loads(_response(_send(ws, {"type": "step", "data": {"message": "whoami"}})))["pid"]
            child = int(_response(_send(ws, {"type": "step", "data": {"message": "spawn"}})).split()[1])
            reap_pids.extend([pid, child])
            started = time.monotonic()
            hung = _send(ws, {"type": "step", "data": {"message": "hang"}})
            assert time.monotonic() - started < 20
            assert hung["data"]["done"] is True
            assert hung["data"]["observation"]["metadata"]["error_type"] == "turn_timeout"
            assert wait_gone(pid, 10) and wait_gone(child, 10)
            after = _send(ws, {"type": "step", "data": {"message": "hello"}})
            assert after["type"] == "error" and "No active episode" in after["data"]["message"]
            # the same session starts a new episode with a new harness
            assert _send(ws, {"type": "reset", "data": {}})["type"] == "observation"
            second = json.loads(_response(_send(ws, {"type": "step", "data": {"message": "whoami"}})))["pid"]
            reap_pids.append(second)
            ask = _send(ws, {"type": "step", "data": {"message": "ask hi"}})
            assert _response(ask) == "model saw 3 messages; last: ask hi"
        # the client went away: the session closes the env, and the harness with it
        assert wait_gone(second, 15)
        assert fake_model.requests[-1]["body"]["messages"][-1] == {"role": "user", "content": "ask hi"}

        # HTTP reset: one-shot, the tools are injected as over the WebSocket
        reply = httpx.post(url + "/reset", json={}, timeout=60)
        assert reply.status_code == 200
        assert reply.json()["observation"]["metadata"]["injected_tools"] == ["add", "env_read_file"]
        bad = httpx.post(url + "/step", json={"action": {"message": 5}}, timeout=60)
        assert bad.status_code == 422


def test_production_harness_route_stops_the_harness_when_the_client_leaves(monkeypatch, reap_pids):
    from fastapi.testclient import TestClient
    from starlette.websockets import WebSocketDisconnect

    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.types import Observation
    from openenv.core.harness import HarnessAction

    from .harness_app import make_env

    monkeypatch.setenv("OPENENV_MODE", "production")
    app = create_app(make_env, HarnessAction, Observation, env_name="fake_harness_env")
    with TestClient(app) as client:
        assert client.post("/reset", json={}).status_code in (404, 405)  # no simulation routes
        with client.websocket_connect("/harness") as ws:
            assert ws.receive_json()["type"] == "session_started"
            ws.send_json({"type": "message", "content": "whoami"})
            complete = ws.receive_json()
            assert complete["type"] == "turn_complete"
            pid = json.loads(complete["data"]["response"])["pid"]
            reap_pids.append(pid)
            assert client.get("/health").status_code == 200
        assert wait_gone(pid, 15)
    monkeypatch.setenv("OPENENV_MODE", "simulation")
    plain = create_app(make_env, HarnessAction, Observation, env_name="fake_harness_env")
    with TestClient(plain) as client, pytest.raises(WebSocketDisconnect):
        with client.websocket_connect("/harness") as ws:
            ws.receive_json()
