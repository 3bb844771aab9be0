"""The OpenAI Responses dialect (``POST /v1/responses``, codex's): a request's ``instructions``
and ``input`` items as chat messages for the engine, and the engine's chat reply as a Responses
object or its SSE event stream.

Input items: ``message`` (text parts joined by newlines), ``function_call`` (consecutive calls
become one assistant message with ``tool_calls``), ``function_call_output`` (a ``tool`` message),
``reasoning`` (the next assistant message's ``reasoning_content``), bare ``input_text`` parts (a
user message). Function tools are passed on; built-in tools (web search, local shell) are not
served here and are dropped. Images are not carried.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

__all__ = ["merge_system", "responses_reply", "responses_sse", "responses_to_chat"]

_TEXT_PARTS = ("input_text", "output_text", "text")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str(content) if content else ""
    parts = [b if isinstance(b, str) else b.get("text") for b in content
             if isinstance(b, str) or (isinstance(b, dict) and b.get("type") in _TEXT_PARTS)]
    return "\n".join(p for p in parts if isinstance(p, str))


def _output_text(output: Any) -> str:
    if isinstance(output, dict):
        for key in ("output", "body", "content"):
            if key in output:
                return _output_text(output[key])
        return json.dumps(output)
    if isinstance(output, list):
        return _text(output)
    return output if isinstance(output, str) else ("" if output is None else str(output))


class _Messages:
    """Builds the chat messages, holding function calls, their outputs and reasoning until the
    item that closes them."""

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.outputs: list[dict[str, Any]] = []
        self.parts: list[Any] = []
        self.reasoning = ""

    def flush_parts(self) -> None:
        if self.parts and _text(self.parts):
            self.out.append({"role": "user", "content": _text(self.parts)})
        self.parts = []

    def flush_tools(self) -> None:
        if self.calls:
            msg: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": self.calls}
            if self.reasoning:
                msg["reasoning_content"], self.reasoning = self.reasoning, ""
            self.out.append(msg)
        self.out.extend(self.outputs)
        self.calls, self.outputs = [], []

    def add(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "reasoning":
            if self.outputs:
                self.flush_tools()
            texts = [p.get("text", "") for p in (item.get("summary") or []) + (item.get("content") or [])
                     if isinstance(p, dict)]
            text = next((t for t in texts if t), "")
            if text:
                self.reasoning = f"{self.reasoning}\n{text}" if self.reasoning else text
        elif kind in ("input_text", "input_image"):
            if self.calls or self.outputs:
                self.flush_tools()
            self.parts.append(item)
        elif kind == "function_call":
            self.flush_parts()
            if self.outputs:
                self.flush_tools()
            self.calls.append({"id": item.get("call_id") or f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                               "function": {"name": item.get("name", ""), "arguments": item.get("arguments", "{}")}})
        elif kind == "function_call_output":
            self.flush_parts()
            self.outputs.append({"role": "tool", "tool_call_id": item.get("call_id", ""),
                                 "content": _output_text(item.get("output", ""))})
        elif kind == "message" or (kind is None and "role" in item):
            self.flush_parts()
            if self.calls or self.outputs:
                self.flush_tools()
            role = item.get("role", "user")
            msg = {"role": "system" if role == "developer" else role, "content": _text(item.get("content", ""))}
            if role == "assistant" and self.reasoning:
                msg["reasoning_content"], self.reasoning = self.reasoning, ""
            self.out.append(msg)
        else:
            raise ValueError(f"Responses input items of type {kind!r} are not served here")

    def done(self) -> list[dict[str, Any]]:
        self.flush_parts()
        self.flush_tools()
        if self.reasoning:
            self.out.append({"role": "assistant", "content": None, "reasoning_content": self.reasoning})
        return self.out


def merge_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every system message's text joined into one system message at the top (as 0.10 sends it)."""
    system = [m["content"] for m in messages if m.get("role") == "system" and m.get("content")]
    rest = [m for m in messages if m.get("role") != "system"]
    return ([{"role": "system", "content": "\n\n".join(system)}] if system else []) + rest


