"""A tokenizer-free token estimate for ``count_tokens`` side requests (about 4 characters a token).

Tokenization stays on the engine: this figure is for an agent's context budgeting only, never for
anything that reaches training. It reads chat/Anthropic ``messages`` and ``system``, Google
``contents``/``systemInstruction`` and every dialect's ``tools``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["approximate_token_count"]


def _parts_text(parts: Any, *keys: str) -> int:
    total = 0
    for part in parts or []:
        if isinstance(part, dict):
            total += len(str(next((part[k] for k in keys if part.get(k)), "")))
        elif isinstance(part, str):
            total += len(part)
    return total


def _text_length(body: dict[str, Any]) -> int:
    n = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            n += len(content)
        elif isinstance(content, list):
            n += _parts_text([p for p in content if isinstance(p, dict)], "text", "content")
    system = body.get("system")
    n += len(system) if isinstance(system, str) else _parts_text(
        [p for p in system if isinstance(p, dict)] if isinstance(system, list) else [], "text")
    for content in body.get("contents") or []:
        if isinstance(content, dict):
            n += _parts_text(content.get("parts"), "text")
    instruction = body.get("systemInstruction") or body.get("system_instruction")
    if isinstance(instruction, dict):
        n += _parts_text([p for p in instruction.get("parts") or [] if isinstance(p, dict)], "text")
    elif isinstance(instruction, str):
        n += len(instruction)
    return n + len(str(body.get("tools") or ""))


def approximate_token_count(body: dict[str, Any]) -> int:
    """About one token per 4 characters of the request's text and tools; at least 1."""
    return max(1, _text_length(body) // 4)
