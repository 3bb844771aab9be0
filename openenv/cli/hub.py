"""What ``openenv push`` and ``openenv fork`` share: the Hugging Face Hub client (``huggingface_hub``,
imported on use; ``HF_ENDPOINT`` picks the hub, ``HF_TOKEN`` the account) and its failures as one
clear line each, never a traceback."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["HubError", "call_hub", "hub_api", "hub_endpoint", "hub_user", "parse_pairs"]

T = TypeVar("T")


class HubError(click.ClickException):
    """A hub operation failed; the message says what and why, in one line."""


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def hub_api() -> Any:
    """An ``HfApi`` for ``HF_ENDPOINT`` with ``HF_TOKEN`` (or the saved login)."""
    try:
        from huggingface_hub import HfApi
    except ImportError:
        raise HubError("this needs huggingface_hub: pip install 'openenv[hub]'") from None
    return HfApi(endpoint=hub_endpoint())


def call_hub(what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``; a network, HTTP or hub error becomes ``HubError`` naming ``what``."""
    try:
        return fn(*args, **kwargs)
    except click.ClickException:
        raise
    except Exception as exc:  # huggingface_hub raises requests/httpx errors and its own
        raise HubError(f"{what} failed: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    name = type(exc).__name__
    text = " ".join(str(exc).split()) or name
    if any(word in name for word in ("Connect", "Timeout")) or "Name or service not known" in text:
        return f"cannot reach the Hugging Face Hub at {hub_endpoint()} ({name}); check the network or HF_ENDPOINT"
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if status == 401:
        return "not authorized: set HF_TOKEN or run `hf auth login` (HTTP 401)"
    if len(text) > 300:
        text = text[:300] + "..."
    return f"{text} (HTTP {status})" if status and str(status) not in text else text


def hub_user(api: Any) -> str:
    """The logged-in user's name; ``HubError`` when there is no token or the hub says no."""
    info = call_hub("Hugging Face authentication", api.whoami)
    name = info.get("name") if isinstance(info, dict) else getattr(info, "name", None)
    if not name:
        raise HubError("Hugging Face authentication failed: the hub named no user")
    return str(name)


def parse_pairs(raw: tuple[str, ...] | list[str], *, flag: str, secret: bool = False) -> dict[str, str]:
    """``KEY=VALUE`` strings (split at the first ``=``; later keys win); a secret is never echoed."""
    out: dict[str, str] = {}
    for item in raw:
        shown = "<redacted>" if secret else repr(item)
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"Invalid {flag} format: {shown}. Expected KEY=VALUE.")
        if not key.strip():
            raise click.BadParameter(f"Invalid {flag} format: {shown}. Key cannot be empty.")
        out[key.strip()] = value
    return out
