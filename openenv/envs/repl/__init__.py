"""The REPL environment: Python cells in an isolated per-session worker process."""

from openenv.envs.repl.client import REPLEnv, SyncREPLEnv
from openenv.envs.repl.config import Limits
from openenv.envs.repl.environment import REPLEnvironment
from openenv.envs.repl.llm import LLMConfig
from openenv.envs.repl.models import CodeBlockResult, REPLAction, REPLObservation, REPLState
from openenv.envs.repl.rewards import RewardConfig

__all__ = [
    "CodeBlockResult",
    "LLMConfig",
    "Limits",
    "REPLAction",
    "REPLEnv",
    "REPLEnvironment",
    "REPLObservation",
    "REPLState",
    "RewardConfig",
    "SyncREPLEnv",
]
