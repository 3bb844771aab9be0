"""Google's ``generateContent`` dialect (gemini-cli's): ``POST /v1beta/models/{model}:generateContent``
(and ``:streamGenerateContent``, answered as SSE) as chat-completions for the engine, and the
engine's chat reply as a ``GenerateContentResponse``.

``contents`` turns: ``user`` text parts become a user message and ``functionResponse`` parts tool
messages; ``model`` turns become assistant messages (text, ``functionCall`` parts as tool calls,
``thought`` parts as ``reasoning_content``). ``systemInstruction``, ``generationConfig`` and
``functionDeclarations`` map onto their chat fields. Images are not carried.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .dialect_responses import merge_system

__all__ = ["google_reply", "google_sse", "google_to_chat"]

_ROLES = {"user": "user", "model": "assistant", "system": "system", "developer": "system"}
_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY", "tool_calls": "STOP"}
_CONFIG = (("maxOutputTokens", "max_tokens"), ("temperature", "temperature"), ("topP", "top_p"), ("topK", "top_k"),
           ("stopSequences", "stop"), ("candidateCount", "n"), ("presencePenalty", "presence_penalty"),
           ("frequencyPenalty", "frequency_penalty"), ("seed", "seed"), ("logprobs", "top_logprobs"))


def _texts(parts: Any, *, thoughts: bool | None = False) -> str:
    """The text of ``parts`` joined by newlines: visible text (``thoughts=False``), thoughts only
    (``True``) or both (``None``)."""
    out = []
    for p in parts if isinstance(parts, list) else []:
        if isinstance(p, str):
            out.append(p) if thoughts is not True else None
        elif isinstance(p, dict) and isinstance(p.get("text"), str):
            if thoughts is None or bool(p.get("thought") is True) == thoughts:
                out.append(p["text"])
    return "\n".join(out)


def _turn(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, dict):
        return []
    parts = content.get("parts") or []
    if not isinstance(parts, list):
        raise ValueError("each content's parts must be a list")
    role = _ROLES.get(content.get("role", "user"), "user")
    dicts = [p for p in parts if isinstance(p, dict)]
    if role == "system":
        text = _texts(parts, thoughts=None)
        return [{"role": "system", "content": text}] if text else []
    if role == "assistant":
        calls = [{"id": fc.get("id") or fc.get("call_id") or "", "type": "function",
                  "function": {"name": fc.get("name", ""), "arguments": json.dumps(fc.get("args", {}))}}
                 for fc in (p["functionCall"] for p in dicts if isinstance(p.get("functionCall"), dict))]
        text, reasoning = _texts(parts), _texts(parts, thoughts=True)
        if not (text or calls or reasoning):
            return []
        msg: dict[str, Any] = {"role": "assistant", "content": text}
        if reasoning:
            msg["reasoning_content"] = reasoning
        if calls:
            msg["tool_calls"] = calls
        return [msg]
    out: list[dict[str, Any]] = []
    if any(isinstance(p, str) or isinstance(p.get("text"), str) for p in parts if isinstance(p, (str, dict))):
        out.append({"role": "user", "content": _texts(parts)})
    for fr in (p["functionResponse"] for p in dicts if isinstance(p.get("functionResponse"), dict)):
        out.append({"role": "tool", "tool_call_id": fr.get("id") or fr.get("call_id") or fr.get("name", ""),
                    "content": json.dumps(fr.get("response", {}))})
    return out


def _tools(tools: Any) -> list[dict[str, Any]]:
    out = []
    for tool in tools if isinstance(tools, list) else []:
        decls = tool.get("functionDeclarations") or tool.get("function_declarations") if isinstance(tool, dict) else None
        for d in decls if isinstance(decls, list) else []:
            if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not d["name"]:
                continue
            fn: dict[str, Any] = {"name": d["name"]}
            if isinstance(d.get("description"), str) and d["description"]:
                fn["description"] = d["description"]
            params = d.get("parameters") or d.get("parametersJsonSchema") or d.get("parameters_json_schema")
            fn["parameters"] = params if isinstance(params, dict) else {"type": "object", "properties": {}}
            out.append({"type": "function", "function": fn})
    return out


def _tool_choice(config: Any) -> Any:
    calling = (config.get("functionCallingConfig") or config.get("function_calling_config")) if isinstance(config, dict) else None
    if not isinstance(calling, dict):
        return None
    mode = str(calling.get("mode", "")).upper()
    names = calling.get("allowedFunctionNames") or calling.get("allowed_function_names")
    if mode == "NONE":
        return "none"
    if mode in ("ANY", "VALIDATED"):
        if isinstance(names, list) and len(names) == 1 and isinstance(names[0], str) and names[0]:
            return {"type": "function", "function": {"name": names[0]}}
        return "required"
    return None


def google_to_chat(body: dict[str, Any], model: str | None = None) -> dict[str, Any]:
    """A ``generateContent`` body (``model`` from the path) as a chat request; ``ValueError`` when malformed."""
    config = body.get("config") if isinstance(body.get("config"), dict) else {}
    contents = body.get("contents", [])
    if not isinstance(contents, list):
        raise ValueError("contents must be a list")
    instruction = (body.get("systemInstruction") or body.get("system_instruction") or config.get("systemInstruction")
                   or config.get("system_instruction"))
    if isinstance(instruction, dict):
        instruction = _texts(instruction.get("parts", []), thoughts=None)
    elif isinstance(instruction, list):
        instruction = _texts(instruction, thoughts=None)
    messages = [{"role": "system", "content": instruction}] if isinstance(instruction, str) and instruction else []
    for content in contents:
        messages += _turn(content)
    chat: dict[str, Any] = {"messages": merge_system(messages)}
    if body.get("model") or model:
        chat["model"] = body.get("model") or model
    gen: dict[str, Any] = {}
    for source in (config.get("generationConfig"), body.get("generationConfig")):
        if isinstance(source, dict):
            gen.update(source)
    for src, dst in _CONFIG:
        if src in (gen or config):
            chat[dst] = (gen or config)[src]
    tools = _tools(body.get("tools") or config.get("tools") or [])
    if tools:
        chat["tools"] = tools
        choice = _tool_choice(body.get("toolConfig") or config.get("toolConfig") or {})
        if choice is not None:
            chat["tool_choice"] = choice
    return chat


def _call_part(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    raw = fn.get("arguments")
    if isinstance(raw, str):
        try:
            args: Any = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            args = {"raw": raw.strip()}
    else:
        args = raw if raw is not None else {}
    out: dict[str, Any] = {"name": fn.get("name"), "args": args}
    if call.get("id"):
        out["id"] = str(call["id"])
    return {"functionCall": out}


def google_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A chat reply as a ``GenerateContentResponse`` (candidates, usage, ``functionCalls``)."""
    candidates = []
    for i, choice in enumerate(reply.get("choices") or []):
        message = choice.get("message") or {}
        parts: list[dict[str, Any]] = []
        if isinstance(message.get("reasoning_content"), str) and message["reasoning_content"]:
            parts.append({"thought": True, "text": message["reasoning_content"]})
        if message.get("content"):
            parts.append({"text": message["content"]})
        parts += [_call_part(c) for c in message.get("tool_calls") or []
                  if isinstance(c, dict) and (c.get("function") or {}).get("name")]
        candidates.append({"content": {"parts": parts, "role": "model"}, "index": i, "safetyRatings": [],
                           "finishReason": _FINISH.get(choice.get("finish_reason") or "stop", "STOP")})
    usage = reply.get("usage") or {}
    out: dict[str, Any] = {"candidates": candidates, "usageMetadata": {
        "promptTokenCount": usage.get("prompt_tokens", 0), "candidatesTokenCount": usage.get("completion_tokens", 0),
        "totalTokenCount": usage.get("total_tokens", 0)}}
    calls = [p["functionCall"] for c in candidates for p in c["content"]["parts"] if "functionCall" in p]
    if calls:
        out["functionCalls"] = calls
    return out


def google_sse(response: dict[str, Any]) -> Iterator[bytes]:
    """A ``GenerateContentResponse`` as ``alt=sse`` stream events (the reply is whole: one chunk)."""
    yield f"data: {json.dumps(response, separators=(',', ':'))}\r\n\r\n".encode()
