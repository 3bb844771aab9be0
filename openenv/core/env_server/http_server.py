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

from openenv.core.env_server.compat_options import (
    PublishedServerAPI,
    check_concurrency_safety,
    requires_single_thread,
    resolve_concurrency,
    resolve_mode,
)
from openenv.core.env_server.dispatch import Dispatcher, reset_parameters
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.introspection import (
    method_annotation,
    parameter_schema,
    resolve_env,
    state_class,
)
from openenv.core.env_server.serialization import (
    ActionCodec,
    json_schema,
    nests_metadata,
    observation_to_wire,
    to_jsonable,
)
from openenv.core.env_server.sessions import Session, SessionManager
from openenv.core.env_server.types import ConcurrencyConfig, EnvironmentMetadata, ServerMode, State

__all__ = ["HTTPEnvServer", "create_app", "create_fastapi_app"]

DEFAULT_MAX_SESSIONS_CONCURRENT = 256
DEFAULT_IDLE_TIMEOUT_S = 600.0
DEFAULT_STEP_TIMEOUT_S = 300.0
DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024
SESSION_HEADER = "X-OpenEnv-Session"
HTTP_API_VERSION = "1.0.0"  # OpenAPI info.version (the wire protocol, not the package version)


def _env_float(name: str, default: float | None) -> float | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = float(raw)
    return value if value > 0 else None


