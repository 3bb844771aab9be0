"""The REPL app lends its event loop to the sandboxes while it serves (``lifespan.py``)."""

from __future__ import annotations

import asyncio
import threading

import uvicorn

from openenv.core.env_server.http_server import create_app
from openenv.envs.repl import loop as sandbox_loop_module
from openenv.envs.repl import pool
from openenv.envs.repl.client import REPLEnv
from openenv.envs.repl.environment import REPLEnvironment
from openenv.envs.repl.lifespan import run_sandboxes_on_server_loop
from openenv.envs.repl.models import REPLAction, REPLObservation
from tests.envs.repl.conftest import pid_gone, test_limits
from tests.server_utils import free_port, wait_healthy


def _serve(app):
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           ws_per_message_deflate=False, lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url)
    return server, thread, url


def _worker_pids() -> set[int]:
    pids = {box.worker_pid for box in list(pool.live_sandboxes) if box.worker_pid}
    return pids | {warm.worker.proc.pid for warm in list(pool.POOL.idle)}


def test_cells_run_on_the_server_loop_and_everything_is_released_at_shutdown() -> None:
    limits = test_limits(warm_workers=2)
    seen_loops: list[asyncio.AbstractEventLoop] = []

    class Probe(REPLEnvironment):
        async def step_async(self, action, timeout_s=None, **kwargs):
            seen_loops.append(asyncio.get_running_loop())
            return await super().step_async(action, timeout_s=timeout_s, **kwargs)

    app = create_app(lambda: Probe(limits=limits, llm=None), REPLAction, REPLObservation, env_name="repl", web=False,
                     max_concurrent_envs=4)
    run_sandboxes_on_server_loop(app)
    server, thread, url = _serve(app)
    try:
        with REPLEnv(base_url=url).sync() as env:
            env.reset(context="lent")
            assert env.execute("y = len(context)\nprint(y)").observation.result.stdout == "4\n"
            # the sandbox loop is the server's own: the cell's pipes were written and read there
            assert sandbox_loop_module.sandbox_loop() is seen_loops[-1]
            with REPLEnv(base_url=url).sync() as other:  # a second session, and the sync path
                other.reset()
                assert other.execute("print(2 + 2)").observation.result.stdout == "4\n"
            pids = _worker_pids()
            assert pids, "no worker seen"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert all(pid_gone(pid) for pid in pids), "a worker outlived the server"
    assert not pool.POOL.idle and not list(pool.live_sandboxes)
    # the loop was given back: code outside any server gets a background loop again
    assert sandbox_loop_module.sandbox_loop() is not seen_loops[-1]
    env = REPLEnvironment(limits=limits, llm=None)
    try:
        env.reset()
        assert env.step(REPLAction(code="print('after')")).result.stdout == "after\n"
    finally:
        env.close()


def test_a_loop_already_serving_sandboxes_is_kept() -> None:
    env = REPLEnvironment(limits=test_limits(), llm=None)
    try:
        env.reset()  # starts the background loop
        background = sandbox_loop_module.sandbox_loop()

        async def lend() -> bool:
            return sandbox_loop_module.adopt_running_loop()

        assert asyncio.run(lend()) is False
        assert sandbox_loop_module.sandbox_loop() is background
        assert env.step(REPLAction(code="print(1)")).result.stdout == "1\n"
    finally:
        env.close()
