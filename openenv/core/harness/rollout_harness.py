"""Harness drivers for whole-episode rollouts, and a session exposed as in-process MCP JSON-RPC.

``MCPHarnessAdapter`` is the white-box loop: the trainer samples each turn (``ModelStep``), the
adapter runs the tool calls against the session until the model stops calling tools, a tool result
says ``done``, or a limit is hit. ``CLIHarnessAdapter`` hands an opaque (black-box) runner a
``SessionMCPBridge`` over the session. Reserved orchestration names never reach the session.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcResponse

from .rollout_sessions import ResourceSession, _serialize_for_message
from .rollout_types import (
    RESERVED_TOOL_NAMES,
    HarnessRolloutResult,
    HarnessRunLimits,
    ModelStep,
    RolloutEvent,
    ToolTraceEntry,
)

__all__ = ["CLIHarnessAdapter", "HarnessAdapter", "MCPHarnessAdapter", "SessionMCPBridge"]


class HarnessAdapter(ABC):
    """A harness driver: white-box (the trainer samples) or black-box (the harness does)."""

    @abstractmethod
    def run_white_box(self, model_step: ModelStep, session: ResourceSession,
                      limits: HarnessRunLimits | None = None) -> HarnessRolloutResult:  # fmt: skip
        """One rollout in which ``model_step`` samples every model turn."""

    @abstractmethod
    def run_black_box(self, session: ResourceSession, limits: HarnessRunLimits | None = None) -> HarnessRolloutResult:
        """One rollout by an opaque harness (evaluation only)."""


def _error(code: JsonRpcErrorCode, message: str, request_id: Any) -> dict[str, Any]:
    return JsonRpcResponse.error_response(code, message=message, request_id=request_id).model_dump()


class SessionMCPBridge:
    """Answers MCP ``tools/list`` and ``tools/call`` JSON-RPC requests from a resource session."""

    def __init__(self, session: ResourceSession) -> None:
        self.session = session

    def handle_request(self, request: dict[str, Any]) -> dict[str, Any]:
        """One JSON-RPC 2.0 request -> its response dict (errors as JSON-RPC errors, never raised)."""
        rid = request.get("id")
        if request.get("jsonrpc") != "2.0":
            return _error(JsonRpcErrorCode.INVALID_REQUEST, "Invalid Request", rid)
        method = request.get("method")
        params = request.get("params", {}) or {}
        if method == "tools/list":
            tools = [{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                     for t in self.session.list_tools()]  # fmt: skip
            return JsonRpcResponse.success({"tools": tools}, request_id=rid).model_dump()
        if method != "tools/call":
            return _error(JsonRpcErrorCode.METHOD_NOT_FOUND, "Method not found", rid)
        if "name" not in params:
            return _error(JsonRpcErrorCode.INVALID_PARAMS, "Missing tool name", rid)
        name = params["name"]
        if name in RESERVED_TOOL_NAMES:
            return _error(JsonRpcErrorCode.INVALID_PARAMS, f"Reserved orchestration tool: {name}", rid)
        try:
            result = self.session.call_tool(name, dict(params.get("arguments", {})))
        except KeyError as exc:
            return _error(JsonRpcErrorCode.METHOD_NOT_FOUND, str(exc.args[0]) if exc.args else "Method not found", rid)
        except ValueError as exc:
            return _error(JsonRpcErrorCode.INVALID_PARAMS, str(exc), rid)
        except Exception as exc:  # a tool's own failure is the caller's answer, not our crash
            return _error(JsonRpcErrorCode.INTERNAL_ERROR, str(exc), rid)
        body = {"data": result.data, "done": result.done, "metadata": dict(result.metadata), "error": result.error}
        return JsonRpcResponse.success(body, request_id=rid).model_dump()


def _model_event(turn: int, response: Any) -> RolloutEvent:
    calls = [{"id": c.id, "name": c.name, "arguments": dict(c.args)} for c in response.tool_calls]
    return RolloutEvent(type="model_response", payload={"turn": turn, "content": response.content, "tool_calls": calls})


class MCPHarnessAdapter(HarnessAdapter):
    """The white-box MCP tool-calling loop (see the module docstring)."""

    def run_white_box(self, model_step: ModelStep, session: ResourceSession,
                      limits: HarnessRunLimits | None = None) -> HarnessRolloutResult:  # fmt: skip
        lim = limits or HarnessRunLimits()
        messages = list(session.initial_messages())
        tools = session.list_tools()
        out = HarnessRolloutResult(messages=list(messages))
        calls_made = 0
        for turn in range(lim.max_turns):
            step = model_step(messages, tools, dict(lim.sampling))
            messages.append(step.response.to_message_dict())
            out.prompt_ids.extend(step.prompt_ids)
            out.completion_ids.extend(step.completion_ids)
            out.logprobs.extend(step.logprobs)
            out.events.append(_model_event(turn, step.response))
            if not step.response.tool_calls:
                out.done = True
                break
            wanted = step.response.tool_calls
            if lim.max_tool_calls_per_turn is not None:
                wanted = wanted[: lim.max_tool_calls_per_turn]
            for call in wanted:
                if lim.max_total_tool_calls is not None and calls_made >= lim.max_total_tool_calls:
                    out.metrics["truncated"] = True
                    out.messages = list(messages)
                    return out
                result = session.call_tool(call.name, dict(call.args))
                calls_made += 1
                out.tool_trace.append(ToolTraceEntry(tool_name=call.name, arguments=dict(call.args), result=result))
                out.events.append(RolloutEvent(type="tool_call", payload={
                    "tool_name": call.name, "arguments": dict(call.args), "done": result.done}))  # fmt: skip
                messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                                 "content": _serialize_for_message(result.data)})  # fmt: skip
                if result.done:
                    out.done = True
                    break
            if out.done:
                break
        out.messages = list(messages)
        out.metrics.setdefault("turns", sum(e.type == "model_response" for e in out.events))
        out.metrics.setdefault("tool_calls", len(out.tool_trace))
        return out

    def run_black_box(self, session: ResourceSession, limits: HarnessRunLimits | None = None) -> HarnessRolloutResult:
        raise NotImplementedError(
            "MCPHarnessAdapter is a white-box harness. Use CLIHarnessAdapter for opaque evaluation harnesses."
        )


Runner = Callable[[SessionMCPBridge, ResourceSession, HarnessRunLimits], HarnessRolloutResult]


class CLIHarnessAdapter(HarnessAdapter):
    """A black-box adapter: ``runner(bridge, session, limits)`` drives the whole rollout."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner

    def run_white_box(self, model_step: ModelStep, session: ResourceSession,
                      limits: HarnessRunLimits | None = None) -> HarnessRolloutResult:  # fmt: skip
        raise NotImplementedError("CLIHarnessAdapter only supports black-box evaluation rollouts.")

    def run_black_box(self, session: ResourceSession, limits: HarnessRunLimits | None = None) -> HarnessRolloutResult:
        return self._runner(SessionMCPBridge(session), session, limits or HarnessRunLimits())
