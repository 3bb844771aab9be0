"""Whether the studio can offer the Ray provider: Ray installed, a cluster address set and answering."""

from __future__ import annotations

from dataclasses import dataclass

from openenv.core.containers.runtime import ProviderError
from openenv.core.containers.runtime.ray import RayProvider, ray_unavailable_reason

__all__ = ["RayStatus", "probe_ray"]


@dataclass(frozen=True)
class RayStatus:
    """The Ray cluster as the studio sees it; ``reason`` says why it is not offered."""

    available: bool
    reason: str = ""
    nodes: int = 0


def probe_ray(address: str | None) -> RayStatus:
    """Connect once (this process becomes a Ray driver) and count the living nodes."""
    missing = ray_unavailable_reason()
    if missing:
        return RayStatus(False, reason=missing + ".")
    if not address:
        return RayStatus(False, reason="no Ray cluster address is set (OPENENV_STUDIO_RAY_ADDRESS).")
    try:
        nodes = RayProvider.nodes(address)
    except ProviderError as exc:
        return RayStatus(False, reason=exc.message)
    return RayStatus(True, nodes=len(nodes))
