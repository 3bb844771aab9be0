"""OpenEnv core: environment types, the server and the clients.

The client names import no server code; the server's (``create_app``, ``Environment``...) are
imported on first use, so a training script that only drives environments stays light.
"""

from __future__ import annotations

import importlib
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
    StepInterruptedError,
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
    "StepInterruptedError",
    "StepResult",
    "StepTimeoutError",
    "SyncEnvClient",
    "VectorEnvClient",
    "VectorResult",
    "create_app",
]

_SERVER_NAMES = frozenset(("Action", "Environment", "EnvironmentMetadata", "HTTPEnvServer", "Observation", "State", "create_app"))
_MCP_NAMES = frozenset(("MCPClientBase", "MCPToolClient"))
_LLM_NAMES = frozenset(("AnthropicClient", "LLMClient", "LLMResponse", "OpenAIClient", "ToolCall", "create_llm_client"))


def __getattr__(name: str) -> Any:
    """Server names, the MCP clients and the LLM clients load on first use: a client script imports
    no server code. As in 0.10, every name of ``openenv.core.env_server`` resolves here too
    (``from openenv.core import ServerMode, MCPEnvironment``)."""
    if name in _MCP_NAMES:
        module = importlib.import_module("openenv.core.mcp_client")
    elif name in _LLM_NAMES:
        module = importlib.import_module("openenv.core.llm_client")
    elif name.startswith("_"):
        raise AttributeError(f"module 'openenv.core' has no attribute {name!r}")
    else:
        module = importlib.import_module("openenv.core.env_server")  # cheap: its names load lazily too
    try:
        value = getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'openenv.core' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    server = importlib.import_module("openenv.core.env_server")
    return sorted(set(globals()) | set(__all__) | _LLM_NAMES | set(dir(server)))
