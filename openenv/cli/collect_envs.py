"""What ``openenv collect`` plays: env specs to session factories, and the teachers (model steps).

Env specs are ``family:variant``: 0.10's ``openspiel:<game>`` and ``reasoning_gym:<dataset>``
(their env packages, ``openspiel_env``/``reasoning_gym_env``, imported from ``PYTHONPATH`` as 0.10
does), and ours ``echo:<topic>`` (the bundled echo env, one tool ``echo_message``).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
from typing import Any

import click

__all__ = ["build_session_factory", "chat_model_step", "scripted_model_step"]

FAMILIES = "openspiel:<game>, reasoning_gym:<dataset>, echo:<topic>"


def _env_package(family: str, client_name: str, factory_name: str) -> tuple[Any, Any]:
    try:
        client = getattr(importlib.import_module(f"{family}_env.client"), client_name)
        factory = getattr(importlib.import_module(f"{family}_env.harness"), factory_name)
    except (ImportError, AttributeError) as exc:
        raise click.BadParameter(f"{family}_env is not importable ({exc}). Ensure envs/ is on PYTHONPATH.",
                                 param_hint="ENV") from None  # fmt: skip
    return client, factory


class EchoSessionFactory:
    """Sessions on the echo env: one tool, ``echo_message(message)``; the env's reward is 0.1/char."""

    def __init__(self, base_url: str, topic: str) -> None:
        self.base_url, self.topic = base_url, topic

    def create(self, task: Any = None, seed: int | None = None, episode_id: str | None = None) -> Any:
        from openenv.core.env_server.mcp_types import Tool
        from openenv.core.harness import StepEnvSessionAdapter, ToolResult
        from openenv.envs.echo.client import EchoEnv
        from openenv.envs.echo.models import EchoAction

        tool = Tool(name="echo_message", description="Echo a message back (reward: 0.1 per character).",
                    input_schema={"type": "object", "properties": {"message": {"type": "string"}},
                                  "required": ["message"]})  # fmt: skip

        def action(name: str, args: dict[str, Any]) -> Any:
            message = args.get("message")
            return EchoAction(message=message if isinstance(message, str) else json.dumps(args, sort_keys=True))

        def result(name: str, args: dict[str, Any], step: Any, state: Any) -> Any:
            data = {"echoed_message": step.observation.echoed_message, "reward": step.reward, "done": step.done}
            return ToolResult(data=data, done=bool(step.done), metadata={"reward": step.reward})

        prompt = f"Call echo_message once with a short message about {task or self.topic}, then say you are done."
        return StepEnvSessionAdapter(
            EchoEnv(base_url=self.base_url), task=task, seed=seed, episode_id=episode_id, tool_specs=[tool],
            action_builder=action, tool_result_builder=result,
            initial_messages_builder=lambda _r, _t: [{"role": "user", "content": prompt}],
        )  # fmt: skip


def build_session_factory(env_spec: str, base_url: str, dataset_config: dict[str, Any] | None = None) -> Any:
    """The session factory for ``env_spec`` (``click.BadParameter`` for an unknown or bad spec)."""
    family, _, variant = env_spec.partition(":")
    if not variant:
        raise click.BadParameter(f"Missing variant. Use e.g. {family}:chain_sum", param_hint="ENV")
    if family == "openspiel":
        client, factory = _env_package("openspiel", "OpenSpielEnv", "OpenSpielSessionFactory")
        return factory(lambda: client(base_url=base_url), game_name=variant)
    if family == "reasoning_gym":
        client, factory = _env_package("reasoning_gym", "ReasoningGymEnv", "ReasoningGymSessionFactory")
        return factory(lambda: client(base_url=base_url), dataset_name=variant, dataset_config=dataset_config)
    if family == "echo":
        return EchoSessionFactory(base_url, variant)
    raise click.BadParameter(f"Unknown env {env_spec!r}. Supported: {FAMILIES}", param_hint="ENV")


