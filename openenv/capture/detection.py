"""Which wire dialect one model request speaks, from its path, headers and body (0.10's rules).

    detect("/v1/messages", {}, {}) is APIType.ANTHROPIC
    detect("/v1beta/models/m:streamGenerateContent", {}, {}) is APIType.GOOGLE
"""

from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = ["APIType", "detect", "extract_model"]


class APIType(str, Enum):
    ANTHROPIC = "anthropic"
    OPENAI_CHAT = "openai_chat"
    OPENAI_RESPONSES = "openai_responses"
    GOOGLE = "google"


_PATHS = (("/v1/messages", APIType.ANTHROPIC), ("/v1/chat/completions", APIType.OPENAI_CHAT),
          ("/v1/responses", APIType.OPENAI_RESPONSES))


def detect(path: str, headers: dict[str, str], body: dict[str, Any]) -> APIType:
    """The path decides when it names a dialect (Google's method suffix in any case); else an
    ``anthropic-version`` header, a Google ``contents`` body, a Responses ``input`` + ``instructions``
    body; chat completions otherwise."""
    for marker, api in _PATHS:
        if marker in path:
            return api
    if "generatecontent" in path.lower():
        return APIType.GOOGLE
    if any(k.lower() == "anthropic-version" for k in headers):
        return APIType.ANTHROPIC
    if "contents" in body:
        return APIType.GOOGLE
    if "input" in body and "instructions" in body:
        return APIType.OPENAI_RESPONSES
    return APIType.OPENAI_CHAT


def extract_model(api_type: APIType, body: dict[str, Any]) -> str:
    """The model the request names (``gemini-pro`` for a Google body without one, else ``unknown``)."""
    return body.get("model", "gemini-pro" if api_type is APIType.GOOGLE else "unknown")
