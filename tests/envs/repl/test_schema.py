"""The REPL declares its code and text fields through the schema (the team's format hints), never by name."""

from __future__ import annotations

import httpx

from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.envs.repl.environment import REPLEnvironment
from openenv.envs.repl.models import REPLAction, REPLObservation


def test_served_schema_marks_code_and_multiline_output(repl_url: str) -> None:
    schema = httpx.get(f"{repl_url}/schema", timeout=10).json()
    code = schema["action"]["properties"]["code"]
    assert code["type"] == "string" and code["format"] == "code" and code["contentMediaType"] == "text/x-python"
    assert schema["action"]["properties"]["final_answer"]["format"] == "multiline"
    block = schema["observation"]["$defs"]["CodeBlockResult"]["properties"]
    assert block["stdout"]["format"] == "multiline" and block["stderr"]["format"] == "multiline"
    assert "format" not in block["exception"]  # only what is multi-line text says so


def test_reset_form_marks_context_and_task_prompt_multiline() -> None:
    server = HTTPEnvServer(REPLEnvironment, REPLAction, REPLObservation)
    props = server.reset_params_schema()["properties"]
    assert props["context"]["format"] == "multiline" and props["task_prompt"]["format"] == "multiline"
    assert {"type": "string"} in props["context"]["anyOf"] and "format" not in props["expected_answer"]
