"""The ``/web`` page, and the published ``openenv.core.env_server.web_interface`` names.

Ours serves its own page (``webui.env_page``). A 0.10 ``gradio_builder`` is accepted: when
Gradio is installed its Blocks are mounted at ``/web/gradio`` beside our page; otherwise one
log line says so and our page is served alone. Gradio is imported only here, only then.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

__all__ = [
    "GRADIO_PATH",
    "WebInterfaceManager",
    "create_web_interface_app",
    "load_environment_metadata",
    "mount_web",
]

log = logging.getLogger("openenv.server")
GRADIO_PATH = "/web/gradio"


def load_environment_metadata(env: Any, env_name: str | None = None) -> EnvironmentMetadata:
    """An instance's ``get_metadata()``; for a factory, a default plus the README found on disk.

    README lookup as published: ``ENV_README_PATH``, ``envs/<env_name>/README.md``,
    ``/app/env/README.md``, ``/app/README.md``. A factory is never called.
    """
    if isinstance(env, Environment):
        return env.get_metadata()
    while isinstance(env, functools.partial):
        env = env.func
    class_name = env.__name__ if inspect.isclass(env) else (env_name or getattr(env, "__name__", "environment"))
    meta = EnvironmentMetadata(name=env_name or class_name, description=f"{class_name} environment", version="1.0.0")
    readme = _read_readme(env_name)
    if readme:
        meta.readme_content = readme
    return meta


def _read_readme(env_name: str | None) -> str | None:
    candidates = [Path(p) for p in [os.environ.get("ENV_README_PATH")] if p]
    if env_name:
        candidates.append(Path("envs") / env_name / "README.md")
    candidates += [Path("/app/env/README.md"), Path("/app/README.md")]
    for path in candidates:
        try:
            if path.is_file():
                return path.read_text(encoding="utf-8")
        except OSError:
            continue
    return None


class WebInterfaceManager:
    """What a 0.10 ``gradio_builder`` drives: one session of the server's pool.

    ``reset_environment(kwargs)`` / ``step_environment(action_dict)`` return the wire payload
    ``{"observation", "reward", "done"}``; ``get_state()`` the state dict of the last call.
    """

    def __init__(self, server: Any, metadata: EnvironmentMetadata) -> None:
        self.server = server
        self.metadata = metadata
        self.action_cls = server.action_cls
        self.observation_cls = server.observation_cls
        self._session_id: str | None = None
        self._state: dict[str, Any] = {}

    @property
    def env(self) -> Any:
        """The session's environment instance (``None`` before the first reset)."""
        if self._session_id is None:
            return self.server.instance
        return self.server.sessions.get(self._session_id).env

    async def _session(self) -> str:
        if self._session_id is not None:
            try:
                self.server.sessions.get(self._session_id)
                return self._session_id
            except Exception:  # reaped while idle: open a new one
                self._session_id = None
        self._session_id = await self.server.open_session("web")
        return self._session_id

    async def reset_environment(self, reset_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        sid = await self._session()
        payload = await self.server.reset(sid, reset_kwargs or {})
        self._state = await self.server.state(sid)
        return payload

    async def step_environment(self, action_data: dict[str, Any]) -> dict[str, Any]:
        sid = await self._session()
        payload = await self.server.step(sid, action_data)
        self._state = await self.server.state(sid)
        return payload

    def get_state(self) -> dict[str, Any]:
        return dict(self._state)


def mount_web(
    app: FastAPI,
    server: Any,
    *,
    gradio_builder: Callable[..., Any] | None = None,
    custom_tab_name: str = "Custom",
    custom_tab_primary: bool = False,
    show_default_tab: bool = True,
    title: str | None = None,
) -> None:
    """Mount 0.10's JSON web API, our ``/web`` page (when ``webui`` is installed) and a ``gradio_builder``'s UI."""
    from openenv.core.env_server._routing import add_routes
    from openenv.core.env_server.web_api import build_web_api_router

    add_routes(app, build_web_api_router(server))
    try:
        from webui.env_page import build_env_page_router
    except ModuleNotFoundError as exc:  # the web UI package is not installed alongside
        if exc.name not in ("webui", "webui.env_page"):
            raise
    else:
        add_routes(app, build_env_page_router(server))
        server.web_mounted = True
    if gradio_builder is not None:
        _mount_gradio(app, server, gradio_builder, title=title or server.env_name or "OpenEnv environment")


def _mount_gradio(app: FastAPI, server: Any, builder: Callable[..., Any], *, title: str) -> None:
    try:
        import gradio as gr
    except ModuleNotFoundError:
        log.warning(
            "gradio_builder given but Gradio is not installed: serving the built-in /web page "
            "(pip install gradio to mount the custom UI at %s)",
            GRADIO_PATH,
        )
        return
    metadata = EnvironmentMetadata(name=server.env_name or title)
    manager = WebInterfaceManager(server, metadata)
    schema = server.schemas().get("action") or {}
    fields = [
        {"name": name, "type": spec.get("type", "string"), "required": name in schema.get("required", [])}
        for name, spec in (schema.get("properties") or {}).items()
        if name != "metadata"
    ]
    is_chat = "messages" in (schema.get("properties") or {})
    blocks = builder(manager, fields, metadata, is_chat, title, "")
    gr.mount_gradio_app(app, blocks, path=GRADIO_PATH)
    server.gradio_mounted = GRADIO_PATH
    log.info("custom Gradio UI mounted at %s", GRADIO_PATH)


def create_web_interface_app(
    env: Any,
    action_cls: type | None = None,
    observation_cls: type | None = None,
    env_name: str | None = None,
    max_concurrent_envs: int | None = None,
    concurrency_config: Any = None,
    gradio_builder: Callable[..., Any] | None = None,
    custom_tab_name: str = "Custom",
    custom_tab_primary: bool = False,
    show_default_tab: bool = True,
    title_override: str | None = None,
    state_cls: type | None = None,
    *,
    mode: Any = None,
    reset_observation_cls: type | None = None,
    **server_options: Any,
) -> FastAPI:
    """``create_app`` with the ``/web`` page on (the published entry point of the same name)."""
    from openenv.core.env_server.http_server import create_app

    return create_app(
        env,
        action_cls,
        observation_cls,
        env_name,
        max_concurrent_envs,
        concurrency_config,
        gradio_builder,
        custom_tab_name,
        custom_tab_primary,
        show_default_tab,
        title_override,
        state_cls,
        mode=mode,
        reset_observation_cls=reset_observation_cls,
        web=True,
        **server_options,
    )
