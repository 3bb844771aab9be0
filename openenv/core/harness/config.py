"""How to launch an external agentic harness (RFC 005): :class:`HarnessConfig`, :class:`HarnessTransport`."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["HarnessConfig", "HarnessTransport"]


class HarnessTransport(str, Enum):
    """The interface a harness offers its adapter: line-based stdio, streamable HTTP or MCP."""

    STDIO = "stdio"
    STREAMABLE_HTTP = "http"
    MCP = "mcp"


class HarnessConfig(BaseModel):
    """Launch description of one harness process (e.g. ``opencode``, ``claude``), read by its adapter.

    Args:
        name: the harness's identity (``"openclaw"``, ``"claude-code"``...).
        command: argv that starts it; must not be empty.
        working_directory: where it works (default ``/workspace``).
        env_vars: extra environment variables for the process.
        transport: how it talks to the adapter (default stdio).
        mcp_config_path: where the adapter writes the MCP config the harness reads; ``None``:
            the adapter's own default.
        startup_timeout_s: how long the harness may take to become ready (30 s).
        session_timeout_s: wall-clock budget of ONE turn (one ``step``), not of the episode (600 s).
        model: the LLM the harness should use instead of its default.
        api_key_env_var: name of the variable holding the LLM API key.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    command: list[str]
    working_directory: str = "/workspace"
    env_vars: dict[str, str] = Field(default_factory=dict)
    transport: HarnessTransport = HarnessTransport.STDIO
    mcp_config_path: str | None = None
    startup_timeout_s: float = 30.0
    session_timeout_s: float = 600.0
    model: str | None = None
    api_key_env_var: str | None = None

    @field_validator("command")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if len(value) == 0:
            raise ValueError("command must contain at least one element")
        return value
