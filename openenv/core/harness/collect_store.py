"""Collected rollouts into the episode store too, so the studio shows them (beyond 0.10).

    recorder = CollectRecorder(EpisodeStore(default_store_target()), env_name="openspiel:tic_tac_toe")
    runner = CollectRunner(session_factory=recorder.session_factory(factory), ...)
    runner.run(model_step=recorder.model_step(model_step, model="qwen"), num_episodes=10)

Each session the wrapped factory creates is one store episode (run source ``collect``; reset
observation: the initial messages and tool names; ``reset_kwargs``: the collect episode id, task
and seed; tags ``collect`` and the collect episode id). Each tool call is a step (action
``{"tool_name", "arguments"}``, observation the tool's data, the env's reward, done); each model
call is that step's model turn (``EpisodeStore.record_turn``: messages, tools, reply, tool calls,
latency, and under ``capture`` the engine's prompt/sampled ids and logprobs when it returned them,
the same keys ``openenv capture`` and ``openenv rollout --capture`` record). A final answer without
a tool call is a turn after the last step. The episode ends ``done`` (the env or the harness ended it), ``truncated`` (limits hit) or
``error`` (a tool raised, or the rollout failed before ``verify``). One rollout at a time per recorder (``CollectRunner`` is sequential).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .rollout_sessions import ResourceSession, _tool_result_reward
from .rollout_types import Message, ModelStep, ModelStepResult, ToolResult, VerifyResult

__all__ = ["CapturedStepResult", "CollectRecorder"]


@dataclass
class CapturedStepResult(ModelStepResult):
    """A ``ModelStepResult`` carrying what the recorder keeps of the call (finish reason, usage,
    the raw reply, capture findings) in ``details``."""

    details: dict[str, Any] = field(default_factory=dict)


class _Episode:
    def __init__(self, store_id: str) -> None:
        self.id, self.steps, self.turns, self.failed, self.done = store_id, 0, 0, False, False
        self.finished = False


def _tool_dict(tool: Any) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}


class CollectRecorder:
    """Writes the episodes of wrapped sessions and model steps into an ``EpisodeStore``."""

    def __init__(self, store: Any, *, env_name: str, label: str | None = None, base_url: str | None = None,
                 info: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.store = store
        self.env_name, self.label, self.base_url = env_name, label, base_url
        self.info = dict(info or {})
        self.run_id: str | None = None
        self.episode_ids: list[str] = []  # store ids, in the order the sessions were created
        self._current: _Episode | None = None

    def _run(self) -> str:
        if self.run_id is None:
            self.run_id = self.store.create_run(env_name=self.env_name, base_url=self.base_url, source="collect",
                                                label=self.label, info=self.info)  # fmt: skip
        return self.run_id

    def session_factory(self, factory: Any) -> _RecordingFactory:
        """``factory`` whose sessions are recorded."""
        return _RecordingFactory(factory, self)

    def model_step(self, step: ModelStep, *, model: str | None = None) -> ModelStep:
        """``step`` whose calls are recorded as model turns of the current episode."""

        def recorded(messages: list[Message], tools: list[Any], sampling: dict[str, Any]) -> ModelStepResult:
            t0 = time.perf_counter()
            result = step(messages, tools, sampling)
            self._record_turn(result, messages, tools, model, (time.perf_counter() - t0) * 1000)
            return result

        return recorded

    # -- used by the wrappers -----------------------------------------------------------------
    def _open(self, session: ResourceSession, episode_id: str | None, task: Any, seed: int | None) -> _Episode:
        observation = {"messages": session.initial_messages(), "tools": [t.name for t in session.list_tools()]}
        reset = {"episode_id": episode_id, "task": task, **({"seed": seed} if seed is not None else {})}
        store_id = self.store.start_episode(self._run(), reset_kwargs=reset, observation=observation)
        self.store.set_tags(store_id, ["collect", *([episode_id] if episode_id else [])])
        self.episode_ids.append(store_id)
        self._current = _Episode(store_id)
        return self._current

    def _record_turn(self, result: ModelStepResult, messages: list[Message], tools: list[Any], model: str | None,
                     latency_ms: float) -> None:  # fmt: skip
        ep = self._current
        if ep is None:
            return
        reply = result.response.to_message_dict()
        details = dict(getattr(result, "details", {}) or {})
        data: dict[str, Any] = {
            "model": model, "messages": list(messages), "tools": [_tool_dict(t) for t in tools],
            "completion": result.response.content, "tool_calls": reply.get("tool_calls"),
            "reply": details.pop("reply", reply), "latency_ms": round(latency_ms, 3), "harness_turn": ep.turns,
        }  # fmt: skip
        data.update(details)
        if result.prompt_ids or result.completion_ids:
            capture = dict(data.pop("capture", {}) or {})
            capture.update(node_id=f"t{ep.turns}", prompt_ids=list(result.prompt_ids),
                           sampled_ids=list(result.completion_ids), logprobs=list(result.logprobs) or None)  # fmt: skip
            capture.setdefault("level", "tokens")
            capture.setdefault("findings", [])
            data["capture"] = capture
        ep.turns += 1
        self.store.record_turn(ep.id, ep.steps + 1, "model", data)

    def _tool_step(self, ep: _Episode, name: str, arguments: dict[str, Any], result: ToolResult | None,
                   error: str | None, latency_ms: float) -> None:  # fmt: skip
        ep.steps += 1
        action = {"tool_name": name, "arguments": dict(arguments)}
        if result is None:
            observation: Any = {"error": error}
            reward, done, metadata = None, False, None
        else:
            observation = {"data": result.data, "error": result.error}
            reward, done = _tool_result_reward(result), bool(result.done)
            metadata = {k: v for k, v in result.metadata.items() if k != "reward"} or None
        self.store.append_step(ep.id, ep.steps, action=action, observation=observation, reward=reward, done=done,
                               metadata=metadata, latency_ms=round(latency_ms, 3))  # fmt: skip
        ep.done = ep.done or done

    def _close(self, ep: _Episode, verify: VerifyResult | None) -> None:
        if self._current is ep:
            self._current = None
        if ep.done:
            return  # a done step already ended the episode
        reason = "error" if ep.failed or verify is None else "done" if verify.done or ep.finished else "truncated"
        self.store.finish_episode(ep.id, reason)


class _RecordingFactory:
    def __init__(self, inner: Any, recorder: CollectRecorder) -> None:
        self.inner, self.recorder = inner, recorder

    def create(self, task: Any = None, seed: int | None = None, episode_id: str | None = None) -> _RecordingSession:
        session = self.inner.create(task=task, seed=seed, episode_id=episode_id)
        try:
            episode = self.recorder._open(session, episode_id, task, seed)
        except BaseException:
            session.close()
            raise
        return _RecordingSession(session, self.recorder, episode)


class _RecordingSession(ResourceSession):
    """A session whose tool calls, verification and end go to the recorder."""

    def __init__(self, inner: ResourceSession, recorder: CollectRecorder, episode: _Episode) -> None:
        self.inner, self.recorder, self.episode = inner, recorder, episode
        self._verify: VerifyResult | None = None
        self._closed = False

    def initial_messages(self) -> list[Message]:
        return self.inner.initial_messages()

    def list_tools(self) -> list[Any]:
        return self.inner.list_tools()

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        t0 = time.perf_counter()
        try:
            result = self.inner.call_tool(name, arguments)
        except Exception as exc:
            self.episode.failed = True
            self.recorder._tool_step(self.episode, name, arguments, None, f"{type(exc).__name__}: {exc}",
                                     (time.perf_counter() - t0) * 1000)  # fmt: skip
            raise
        self.recorder._tool_step(self.episode, name, arguments, result, None, (time.perf_counter() - t0) * 1000)
        return result

    def verify(self, transcript: list[Message], final_state: Any | None = None) -> VerifyResult:
        self._verify = self.inner.verify(transcript, final_state)
        if isinstance(final_state, dict) and final_state.get("done"):
            self.episode.finished = True  # the harness ended the rollout (e.g. the model stopped calling tools)
        return self._verify

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.inner.close()
        finally:
            self.recorder._close(self.episode, self._verify)

    def __getattr__(self, name: str) -> Any:  # the wrapped session's own extras (wait_for_completion...)
        return getattr(self.inner, name)
