"""Model in the loop: LLM rollouts against any environment, every step and completion recorded.

    from openenv.recording import EpisodeStore
    from openenv.rollout import ModelEndpoint, Rollout, RolloutSettings

    store = EpisodeStore("episodes.db")
    rollout = Rollout("http://127.0.0.1:8011", ModelEndpoint("http://127.0.0.1:8000/v1", model="qwen"),
                      store, RolloutSettings(episodes=16, concurrency=4, max_steps=10))
    summary = await rollout.run()        # results table as a dict; episodes have source "model"

The CLI is ``openenv rollout``; the studio's "Run a model" page uses the same loop. See docs/rollout.md.
"""

from __future__ import annotations

from .actions import check_action, parse_json_action, parse_tool_call
from .chat import ChatClient, Completion, ModelEndpoint
from .envs import RunningEnv, start_env
from .errors import InvalidReplyError, ModelError, ModelTimeoutError, RolloutError
from .loop import Rollout, RolloutSettings, discover_tools, play_turn
from .policy import Conversation, Policy
from .results import EpisodeResult, format_table, pass_at_k, summarise
from .spec import EnvSpec, fetch_env_spec, openai_tools

__all__ = [
    "ChatClient",
    "Completion",
    "Conversation",
    "EnvSpec",
    "EpisodeResult",
    "InvalidReplyError",
    "ModelEndpoint",
    "ModelError",
    "ModelTimeoutError",
    "Policy",
    "Rollout",
    "RolloutError",
    "RolloutSettings",
    "RunningEnv",
    "check_action",
    "discover_tools",
    "fetch_env_spec",
    "format_table",
    "openai_tools",
    "parse_json_action",
    "parse_tool_call",
    "pass_at_k",
    "play_turn",
    "start_env",
    "summarise",
]
