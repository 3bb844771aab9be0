"""Joining a Ray cluster from this process: once, at a given address, loopback clusters included.

Ray is an optional extra (``pip install 'ray[default]'``), imported only when used.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import socket
import sys
import threading
from typing import Any

from .errors import EngineUnavailableError, ProviderError

__all__ = ["connect", "ray_unavailable_reason"]

_NO_ADDRESS = "no Ray cluster address: set the provider's address (host:port of the head's GCS) or RAY_ADDRESS"
_CONNECTING = threading.Lock()  # ray.init is once per process: launches in parallel threads wait here


def ray_unavailable_reason() -> str | None:
    """Why the Ray provider cannot be used here (Ray not installed), or None; imports nothing."""
    if importlib.util.find_spec("ray") is None:
        return "Ray is not installed (pip install 'ray[default]')"
    return None


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise EngineUnavailableError(ray_unavailable_reason() or "Ray is not importable") from None
    return ray


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _keep_loopback() -> None:
    """Let a driver reach a cluster pinned to 127.0.0.1 (all nodes on this machine).

    Ray rewrites a loopback address into the machine's outward address before connecting (so
    that other machines could use it), which misses a cluster bound to loopback. Ray's own switch
    for single-machine clusters (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``) keeps it; this process is
    a driver, never a node, so that switch changes nothing else here.
    """
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] not in ("0", "false")


def connect(address: str | None = None) -> Any:
    """This process's Ray connection to ``address`` (default ``RAY_ADDRESS``), made once.

    Raises:
        EngineUnavailableError: Ray is missing, no address is known, or nothing answers there.
        ProviderError: this process is already connected to another cluster.
    """
    if not (address or os.environ.get("RAY_ADDRESS")) and "ray" not in sys.modules:
        raise EngineUnavailableError(_NO_ADDRESS)  # nowhere to go, and no connection made before
    ray = _ray()
    with _CONNECTING:
        return _connect(ray, address)


def _connect(ray: Any, address: str | None) -> Any:
    if ray.is_initialized():
        current = ray.get_runtime_context().gcs_address
        if address and address not in ("auto", current) and not _same_address(address, current):
            raise ProviderError(f"this process is already connected to the Ray cluster at {current}, "
                                f"not {address}; one process drives one cluster")
        return ray
    address = address or os.environ.get("RAY_ADDRESS")
    if not address or address == "auto":
        raise EngineUnavailableError(_NO_ADDRESS)
    host, port = _split(address)
    try:
        with socket.create_connection((host, port), timeout=3.0):
            pass
    except OSError as exc:
        raise EngineUnavailableError(f"no Ray cluster answers at {address} ({exc.strerror or exc}); "
                                     "is `ray start --head` running there?") from exc
    if _is_loopback(host):
        _keep_loopback()
    try:
        target = address if address.startswith("ray://") else f"{host}:{port}"  # Ray Client, or the GCS
        ray.init(address=target, namespace="openenv", logging_level="WARNING",
                 log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise EngineUnavailableError(f"could not join the Ray cluster at {address}: {exc}") from exc
    return ray


def _split(address: str) -> tuple[str, int]:
    address = address.removeprefix("ray://")
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise EngineUnavailableError(f"a Ray address is host:port, not {address!r}")
    return host.strip("[]"), int(port)


def _same_address(a: str, b: str) -> bool:
    try:
        (ha, pa), (hb, pb) = _split(a), _split(b)
    except EngineUnavailableError:
        return False
    return pa == pb and (ha == hb or (_is_loopback(ha) and _is_loopback(hb)))
