"""Agent harnesses, at 0.10's import path ``openenv.core.harness``.

Two layers, both importable from here (each name loads its module on first use, so importing the
package costs nothing):

- **Trainer-side rollouts** (``rollout``, ``training``, ``collect``): a harness drives a whole
  episode against a resource session; ``build_harness_rollout_func`` for TRL, ``openenv collect``.
- **Turn-based agentic harnesses** (RFC 005: ``adapter``, ``bridge``, ``config``, ``environment``,
  ``events``, ``process``, ``tools``): an external agent runs inside the environment and each
  ``step()`` is one conversational turn.
"""

from __future__ import annotations

from openenv._lazy import lazy_exports

_SOURCES: dict[str, tuple[str, ...]] = {
    "rollout": (
        "CLIHarnessAdapter", "HarnessAdapter", "HarnessRolloutResult", "HarnessRunLimits",
        "LoopOwningSession", "MCPHarnessAdapter", "Message", "ModelStep", "ModelStepResult",
        "RESERVED_TOOL_NAMES", "ResourceSession", "ResourceSessionFactory", "RolloutEvent",
        "SessionMCPBridge", "StepEnvSessionAdapter", "ToolResult", "ToolTraceEntry", "TraceEntry",
        "TrainableSession", "VerifyResult", "build_harness_rollout_func", "_resolve_env_reward",
    ),
    "training": ("TrainingTrace", "TrainingTurn"),
    "adapter": (
        "AgenticHarnessAdapter", "HarnessError", "HarnessNotRunningError", "HarnessStartupError",
        "HarnessTurnTimeoutError",
    ),
    "bridge": ("HarnessMCPBridge", "build_bridge_server"),
    "config": ("HarnessConfig", "HarnessTransport"),
    "environment": ("HarnessAction", "HarnessEnvironment"),
    "events": ("HarnessClientMessage", "HarnessEvent", "HarnessEventType", "HarnessResponse", "events_to_metadata"),
    "process": ("HarnessProcess",),
    "tools": ("resolve_tool_conflicts",),
}  # fmt: skip

__getattr__, __dir__, __all__ = lazy_exports(__name__, _SOURCES)
