"""The handles ``EnvClient.from_docker_image`` and ``EnvClient.from_env`` return."""

from __future__ import annotations

import asyncio
from typing import Any

from openenv.core.client_handles import BootstrapHandle

__all__ = ["docker_image_handle", "env_handle"]


def docker_image_handle(cls: type, image: str, provider: Any, kwargs: dict[str, Any]) -> BootstrapHandle:
    """Start ``image`` and connect a ``cls`` to it, on ``await`` or on ``.sync()``."""
    from openenv.core.containers.runtime.launch import start_client, start_client_sync

    return BootstrapHandle(
        lambda: start_client(cls, image, provider=provider, **kwargs),
        lambda: start_client_sync(cls, image, provider=provider, **kwargs),
    )


def env_handle(cls: type, target: str, kwargs: dict[str, Any]) -> BootstrapHandle:
    """Resolve and start ``target`` (``openenv.auto``) and connect a ``cls`` to it."""

    def build() -> Any:
        from openenv.auto import AutoEnv

        return AutoEnv.from_env(target, client_class=cls, **kwargs)

    async def start_async() -> Any:
        client = await asyncio.to_thread(build)  # starting a server blocks: off the loop
        try:
            await client._connect_entry()
        except BaseException:
            await client._close_entry()
            raise
        return client

    def start_sync() -> Any:
        face = build().sync()
        try:
            return face.connect()
        except BaseException:
            face.close()
            raise

    return BootstrapHandle(start_async, start_sync)
