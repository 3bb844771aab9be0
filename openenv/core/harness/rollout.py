"""Trainer-side whole-episode rollouts (0.10's ``openenv.core.harness.rollout``).

A harness drives a complete episode in one ``run_white_box``/``run_black_box`` call against a
``ResourceSession``; ``build_harness_rollout_func`` makes TRL's ``rollout_func`` of it, and
``openenv.core.harness.collect`` writes datasets with it. The names live in small modules
(``rollout_types``, ``rollout_sessions``, ``rollout_harness``, ``rollout_func``) and are all
importable from here and from ``openenv.core.harness``.
"""

from __future__ import annotations

from .rollout_func import build_harness_rollout_func
from .rollout_harness import CLIHarnessAdapter, HarnessAdapter, MCPHarnessAdapter, SessionMCPBridge
from .rollout_sessions import (
    ResourceSession,
    ResourceSessionFactory,
    StepEnvSessionAdapter,
    _resolve_env_reward,
)
from .rollout_types import (
    RESERVED_TOOL_NAMES,
    HarnessRolloutResult,
    HarnessRunLimits,
    LoopOwningSession,
    Message,
    ModelStep,
    ModelStepResult,
    RolloutEvent,
    ToolResult,
    ToolTraceEntry,
    TraceEntry,
    TrainableSession,
    VerifyResult,
)

__all__ = [
    "CLIHarnessAdapter",
    "HarnessAdapter",
    "HarnessRolloutResult",
    "HarnessRunLimits",
    "LoopOwningSession",
    "MCPHarnessAdapter",
    "Message",
    "ModelStep",
    "ModelStepResult",
    "RESERVED_TOOL_NAMES",
    "ResourceSession",
    "ResourceSessionFactory",
    "RolloutEvent",
    "SessionMCPBridge",
    "StepEnvSessionAdapter",
    "ToolResult",
    "ToolTraceEntry",
    "TraceEntry",
    "TrainableSession",
    "VerifyResult",
    "build_harness_rollout_func",
]

# `_resolve_env_reward` is imported from here by 0.10 callers (collect, env packages).
_ = _resolve_env_reward
