"""The handle ``EnvClient.from_env`` returns: resolve and start a target, then connect a client.

It lives above the client core (``openenv.core`` never imports the resolver at module level;
``ProviderOwnedClient.from_env`` imports this at its call site).
"""

from __future__ import annotations

import asyncio
from typing import Any

from openenv.core.client_handles import BootstrapHandle

__all__ = ["env_handle"]


def env_handle(cls: type, target: str, kwargs: dict[str, Any]) -> BootstrapHandle:
    """Resolve and start ``target`` and connect a ``cls`` to it, on ``await`` or on ``.sync()``."""

    def build() -> Any:
        from openenv.auto.auto_env import AutoEnv

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
