"""Server side: the environment contract, wire types and the HTTP/WebSocket server.

Names are loaded on first use (PEP 562), so ``import openenv.core.env_server`` stays cheap;
the published 0.10 names resolve here too (MCP ones once the MCP modules exist).
"""

from __future__ import annotations

import importlib
from typing import Any

_PKG = "openenv.core.env_server"
_WHERE = {
    "Action": "types",
    "BaseMessage": "types",
    "CodeExecResult": "types",
    "CompositeTransform": "base_transforms",
    "ConcurrencyConfig": "types",
    "ConcurrencyConfigurationError": "exceptions",
    "Environment": "interfaces",
    "EnvironmentFactoryError": "exceptions",
    "EnvironmentMetadata": "types",
    "GetEndpointConfig": "route_config",
    "GetTaskRangeRequest": "types",
    "GetTaskRequest": "types",
    "HTTPEnvServer": "http_server",
    "HealthResponse": "types",
    "HealthStatus": "types",
    "ListTasksRequest": "types",
    "Message": "interfaces",
    "ModelTokenizer": "interfaces",
    "NullTransform": "base_transforms",
    "NumTasksRequest": "types",
    "Observation": "types",
    "OpenEnvError": "exceptions",
    "SchemaResponse": "types",
    "ServerCapacityStatus": "types",
    "ServerMode": "types",
    "SessionCapacityError": "exceptions",
    "SessionCreationError": "exceptions",
    "SessionInfo": "types",
    "SessionNotFoundError": "exceptions",
    "State": "types",
    "TaskProvider": "interfaces",
    "Transform": "interfaces",
    "WSCloseMessage": "types",
    "WSErrorCode": "types",
    "WSErrorResponse": "types",
    "WSIncomingMessage": "types",
    "WSObservationResponse": "types",
    "WSResetMessage": "types",
    "WSStateMessage": "types",
    "WSStateResponse": "types",
    "WSStepMessage": "types",
    "WebInterfaceManager": "web_interface",
    "create_app": "http_server",
    "create_fastapi_app": "http_server",
    "create_web_interface_app": "web_interface",
    "deserialize_action": "serialization",
    "deserialize_action_with_preprocessing": "serialization",
    "serialize_observation": "serialization",
}
# Served by the MCP modules (RFC 003) when present; resolving one before then raises AttributeError.
_MCP = {
    "CallToolAction": "mcp_types",
    "CallToolObservation": "mcp_types",
    "JsonRpcError": "mcp_types",
    "JsonRpcErrorCode": "mcp_types",
    "JsonRpcRequest": "mcp_types",
    "JsonRpcResponse": "mcp_types",
    "ListToolsAction": "mcp_types",
    "ListToolsObservation": "mcp_types",
    "MCPEnvironment": "mcp_environment",
    "McpMethod": "mcp_types",
    "RESERVED_TOOL_NAMES": "mcp_types",
    "Tool": "mcp_types",
    "ToolError": "mcp_types",
    "ToolErrorType": "mcp_types",
    "WSMCPMessage": "mcp_types",
    "WSMCPResponse": "mcp_types",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name) or _MCP.get(name)
    if module is None:
        raise AttributeError(f"module {_PKG!r} has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(f"{_PKG}.{module}"), name)
    except ModuleNotFoundError as exc:
        if name in _MCP and exc.name == f"{_PKG}.{module}":
            raise AttributeError(f"{name} needs {_PKG}.{module} (MCP support), not installed") from None
        raise
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
