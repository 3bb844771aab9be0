"""``HTTPEnvServer`` and ``create_app``: wiring and lifespan only.

Usage::

    app = create_app(MyEnvironment, MyAction, MyObservation)   # class, factory or instance
    # uvicorn module:app --host 127.0.0.1 --port 8000
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import FastAPI

from openenv.core.env_server.dispatch import Dispatcher, reset_parameters
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.introspection import (
    method_annotation,
    parameter_schema,
    resolve_env,
    state_class,
)
from openenv.core.env_server.serialization import ActionCodec, json_schema, observation_to_wire, to_jsonable
from openenv.core.env_server.sessions import Session, SessionManager
from openenv.core.env_server.types import EnvironmentMetadata

__all__ = ["HTTPEnvServer", "create_app"]

DEFAULT_MAX_SESSIONS_CONCURRENT = 256
DEFAULT_IDLE_TIMEOUT_S = 600.0
DEFAULT_STEP_TIMEOUT_S = 300.0
DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024
SESSION_HEADER = "X-OpenEnv-Session"


def _env_float(name: str, default: float | None) -> float | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = float(raw)
    return value if value > 0 else None


class HTTPEnvServer:
    """Serves one environment type over HTTP and WebSocket.

    Args:
        env: an ``Environment`` class, a zero-argument factory, or an instance (one session at a time).
        action_cls / observation_cls: pydantic models or dataclasses (inferred from type hints if omitted).
        max_concurrent_envs: session cap (default: 256 for concurrent-safe envs, else 1).
        session_timeout_s: idle sessions are closed after this long (``None`` disables).
        step_timeout_s: default per-call deadline (``timeout_s`` per request overrides it).
    """

    def __init__(
        self,
        env: Any,
        action_cls: type | None = None,
        observation_cls: type | None = None,
        *,
        env_name: str | None = None,
        state_cls: type | None = None,
        max_concurrent_envs: int | None = None,
        session_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
        step_timeout_s: float | None = DEFAULT_STEP_TIMEOUT_S,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        source = resolve_env(env)
        self.instance: Any = source.instance
        self.env_cls: type | None = source.env_cls
        factory: Callable[[], Any] = source.factory or (lambda: env)
        self.action_cls = action_cls or method_annotation(self.env_cls, "step", "action")
        self.observation_cls = observation_cls or method_annotation(self.env_cls, "step", "return")
        self.state_cls = state_cls or state_class(self.env_cls)
        self.env_name = env_name
        concurrent = bool(getattr(self.env_cls, "SUPPORTS_CONCURRENT_SESSIONS", False))
        if self.instance is not None:
            if max_concurrent_envs not in (None, 1):
                raise ValueError("an environment instance serves one session at a time; pass a class or factory")
            cap = 1
        else:
            cap = max_concurrent_envs or (DEFAULT_MAX_SESSIONS_CONCURRENT if concurrent else 1)
        self.max_message_bytes = max_message_bytes
        self.executor = ThreadPoolExecutor(max_workers=min(cap, 256) + 4, thread_name_prefix="openenv-env")
        self.sessions = SessionManager(
            factory,
            max_sessions=cap,
            idle_timeout_s=session_timeout_s,
            executor=self.executor,
            shared_instance=self.instance is not None,
        )
        self.dispatcher = Dispatcher(
            codec=ActionCodec(self.action_cls), executor=self.executor, default_timeout_s=step_timeout_s
        )
        self._instance_session: Session | None = None
        self.web_mounted = False
        self._metadata: dict[str, Any] | None = None

    # -- descriptions ---------------------------------------------------------------------

    def schemas(self) -> dict[str, Any]:
        """JSON schemas of the action, observation and (real) state types."""
        return {
            "action": json_schema(self.action_cls),
            "observation": json_schema(self.observation_cls),
            "state": json_schema(self.state_cls),
        }

    def reset_params_schema(self) -> dict[str, Any]:
        """JSON schema (object) of ``seed``, ``episode_id`` and the env's own reset kwargs."""
        props: dict[str, Any] = {
            "seed": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "default": None},
            "episode_id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        }
        required = []
        for param in reset_parameters(self.env_cls) if self.env_cls else []:
            schema = parameter_schema(param)
            props[param.name] = schema
            if param.default is inspect.Parameter.empty:
                required.append(param.name)
        return {"type": "object", "properties": props, "required": required}

    async def metadata(self) -> dict[str, Any]:
        """Environment metadata (built once from an instance)."""
        if self._metadata is None:
            meta = await self._read_metadata()
            if self.env_name:
                meta["name"] = self.env_name
            self._metadata = meta
        return self._metadata

    async def _read_metadata(self) -> dict[str, Any]:
        env = self.instance
        owned = False
        if env is None:
            env = self.sessions.any_env()
            if env is None:
                env = await self.sessions.build_env()
                owned = True
        try:
            getter = getattr(env, "get_metadata", None)
            meta = getter() if callable(getter) else None
            if meta is None:
                meta = EnvironmentMetadata(name=type(env).__name__)
            data = to_jsonable(meta)
            return data if isinstance(data, dict) else {"name": type(env).__name__}
        finally:
            if owned:
                await self.sessions.dispose(env)

    # -- the session pool (used by /ws, HTTP sessions and /web) ---------------------------

    async def open_session(self, kind: str = "ws") -> str:
        """Open a session and return its id; raises CapacityError/FactoryError."""
        return (await self.sessions.create(kind)).id

    async def close_session(self, session_id: str) -> None:
        await self.sessions.close(session_id)

    def list_sessions(self) -> list[dict[str, Any]]:
        return self.sessions.list()

    async def reset(self, session_id: str, kwargs: dict[str, Any] | None = None, *, timeout_s: float | None = None) -> dict[str, Any]:
        return await self.dispatcher.reset(self.sessions.get(session_id), kwargs or {}, timeout_s=timeout_s)

    async def step(self, session_id: str, action: Any, timeout_s: float | None = None) -> dict[str, Any]:
        return await self.dispatcher.step(self.sessions.get(session_id), action, timeout_s=timeout_s)

    async def state(self, session_id: str) -> dict[str, Any]:
        return await self.dispatcher.state(self.sessions.get(session_id))

    @contextlib.asynccontextmanager
    async def ephemeral_session(self) -> AsyncIterator[Session]:
        """A throwaway environment for one stateless HTTP request (the published behaviour).

        With an environment instance, the instance itself is used and kept.
        """
        if self.instance is not None:
            if self._instance_session is None:
                self._instance_session = Session(id="instance", kind="http", env=self.instance, owned=False)
            yield self._instance_session
            return
        env = await self.sessions.build_env()
        try:
            yield Session(id="ephemeral", kind="http", env=env)
        finally:
            await self.sessions.dispose(env)

    def _deserialize_action(self, data: dict[str, Any]) -> Any:
        """Validate a wire dict into the action type (raises ActionValidationError)."""
        return self.dispatcher.codec.parse(data)

    def _serialize_observation(self, observation: Any) -> dict[str, Any]:
        """An observation as the published wire payload ``{"observation", "reward", "done"}``."""
        return observation_to_wire(observation)

    # -- wiring ---------------------------------------------------------------------------

    def register_routes(self, app: FastAPI) -> None:
        """Add the HTTP and WebSocket endpoints to ``app``."""
        from openenv.core.env_server.http_routes import build_http_router
        from openenv.core.env_server.ws_route import build_ws_router

        app.include_router(build_http_router(self))
        app.include_router(build_ws_router(self))

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: FastAPI) -> AsyncIterator[None]:
        self.sessions.start_reaper()
        try:
            yield
        finally:
            await self.sessions.stop_reaper()
            await self.sessions.close_all()
            if self.instance is not None and hasattr(self.instance, "close"):
                await asyncio.get_running_loop().run_in_executor(self.executor, self.instance.close)
            self.executor.shutdown(wait=False, cancel_futures=True)


