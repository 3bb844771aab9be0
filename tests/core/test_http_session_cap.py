"""HTTP sessions (``X-OpenEnv-Session: new``) cannot lock out connected clients: at the cap a
WebSocket client reclaims the longest-idle HTTP session; HTTP clients alone still get 503."""

from __future__ import annotations

import time

import httpx

from openenv.core import GenericEnvClient
from openenv.core.env_server.http_server import create_app
from openenv.envs.echo.environment import EchoEnvironment
from openenv.envs.echo.models import EchoAction, EchoObservation
from tests.server_utils import running_server

CAP = 4


def _open_http(url: str) -> str:
    resp = httpx.post(f"{url}/reset", json={}, headers={"X-OpenEnv-Session": "new"}, timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.headers["X-OpenEnv-Session"]


def _step(url: str, sid: str) -> httpx.Response:
    return httpx.post(f"{url}/step", json={"action": {"message": "hi"}}, headers={"X-OpenEnv-Session": sid}, timeout=10)


def test_http_sessions_do_not_starve_websocket_clients() -> None:
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", max_concurrent_envs=CAP)
    with running_server(app) as url:
        held = []
        for _ in range(CAP):
            held.append(_open_http(url))
            time.sleep(0.01)  # distinct idle times: held[0] is the longest idle
        assert _step(url, held[-1]).status_code == 200  # used just now
        full = httpx.post(f"{url}/reset", json={}, headers={"X-OpenEnv-Session": "new"}, timeout=10)
        assert full.status_code == 503 and full.json()["code"] == "CAPACITY_REACHED"  # HTTP vs HTTP: as before
        with GenericEnvClient(base_url=url).sync() as trainer:  # a WebSocket client still gets in
            trainer.reset()
            assert trainer.step({"message": "ws"}).observation["echoed_message"] == "ws"
            gone = _step(url, held[0])
            assert gone.status_code == 404 and gone.json()["code"] == "SESSION_ERROR"
            assert all(_step(url, sid).status_code == 200 for sid in held[1:])
            listed = httpx.get(f"{url}/sessions", timeout=10).json()["sessions"]
            assert len(listed) == CAP and sum(s["kind"] == "ws" for s in listed) == 1


def test_a_full_server_of_websockets_still_refuses() -> None:
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", max_concurrent_envs=1)
    with running_server(app) as url, GenericEnvClient(base_url=url).sync() as first:
        first.reset()
        resp = httpx.post(f"{url}/reset", json={}, headers={"X-OpenEnv-Session": "new"}, timeout=10)
        assert resp.status_code == 503
        assert first.step({"message": "still mine"}).observation["echoed_message"] == "still mine"
