"""Sessions that survive drops, honestly: a real server restart (the subprocess killed and started
again on the same port) and a client-side timeout, against our server and the published 0.10."""

from __future__ import annotations

import asyncio

import pytest

from openenv.core import (
    ClientState,
    ConnectionLostError,
    EpisodeLostError,
    GenericEnvClient,
    LifecycleError,
    ReconnectFailedError,
    StepTimeoutError,
)
from openenv.envs.echo import EchoAction, EchoEnv
from tests.client.conftest import restartable


@pytest.mark.parametrize("kind", ["ours", "published"])
def test_a_restart_loses_the_episode_and_a_reset_recovers(kind):
    with restartable(kind) as server, GenericEnvClient(base_url=server.url, reconnect_timeout_s=60) as env:
        env.reset()
        assert env.step({"message": "before"}).metadata == {"step": 1}
        server.kill()
        server.start()
        with pytest.raises(EpisodeLostError, match="reset") as info:
            env.step({"message": "after"})  # reconnected, but never steps the fresh env as the old one
        assert isinstance(info.value, LifecycleError) and info.value.code == "EPISODE_LOST"
        assert env.client_state is ClientState.OPEN
        with pytest.raises(EpisodeLostError):
            env.step({"message": "still lost"})
        env.reset()
        assert env.step({"message": "again"}).metadata == {"step": 1}


@pytest.mark.parametrize("kind", ["ours", "published"])
def test_a_reset_right_after_a_restart_just_works(kind):
    async def main(url, server):
        async with EchoEnv(base_url=url, reconnect_timeout_s=60) as env:
            await env.reset()
            await env.step(EchoAction(message="x"))
            server.kill()
            server.start()
            await env.reset()
            result = await env.step(EchoAction(message="yz"))
            assert result.observation.echoed_message == "yz" and result.metadata == {"step": 1}

    with restartable(kind) as server:
        asyncio.run(main(server.url, server))


def test_a_step_in_flight_when_the_server_dies_raises_then_the_next_call_reconnects():
    with restartable("ours") as server, GenericEnvClient(base_url=server.url, reconnect_timeout_s=3) as env:
        env.reset()
        server.kill()
        with pytest.raises(ReconnectFailedError):
            env.step({"message": "lost"})  # the socket died under it and the server stays gone
        server.start()
        with pytest.raises(EpisodeLostError):
            env.step({"message": "x"})
        env.reset()
        assert env.step({"message": "ok"}).observation["echoed_message"] == "ok"


def test_a_server_that_stays_gone_gets_a_typed_error_within_the_bounds():
    with restartable("ours") as server:
        env = GenericEnvClient(base_url=server.url, reconnect_attempts=3, reconnect_timeout_s=5)
        with env:
            env.reset()
            server.kill()
            with pytest.raises(ReconnectFailedError) as info:
                env.reset()
            assert info.value.attempts == 3 and info.value.waited_s < 5
            assert isinstance(info.value, ConnectionLostError)
            server.start()
            env.reset()  # once it is back, the same client carries on
            assert env.step({"message": "back"}).metadata == {"step": 1}


def test_a_client_timeout_on_a_010_server_drops_the_socket_and_the_episode(published_url):
    with GenericEnvClient(base_url=published_url, message_timeout_s=0.5) as env:
        env.reset()
        env.step({"message": "one"})
        with pytest.raises(StepTimeoutError):
            env.step({"message": "sleep:1.5"})  # no request ids there: a late reply would be misread
        with pytest.raises(EpisodeLostError, match="timed out"):
            env.step({"message": "two"})
        env.reset()
        result = env.step({"message": "three"})  # not the late reply to the slow step
        assert result.observation["echoed_message"] == "three" and result.metadata == {"step": 1}


def test_a_client_timeout_on_our_server_keeps_the_session(echo_url):
    """Ours tags replies with request ids: the late reply is skipped and the episode goes on."""
    from openenv.core.env_server import create_app
    from tests.core.envs import SleepAction, SleepObservation, SleepyEnvironment
    from tests.server_utils import running_server

    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False)
    with running_server(app) as url, GenericEnvClient(base_url=url, message_timeout_s=0.3) as env:
        env.reset()
        with pytest.raises(StepTimeoutError):
            env.step({"seconds": 0.8})
        result = env.step({"seconds": 0.0}, timeout_s=3)
        assert result.observation == {"slept": 0.0} and env.state()["step_count"] == 2
