"""What one harness turn produces (RFC 005): events, the turn's response, the ``/harness`` client frame."""

from __future__ import annotations

import time
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "HarnessClientMessage",
    "HarnessEvent",
    "HarnessEventType",
    "HarnessProtocolError",
    "HarnessResponse",
    "events_to_metadata",
]


class HarnessEventType(str, Enum):
    """Kinds of event a harness reports while it handles a turn."""

    LLM_REQUEST = "llm_request"
    LLM_RESPONSE = "llm_response"
    LLM_CHUNK = "llm_chunk"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    TEXT_OUTPUT = "text_output"
    ERROR = "error"
    TURN_COMPLETE = "turn_complete"


class HarnessEvent(BaseModel):
    """One event of a turn, in a harness-independent shape.

    ``data`` by type: ``llm_request`` messages/model; ``llm_response`` content/usage; ``llm_chunk``
    content/index; ``tool_call`` tool_name/arguments; ``tool_result`` tool_name/result/error;
    ``text_output`` text; ``error`` message/recoverable; ``turn_complete`` response (and done).
    """

    type: HarnessEventType
    timestamp: float = Field(default_factory=time.time)
    data: dict[str, Any] = Field(default_factory=dict)


class HarnessResponse(BaseModel):
    """A finished turn: the harness's text ``response``, every event, and whether it is ``done``."""

    response: str
    events: list[HarnessEvent] = Field(default_factory=list)
    done: bool = False


class HarnessClientMessage(BaseModel):
    """A client frame on the production ``/harness`` WebSocket: ``{"type": "message", "content": ...}``."""

    type: Literal["message"]
    content: str


class HarnessProtocolError(BaseModel):
    """A rejected ``/harness`` client frame (no turn started; the client may retry): ``data`` has
    ``message`` and ``code``."""

    type: Literal["protocol_error"] = "protocol_error"
    data: dict[str, Any]


def events_to_metadata(events: list[HarnessEvent]) -> list[dict[str, Any]]:
    """The events as JSON-ready dicts, for an observation's ``metadata`` (they survive the wire)."""
    return [event.model_dump(mode="json") for event in events]
