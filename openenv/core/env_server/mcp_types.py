"""MCP tool-environment types (RFC 003), at the published path ``openenv.core.env_server.mcp_types``.

JSON-RPC 2.0 envelopes for ``POST /mcp``, the tool description, and the two MCP actions
(``list_tools``, ``call_tool``) with their observations. Pure pydantic: importing this module
does not import ``fastmcp``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from openenv.core.env_server.types import Action, Observation

__all__ = [
    "RESERVED_TOOL_NAMES",
    "CallToolAction",
    "CallToolObservation",
    "JsonRpcError",
    "JsonRpcErrorCode",
    "JsonRpcRequest",
    "JsonRpcResponse",
    "ListToolsAction",
    "ListToolsObservation",
    "McpMethod",
    "Tool",
    "ToolError",
    "ToolErrorType",
    "WSMCPMessage",
    "WSMCPResponse",
]

RESERVED_TOOL_NAMES: frozenset[str] = frozenset({"reset", "step", "state", "close"})
"""Tool names that would shadow the environment API; an MCP environment may not define them."""


class JsonRpcErrorCode(int, Enum):
    """JSON-RPC 2.0 error codes."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_ERROR = -32000


_DEFAULT_MESSAGES = {
    JsonRpcErrorCode.PARSE_ERROR: "Parse error",
    JsonRpcErrorCode.INVALID_REQUEST: "Invalid Request",
    JsonRpcErrorCode.METHOD_NOT_FOUND: "Method not found",
    JsonRpcErrorCode.INVALID_PARAMS: "Invalid params",
    JsonRpcErrorCode.INTERNAL_ERROR: "Internal error",
    JsonRpcErrorCode.SERVER_ERROR: "Server error",
}


class McpMethod(str, Enum):
    """The MCP methods served on ``/mcp`` (plus the ``openenv/session/*`` extensions)."""

    TOOLS_LIST = "tools/list"
    TOOLS_CALL = "tools/call"
    SESSION_CREATE = "openenv/session/create"
    SESSION_CLOSE = "openenv/session/close"


class JsonRpcError(BaseModel):
    """The ``error`` member of a JSON-RPC response."""

    model_config = ConfigDict(extra="forbid")

    code: int
    message: str
    data: Any = None

    @classmethod
    def from_code(cls, code: JsonRpcErrorCode, message: str | None = None, data: Any = None) -> JsonRpcError:
        return cls(code=int(code), message=message or _DEFAULT_MESSAGES.get(code, "Unknown error"), data=data)


class JsonRpcRequest(BaseModel):
    """A JSON-RPC 2.0 request object."""

    model_config = ConfigDict(extra="forbid")

    jsonrpc: Literal["2.0"]
    method: str
    params: dict[str, Any] = Field(default_factory=dict)
    id: str | int | None = None


class JsonRpcResponse(BaseModel):
    """A JSON-RPC 2.0 response: ``result`` or ``error``, never both."""

    model_config = ConfigDict(extra="forbid")

    jsonrpc: Literal["2.0"] = "2.0"
    result: Any = None
    error: JsonRpcError | None = None
    id: str | int | None = None

    def model_dump(self, **_kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        out: dict[str, Any] = {"jsonrpc": "2.0", "id": self.id}
        if self.error is not None:
            out["error"] = self.error.model_dump()
        else:
            out["result"] = self.result
        return out

    def model_dump_json(self, **_kwargs: Any) -> str:  # type: ignore[override]
        from openenv.core.wire import dumps

        return dumps(self.model_dump()).decode()

    @classmethod
    def success(cls, result: Any, request_id: str | int | None = None) -> JsonRpcResponse:
        return cls(result=result, id=request_id)

    @classmethod
    def error_response(
        cls,
        code: JsonRpcErrorCode,
        message: str | None = None,
        data: Any = None,
        request_id: str | int | None = None,
    ) -> JsonRpcResponse:
        return cls(error=JsonRpcError.from_code(code, message, data), id=request_id)


class Tool(BaseModel):
    """One tool as an MCP environment lists it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)


class ToolErrorType(str, Enum):
    """Why a tool call failed."""

    EXECUTION_ERROR = "execution_error"
    INVALID_ARGS = "invalid_args"
    TRANSPORT_ERROR = "transport_error"
    TOOL_NOT_FOUND = "tool_not_found"
    TIMEOUT = "timeout"


class ToolError(BaseModel):
    """A failed tool call: its category and a one-line message (never a traceback)."""

    model_config = ConfigDict(extra="forbid")

    error_type: ToolErrorType
    message: str


class ListToolsAction(Action):
    """Ask for the environment's tools (no reset needed)."""

    type: Literal["list_tools"] = "list_tools"


class CallToolAction(Action):
    """Call one tool with keyword arguments."""

    type: Literal["call_tool"] = "call_tool"
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ListToolsObservation(Observation):
    """The environment's tools."""

    tools: list[Tool] = Field(default_factory=list)


class CallToolObservation(Observation):
    """A tool call's outcome: ``result`` (content, structured_content, meta, data, is_error) or ``error``."""

    tool_name: str
    result: Any = None
    error: ToolError | None = None


class WSMCPMessage(BaseModel):
    """WebSocket frame carrying a JSON-RPC request: ``{"type": "mcp", "data": {...}}``."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["mcp"] = "mcp"
    data: dict[str, Any]


class WSMCPResponse(BaseModel):
    """WebSocket frame carrying a JSON-RPC response."""

    model_config = ConfigDict(extra="forbid")

    type: str = "mcp"
    data: dict[str, Any]
