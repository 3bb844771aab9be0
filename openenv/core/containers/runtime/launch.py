"""Start an environment with a provider and hand back a connected client that owns it.

    client = await EchoEnv.from_docker_image("openenv-echo:latest")        # async, local Docker
    with start_client_sync(EchoEnv, "echo", provider="process") as env:    # blocking
        env.reset()

Closing the client stops what was started; a failed start stops it before raising.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping
from typing import Any

from .base import ContainerProvider
from .providers import make_provider

__all__ = ["start_client", "start_client_sync", "with_provider_headers"]


def _provider(provider: ContainerProvider | str | None) -> ContainerProvider:
    if provider is None:
        return make_provider("docker")
    if isinstance(provider, str):
        return make_provider(provider)
    return provider


def _start(provider: ContainerProvider, image: str, timeout_s: float, options: dict[str, Any]) -> str:
    try:
        base_url = provider.start_container(image, **options)
        provider.wait_for_ready(base_url, timeout_s)
    except BaseException:
        provider.stop_quietly()
        raise
    return base_url


async def _start_in_thread(
    provider: ContainerProvider, image: str, timeout_s: float, options: dict[str, Any]
) -> str:
    """Run the blocking start in a thread; if the caller is cancelled, stop it once it is done."""
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="openenv-start")
    started = pool.submit(_start, provider, image, timeout_s, options)
    pool.shutdown(wait=False)  # the thread ends with the start; never wait for it on the loop
    try:
        return await asyncio.wrap_future(started)
    except asyncio.CancelledError:
        started.add_done_callback(lambda _: provider.stop_quietly())
        raise


def with_provider_headers(provider: ContainerProvider, base_url: str,
                          client_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """``client_kwargs`` with the headers the provider's server requires (a Ray env's token) added."""
    kwargs = dict(client_kwargs or {})
    headers = getattr(provider, "headers", None)  # ours; a 0.10-style provider has none
    needed = headers(base_url) if callable(headers) else None
    if isinstance(needed, Mapping) and needed:
        kwargs["headers"] = {**needed, **(kwargs.get("headers") or {})}
    return kwargs


async def start_client(
    client_cls: type,
    image: str,
    provider: ContainerProvider | str | None = None,
    *,
    timeout_s: float = 60.0,
    client_kwargs: dict[str, Any] | None = None,
    **options: Any,
) -> Any:
    """Start ``image`` with ``provider`` (default: local Docker) and return a connected client.

    Args:
        provider: a provider instance, or a kind name (``process``, ``docker``, ``swarm``).
        timeout_s: readiness deadline.
        client_kwargs: extra arguments for ``client_cls``.
        **options: start options for the provider (``port``, ``env_vars``, ``memory``, ...).
    """
    provider = _provider(provider)
    base_url = await _start_in_thread(provider, image, timeout_s, options)
    kwargs = with_provider_headers(provider, base_url, client_kwargs)
    client = client_cls(base_url=base_url, provider=provider, **kwargs)
    try:
        await client.connect()
    except BaseException:
        await client.close()
        raise
    return client


def start_client_sync(
    client_cls: type,
    image: str,
    provider: ContainerProvider | str | None = None,
    *,
    timeout_s: float = 60.0,
    client_kwargs: dict[str, Any] | None = None,
    **options: Any,
) -> Any:
    """Blocking ``start_client``: returns the connected client's ``.sync()`` wrapper."""
    provider = _provider(provider)
    base_url = _start(provider, image, timeout_s, options)
    client = client_cls(base_url=base_url, provider=provider,
                        **with_provider_headers(provider, base_url, client_kwargs)).sync()
    try:
        client.connect()
    except BaseException:
        client.close()
        raise
    return client
