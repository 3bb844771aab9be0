"""Provider-owned startup for clients made without ``base_url`` (``EnvClient(provider=p)``, as 0.10),
and the client factories that start a server with a provider (``from_docker_image``, ``from_env``).

A container provider whose ``start_container()`` needs no argument (its image or source was given
to its constructor) is started and waited for; a runtime provider (``start()``/``wait_for_ready()``,
e.g. ``UVProvider``) likewise. Stopping calls ``stop_container()`` or ``stop()``.
:class:`ProviderOwnedClient` is a base class of :class:`~openenv.core.env_client.EnvClient`: it
starts its provider on connect and stops it on close (a failed start stops it too).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openenv.core.client_handles import BootstrapHandle
    from openenv.core.sync_client import SyncEnvClient

__all__ = ["ProviderOwnedClient", "start_owned_provider", "stop_provider"]


def _required_parameters(method: Any) -> list[str]:
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):
        return []
    return [
        name
        for name, param in signature.parameters.items()
        if param.default is inspect.Parameter.empty
        and param.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           inspect.Parameter.KEYWORD_ONLY)
    ]


def start_owned_provider(provider: Any) -> str:
    """Start ``provider`` and wait until it serves; returns its base URL (blocking)."""
    if provider is None:
        raise RuntimeError("EnvClient has no base URL or provider.")
    if hasattr(provider, "start_container"):
        required = _required_parameters(provider.start_container)
        if required:
            raise ValueError(
                f"{type(provider).__name__} does not support provider-owned startup because "
                f"start_container() requires {', '.join(required)}. Start the provider manually and "
                "pass base_url, or configure a provider with a constructor-owned image/source."
            )
        base_url = provider.start_container()
        provider.wait_for_ready(base_url)
        return base_url
    if hasattr(provider, "start"):
        base_url = provider.start()
        provider.wait_for_ready()
        return base_url
    raise TypeError("provider must define start_container() or start().")


def stop_provider(provider: Any) -> None:
    """Stop what ``provider`` started: ``stop_container()``, else ``stop()`` (blocking)."""
    stop = getattr(provider, "stop_container", None) or getattr(provider, "stop", None)
    if stop is not None:
        stop()


class ProviderOwnedClient:
    """The provider half of ``EnvClient``: its factories, and the provider it starts and stops
    (the URL it serves at is given to ``EnvClient._set_base_url``)."""

    # set by ``EnvClient.__init__``
    base_url: str | None
    _provider: Any

    # -- factories (``await`` the handle, or ``.sync()``) ------------------------------------

    @classmethod
    def from_docker_image(cls, image: str, provider: Any = None, **kwargs: Any) -> BootstrapHandle:
        """Start ``image`` with ``provider`` (local Docker by default) and connect to it.

        ``await EchoEnv.from_docker_image(img)`` gives an async client, ``...from_docker_image(img).sync()``
        a blocking one. Closing the client stops the container; a failed start leaves nothing running.
        """
        from openenv.core.client_factories import docker_image_handle

        return docker_image_handle(cls, image, provider, kwargs)

    @classmethod
    def from_docker_image_sync(cls, image: str, provider: Any = None, **kwargs: Any) -> SyncEnvClient:
        """Blocking :meth:`from_docker_image`: returns a connected ``SyncEnvClient``.

        ``provider`` may be an instance or a kind name (``"process"``, ``"docker"``, ``"swarm"``).
        """
        from openenv.core.containers.runtime.launch import start_client_sync

        return start_client_sync(cls, image, provider=provider, **kwargs)

    @classmethod
    def from_env(cls, target: str, **kwargs: Any) -> BootstrapHandle:
        """Resolve ``target`` (name, directory, ``module:app``, image or URL: see ``openenv.auto``),
        start it if needed and connect. Closing the client stops what was started."""
        from openenv.auto.handles import (
            env_handle,  # the resolver sits above the client core: imported here only
        )

        return env_handle(cls, target, kwargs)

    # -- the provider this client owns ----------------------------------------------------

    def _ensure_base_url(self) -> None:
        """Start the provider of a client made without ``base_url`` (0.10's provider-owned startup)."""
        if self.base_url is None:
            self._set_base_url(start_owned_provider(self._provider))

    async def _start_owned_provider(self) -> None:
        """``_ensure_base_url`` off the event loop (it blocks); a failed start stops the provider."""
        try:
            await asyncio.to_thread(self._ensure_base_url)
        except BaseException:
            await self._stop_provider()
            raise

    async def _stop_provider(self) -> None:
        """Stop what a provider started for this client, off the event loop (it may block)."""
        provider, self._provider = self._provider, None
        if provider is not None:
            await asyncio.to_thread(stop_provider, provider)
