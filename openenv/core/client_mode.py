"""The client's mode, as 0.10 names it: ``simulation`` (reset/step/state) or ``production`` (tools).

``EnvClient(..., mode=None)`` takes ``OPENENV_CLIENT_MODE`` (default ``simulation``); an explicit
``mode`` wins. Both are case-insensitive; anything else is a ``ValueError`` naming the source.
"""

from __future__ import annotations

import os

__all__ = ["CLIENT_MODES", "resolve_client_mode"]

CLIENT_MODES = ("simulation", "production")


def resolve_client_mode(mode: str | None, default: str = "simulation") -> str:
    """The normalised mode from ``mode``, else ``OPENENV_CLIENT_MODE``, else ``default``."""
    raw = mode if mode is not None else os.environ.get("OPENENV_CLIENT_MODE", default)
    value = str(raw).lower()
    if value not in CLIENT_MODES:
        source = "mode" if mode is not None else "the OPENENV_CLIENT_MODE environment variable"
        raise ValueError(
            f"Invalid mode: {value!r} (from {source}). Must be 'simulation' or 'production'; "
            "set it with the mode= argument or OPENENV_CLIENT_MODE."
        )
    return value
