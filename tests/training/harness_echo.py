"""The echo server as a harness resource session (one per rollout), for TRL's AsyncGRPO harness
worker: a module-level factory and reward function, so the worker can pickle them into its
rollout process."""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.mcp_types import Tool
from openenv.core.harness import ResourceSessionFactory, StepEnvSessionAdapter

ECHO_TOOL = Tool(name="echo", description="Echo the message back from the environment.",
                 input_schema={"type": "object", "properties": {"message": {"type": "string"}},
                               "required": ["message"]})  # fmt: skip


def _action(name: str, arguments: dict[str, Any]) -> Any:
    from openenv.envs.echo import EchoAction

    return EchoAction(message=str(arguments.get("message", "")))


def _initial_messages(result: Any, task: Any) -> list[dict[str, Any]]:
    return list(task)  # the dataset row's prompt, as TRL passes it to ``create``


class EchoSessionFactory(ResourceSessionFactory):
    """Each session: a fresh echo client, reset, with ``echo`` as its one tool (reward 0.1 per character)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def create(self, task: Any, seed: int | None = None, episode_id: str | None = None) -> StepEnvSessionAdapter:
        from openenv.envs.echo import EchoEnv

        return StepEnvSessionAdapter(EchoEnv(base_url=self.base_url), task=task, seed=seed, episode_id=episode_id,
                                     tool_specs=[ECHO_TOOL], action_builder=_action,
                                     initial_messages_builder=_initial_messages)  # fmt: skip


def brevity(completions: list[Any], **kwargs: Any) -> list[float]:
    """A second reward column: shorter transcripts score higher."""
    return [-0.001 * len(str(c)) for c in completions]
