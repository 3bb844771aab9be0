"""Captured calls into the episode store, one durable record per call as it completes.

A capture session is an episode (run source ``capture``): its reset observation names the session,
and each model call is step *k* — the action is the reply message, the observation says how the
call ended — with the call itself as that step's model turn (``EpisodeStore.record_turn``): request
messages, tools offered, reply, prompt ids, sampled ids, logprobs, finish reason, latency, usage.
On SQLite both go through the store's journal, so a call is durable when its answer is sent and a
crash of the harness, the engine or the proxy loses only calls in flight. The same turn keys are
what ``openenv rollout --capture`` records, so one reader (``graph_from_turns``) serves both.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .graph import RolloutGraph, TurnNode

__all__ = ["CaptureRecorder", "findings_of", "graph_from_turns", "turn_record"]


def turn_record(node: TurnNode, *, session_id: str, latency_ms: float, usage: dict[str, Any],
                level: str, findings: list[str] | None = None,
                sampled_tokens: list[str] | None = None) -> dict[str, Any]:
    """The model-turn data of one captured call (the keys the studio shows, and the token fields)."""
    message = node.response_message or {}
    return {
        "model": node.model, "messages": node.request_messages, "tools": node.request_tools,
        "completion": message.get("content"), "tool_calls": message.get("tool_calls"), "reply": message,
        "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
        "usage": usage, "latency_ms": round(latency_ms, 3), "finish_reason": node.finish_reason,
        "capture": {"session_id": session_id, "node_id": node.node_id, "level": level,
                    "prompt_ids": node.prompt_ids, "sampled_ids": node.sampled_ids,
                    "logprobs": node.sampled_logprobs, "harness_session_id": node.harness_session_id,
                    "system_digest": node.system_digest, "sampling_params": node.sampling_params,
                    "requested_sampling_params": node.requested_sampling_params, "findings": list(findings or []),
                    "sampled_tokens": sampled_tokens},
    }


def findings_of(turns: list[dict[str, Any]]) -> list[str]:
    """The per-call findings recorded with each turn, in order (a rollout document's call findings)."""
    return [f for data in turns for f in (data.get("capture") or {}).get("findings") or []]


def graph_from_turns(turns: list[dict[str, Any]]) -> RolloutGraph:
    """Rebuild a rollout's graph from its recorded turns, in the order they were made."""
    graph = RolloutGraph()
    for i, data in enumerate(turns):
        cap = data.get("capture") or {}
        graph.add_turn(TurnNode(
            node_id=cap.get("node_id") or f"t{i}", prompt_ids=list(cap.get("prompt_ids") or []),
            sampled_ids=list(cap.get("sampled_ids") or []),
            sampled_logprobs=list(cap["logprobs"]) if cap.get("logprobs") else None,
            model=data.get("model"), finish_reason=data.get("finish_reason"),
            harness_session_id=cap.get("harness_session_id"), system_digest=cap.get("system_digest"),
            n_tools=len(data.get("tools") or []), request_messages=list(data.get("messages") or []),
            request_tools=data.get("tools"), sampling_params=dict(cap.get("sampling_params") or {}),
            requested_sampling_params=dict(cap.get("requested_sampling_params") or {}),
            response_message=dict(data.get("reply") or {}),
            trainer_mask=list(cap["loss_mask"]) if data.get("trainer") and cap.get("loss_mask") else None))
    return graph


class CaptureRecorder:
    """Writes sessions and calls of one capture proxy into an ``EpisodeStore`` (blocking calls:
    the proxy runs them in a worker thread, one at a time per store)."""

    def __init__(self, store: Any, *, label: str | None = None, info: dict[str, Any] | None = None) -> None:
        self.store = store
        self.label = label
        self.info = dict(info or {})
        self._run_id: str | None = None
        self._lock = threading.Lock()
        self._steps: dict[str, int] = {}

    def _run(self) -> str:
        if self._run_id is None:
            self._run_id = self.store.create_run(env_name="capture", source="capture", label=self.label, info=self.info,
                                                 provider="capture", journaled=self.store.journaled)
        return self._run_id

    def open_session(self, session_id: str, metadata: dict[str, Any]) -> str:
        """The episode of a new session (its id is returned and kept on the session)."""
        with self._lock:
            episode = self.store.start_episode(self._run(), reset_kwargs={"session_id": session_id},
                                               observation={"capture_session": session_id, "metadata": metadata},
                                               journaled=self.store.journaled)
            self._steps[episode] = 0
            return episode

    def record_call(self, episode_id: str, data: dict[str, Any], *, done: bool = False) -> int:
        """One captured call as the episode's next step with its model turn; durable on return."""
        from openenv.recording.step_rows import make_step_row

        with self._lock:
            index = self._steps.get(episode_id, 0) + 1
            self._steps[episode_id] = index
            observation = {"finish_reason": data.get("finish_reason"), "n_prompt": len(data["capture"]["prompt_ids"]),
                           "n_sampled": len(data["capture"]["sampled_ids"])}
            row = make_step_row(episode_id, index, data.get("reply") or {}, observation, None, done, None,
                                data.get("latency_ms"), time.time(), None)
            if self.store.journaled:
                self.store.journal_steps([row])
            else:
                self.store.append_steps([row])
            self.store.record_turn(episode_id, index, "model", data, journaled=self.store.journaled)
            return index

    def end_session(self, episode_id: str, reason: str = "closed") -> None:
        with self._lock:
            if self.store.journaled:
                self.store.journal_end(episode_id, reason)
            else:
                self.store.finish_episode(episode_id, reason)
