"""The ``web_view`` WebSocket frame and ``EnvClient.web_view``: an environment's own view
(``render_web``/``web_actions``), drawn by the session's env, for a UI that talks to a runtime."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from websockets.sync.client import connect

from openenv.core import GenericEnvClient
from openenv.core.env_server import create_app
from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation
from tests.server_utils import running_server


class Counted(EchoEnvironment):
    """Draws how many steps this instance took (state, not just the observation)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def step(self, action, timeout_s=None, **kwargs):
        self.seen += 1
        return super().step(action, timeout_s=timeout_s, **kwargs)

    def render_web(self, observation):
        if observation.get("echoed_message") == "explode":
            raise RuntimeError("cannot draw that")
        return f"<p>{self.seen} steps, said {observation.get('echoed_message', '')!s}</p>"

    def web_actions(self, observation):
        if observation.get("echoed_message") == "odd":
            return [("bad", "not a dict")]
        return [("Say hi", {"message": "hi"})]


@pytest.fixture(scope="module")
def counted_url():
    with running_server(create_app(Counted, EchoAction, EchoObservation, web=False)) as url:
        yield url


def _frame(sock, message) -> dict:
    sock.send(json.dumps(message))
    return json.loads(sock.recv(timeout=10))


def test_the_view_is_drawn_by_the_sessions_own_env(counted_url):
    with GenericEnvClient(base_url=counted_url) as one, GenericEnvClient(base_url=counted_url) as two:
        one.reset()
        one.step({"message": "a"})
        one.step({"message": "b"})
        two.reset()
        view = one.web_view({"echoed_message": "b", "reward": 0.1, "done": False})
        assert view == {"html": "<p>2 steps, said b</p>", "actions": [{"label": "Say hi", "action": {"message": "hi"}}],
                        "problem": None}
        assert two.web_view({})["html"] == "<p>0 steps, said </p>"
        assert one.step(view["actions"][0]["action"]).observation["echoed_message"] == "hi"


def test_a_failing_hook_is_reported_and_the_session_lives(counted_url):
    with GenericEnvClient(base_url=counted_url) as client:
        client.reset()
        broken = client.web_view({"echoed_message": "explode"})
        assert broken["html"] is None and broken["problem"] == "RuntimeError: cannot draw that"
        shaped = client.web_view({"echoed_message": "odd"})
        assert shaped["html"] is None and "not an action dict" in shaped["problem"]
        assert client.step({"message": "still here"}).observation["echoed_message"] == "still here"


@pytest.mark.parametrize("data", ["nope", {"observation": [1, 2]}, {"observation": "x"}])
def test_bad_frames_get_a_validation_error(counted_url, data):
    with connect(counted_url.replace("http://", "ws://") + "/ws", compression=None) as sock:
        assert "web-view" in sock.response.headers["x-openenv-features"]
        reply = _frame(sock, {"type": "web_view", "data": data, "request_id": 3})
        assert reply["type"] == "error" and reply["data"]["code"] == "VALIDATION_ERROR" and reply["request_id"] == 3
        assert _frame(sock, {"type": "reset", "data": {}})["type"] == "observation"


def test_an_env_without_hooks_has_an_empty_view(echo_url):
    with GenericEnvClient(base_url=echo_url) as client:
        client.reset()
        assert client.web_view({"echoed_message": "x"}) == {"html": None, "actions": [], "problem": None}


def test_async_client(counted_url):
    async def main() -> dict:
        async with GenericEnvClient(base_url=counted_url) as client:
            await client.reset()
            return await client.web_view()

    assert asyncio.run(main())["html"] == "<p>0 steps, said </p>"


class SlowView(EchoEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def render_web(self, observation):
        time.sleep(float(observation.get("sleep", 0)))
        return "<p>drawn</p>"


def test_a_slow_hook_stalls_nobody_and_is_held_to_the_deadline():
    app = create_app(SlowView, EchoAction, EchoObservation, web=False, step_timeout_s=1.0, max_concurrent_envs=4)
    with running_server(app) as url, GenericEnvClient(base_url=url) as slow, GenericEnvClient(base_url=url) as other:
        slow.reset()
        other.reset()
        box: dict = {}
        worker = threading.Thread(target=lambda: box.update(view=slow.web_view({"sleep": 3})))
        worker.start()
        try:
            assert other.step({"message": "meanwhile"}).observation["echoed_message"] == "meanwhile"
            assert worker.is_alive()  # answered while the slow hook still ran
        finally:
            worker.join(30)
        assert box["view"]["html"] is None and "did not answer within 1 s" in box["view"]["problem"]
