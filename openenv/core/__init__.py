"""OpenEnv core: environment types, the server and the clients."""

from openenv.core.client_types import StepResult
from openenv.core.env_client import ClientState, EnvClient
from openenv.core.env_server import (
    Action,
    Environment,
    EnvironmentMetadata,
    HTTPEnvServer,
    Observation,
    State,
    create_app,
)
from openenv.core.errors import (
    ActionValidationError,
    CapacityError,
    ClientStateError,
    ConnectionLostError,
    EnvBusyError,
    EnvExecutionError,
    FactoryError,
    LifecycleError,
    OpenEnvError,
    ProtocolError,
    SessionNotFoundError,
    StepTimeoutError,
)
from openenv.core.generic_client import GenericEnvClient
from openenv.core.sync_client import SyncEnvClient

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
    "FactoryError",
    "GenericEnvClient",
    "HTTPEnvServer",
    "LifecycleError",
    "MCPClientBase",
    "MCPToolClient",
    "Observation",
    "OpenEnvError",
    "ProtocolError",
    "SessionNotFoundError",
    "State",
    "StepResult",
    "StepTimeoutError",
    "SyncEnvClient",
    "create_app",
]


def __getattr__(name: str):
    """``MCPClientBase``/``MCPToolClient`` load on first use (``openenv.core.mcp_client``), as published."""
    if name in ("MCPClientBase", "MCPToolClient"):
        from openenv.core import mcp_client

        return getattr(mcp_client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
