"""Server side: the environment contract, wire types and the HTTP/WebSocket server."""

from openenv.core.env_server.http_server import HTTPEnvServer, create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State

__all__ = [
    "Action",
    "Environment",
    "EnvironmentMetadata",
    "HTTPEnvServer",
    "Observation",
    "State",
    "create_app",
]
