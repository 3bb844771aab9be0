"""The studio's services, built by the lifespan and reached from a request."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from openenv.recording import EpisodeStore
from webui.studio.catalogue import Catalogue, DockerStatus
from webui.studio.launcher import Launcher
from webui.studio.play import PlaySessions
from webui.studio.reruns import Reruns
from webui.studio.settings import StudioSettings

__all__ = ["Studio", "studio_of"]


@dataclass
class Studio:
    settings: StudioSettings
    store: EpisodeStore
    catalogue: Catalogue
    launcher: Launcher
    plays: PlaySessions
    reruns: Reruns

    def providers(self, docker: DockerStatus) -> tuple[str, ...]:
        """Provider kinds usable right now."""
        kinds = ["process"]
        if docker.available:
            kinds.append("docker")
            if docker.swarm:
                kinds.append("swarm")
        if docker.ray.available:
            kinds.append("ray")
        return tuple(kinds)


def studio_of(request: Request) -> Studio:
    return request.app.state.studio
