"""What ``openenv push`` and ``openenv fork`` share: the Hugging Face Hub client (``huggingface_hub``;
``HF_ENDPOINT`` picks the hub, ``HF_TOKEN`` the account) and its failures as one clear line each,
never a traceback. The commands import ``HfApi``/``whoami``/``login`` themselves (0.10's names)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["HubError", "call_hub", "hub_endpoint", "hub_user", "need_hub", "parse_pairs"]

T = TypeVar("T")


class HubError(click.ClickException):
    """A hub operation failed; the message says what and why, in one line."""


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def need_hub(client: Any) -> None:
    """``HubError`` when ``huggingface_hub`` (the ``hub`` extra) is not installed."""
    if client is None:
        raise HubError("this needs huggingface_hub: pip install 'openenv[hub]'")


def call_hub(what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``; a network, HTTP or hub error becomes ``HubError`` naming ``what``
    (``"<what> failed: <reason>"``, or ``"<what>: <reason>"`` when ``what`` already says it failed)."""
    try:
        return fn(*args, **kwargs)
    except click.ClickException:
        raise
    except Exception as exc:  # huggingface_hub raises requests/httpx errors and its own
        head = what if what.startswith("Failed") else f"{what} failed"
        raise HubError(f"{head}: {_reason(exc)}") from None


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


def _username(info: Any) -> str | None:
    keys = ("name", "fullname", "username")
    if isinstance(info, dict):
        return next((str(info[k]) for k in keys if info.get(k)), None)
    return next((str(getattr(info, k)) for k in keys if isinstance(getattr(info, k, None), str)), None)


def hub_user(whoami: Callable[[], Any], login: Callable[[], Any] | None) -> str:
    """The logged-in user's name (``whoami``). Without a usable token, an interactive terminal gets
    ``login``'s prompt once (as 0.10); elsewhere, and when the hub cannot be reached, ``HubError``."""
    try:
        info = whoami()
    except Exception as exc:  # noqa: BLE001 - huggingface_hub's errors vary by version
        reason = _reason(exc)
        if reason.startswith("cannot reach") or login is None or not sys.stdin.isatty():
            raise HubError(f"Hugging Face authentication failed: {reason}. Set HF_TOKEN or run "
                           "`hf auth login`.") from None  # fmt: skip
        click.echo("Not authenticated with Hugging Face. Please login...")
        call_hub("Hugging Face authentication (login)", login)
        info = call_hub("Hugging Face authentication", whoami)
    name = _username(info)
    if not name:
        raise HubError("Hugging Face authentication failed: Could not extract username from whoami response")
    return name


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