def _legal_actions(messages: list[dict[str, Any]]) -> list[int]:
    """The latest ``legal_actions`` in the conversation (a JSON tool result or ``Legal actions: [..]``)."""
    for message in reversed(messages):
        content = message.get("content") or ""
        if not isinstance(content, str):
            continue
        try:
            payload = json.loads(content)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("legal_actions"), list):
            return [int(a) for a in payload["legal_actions"]]
        found = re.search(r"Legal actions:\s*\[([^\]]*)\]", content)
        if found:
            return [int(x) for x in found.group(1).split(",") if x.strip()]
    return []


def scripted_model_step() -> Any:
    """The key-free teacher: call the first tool with the first legal action (as 0.10's)."""
    from openenv.core.harness import ModelStepResult
    from openenv.core.llm_client import LLMResponse, ToolCall

    def model_step(messages: list[dict[str, Any]], tools: list[Any], sampling: dict[str, Any]) -> Any:
        legal = _legal_actions(messages)
        action_id = legal[0] if legal else 0
        call = ToolCall(id=f"scripted-{action_id}", name=tools[0].name if tools else "play_move",
                        args={"action_id": action_id})  # fmt: skip
        return ModelStepResult(response=LLMResponse(content=f"Playing action_id={action_id} (first legal).",
                                                    tool_calls=[call]))  # fmt: skip

    return model_step


def chat_model_step(base_url: str, model: str, *, api_key: str | None, temperature: float, max_tokens: int,
                    system_prompt: str | None, capture: str) -> Any:  # fmt: skip
    """A model step on an OpenAI-compatible endpoint that also asks for the engine's token ids and
    logprobs (``capture``: ``tokens``/``logprobs``, as ``openenv rollout --capture``)."""
    from openenv.core.harness.collect import _model_step_loop
    from openenv.core.harness.collect_store import CapturedStepResult
    from openenv.core.llm_client import LLMResponse, ToolCall
    from openenv.rollout import ChatClient, ModelEndpoint

    endpoint = ModelEndpoint(base_url, model=model, api_key=api_key, temperature=temperature, max_tokens=max_tokens,
                             capture=capture)  # fmt: skip
    loop = _model_step_loop()
    chat = asyncio.run_coroutine_threadsafe(_client(ChatClient, endpoint), loop).result()

    def model_step(messages: list[dict[str, Any]], tools: list[Any], sampling: dict[str, Any]) -> Any:
        convo = list(messages)
        if system_prompt and not any(m.get("role") == "system" for m in convo):
            convo.insert(0, {"role": "system", "content": system_prompt})
        specs = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                   "parameters": t.input_schema or {"type": "object"}}}
                 for t in tools]  # fmt: skip
        done = asyncio.run_coroutine_threadsafe(chat.complete(convo, specs or None), loop).result()
        calls = [ToolCall(id=c["id"], name=c["name"], args=_args(c["arguments"])) for c in done.tool_calls]
        cap = dict(done.capture or {})
        details: dict[str, Any] = {"finish_reason": done.finish_reason, "prompt_tokens": done.prompt_tokens,
                                   "completion_tokens": done.completion_tokens}  # fmt: skip
        if cap:
            details["reply"] = cap.pop("reply", None) or {}
            details["capture"] = {"level": cap.get("level"), "findings": cap.get("findings") or []}
        return CapturedStepResult(
            response=LLMResponse(content=done.text or "", tool_calls=calls),
            prompt_ids=list(cap.get("prompt_ids") or []), completion_ids=list(cap.get("sampled_ids") or []),
            logprobs=list(cap.get("logprobs") or []), details=details,
        )  # fmt: skip

    def close() -> None:
        asyncio.run_coroutine_threadsafe(chat.aclose(), loop).result(timeout=10)

    model_step.close = close  # type: ignore[attr-defined]  # the CLI closes the connection pool when done
    return model_step


async def _client(cls: Any, endpoint: Any) -> Any:
    return cls(endpoint)  # made on the loop it will run on


def _args(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_value": value}
