"""MCP-style environments (plain ``Environment`` taking ``CallToolAction``): a ``step_async`` set on the
instance is the one served, and ``/mcp`` reports a step that returns the wrong observation class.
One JSON line per request. Run under ours or the published 0.10."""

import functools
import json

from fastapi.testclient import TestClient

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
)
from openenv.core.env_server.types import Observation, State


class Plain(Observation):
    message: str = ""


class InstanceAsync(Environment):
    def __init__(self):
        async def step_async(action, **kwargs):
            if isinstance(action, ListToolsAction):
                return ListToolsObservation(tools=[])
            return CallToolObservation(tool_name=action.tool_name, result={"ok": True})

        self.step_async = functools.partial(step_async)

    def reset(self, **kwargs):
        return Plain(message="ready")

    def step(self, action, **kwargs):
        return CallToolObservation(tool_name=getattr(action, "tool_name", "?"), result={"sync": True})

    @property
    def state(self):
        return State()


class WrongType(Environment):
    def reset(self, **kwargs):
        return Plain(message="ready")

    def step(self, action, **kwargs):
        return Plain(message=f"wrong:{type(action).__name__}")

    @property
    def state(self):
        return State()


def rpc(client, method, params):
    body = client.post("/mcp", json={"jsonrpc": "2.0", "method": method, "params": params, "id": 1}).json()
    return body.get("result", {"error": body.get("error", {}).get("message")})


ok = TestClient(create_app(InstanceAsync, CallToolAction, CallToolObservation, env_name="partial"))
print(json.dumps({"step": ok.post("/step", json={"action": {"tool_name": "t", "arguments": {}}}).json()["observation"]["result"]}))
print(json.dumps({"list": rpc(ok, "tools/list", {})}))
print(json.dumps({"call": rpc(ok, "tools/call", {"name": "t", "arguments": {}}).get("result")}))
wrong = TestClient(create_app(WrongType, CallToolAction, CallToolObservation, env_name="wrong"))
print(json.dumps({"wrong_list": rpc(wrong, "tools/list", {})}))
print(json.dumps({"wrong_call": rpc(wrong, "tools/call", {"name": "t", "arguments": {}})}))