class HTTPEnvServer(PublishedServerAPI):
    """Serves one environment type over HTTP and WebSocket.

    Args:
        env: an ``Environment`` class, a zero-argument factory, or an instance (one session at a time).
        action_cls / observation_cls: pydantic models or dataclasses (inferred from type hints if omitted).
        max_concurrent_envs / concurrency_config: session cap (default: 256 for concurrent-safe envs,
            else 1); more than one on an ``Environment`` not marked ``SUPPORTS_CONCURRENT_SESSIONS``
            raises ``ConcurrencyConfigurationError``. A ``ConcurrencyConfig`` also sets the idle timeout.
        reset_observation_cls: published in ``/schema`` as ``reset_observation`` (default: the observation's).
        session_timeout_s: idle sessions are closed after this long (``None`` disables).
        step_timeout_s: default per-call deadline (``timeout_s`` per request overrides it).
    """

    def __init__(
        self,
        env: Any,
        action_cls: type | None = None,
        observation_cls: type | None = None,
        max_concurrent_envs: int | None = None,
        concurrency_config: ConcurrencyConfig | None = None,
        env_name: str | None = None,
        state_cls: type | None = None,
        *,
        reset_observation_cls: type | None = None,
        session_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
        step_timeout_s: float | None = DEFAULT_STEP_TIMEOUT_S,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        source = resolve_env(env)
        self.instance: Any = source.instance
        self.env_cls: type | None = source.env_cls
        factory: Callable[[], Any] = source.factory or (lambda: env)
        self._factory = factory
        max_concurrent_envs, session_timeout_s = resolve_concurrency(
            max_concurrent_envs, concurrency_config, session_timeout_s
        )
        self.action_cls = action_cls or method_annotation(self.env_cls, "step", "action")
        self.observation_cls = observation_cls or method_annotation(self.env_cls, "step", "return")
        self.reset_observation_cls = reset_observation_cls
        self.state_cls = state_cls if state_cls not in (None, State) else state_class(self.env_cls)
        self.env_name = env_name
        self.mode = ServerMode.SIMULATION
        concurrent = bool(getattr(self.env_cls, "SUPPORTS_CONCURRENT_SESSIONS", False))
        if self.instance is not None:
            if max_concurrent_envs not in (None, 1):
                raise ValueError("an environment instance serves one session at a time; pass a class or factory")
            cap = 1
        else:
            check_concurrency_safety(source.factory, self.env_cls, max_concurrent_envs)
            cap = max_concurrent_envs or (DEFAULT_MAX_SESSIONS_CONCURRENT if concurrent else 1)
        self.max_message_bytes = max_message_bytes
        self._workers = 1 if requires_single_thread(source.factory, self.env_cls) else min(cap, 256) + 4
        self.executor = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="openenv-env")
        self._executor_done = False
        self.sessions = SessionManager(
            factory,
            max_sessions=cap,
            idle_timeout_s=session_timeout_s,
            executor=self.executor,
            shared_instance=self.instance is not None,
        )
        self.dispatcher = Dispatcher(
            codec=ActionCodec(self.action_cls), executor=self.executor, default_timeout_s=step_timeout_s,
            nest_metadata=nests_metadata(),
        )
        self._instance_session: Session | None = None
        self.web_mounted = False
        self._metadata: dict[str, Any] | None = None

    # -- descriptions ---------------------------------------------------------------------

    def schemas(self) -> dict[str, Any]:
        """JSON schemas of the action, observation and (real) state types."""
        schemas = {
            "action": json_schema(self.action_cls),
            "observation": json_schema(self.observation_cls),
            "state": json_schema(self.state_cls),
        }
        schemas["reset_observation"] = (
            json_schema(self.reset_observation_cls) if self.reset_observation_cls else schemas["observation"]
        )
        return schemas

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
        """Environment metadata (built once from an instance): the env's ``get_metadata()``, whose
        default names the class, as on 0.10 (``env_name`` does not rename it: one env module shows
        as one environment whichever server serves it)."""
        if self._metadata is None:
            self._metadata = await self._read_metadata()
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
                name = type(env).__name__
                meta = EnvironmentMetadata(name=name, description=f"{name} environment", version="1.0.0")
            data = to_jsonable(meta)
            return data if isinstance(data, dict) else {"name": type(env).__name__}
        finally:
            if owned:
                await self.sessions.dispose(env)

    # -- the session pool (used by /ws, HTTP sessions and /web) ---------------------------

    async def open_session(self, kind: str = "ws") -> str:
        """Open a session and return its id; raises CapacityError/FactoryError."""
        return (await self.sessions.create(kind)).id

    async def close_session(self, session_id: str, reason: str | None = None) -> None:
        """Close a session; with ``reason``, a WebSocket on it is told (an error frame) and hung up."""
        await self.sessions.close(session_id, reason)

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
        session = Session(id="ephemeral", kind="http", env=env)
        try:
            yield session
        finally:  # a call that overran its deadline may still run: close the env once it returns
            await self.sessions.dispose(env, pending=session.pending)

    def _deserialize_action(self, data: dict[str, Any]) -> Any:
        """Validate a wire dict into the action type (raises ActionValidationError)."""
        return self.dispatcher.codec.parse(data)

    def _serialize_observation(self, observation: Any) -> dict[str, Any]:
        """An observation as the published wire payload ``{"observation", "reward", "done"}``."""
        return observation_to_wire(observation, nest_metadata=self.dispatcher.nest_metadata)

    # -- wiring ---------------------------------------------------------------------------

    def register_routes(self, app: FastAPI, mode: ServerMode | str | None = None) -> None:
        """Add the HTTP, WebSocket, Task API and MCP endpoints to ``app`` (any FastAPI app, as in 0.10).

        ``mode`` (default ``OPENENV_MODE``, else ``simulation``): ``production`` leaves out
        ``/reset``, ``/step`` and ``/state``. The server's lifespan (idle reaper, closing
        sessions) joins the app's own.
        """
        from openenv.core.env_server import mcp_hook
        from openenv.core.env_server._routing import add_routes
        from openenv.core.env_server.http_routes import build_http_router
        from openenv.core.env_server.task_routes import build_task_router
        from openenv.core.env_server.ws_route import build_ws_router

        self.mode = resolve_mode(mode)
        add_routes(app, build_http_router(self, simulation=self.mode is ServerMode.SIMULATION))
        add_routes(app, build_ws_router(self))
        add_routes(app, build_task_router(self))  # every mode, as 0.10
        if self.mode is ServerMode.PRODUCTION and self.instance is None:
            from openenv.core.env_server.harness_route import build_harness_router, factory_builds_harness_env

            if factory_builds_harness_env(self.sessions.factory):  # 0.10's /harness (RFC 005)
                add_routes(app, build_harness_router(self))
        mcp_hook.install(app, self, self.mode)
        if not getattr(app.state, "origin_guarded", False):  # Host/Origin policy (openenv.core.origin_policy)
            from openenv.core.origin_policy import OriginGuard

            app.add_middleware(OriginGuard)
            app.state.origin_guarded = True
        if getattr(app.state, "env_server", None) is None:
            app.state.env_server = self
        self._join_lifespan(app)

    def _join_lifespan(self, app: FastAPI) -> None:
        outer = app.router.lifespan_context
        server_lifespan = self.lifespan

        @contextlib.asynccontextmanager
        async def joined(a: Any) -> AsyncIterator[Any]:
            async with outer(a) as state, server_lifespan(a):
                yield state

        app.router.lifespan_context = joined

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: FastAPI) -> AsyncIterator[None]:
        if self._executor_done:  # served again (a second uvicorn run, a test server): a fresh pool
            self.executor = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="openenv-env")
            self.sessions.executor = self.dispatcher.executor = self.executor
            self._executor_done = False
        self.sessions.start_reaper()
        try:
            yield
        finally:
            await self.sessions.stop_reaper()
            await self.sessions.close_all()
            if self.instance is not None and hasattr(self.instance, "close"):
                await asyncio.get_running_loop().run_in_executor(self.executor, self.instance.close)
            self.executor.shutdown(wait=False, cancel_futures=True)
            self._executor_done = True


