"""Provider-owned startup for clients made without ``base_url`` (``EnvClient(provider=p)``, as 0.10).

A container provider whose ``start_container()`` needs no argument (its image or source was given
to its constructor) is started and waited for; a runtime provider (``start()``/``wait_for_ready()``,
e.g. ``UVProvider``) likewise. Stopping calls ``stop_container()`` or ``stop()``.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["start_owned_provider", "stop_provider"]


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
