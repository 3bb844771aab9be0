"""The handle ``EnvClient.from_docker_image`` returns (``from_env``'s handle lives above the client core,
the client core does not import the resolver)."""

from __future__ import annotations

from typing import Any

from openenv.core.client_handles import BootstrapHandle

__all__ = ["docker_image_handle"]


def docker_image_handle(cls: type, image: str, provider: Any, kwargs: dict[str, Any]) -> BootstrapHandle:
    """Start ``image`` and connect a ``cls`` to it, on ``await`` or on ``.sync()``."""
    from openenv.core.containers.runtime.launch import start_client, start_client_sync

    return BootstrapHandle(
        lambda: start_client(cls, image, provider=provider, **kwargs),
        lambda: start_client_sync(cls, image, provider=provider, **kwargs),
    )
