"""Tic-tac-toe as a ``ResourceSession`` with one tool, ``play_move(action_id)`` (0.10's harness names)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openenv.core.env_server.mcp_types import Tool
from openenv.core.harness import StepEnvSessionAdapter, ToolResult
from openspiel_env.models import OpenSpielAction

PLAY_MOVE = Tool(
    name="play_move",
    description="Play the cell action_id, one of the legal_actions of the latest observation.",
    input_schema={"type": "object", "properties": {"action_id": {"type": "integer"}}, "required": ["action_id"]},
)


def _prompt(observation: Any, game: str) -> str:
    return f"You are playing {game}.\nCall play_move.\nLegal actions: {list(observation.legal_actions)}"


def _tool_result(tool_name: str, arguments: dict[str, Any], result: Any, state: Any) -> ToolResult:
    obs = result.observation
    data = {"action_id": arguments.get("action_id"), "legal_actions": list(obs.legal_actions),
            "reward": result.reward, "done": result.done}
    return ToolResult(data=data, done=bool(result.done),
                      metadata={"reward": result.reward, "state": state.model_dump()})


class OpenSpielSessionFactory:
    def __init__(self, client_factory: Callable[[], Any], *, game_name: str = "tic_tac_toe") -> None:
        self._client_factory = client_factory
        self._game = game_name

    def create(self, task: Any = None, seed: int | None = None, episode_id: str | None = None) -> StepEnvSessionAdapter:
        game = self._game
        return StepEnvSessionAdapter(
            client=self._client_factory(), task=task, seed=seed, episode_id=episode_id, tool_specs=[PLAY_MOVE],
            action_builder=lambda name, args: OpenSpielAction(action_id=int(args["action_id"]), game_name=game),
            initial_messages_builder=lambda result, _task: [{"role": "user", "content": _prompt(result.observation, game)}],
            tool_result_builder=_tool_result,
        )