def _tools(tools: Any) -> list[dict[str, Any]]:
    if not isinstance(tools, list) or any(not isinstance(t, dict) for t in tools):
        raise ValueError("Responses tools must be an array of objects")
    out = []
    for t in tools:
        if t.get("type") == "function" and isinstance(t.get("function"), dict):
            out.append({"type": "function", "function": t["function"]})
        elif t.get("type", "function") == "function" and t.get("name"):
            fn = {"name": t["name"], "description": t.get("description", ""), "parameters": t.get("parameters") or {}}
            if "strict" in t:
                fn["strict"] = t["strict"]
            out.append({"type": "function", "function": fn})
    return out


def responses_to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses request as a chat-completions request (``ValueError`` when malformed)."""
    messages = [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
    data = body.get("input", "")
    if isinstance(data, str):
        messages.append({"role": "user", "content": data})
    elif isinstance(data, list) and all(isinstance(i, dict) for i in data):
        builder = _Messages()
        for item in data:
            builder.add(item)
        messages += builder.done()
    else:
        raise ValueError("Responses input must be a string or an array of objects")
    chat: dict[str, Any] = {"messages": merge_system(messages)}
    if "model" in body:
        chat["model"] = body["model"]
    for src, dst in (("max_tokens", "max_tokens"), ("max_output_tokens", "max_tokens"), ("temperature", "temperature"),
                     ("top_p", "top_p"), ("top_logprobs", "top_logprobs"), ("parallel_tool_calls", "parallel_tool_calls")):
        if src in body:
            chat[dst] = body[src]
    tools = _tools(body.get("tools", []))
    if tools:
        chat["tools"] = tools
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") == "function" and choice.get("name"):
            chat["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
        elif choice is not None:
            chat["tool_choice"] = choice
    return chat


def responses_reply(reply: dict[str, Any], model: str | None) -> dict[str, Any]:
    """A chat-completions reply as a Responses object (reasoning, message, function calls)."""
    choice = (reply.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    items: list[dict[str, Any]] = []
    if isinstance(message.get("reasoning_content"), str) and message["reasoning_content"]:
        text = message["reasoning_content"]
        items.append({"type": "reasoning", "id": f"rs_{uuid.uuid4().hex[:24]}", "status": "completed",
                      "summary": [{"type": "summary_text", "text": text}],
                      "content": [{"type": "reasoning_text", "text": text}]})
    if message.get("content"):
        items.append({"type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}", "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": message["content"], "annotations": []}]})
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        items.append({"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:24]}", "call_id": call.get("id", ""),
                      "name": fn.get("name", ""), "arguments": fn.get("arguments") or "{}", "status": "completed"})
    usage = reply.get("usage") or {}
    return {"id": f"resp_{uuid.uuid4().hex}", "object": "response", "created_at": reply.get("created") or int(time.time()),
            "status": "completed", "model": model or reply.get("model"), "output": items,
            "usage": {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0),
                      "total_tokens": usage.get("total_tokens", 0)}}


def responses_sse(response: dict[str, Any]) -> Iterator[bytes]:
    """A Responses object as its event stream (``response.created`` … ``response.completed``)."""
    seq = 0

    def event(kind: str, **data: Any) -> bytes:
        nonlocal seq
        seq += 1
        return f"event: {kind}\ndata: {json.dumps({'type': kind, 'sequence_number': seq, **data})}\n\n".encode()

    yield event("response.created", response={**response, "status": "in_progress", "output": []})
    yield event("response.in_progress", response={**response, "status": "in_progress", "output": []})
    for i, item in enumerate(response["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield event("response.output_item.added", output_index=i, item={**item, "status": "in_progress", "content": []})
            yield event("response.content_part.added", item_id=item["id"], output_index=i, content_index=0,
                        part={"type": "output_text", "text": "", "annotations": []})
            yield event("response.output_text.delta", item_id=item["id"], output_index=i, content_index=0, delta=text)
            yield event("response.output_text.done", item_id=item["id"], output_index=i, content_index=0, text=text)
            yield event("response.content_part.done", item_id=item["id"], output_index=i, content_index=0,
                        part=item["content"][0])
        elif item["type"] == "function_call":
            yield event("response.output_item.added", output_index=i, item={**item, "status": "in_progress", "arguments": ""})
            yield event("response.function_call_arguments.delta", item_id=item["id"], output_index=i,
                        delta=item["arguments"])
            yield event("response.function_call_arguments.done", item_id=item["id"], output_index=i,
                        arguments=item["arguments"])
        else:
            yield event("response.output_item.added", output_index=i, item=item)
        yield event("response.output_item.done", output_index=i, item=item)
    yield event("response.completed", response=response)
