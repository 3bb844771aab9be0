"""Client value types: ``StepResult``, ``ClientState``, ``ws_url``; ``split_observation`` reads either wire shape."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["ClientState", "StepResult", "split_observation", "step_metadata", "ws_url"]

ObsT = TypeVar("ObsT")


@dataclass
class StepResult(Generic[ObsT]):
    """An observation with the step's reward and done flag (``metadata`` is additive)."""

    observation: ObsT
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


def step_metadata(payload: dict[str, Any]) -> dict[str, Any]:
    """The step's metadata from either shape: 0.3's top-level ``metadata`` or 0.10's nested one."""
    top = payload.get("metadata")
    obs = payload.get("observation")
    nested = obs.get("metadata") if isinstance(obs, dict) else None
    if not nested:
        return dict(top) if isinstance(top, dict) else {}
    if not top or top == nested:
        return dict(nested) if isinstance(nested, dict) else {}
    return {**nested, **top} if isinstance(nested, dict) and isinstance(top, dict) else dict(top or {})


def split_observation(payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(observation fields, metadata)`` of a reset/step ``data`` object in either shape.

    The observation's fields never include ``metadata`` (0.10 nests it there; 0.3 lifts it out), so a
    typed client can call ``MyObservation(**fields, metadata=meta)`` against both servers.
    """
    obs = payload.get("observation")
    fields = {k: v for k, v in obs.items() if k != "metadata"} if isinstance(obs, dict) else {}
    return fields, step_metadata(payload)


class ClientState(enum.Enum):
    UNOPENED = "unopened"
    OPEN = "open"
    DISCONNECTED = "disconnected"  # the socket was lost; the next call reconnects
    CLOSED = "closed"


def ws_url(base_url: str) -> str:
    """``http(s)://host:port[/prefix]`` → ``ws(s)://host:port[/prefix]/ws``."""
    url = base_url.rstrip("/")
    if url.startswith("https://"):
        url = "wss://" + url[len("https://") :]
    elif url.startswith("http://"):
        url = "ws://" + url[len("http://") :]
    elif not url.startswith(("ws://", "wss://")):
        url = "ws://" + url
    return url if url.endswith("/ws") else url + "/ws"
