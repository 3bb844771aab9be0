"""OpenEnv core: environment types, the server and the clients.

The client names import no server code; the server's (``create_app``, ``Environment``...) are
imported on first use, so a training script that only drives environments stays light.
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import ClientState, EnvClient
from openenv.core.errors import (
    ActionValidationError,
    CapacityError,
    ClientStateError,
    ConnectionLostError,
    EnvBusyError,
    EnvExecutionError,
    EpisodeLostError,
    FactoryError,
    LifecycleError,
    OpenEnvError,
    ProtocolError,
    ReconnectFailedError,
    SessionNotFoundError,
    StepTimeoutError,
)
from openenv.core.generic_client import GenericAction, GenericEnvClient
from openenv.core.sync_client import SyncEnvClient
from openenv.core.vector_client import VectorEnvClient, VectorResult

__all__ = [
    "Action",
    "ActionValidationError",
    "CapacityError",
    "ClientState",
    "ClientStateError",
    "ConnectionLostError",
    "EnvBusyError",
    "EnvClient",
    "EnvExecutionError",
    "Environment",
    "EnvironmentMetadata",
    "EpisodeLostError",
    "FactoryError",
    "GenericAction",
    "GenericEnvClient",
    "HTTPEnvServer",
    "LifecycleError",
    "MCPClientBase",
    "MCPToolClient",
    "Observation",
    "OpenEnvError",
    "ProtocolError",
    "ReconnectFailedError",
    "SessionNotFoundError",
    "State",
    "StepResult",
    "StepTimeoutError",
    "SyncEnvClient",
    "VectorEnvClient",
    "VectorResult",
    "create_app",
]

_SERVER_NAMES = frozenset(("Action", "Environment", "EnvironmentMetadata", "HTTPEnvServer", "Observation", "State", "create_app"))
_MCP_NAMES = frozenset(("MCPClientBase", "MCPToolClient"))


def __getattr__(name: str) -> Any:
    """Server names and the MCP clients load on first use: a client script imports no server code."""
    if name in _SERVER_NAMES:
        from openenv.core import env_server as module
    elif name in _MCP_NAMES:
        from openenv.core import mcp_client as module
    else:
        raise AttributeError(f"module 'openenv.core' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value
