"""Errors name what is wrong: the fields of an invalid action, the Action class a typed client wants."""

from __future__ import annotations

import httpx
import pytest

from openenv.core.errors import ActionValidationError
from openenv.envs.echo.client import EchoEnv
from openenv.envs.echo.models import EchoAction


def test_http_step_names_the_invalid_fields(echo_url: str) -> None:
    httpx.post(f"{echo_url}/reset", json={}, timeout=10)
    reply = httpx.post(f"{echo_url}/step", json={"action": {"nope": 1}}, timeout=10)
    assert reply.status_code == 422
    text = reply.text
    assert "message" in text and "validation error(s): " in text


def test_ws_step_error_names_the_field(echo_url: str) -> None:
    from openenv.core.generic_client import GenericEnvClient

    with GenericEnvClient(base_url=echo_url) as env:
        env.reset()
        with pytest.raises(ActionValidationError) as info:
            env.step({"message": 3, "extra_thing": 1})
    text = str(info.value)
    assert "validation error(s): " in text
    assert "message:" in text or "extra_thing:" in text


def test_typed_echo_client_with_a_dict_names_the_action_class(echo_url: str) -> None:
    with EchoEnv(base_url=echo_url) as env:
        env.reset()
        with pytest.raises(TypeError, match=r"EchoEnv\.step\(\) expects a .*EchoAction, got dict"):
            env.step({"message": "hi"})
        assert env.step(EchoAction(message="hi")).observation.echoed_message == "hi"


def test_a_client_that_takes_dicts_still_may() -> None:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient

    class DictFriendly(EnvClient[EchoAction, object, object]):
        def _step_payload(self, action):  # noqa: ANN001
            return {"message": action["message"]} if isinstance(action, dict) else {"message": action.message}

        def _parse_result(self, payload):  # noqa: ANN001
            return StepResult(observation=payload, reward=None, done=False)

        def _parse_state(self, payload):  # noqa: ANN001
            return payload

    client = DictFriendly("http://127.0.0.1:9")
    assert client._step_payload({"message": "a"}) == {"message": "a"}
    with pytest.raises(TypeError, match="expects a .*EchoAction, got int"):
        client._step_payload(5)
