"""Apps for the /web tests: the zoo env and the echo env, served for real by uvicorn."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from fastapi import FastAPI

from openenv.core.env_server import create_app


def zoo_app(**options: Any) -> FastAPI:
    from tests.webui.zoo import ZooAction
    from tests.webui.zoo_env import ZooEnvironment, ZooObservation

    options.setdefault("max_concurrent_envs", 8)
    return create_app(ZooEnvironment, ZooAction, ZooObservation, env_name="zoo", **options)


def echo_app(**options: Any) -> FastAPI:
    from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation

    options.setdefault("max_concurrent_envs", 8)
    return create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", **options)


@contextlib.contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """Run ``app`` with uvicorn on 127.0.0.1 (ephemeral port) in a thread; yields the base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                            ws_per_message_deflate=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def fresh_toolbox_app():  # noqa: ANN201 - a FastAPI app
    """A new toolbox app (the module's ``app`` is served once: its lifespan ends its executor)."""
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
    from openenv.core.env_server.types import Observation
    from openenv.envs.toolbox.environment import ToolboxEnvironment

    return create_app(ToolboxEnvironment, CallToolAction, CallToolObservation, env_name="toolbox",
                      reset_observation_cls=Observation)
