"""/ws speaks the published protocol and answers every bad frame with a coded error."""

from __future__ import annotations

import contextlib
import json
import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from openenv.core.env_server import create_app
from tests.core.envs import SleepAction, SleepObservation, SleepyEnvironment
from tests.server_utils import running_server


def ws(url: str, **kw):
    return connect(url.replace("http://", "ws://") + "/ws", compression=None, **kw)


def call(sock, message) -> dict:
    sock.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    return json.loads(sock.recv(timeout=10))


def test_reset_step_state_close_shapes(echo_url):
    with ws(echo_url) as sock:
        reply = call(sock, {"type": "reset", "data": {"seed": 42, "episode_id": "e1"}})
        assert reply["type"] == "observation"
        assert set(reply["data"]) >= {"observation", "reward", "done"}
        assert "reward" not in reply["data"]["observation"]
        reply = call(sock, {"type": "step", "data": {"message": "hello"}})
        assert reply["data"]["observation"] == {"echoed_message": "hello", "message_length": 5, "metadata": {"step": 1}}
        assert reply["data"]["reward"] == pytest.approx(0.5)
        state = call(sock, {"type": "state"})
        assert state["type"] == "state"
        assert state["data"]["episode_id"] == "e1" and state["data"]["step_count"] == 1
        sock.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed):
            sock.recv(timeout=5)


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("{not json", "INVALID_JSON"),
        ("[1, 2, 3]", "INVALID_JSON"),
        ('"just a string"', "INVALID_JSON"),
        ('{"type": "step", "data": {"message": NaN}}', "INVALID_JSON"),
        ('{"type": "step", "data": {"message": Infinity}}', "INVALID_JSON"),
        ("[" * 5000 + "]" * 5000, "INVALID_JSON"),
        ({"type": "dance"}, "UNKNOWN_TYPE"),
        ({"data": {}}, "UNKNOWN_TYPE"),
        ({"type": "step", "data": {"message": 5}}, "VALIDATION_ERROR"),
        ({"type": "step", "data": {"unknown": "x"}}, "VALIDATION_ERROR"),
        ({"type": "step", "data": "not an object"}, "VALIDATION_ERROR"),
        ({"type": "reset", "data": {"seed": "abc"}}, "VALIDATION_ERROR"),
        ({"type": "reset", "data": {"seed": -1}}, "VALIDATION_ERROR"),
        ({"type": "reset", "data": [1]}, "VALIDATION_ERROR"),
        ({"type": "step", "data": {"message": "x"}, "timeout_s": -3}, "VALIDATION_ERROR"),
        (b"\x00\x01binary", "UNSUPPORTED_FRAME"),
    ],
)
def test_bad_frames_get_coded_errors_and_the_session_stays_open(echo_url, frame, code):
    with ws(echo_url) as sock:
        call(sock, {"type": "reset", "data": {}})
        reply = call(sock, frame)
        assert reply["type"] == "error"
        assert reply["data"]["code"] == code
        assert "Traceback" not in reply["data"]["message"]
        ok = call(sock, {"type": "step", "data": {"message": "still here"}})
        assert ok["data"]["observation"]["echoed_message"] == "still here"


def test_odd_reset_kwargs_are_dropped_and_step_before_reset_steps_the_fresh_env(echo_url):
    with ws(echo_url) as sock:
        reply = call(sock, {"type": "step", "data": {"message": "early"}})  # 0.10: the fresh env steps
        assert reply["type"] == "observation" and reply["data"]["observation"]["echoed_message"] == "early"
        state = call(sock, {"type": "state"})["data"]
        assert state["step_count"] == 1 and state["episode_id"]  # an episode started without a reset
        reply = call(sock, {"type": "reset", "data": {"nonsense": {"deep": [1, 2]}, "seed": 1}})
        assert reply["type"] == "observation"
        after = call(sock, {"type": "state"})["data"]
        assert after["step_count"] == 0 and after["episode_id"] != state["episode_id"]


def test_oversized_message_gets_an_error_not_a_dropped_session():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, max_message_bytes=10_000, web=False)
    with running_server(app) as url, ws(url) as sock:
        call(sock, {"type": "reset", "data": {}})
        reply = call(sock, {"type": "step", "data": {"seconds": 0, "pad": "x" * 20_000}})
        assert reply["data"]["code"] == "MESSAGE_TOO_LARGE"
        assert call(sock, {"type": "step", "data": {"seconds": 0}})["type"] == "observation"


def test_environment_exception_is_reported_without_traceback_or_paths():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False)
    with running_server(app) as url, ws(url) as sock:
        call(sock, {"type": "reset", "data": {}})
        reply = call(sock, {"type": "step", "data": {"seconds": 0, "fail": True}})
        assert reply["data"]["code"] == "EXECUTION_ERROR"
        assert "ValueError: boom" in reply["data"]["message"]
        assert "/root" not in reply["data"]["message"] and "Traceback" not in reply["data"]["message"]
        assert call(sock, {"type": "step", "data": {"seconds": 0}})["type"] == "observation"


def test_request_id_is_echoed_and_features_advertised(echo_url):
    with ws(echo_url) as sock:
        assert "request-id" in sock.response.headers["x-openenv-features"]
        reply = call(sock, {"type": "reset", "data": {}, "request_id": "abc"})
        assert reply["request_id"] == "abc"
        err = call(sock, {"type": "step", "data": {}, "request_id": 7})
        assert err["type"] == "error" and err["request_id"] == 7


def test_step_deadline_is_enforced_then_session_recovers():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False, step_timeout_s=30)
    with running_server(app) as url, ws(url) as sock:
        call(sock, {"type": "reset", "data": {}})
        started = time.monotonic()
        reply = call(sock, {"type": "step", "data": {"seconds": 2.0}, "timeout_s": 0.3})
        assert reply["data"]["code"] == "TIMEOUT"
        assert time.monotonic() - started < 1.5
        # the overrun step still runs: the next call waits for it, then proceeds
        assert call(sock, {"type": "step", "data": {"seconds": 0}})["type"] == "observation"


def test_capacity_error_then_slot_freed_when_a_client_vanishes_mid_step():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False, max_concurrent_envs=2)
    with running_server(app) as url, contextlib.ExitStack() as stack:
        a = stack.enter_context(ws(url))
        b = stack.enter_context(ws(url))
        call(a, {"type": "reset", "data": {}})
        call(b, {"type": "reset", "data": {}})
        with ws(url) as c:
            reply = call(c, {"type": "reset", "data": {}})
            assert reply["data"]["code"] == "CAPACITY_REACHED"
            assert reply["data"]["max_sessions"] == 2
        a.send(json.dumps({"type": "step", "data": {"seconds": 5}}))
        time.sleep(0.2)
        a.close()  # vanishes mid-step
        deadline = time.monotonic() + 4
        while httpx.get(url + "/sessions").json()["active"] > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert httpx.get(url + "/sessions").json()["active"] == 1
        with ws(url) as d:
            assert call(d, {"type": "reset", "data": {}})["type"] == "observation"


def test_idle_sessions_are_reaped():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False, session_timeout_s=0.3)
    with running_server(app) as url, ws(url) as sock:
        call(sock, {"type": "reset", "data": {}})
        deadline = time.monotonic() + 5
        while httpx.get(url + "/sessions").json()["active"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert httpx.get(url + "/sessions").json()["active"] == 0
        reply = json.loads(sock.recv(timeout=5))
        assert reply["type"] == "error" and reply["data"]["code"] == "SESSION_ERROR"
        assert "idle" in reply["data"]["message"]
