"""``build_harness_rollout_func``: sessions + a white-box harness as TRL's ``rollout_func``.

    rollout_func = build_harness_rollout_func(session_factory=factory, harness_adapter=MCPHarnessAdapter(),
                                              model_step_builder=lambda trainer, session: my_step)
    batch = rollout_func(prompts, trainer)   # prompt_ids, completion_ids, logprobs, env_reward, verify_metrics

Each prompt gets its own session (``factory.create(task=prompt)``), closed whatever happens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .rollout_harness import HarnessAdapter
from .rollout_sessions import ResourceSession, _resolve_env_reward
from .rollout_types import HarnessRolloutResult, HarnessRunLimits, ModelStep, ToolTraceEntry

__all__ = ["build_harness_rollout_func", "rollout_final_state", "tool_trace_entry_to_plain"]


def tool_trace_entry_to_plain(entry: ToolTraceEntry) -> dict[str, Any]:
    """One tool-trace entry as plain data (``tool_name``, ``arguments``, ``result``)."""
    r = entry.result
    return {"tool_name": entry.tool_name, "arguments": dict(entry.arguments),
            "result": {"data": r.data, "done": r.done, "metadata": dict(r.metadata), "error": r.error}}  # fmt: skip


def rollout_final_state(rollout: HarnessRolloutResult) -> dict[str, Any]:
    """What ``session.verify()`` gets as ``final_state``: done, metrics, events and the tool trace."""
    return {
        "done": rollout.done,
        "metrics": dict(rollout.metrics),
        "events": [{"type": e.type, "payload": dict(e.payload)} for e in rollout.events],
        "tool_trace": [tool_trace_entry_to_plain(e) for e in rollout.tool_trace],
    }


def build_harness_rollout_func(
    *,
    session_factory: Any,
    harness_adapter: HarnessAdapter,
    model_step_builder: Callable[[Any, ResourceSession], ModelStep],
    limits: HarnessRunLimits | None = None,
    reward_key: str = "env_reward",
) -> Callable[[list[Any], Any], dict[str, list[Any]]]:
    """A ``rollout_func(prompts, trainer)`` returning one list per key, one item per prompt:
    ``prompt_ids``, ``completion_ids``, ``logprobs``, ``<reward_key>`` and ``verify_metrics``."""

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        batch: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "rewards": [],
                                       "verify_metrics": []}  # fmt: skip
        for prompt in prompts:
            session = session_factory.create(task=prompt)
            try:
                step = model_step_builder(trainer, session)
                rollout = harness_adapter.run_white_box(model_step=step, session=session, limits=limits)
                verify = session.verify(transcript=rollout.messages, final_state=rollout_final_state(rollout))
                batch["prompt_ids"].append(list(rollout.prompt_ids))
                batch["completion_ids"].append(list(rollout.completion_ids))
                batch["logprobs"].append(list(rollout.logprobs))
                batch["rewards"].append(_resolve_env_reward(rollout, verify))
                batch["verify_metrics"].append(dict(verify.metrics))
            finally:
                session.close()
        return {"prompt_ids": batch["prompt_ids"], "completion_ids": batch["completion_ids"],
                "logprobs": batch["logprobs"], reward_key: batch["rewards"],
                "verify_metrics": batch["verify_metrics"]}  # fmt: skip

    return rollout_func
