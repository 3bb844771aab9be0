"""A reset on a session whose step still runs ends that step and answers within the caller's
deadline, on WebSocket and HTTP sessions: an async step is cancelled; a sync step, which keeps its
thread, leaves its environment behind (closed once the step returns, its result discarded) and the
session gets a fresh one from the factory. The REPL case is in tests/envs/repl/test_server.py."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from openenv.core import GenericEnvClient, StepTimeoutError
from openenv.core.env_server import create_app
from tests.core.envs import AsyncSleepyEnvironment, SleepAction, SleepObservation, SleepyEnvironment
from tests.server_utils import running_server

H = "X-OpenEnv-Session"
CALLER_DEADLINE_S = 1.0
STEP_S = 4.0


@pytest.fixture(scope="module", params=["sync", "async"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(kind, url): a server building a SleepyEnvironment per session, its step blocking a thread
    (sync) or sleeping on the loop (async)."""
    env_cls = SleepyEnvironment if request.param == "sync" else AsyncSleepyEnvironment
    app = create_app(env_cls, SleepAction, SleepObservation, web=False, max_concurrent_envs=4)
    with running_server(app) as base:
        yield request.param, base


def _closed_within(episode_id: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if episode_id in SleepyEnvironment.closed:
            return True
        time.sleep(0.05)
    return episode_id in SleepyEnvironment.closed


def test_ws_reset_ends_the_running_step(served: tuple[str, str]) -> None:
    kind, url = served
    old = f"old-{uuid.uuid4().hex[:8]}"
    with GenericEnvClient(base_url=url, message_timeout_s=CALLER_DEADLINE_S).sync() as client:
        client.reset(episode_id=old)
        with pytest.raises(StepTimeoutError):
            client.step({"seconds": STEP_S})  # the caller gives up after 1 s; the server still runs it
        fresh = client.reset(episode_id="fresh", difficulty=2)  # within the same 1 s deadline, or it raises
        assert (fresh.metadata or fresh.observation.get("metadata"))["difficulty"] == 2
        assert client.step({"seconds": 0}).observation["slept"] == 0
        state = client.state()
        assert state["episode_id"] == "fresh" and state["step_count"] == 1
        assert state["total_slept"] == 0  # the interrupted step's sleep was never counted
    if kind == "sync":  # its env was left to the thread, and closed once the step returned
        assert old not in SleepyEnvironment.closed and _closed_within(old, STEP_S + 5)


def test_http_reset_ends_the_running_step_which_answers_interrupted(served: tuple[str, str]) -> None:
    url = served[1]
    sid = httpx.post(url + "/reset", json={"episode_id": "http-old"}, headers={H: "new"}).headers[H]
    replies: list[httpx.Response] = []
    stepping = threading.Thread(target=lambda: replies.append(httpx.post(
        url + "/step", json={"action": {"seconds": STEP_S}}, headers={H: sid}, timeout=STEP_S + 10)))
    stepping.start()
    time.sleep(0.5)  # the step is running
    reset = httpx.post(url + "/reset", json={"episode_id": "http-fresh"}, headers={H: sid},
                       timeout=CALLER_DEADLINE_S)  # answered within 1 s, or httpx raises
    assert reset.status_code == 200, reset.text
    stepping.join(timeout=STEP_S)
    (step,) = replies  # answered at once, not after its 4 s
    assert step.status_code == 409 and step.json()["code"] == "STEP_INTERRUPTED", step.text
    assert "interrupted by a reset" in step.json()["message"]
    state = httpx.get(url + "/state", headers={H: sid}).json()
    assert state["episode_id"] == "http-fresh" and state["step_count"] == 0 and state["total_slept"] == 0
    httpx.delete(f"{url}/sessions/{sid}")


def test_a_step_on_a_shared_instance_is_never_ended_by_a_reset() -> None:
    """One env instance serves every session: it cannot be replaced, and ending its step could
    break another caller's episode, so the reset waits for the step (bounded by its deadline)."""
    app = create_app(SleepyEnvironment(), SleepAction, SleepObservation, web=False)
    with running_server(app) as base:
        sid = httpx.post(base + "/reset", json={}, headers={H: "new"}).headers[H]
        replies: list[httpx.Response] = []
        stepping = threading.Thread(target=lambda: replies.append(httpx.post(
            base + "/step", json={"action": {"seconds": 1.0}}, headers={H: sid}, timeout=10)))
        stepping.start()
        time.sleep(0.3)
        assert httpx.post(base + "/reset", json={}, headers={H: sid}, timeout=10).status_code == 200
        stepping.join(timeout=10)
        assert replies[0].status_code == 200 and replies[0].json()["observation"]["slept"] == 1.0
