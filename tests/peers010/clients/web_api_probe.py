"""0.10's JSON web API (``/web/reset``, ``/web/step``, ``/web/state``, ``/web/metadata``) as a script
would drive it: one JSON line. Run as a module (``-m web_api_probe``: 0.10 mounts Gradio, which
needs ``__main__.__spec__``) under ours or the published 0.10."""

import json

from fastapi.testclient import TestClient

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State
from openenv.core.env_server.web_interface import create_web_interface_app


class NoKwargAction(Action):
    message: str = "noop"


class NoKwargObservation(Observation):
    response: str


class NoKwargState(State):
    last_reset_marker: str = "default"


class NoKwargEnvironment(Environment):
    def __init__(self):
        super().__init__()
        self._state = NoKwargState()

    def reset(self):
        self._state = NoKwargState(step_count=0)
        return NoKwargObservation(response="reset")

    def step(self, action):
        self._state.step_count += 1
        return NoKwargObservation(response=action.message, reward=0.0)

    @property
    def state(self):
        return self._state


class ToolEnvironment(Environment):
    def reset(self):
        return CallToolObservation(tool_name="init", result="ready")

    def step(self, action):
        return CallToolObservation(
            tool_name=action.tool_name,
            result={"echoed": action.arguments, "is_dict": isinstance(action.arguments, dict)},
        )

    @property
    def state(self):
        return State()


out = []
client = TestClient(create_web_interface_app(NoKwargEnvironment, NoKwargAction, NoKwargObservation))
reply = client.post("/web/reset")
out.append([reply.status_code, reply.json()["observation"]["response"]])
reply = client.post("/web/reset", json={"unused": "value"})
out.append([reply.status_code, reply.json()["observation"]["response"]])
reply = client.post("/web/step", json={"action": {"message": "hi"}})
out.append([reply.status_code, reply.json()["observation"]["response"], reply.json()["reward"]])
reply = client.get("/web/state")
out.append([reply.status_code, reply.json()["last_reset_marker"], reply.json()["step_count"]])
reply = client.get("/web/metadata")
out.append([reply.status_code, reply.json()["name"]])
tools = TestClient(create_web_interface_app(ToolEnvironment, CallToolAction, CallToolObservation))
out.append(tools.post("/web/reset").status_code)
reply = tools.post(
    "/web/step",
    json={"action": {"type": "call_tool", "tool_name": "echo", "arguments": '{"message": "hello"}'}},
)
out.append([reply.status_code, reply.json()["observation"]["result"]])
print(json.dumps(out))
