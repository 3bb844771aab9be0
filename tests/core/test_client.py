"""EnvClient / SyncEnvClient / GenericEnvClient against a real server."""

from __future__ import annotations

import asyncio

import pytest

from openenv.core import (
    ActionValidationError,
    CapacityError,
    ClientState,
    ClientStateError,
    ConnectionLostError,
    EnvExecutionError,
    GenericEnvClient,
    StepTimeoutError,
)
from openenv.core.env_server import create_app
from openenv.envs.echo import EchoAction, EchoEnv
from tests.core.envs import SleepAction, SleepObservation, SleepyEnvironment
from tests.server_utils import free_port, running_server


@pytest.fixture(scope="module")
def sleepy_url():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False, max_concurrent_envs=2)
    with running_server(app) as url:
        yield url


def test_async_typed_client_round_trip(echo_url):
    async def main():
        async with EchoEnv(base_url=echo_url) as env:
            first = await env.reset(episode_id="ep-9")
            assert first.observation.echoed_message == "Echo environment ready!"
            result = await env.step(EchoAction(message="abcd"))
            assert result.reward == pytest.approx(0.4) and result.metadata == {"step": 1}
            state = await env.state()
            assert state.episode_id == "ep-9" and state.step_count == 1
        assert env.client_state is ClientState.CLOSED

    asyncio.run(main())


def test_typed_errors_are_still_runtime_errors(sleepy_url):
    with GenericEnvClient(base_url=sleepy_url).sync() as client:
        assert client.step({"seconds": 0}).done is False  # a step before reset steps the fresh env (0.10)
        with pytest.raises(EnvExecutionError) as raised:
            client.step({"seconds": 0, "fail": True})
        assert isinstance(raised.value, RuntimeError)
        client.reset()
        with pytest.raises(ActionValidationError) as info:
            client.step({"seconds": "soon"})
        assert isinstance(info.value, RuntimeError)
        assert info.value.errors[0]["loc"] == ["seconds"]
        assert "Server error:" in str(info.value) and "(code: VALIDATION_ERROR)" in str(info.value)


def test_capacity_error_is_typed(sleepy_url):
    with GenericEnvClient(base_url=sleepy_url).sync() as a, GenericEnvClient(base_url=sleepy_url).sync() as b:
        a.reset()
        b.reset()
        third = GenericEnvClient(base_url=sleepy_url).sync()
        with pytest.raises(CapacityError) as info:
            third.reset()
        assert info.value.max_sessions == 2
        third.close()


def test_server_side_timeout_then_no_stale_reply(sleepy_url):
    with GenericEnvClient(base_url=sleepy_url).sync() as client:
        client.reset()
        with pytest.raises(StepTimeoutError):
            client.step({"seconds": 1.0}, timeout_s=0.2)
        result = client.step({"seconds": 0.0})
        assert result.observation == {"slept": 0.0}


def test_client_side_timeout_discards_the_late_reply(sleepy_url):
    client = GenericEnvClient(base_url=sleepy_url, message_timeout_s=0.3).sync()
    with client:
        client.reset()
        with pytest.raises(StepTimeoutError):
            client.step({"seconds": 0.8})
        # the late reply to the first step must not be taken as this step's answer
        result = client.step({"seconds": 0.05}, timeout_s=2)
        assert result.observation == {"slept": 0.05}


def test_sync_client_works_inside_a_running_event_loop(echo_url):
    async def notebook_cell():
        with EchoEnv(base_url=echo_url).sync() as env:
            env.reset()
            return env.step(EchoAction(message="nb")).observation.echoed_message

    assert asyncio.run(notebook_cell()) == "nb"


def test_connection_errors_and_use_after_close():
    client = GenericEnvClient(base_url=f"http://127.0.0.1:{free_port()}", connect_timeout_s=1).sync()
    with pytest.raises(ConnectionLostError):
        client.reset()
    client.close()
    with pytest.raises(ClientStateError):
        client.reset()


def test_server_vanishing_raises_connection_lost():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False)
    client = None
    with running_server(app) as url:
        client = GenericEnvClient(base_url=url).sync()
        client.reset()
    with pytest.raises(ConnectionLostError):
        client.step({"seconds": 0})
    client.close()


def test_a_failed_with_block_leaves_no_open_loop(tmp_path):
    """``with client.sync():`` (and a recording one) that cannot connect frees its private event
    loop at once: no ``__exit__`` follows a failed ``__enter__``, and a leaked loop would warn."""
    import gc
    import warnings

    from openenv.recording import EpisodeStore, record

    dead = f"http://127.0.0.1:{free_port()}"
    with warnings.catch_warnings(record=True) as caught, EpisodeStore(tmp_path / "e.db") as store:
        warnings.simplefilter("always")
        for make in (lambda: EchoEnv(base_url=dead).sync(),
                     lambda: record(EchoEnv(base_url=dead).sync(), store=store)):  # fmt: skip
            with pytest.raises(ConnectionLostError), make():
                pass
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]
