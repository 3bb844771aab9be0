"""The 0.10 client idioms with our client against our server and the published 0.10 server, and
the published 0.10 client against our server; both observation shapes in typed clients."""

from __future__ import annotations

import asyncio
import sys

import pytest

from openenv.core import ClientState, EnvClient, GenericEnvClient, StepResult
from openenv.core.client_handles import AutoResult, BootstrapHandle
from openenv.envs.echo import EchoAction, EchoEnv, EchoObservation
from tests.client.conftest import HERE
from tests.peer010 import peer010_python, run_with

IDIOMS = HERE / "idioms010.py"


def test_idioms_script_with_our_client(any_url):
    done = run_with(sys.executable, IDIOMS, any_url)
    assert done.returncode == 0 and done.stdout.strip() == "OK", done.stderr[-3000:]


def test_idioms_script_with_the_published_client_against_our_server(echo_url):
    done = run_with(peer010_python(), IDIOMS, echo_url)
    assert done.returncode == 0 and done.stdout.strip() == "OK", done.stderr[-3000:]


def test_typed_echo_client_reads_both_shapes(any_url):
    """0.10 nests metadata in the observation: our typed client must not pass it twice."""
    with EchoEnv(base_url=any_url) as env:
        first = env.reset()
        assert isinstance(first, StepResult) and isinstance(first.observation, EchoObservation)
        result = env.step(EchoAction(message="abcd"))
        assert result.observation.echoed_message == "abcd" and result.reward == pytest.approx(0.4)
        assert result.metadata == {"step": 1} and result.observation.metadata == {"step": 1}


def test_calls_return_awaitables_where_a_loop_runs(echo_url):
    async def main():
        env = EchoEnv(base_url=echo_url)
        pending = env.reset()
        assert isinstance(pending, AutoResult)
        first = await pending
        task = asyncio.create_task(env.step(EchoAction(message="hi")))  # a coroutine, for create_task
        assert (await task).observation.echoed_message == "hi"
        await env.close()
        assert first.observation.echoed_message == "Echo environment ready!"

    asyncio.run(main())


def test_an_unawaited_result_resolves_when_read(echo_url):
    """A notebook cell that forgets ``await``: reading the result blocks for it."""

    async def cell():
        env = GenericEnvClient(base_url=echo_url)
        result = env.reset()
        assert result.observation["echoed_message"] == "Echo environment ready!"
        env.close()  # bound to its blocking face now: closes blocking too

    asyncio.run(cell())


def test_sync_with_block_on_a_plain_subclass_and_0_3_code_unchanged(echo_url):
    class Mine(EnvClient):
        def _step_payload(self, action):
            return {"message": action}

        def _parse_result(self, payload):
            return StepResult(observation=payload["observation"], reward=payload.get("reward"))

        def _parse_state(self, payload):
            return payload

    with Mine(base_url=echo_url) as env:
        assert env.reset().observation["echoed_message"] == "Echo environment ready!"
        assert env.step("yo").reward == pytest.approx(0.2)
    assert env.client_state is ClientState.CLOSED

    async def old_style():
        async with Mine(base_url=echo_url) as env:
            await env.reset()
            return await env.step("abc")

    assert asyncio.run(old_style()).reward == pytest.approx(0.3)
    with Mine(base_url=echo_url).sync() as env:
        env.reset()
        assert env.step("a").reward == pytest.approx(0.1)


def test_new_session_children_close_with_the_parent(echo_url):
    with GenericEnvClient(base_url=echo_url) as env:
        env.reset()
        child = env.new_session()
        assert child.reset().observation["echoed_message"] == "Echo environment ready!"
        assert child.step({"message": "x"}).metadata == {"step": 1}
    assert child.client_state is ClientState.CLOSED

    async def main():
        async with GenericEnvClient(base_url=echo_url) as env:
            kid = await env.new_session()
            await kid.reset()
        return kid

    assert asyncio.run(main()).client_state is ClientState.CLOSED


def test_headers_reach_the_handshake(echo_url):
    """A server behind a token: the header opens it, its absence is refused."""
    from openenv.core.env_server import create_app
    from openenv.envs.echo import EchoEnvironment
    from tests.server_utils import running_server

    seen: list[str | None] = []

    def guarded(app):
        async def asgi(scope, receive, send):
            if scope["type"] == "websocket":
                headers = dict(scope["headers"])
                seen.append(headers.get(b"authorization", b"").decode() or None)
                if headers.get(b"authorization") != b"Bearer s3cret":
                    await send({"type": "websocket.close", "code": 1008})
                    return
            await app(scope, receive, send)

        return asgi

    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", web=False)
    with running_server(guarded(app)) as url:
        with GenericEnvClient(base_url=url, headers={"Authorization": "Bearer s3cret"}) as env:
            assert env.reset().observation["echoed_message"]
        from openenv.core import ConnectionLostError

        with pytest.raises(ConnectionLostError), GenericEnvClient(base_url=url, connect_timeout_s=2) as env:
            pass
    assert seen[:2] == ["Bearer s3cret", None]


def test_from_docker_image_is_a_handle_for_await_and_sync(tmp_path):
    """``await EchoEnv.from_docker_image(...)`` and ``EchoEnv.from_docker_image(...).sync()`` (0.10),
    here with the process provider (the Docker path is covered in tests/containers)."""
    from openenv.core.containers.runtime import LocalProcessProvider, RuntimeStatus

    provider = LocalProcessProvider(project=f"client-{tmp_path.name}", data_dir=tmp_path)
    handle = EchoEnv.from_docker_image("echo", provider=provider)
    assert isinstance(handle, BootstrapHandle)
    with handle.sync() as env:
        env.reset()
        assert env.step(EchoAction(message="sync")).observation.echoed_message == "sync"
    assert provider.status() is not RuntimeStatus.RUNNING
    with pytest.raises(Exception, match="already started"):
        handle.sync()

    async def main():
        provider2 = LocalProcessProvider(project=f"client2-{tmp_path.name}", data_dir=tmp_path)
        env = await EchoEnv.from_docker_image("echo", provider=provider2)
        async with env:
            await env.reset()
            assert (await env.step(EchoAction(message="as"))).observation.echoed_message == "as"
        return provider2

    assert asyncio.run(main()).status() is not RuntimeStatus.RUNNING
    EchoEnv.from_docker_image("echo", provider=provider).close()  # never driven: starts nothing


def test_the_client_path_imports_no_server_or_web_code():
    import subprocess

    code = ("import sys; import openenv.core; from openenv.core import GenericEnvClient, VectorEnvClient, EnvClient; "
            "import openenv.core.sync_client, openenv.core.vector_client; "
            "bad = [m for m in sys.modules if m.startswith(('openenv.core.env_server', 'webui', 'fastapi', "
            "'starlette', 'uvicorn', 'openenv.cli'))]; print(bad); assert not bad")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    from openenv.core import create_app  # the server names still import on use

    assert callable(create_app)


def test_a_client_dropped_without_close_closes_quietly(echo_url):
    """0.10-style scripts often never close: collecting the client closes its session and loop."""
    import gc
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = GenericEnvClient(base_url=echo_url)
        assert env.reset().observation["echoed_message"]
        del env
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]
