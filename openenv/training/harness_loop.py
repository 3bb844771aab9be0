"""TRL's AsyncGRPO harness rollout loop, recording: runs in the worker's spawned rollout process.

``recording_loop(base, spec, **loop_kwargs)`` is what the worker spawns in place of its loop class
(``trl_harness`` puts ``functools.partial(recording_loop, base, spec)`` there): it builds the
same loop with ``RecordingLoopMixin`` in front, so TRL's own code runs every rollout and scores
every group, and the mixin only watches:

- ``_run_session`` (one rollout, on a session thread): tags it (TRL's group id, its index in the
  group, the policy version), records its session through ``RecordingFactory``, then its model
  turn from what TRL returns (the trainer's own training rows) and its finish reason;
- ``_sample_turn`` (white-box: TRL samples each turn against vLLM): notes the first prompt and a
  model call that failed;
- ``_score_group``: TRL's reward (and each reward column), advantage and the group's policy
  version go to the rollouts' episodes. A rollout that produced no training row has no sample in
  TRL's output, so the group is scored with an empty placeholder row for it, dropped again before
  TRL sees the samples: every rollout gets the reward TRL computed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from typing import Any

from .harness_record import AdapterProxy, ChildRecorder, RecordingFactory, RecordSpec

__all__ = ["RecordingLoopMixin", "recording_loop"]


def recording_loop(base: type, spec: RecordSpec, **loop_kwargs: Any) -> Any:
    """``base`` (TRL's ``_HarnessRolloutLoop`` or a subclass) built with ``loop_kwargs``, recording to ``spec``."""
    cls = type(f"Recording{base.__name__}", (RecordingLoopMixin, base), {})
    loop = cls(**loop_kwargs)
    loop._openenv_attach(spec)
    return loop


def _number(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


class RecordingLoopMixin:
    """Records the rollouts of an ``_AsyncRolloutLoop`` harness loop (see the module docstring)."""

    _openenv: ChildRecorder

    def _openenv_attach(self, spec: RecordSpec) -> None:
        factory = self._factory  # type: ignore[attr-defined]
        self._openenv = ChildRecorder(spec, type(factory).__name__)
        self._factory = RecordingFactory(factory, self._openenv)
        if self._adapter is not None:  # type: ignore[attr-defined]
            self._adapter = AdapterProxy(self._adapter, self._openenv)  # type: ignore[has-type]
        pad = getattr(self.tokenizer, "pad_token_id", None)  # type: ignore[attr-defined]
        self._openenv_eos = {*self.eos_token_ids, *([pad] if pad is not None else [])}  # type: ignore[attr-defined]

    def run(self) -> None:
        try:
            super().run()  # type: ignore[misc]
        finally:
            self._openenv.close()

    def _run_session(self, prompt: Any, group_id: int = 0) -> Any:
        rec = self._openenv
        rollout = rec.begin(group_id, int(self.model_version))  # type: ignore[attr-defined]
        try:
            result, metrics = super()._run_session(prompt, group_id)  # type: ignore[misc]
        except BaseException:
            rec.finish(rollout, prompt, None, scorable=False, stopping=False, eos=self._openenv_eos)
            raise
        finally:
            rec.local.rollout = None
        result = (list(result[0]), *result[1:])  # its own list: TRL keeps it, and it identifies the rollout
        stopping = metrics is None and self._stop_event.is_set()  # type: ignore[attr-defined]
        rec.finish(rollout, prompt, result, scorable=metrics is not None, stopping=stopping, eos=self._openenv_eos)
        rec.pending[id(result[0])] = rollout  # TRL may still score its group (a stop can close a session under it)
        return result, metrics

    def _sample_turn(self, turns: list[Any], *args: Any, **kwargs: Any) -> Any:
        rollout = self._openenv.current()
        try:
            out = super()._sample_turn(turns, *args, **kwargs)  # type: ignore[misc]
        except Exception:
            if rollout is not None:
                rollout.model_error = True
            raise
        if rollout is not None and rollout.first_prompt is None and turns:
            rollout.first_prompt = list(turns[0].prompt_ids)
        return out

    async def _score_group(self, group: Any) -> list[Any]:
        rec = self._openenv
        sequences = list(group.completions_sequences)
        placeholder = type(sequences[0][0]) if any(sequences) else None
        filled = [s if s else [self._openenv_placeholder(placeholder)] for s in sequences]
        samples = await super()._score_group(dataclasses.replace(group, completions_sequences=filled))  # type: ignore[misc]
        kept, rows, at = [], [], 0
        for i, rows_i in enumerate(filled):
            mine, at = samples[at : at + len(rows_i)], at + len(rows_i)
            if sequences[i]:
                kept.extend(mine)
            rollout = rec.pending.pop(id(group.completions[i]), None)
            if rollout is None or not mine:
                continue
            metrics = mine[0].metrics
            reward = _number(metrics.get("reward"))
            components = {k.removeprefix("rewards/"): _number(v) for k, v in metrics.items() if k.startswith("rewards/")}
            advantage = _number(mine[0].advantage) if sequences[i] else None  # TRL trains no row of it otherwise
            rows.append((rollout, int(group.model_version), {"trainer_reward": reward, "reward_components": components,
                                                              "advantage": advantage}))  # fmt: skip
        if rows:
            await asyncio.to_thread(rec.outcomes, rows)
        return kept

    @staticmethod
    def _openenv_placeholder(kind: type | None) -> Any:
        if kind is None:
            from trl.experimental.async_grpo.async_rollout_worker import TrainingSequence as kind
        return kind(input_ids=[], completion_mask=[], old_log_probs=[], rollout_id="")
