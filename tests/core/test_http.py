"""HTTP endpoints: published stateless shapes, opt-in sessions, deadlines and coded errors."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest
from websockets.sync.client import connect

from openenv.core.env_server import create_app
from tests.core.envs import SleepAction, SleepObservation, SleepState, SleepyEnvironment
from tests.server_utils import running_server

H = "X-OpenEnv-Session"


@pytest.fixture(scope="module")
def sleepy_url():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False, max_concurrent_envs=4)
    with running_server(app) as url:
        yield url


def test_stateless_reset_and_step_match_published_shapes(echo_url):
    reset = httpx.post(echo_url + "/reset", json={"seed": 1}).json()
    assert set(reset) == {"observation", "reward", "done", "metadata"}  # 0.10's ResetResponse: always the key
    assert reset["metadata"] is None
    step = httpx.post(echo_url + "/step", json={"action": {"message": "hey"}}).json()
    # a non-empty metadata is inside the observation (where 0.10's typed clients read it) and beside it
    assert step["observation"] == {"echoed_message": "hey", "message_length": 3, "metadata": {"step": 1}}
    assert step["metadata"] == {"step": 1}
    assert httpx.post(echo_url + "/reset").status_code == 200  # empty body


def test_http_session_keeps_one_episode_across_steps(sleepy_url):
    first = httpx.post(sleepy_url + "/reset", json={"difficulty": 3}, headers={H: "new"})
    sid = first.headers[H]
    assert first.json()["session_id"] == sid
    assert first.json()["metadata"] == {"difficulty": 3, "seed": None}
    for _i in range(3):
        reply = httpx.post(sleepy_url + "/step", json={"action": {"seconds": 0}}, headers={H: sid}).json()
    assert reply["done"] is True
    state = httpx.get(sleepy_url + "/state", headers={H: sid}).json()
    assert state["step_count"] == 3
    listed = httpx.get(sleepy_url + "/sessions").json()
    assert any(s["session_id"] == sid and s["kind"] == "http" for s in listed["sessions"])
    assert httpx.delete(sleepy_url + f"/sessions/{sid}").status_code == 200
    gone = httpx.post(sleepy_url + "/step", json={"action": {"seconds": 0}}, headers={H: sid})
    assert gone.status_code == 404 and gone.json()["code"] == "SESSION_ERROR"


def test_schema_reports_the_real_state_class(sleepy_url):
    schema = httpx.get(sleepy_url + "/schema").json()
    assert schema["state"]["title"] == SleepState.__name__
    assert "total_slept" in schema["state"]["properties"]
    assert schema["action"]["required"] == ["seconds"]


def test_metadata_health_docs(echo_url):
    assert httpx.get(echo_url + "/metadata").json()["name"] == "echo"
    assert httpx.get(echo_url + "/health").json()["status"] == "healthy"
    assert httpx.get(echo_url + "/docs").status_code == 200
    assert "/step" in httpx.get(echo_url + "/openapi.json").json()["paths"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{oops", 400, "INVALID_JSON"),
        (b"[1]", 400, "INVALID_JSON"),
        (b'{"action": {"seconds": NaN}}', 400, "INVALID_JSON"),
        (b"[" * 3000 + b"]" * 3000, 400, "INVALID_JSON"),
        (b'{"action": {"seconds": "x"}}', 422, "VALIDATION_ERROR"),
        (b'{"action": {"seconds": 0}, "timeout_s": 0}', 422, "VALIDATION_ERROR"),
        (b'{"nothing": 1}', 422, "VALIDATION_ERROR"),
        (b'{"action": {"seconds": 0, "fail": true}}', 500, "EXECUTION_ERROR"),
    ],
)
def test_bad_step_bodies(sleepy_url, body, status, code):
    reply = httpx.post(sleepy_url + "/step", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == status
    data = reply.json()
    assert data["code"] == code and "detail" in data
    assert "Traceback" not in reply.text and "/root/" not in reply.text
    assert httpx.get(sleepy_url + "/health").status_code == 200


def test_validation_error_detail_is_the_pydantic_list(sleepy_url):
    reply = httpx.post(sleepy_url + "/step", json={"action": {"seconds": -1}})
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"] == ["seconds"]


def test_oversized_body_is_413():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False, max_message_bytes=1000)
    with running_server(app) as url:
        reply = httpx.post(url + "/step", json={"action": {"seconds": 0}, "pad": "x" * 5000})
        assert reply.status_code == 413 and reply.json()["code"] == "MESSAGE_TOO_LARGE"


def test_http_step_deadline(sleepy_url):
    sid = httpx.post(sleepy_url + "/reset", json={}, headers={H: "new"}).headers[H]
    started = time.monotonic()
    reply = httpx.post(
        sleepy_url + "/step", json={"action": {"seconds": 3}, "timeout_s": 0.2}, headers={H: sid}, timeout=10
    )
    assert reply.status_code == 504 and reply.json()["code"] == "TIMEOUT"
    assert time.monotonic() - started < 2
    busy = httpx.post(sleepy_url + "/step", json={"action": {"seconds": 0}, "timeout_s": 0.1}, headers={H: sid})
    assert busy.json()["code"] in ("ENV_BUSY", "TIMEOUT") or busy.status_code == 200
    httpx.delete(sleepy_url + f"/sessions/{sid}")


def test_step_before_reset_in_a_session_and_request_id_echo(sleepy_url):
    # A fresh session is opened only by reset; a step on an unknown id is a session error.
    reply = httpx.post(sleepy_url + "/step", json={"action": {"seconds": 0}}, headers={H: "nope"})
    assert reply.status_code == 404
    ok = httpx.post(sleepy_url + "/step", json={"action": {"seconds": 0}, "request_id": "r1"})
    assert ok.json()["request_id"] == "r1"


def test_stalled_half_request_does_not_block_others(sleepy_url):
    host, port = sleepy_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as stalled:
        stalled.sendall(b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"act")
        for _ in range(5):
            assert httpx.get(sleepy_url + "/health", timeout=2).status_code == 200
            assert httpx.post(sleepy_url + "/step", json={"action": {"seconds": 0}}, timeout=2).status_code == 200


def test_session_cap_over_http(sleepy_url):
    opened = []
    try:
        for _ in range(10):
            reply = httpx.post(sleepy_url + "/reset", json={}, headers={H: "new"})
            if reply.status_code != 200:
                break
            opened.append(reply.headers[H])
        assert reply.status_code == 503 and reply.json()["code"] == "CAPACITY_REACHED"
        assert reply.json()["max_sessions"] == 4
    finally:
        for sid in opened:
            httpx.delete(sleepy_url + f"/sessions/{sid}")


def test_reset_params_schema_resolves_postponed_annotations_and_metadata_uses_own_doc():
    from openenv.core.env_server import HTTPEnvServer
    from tests.core import future_env

    server = HTTPEnvServer(future_env.ModeEnvironment)
    props = server.reset_params_schema()["properties"]
    assert props["mode"]["enum"] == ["easy", "hard"]
    assert props["mode"]["default"] == "easy"
    meta = future_env.ModeEnvironment().get_metadata()
    assert (meta.description, meta.version) == ("ModeEnvironment environment", "1.0.0")  # 0.10's defaults


@pytest.mark.parametrize(("shape", "nested"), [(None, True), ("nested", True), ("top", False)])
def test_metadata_shape_follows_openenv_observation_metadata(monkeypatch, shape, nested):
    """0.10's shape by default (metadata inside observation too); ``top`` keeps 0.3's (beside only)."""
    from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation

    if shape is None:
        monkeypatch.delenv("OPENENV_OBSERVATION_METADATA", raising=False)
    else:
        monkeypatch.setenv("OPENENV_OBSERVATION_METADATA", shape)
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, web=False)
    with running_server(app) as url:
        reset = httpx.post(url + "/reset", json={}).json()
        assert "metadata" not in reset["observation"]  # an empty one is never sent
        step = httpx.post(url + "/step", json={"action": {"message": "m"}}).json()
        assert step["metadata"] == {"step": 1}
        assert ("metadata" in step["observation"]) is nested
        with connect(url.replace("http://", "ws://") + "/ws", compression=None) as sock:
            sock.send(json.dumps({"type": "reset", "data": {}}))
            sock.recv(timeout=10)
            sock.send(json.dumps({"type": "step", "data": {"message": "m"}}))
            frame = json.loads(sock.recv(timeout=10))
        assert ("metadata" in frame["data"]["observation"]) is nested