def create_app(
    env: Any,
    action_cls: type | None = None,
    observation_cls: type | None = None,
    *,
    env_name: str | None = None,
    web: bool | None = None,
    **server_options: Any,
) -> FastAPI:
    """Build the FastAPI app serving ``env`` (class, factory or instance).

    ``web`` mounts the per-env page at ``/web`` (default on; ``OPENENV_WEB=0`` turns it off).
    Other keyword options go to :class:`HTTPEnvServer`; ``OPENENV_STEP_TIMEOUT_S``,
    ``OPENENV_SESSION_TIMEOUT_S`` and ``OPENENV_MAX_SESSIONS`` set their defaults.
    """
    server_options.setdefault("step_timeout_s", _env_float("OPENENV_STEP_TIMEOUT_S", DEFAULT_STEP_TIMEOUT_S))
    server_options.setdefault(
        "session_timeout_s", _env_float("OPENENV_SESSION_TIMEOUT_S", DEFAULT_IDLE_TIMEOUT_S)
    )
    if os.environ.get("OPENENV_MAX_SESSIONS") and not isinstance(env, Environment):
        server_options.setdefault("max_concurrent_envs", int(os.environ["OPENENV_MAX_SESSIONS"]))
    server = HTTPEnvServer(env, action_cls, observation_cls, env_name=env_name, **server_options)
    title = env_name or (server.env_cls.__name__ if server.env_cls else "OpenEnv environment")
    app = FastAPI(title=title, lifespan=server.lifespan)
    app.state.env_server = server
    server.register_routes(app)
    if web is None:
        web = os.environ.get("OPENENV_WEB", "1").lower() not in ("0", "false", "no", "off")
    if web:
        _mount_web(app, server)
    return app


def _mount_web(app: FastAPI, server: HTTPEnvServer) -> None:
    try:
        from webui.env_page import build_env_page_router
    except ModuleNotFoundError as exc:  # the web UI package is not installed alongside
        if exc.name not in ("webui", "webui.env_page"):
            raise
        return
    app.include_router(build_env_page_router(server))
    server.web_mounted = True