def create_app(
    env: Any,
    action_cls: type | None = None,
    observation_cls: type | None = None,
    env_name: str | None = None,
    max_concurrent_envs: int | None = None,
    concurrency_config: ConcurrencyConfig | None = None,
    gradio_builder: Callable[..., Any] | None = None,
    custom_tab_name: str = "Custom",
    custom_tab_primary: bool = False,
    show_default_tab: bool = True,
    title_override: str | None = None,
    state_cls: type | None = None,
    *,
    mode: ServerMode | str | None = None,
    reset_observation_cls: type | None = None,
    web: bool | None = None,
    **server_options: Any,
) -> FastAPI:
    """Build the FastAPI app serving ``env`` (class, factory or instance).

    The positional order is the published 0.10 one. ``web`` mounts the per-env page at ``/web``
    (default on; ``OPENENV_WEB=0`` turns it off); a ``gradio_builder`` is mounted there instead
    when Gradio is installed. ``mode`` / ``OPENENV_MODE``: ``simulation`` or ``production``.
    Other keyword options go to :class:`HTTPEnvServer`; ``OPENENV_STEP_TIMEOUT_S``,
    ``OPENENV_SESSION_TIMEOUT_S`` and ``OPENENV_MAX_SESSIONS`` set their defaults.
    """
    server_options.setdefault("step_timeout_s", _env_float("OPENENV_STEP_TIMEOUT_S", DEFAULT_STEP_TIMEOUT_S))
    server_options.setdefault(
        "session_timeout_s", _env_float("OPENENV_SESSION_TIMEOUT_S", DEFAULT_IDLE_TIMEOUT_S)
    )
    if (
        os.environ.get("OPENENV_MAX_SESSIONS")
        and max_concurrent_envs is None
        and concurrency_config is None
        and not isinstance(env, Environment)
    ):
        max_concurrent_envs = int(os.environ["OPENENV_MAX_SESSIONS"])
    server = HTTPEnvServer(
        env,
        action_cls,
        observation_cls,
        max_concurrent_envs,
        concurrency_config,
        env_name,
        state_cls,
        reset_observation_cls=reset_observation_cls,
        **server_options,
    )
    title = title_override or env_name or (server.env_cls.__name__ if server.env_cls else "OpenEnv environment")
    # info.version is the HTTP API's version: 0.10's validator maps "1.x" to its openenv-http/1.x profile
    app = FastAPI(title=title, version=HTTP_API_VERSION)
    app.state.env_server = server
    server.register_routes(app, mode)
    if web is None:
        web = os.environ.get("OPENENV_WEB", "1").lower() not in ("0", "false", "no", "off")
    if web:
        from openenv.core.env_server.web_interface import mount_web

        mount_web(
            app,
            server,
            gradio_builder=gradio_builder,
            custom_tab_name=custom_tab_name,
            custom_tab_primary=custom_tab_primary,
            show_default_tab=show_default_tab,
            title=title,
        )
    return app


def create_fastapi_app(
    env: Any,
    action_cls: type | None = None,
    observation_cls: type | None = None,
    max_concurrent_envs: int | None = None,
    concurrency_config: ConcurrencyConfig | None = None,
    env_name: str | None = None,
    state_cls: type | None = None,
    *,
    mode: ServerMode | str | None = None,
    reset_observation_cls: type | None = None,
    **server_options: Any,
) -> FastAPI:
    """The app without the ``/web`` page (the published ``create_fastapi_app``, same positional order)."""
    return create_app(
        env,
        action_cls,
        observation_cls,
        env_name,
        max_concurrent_envs,
        concurrency_config,
        state_cls=state_cls,
        mode=mode,
        reset_observation_cls=reset_observation_cls,
        web=False,
        **server_options,
    )
