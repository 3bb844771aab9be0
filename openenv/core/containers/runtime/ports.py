"""Loopback ports: pick a free one, or check that a requested one is free."""

from __future__ import annotations

import socket

from .errors import PortInUseError

__all__ = ["HOST", "ensure_port_free", "free_port"]

HOST = "127.0.0.1"


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def ensure_port_free(port: int) -> int:
    """Return ``port`` if it can be bound on 127.0.0.1, else raise ``PortInUseError``."""
    if not 0 < port < 65536:
        raise PortInUseError(f"port {port} is not a valid TCP port", port=port)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            raise PortInUseError(f"port {port} on {HOST} is already in use", port=port) from exc
    return port
