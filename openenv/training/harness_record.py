"""The store side of a recorded AsyncGRPO harness worker, in its rollout process (``harness_loop``).

Each rollout is one store episode of the training run, tagged at its start with the policy
version, TRL's group id and its index in the group. The session the worker's factory creates is
wrapped: its initial messages and tools are the episode's reset observation, each tool call a step
(action ``{"tool_name", "arguments"}``, observation the tool's data or error, the env's reward,
done). When the rollout returns, the model's side is one model turn after the last step: the
prompt, the completion messages and tool calls, and under ``capture`` the trainer's own training
row (``prompt_ids``/``sampled_ids``/``logprobs``/``loss_mask`` of its first sequence; any forks
under ``forks``). The trainer's reward, advantage and finish reason follow when TRL scores the
group (``outcomes``). Writes go through the step journal on SQLite, so rollout threads never wait
on a commit.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from openenv.recording import EpisodeStore
from openenv.recording.jsonable import to_jsonable

__all__ = ["ChildRecorder", "RecordSpec", "Rollout"]


@dataclass(frozen=True)
class RecordSpec:
    """What the rollout process needs to record (pickled into it): the store, the run, names."""

    target: str
    run_id: str
    name: str
    env_name: str | None = None


@dataclass
class Rollout:
    """One rollout in flight: its tags, its episode and what happened to it."""

    group: int
    index: int
    step: int
    episode: str | None = None
    steps: int = 0
    first_prompt: list[int] | None = None  # the first model call's prompt ids (the training row's prompt)
    env_done: bool = False
    env_error: bool = False
    model_error: bool = False
    timed_out: bool = False
    max_turns: bool = False
    finish_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _tool_names(session: Any) -> list[str] | None:
    try:
        return [t.name for t in session.list_tools()]
    except Exception:
        return None


def _initial_messages(session: Any) -> Any:
    try:
        return to_jsonable(session.initial_messages())
    except Exception:
        return None


def _text(messages: Any) -> str:
    return "".join(str(m.get("content") or "") for m in messages or [] if isinstance(m, dict) and m.get("role") == "assistant")


def _tool_calls(messages: Any) -> list[Any]:
    return [c for m in messages or [] if isinstance(m, dict) for c in (m.get("tool_calls") or [])]


def _prompt_len(input_ids: list[int], first_prompt: list[int] | None, mask: list[int]) -> int:
    """Where the training row's prompt ends: after the first call's prompt when the row starts with
    it (it does unless the row is a fork), else before the first trained token."""
    if first_prompt and input_ids[: len(first_prompt)] == first_prompt:
        return len(first_prompt)
    return next((i for i, m in enumerate(mask) if m), len(input_ids))


def _ints(values: Any) -> list[int]:
    return [int(v) for v in values]


def training_capture(sequences: list[Any], completion_ids: list[int], first_prompt: list[int] | None) -> dict[str, Any]:
    """The trainer's tokens of one rollout as a turn's ``capture`` (and its forks, if any)."""
    if not sequences:
        return {"level": "tokens", "prompt_ids": None, "sampled_ids": _ints(completion_ids), "logprobs": None,
                "loss_mask": None}  # fmt: skip
    seq = sequences[0]
    ids, mask, logprobs = _ints(seq.input_ids), _ints(seq.completion_mask), [float(x) for x in seq.old_log_probs]
    p = _prompt_len(ids, first_prompt, mask)
    capture: dict[str, Any] = {"level": "tokens", "prompt_ids": ids[:p], "sampled_ids": ids[p:], "logprobs": logprobs[p:],
                               "loss_mask": mask[p:]}  # fmt: skip
    if len(sequences) > 1:
        capture["forks"] = [{"input_ids": _ints(s.input_ids), "loss_mask": _ints(s.completion_mask),
                             "logprobs": [float(x) for x in s.old_log_probs]} for s in sequences[1:]]  # fmt: skip
    return capture


class ChildRecorder:
    """Writes a worker's rollouts into the store (one per rollout process, shared by its threads)."""

    def __init__(self, spec: RecordSpec, env_name: str) -> None:
        self.spec = spec
        self.store = EpisodeStore(spec.target)
        self.env_run = self.store.create_run(env_name=spec.env_name or env_name, source="trl", label=spec.name,
                                             info={"training_run_id": spec.run_id}, journaled=True)  # fmt: skip
        self.local = threading.local()
        self._lock = threading.Lock()
        self._counters: dict[int, itertools.count[int]] = {}
        self.pending: dict[int, Rollout] = {}  # id(completion list TRL keeps) -> its rollout, until scored

    def current(self) -> Rollout | None:
        """The rollout this thread is running."""
        return getattr(self.local, "rollout", None)

    def begin(self, group: int, step: int) -> Rollout:
        """A new rollout of TRL group ``group`` at policy version ``step`` (index: its order in the group)."""
        with self._lock:
            index = next(self._counters.setdefault(group, itertools.count()))
        rollout = Rollout(group=group, index=index, step=step)
        self.local.rollout = rollout
        return rollout

    def tags(self, rollout: Rollout, step: int | None = None) -> dict[str, Any]:
        return {"training_run_id": self.spec.run_id, "train_step": rollout.step if step is None else step,
                "group_id": str(rollout.group), "group_index": rollout.index}  # fmt: skip

    def open_episode(self, rollout: Rollout, session: Any | None, reset_kwargs: dict[str, Any]) -> str:
        observation = None if session is None else {"messages": _initial_messages(session), "tools": _tool_names(session)}
        rollout.episode = self.store.start_episode(self.env_run, reset_kwargs=reset_kwargs, observation=observation,
                                                   training=self.tags(rollout), journaled=True,
                                                   reset=session is not None)  # fmt: skip
        return rollout.episode

    def tool_step(self, rollout: Rollout, name: str, arguments: dict[str, Any], result: Any, error: str | None,
                  latency_ms: float) -> None:  # fmt: skip
        if rollout.episode is None:
            return
        rollout.steps += 1
        action = {"tool_name": name, "arguments": to_jsonable(dict(arguments))}
        if result is None:
            observation: Any = {"error": error}
            reward, done, metadata = None, False, None
        else:
            observation = {"data": to_jsonable(result.data), "error": result.error}
            meta = dict(result.metadata or {})
            reward, done = meta.pop("reward", None), bool(result.done)
            reward = float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None
            metadata = to_jsonable(meta) or None
        row = self.store.step_row(rollout.episode, rollout.steps, action=action, observation=observation, reward=reward,
                                  done=done, metadata=metadata, latency_ms=round(latency_ms, 3))  # fmt: skip
        self.store.journal_steps([row])
        rollout.env_done = rollout.env_done or done

    def finish(self, rollout: Rollout, prompt: Any, result: tuple[Any, ...] | None, *, scorable: bool,
               stopping: bool, eos: set[int]) -> None:  # fmt: skip
        """The rollout returned (``result``: TRL's rollout tuple): its model turn, finish reason, end
        (``closed`` when the worker was stopping: TRL may never score it)."""
        if rollout.episode is None:  # its session never opened: an empty episode says so
            self.open_episode(rollout, None, {})
        assert rollout.episode is not None  # noqa: S101 - for the type checker
        completion, completion_ids, sequences = (result[0], list(result[1]), list(result[2])) if result else ([], [], [])
        rollout.finish_reason = self._reason(rollout, scorable, completion_ids, eos)
        if completion or completion_ids:
            turn = {"trainer": "trl", "prompt": to_jsonable(prompt), "completion": _text(completion),
                    "messages": to_jsonable(completion), "tool_calls": to_jsonable(_tool_calls(completion)),
                    "sequences": len(sequences), "capture": training_capture(sequences, completion_ids, rollout.first_prompt)}  # fmt: skip
            self.store.record_turn(rollout.episode, rollout.steps + 1, "model", turn, journaled=True)
        self.store.journal_end(rollout.episode, "closed" if stopping else "rollout_end")

    @staticmethod
    def _reason(rollout: Rollout, scorable: bool, completion_ids: list[int], eos: set[int]) -> str:
        if rollout.model_error:
            return "model_error"
        if not scorable or rollout.env_error:
            return "env_error"
        if rollout.timed_out:
            return "timeout"
        if rollout.env_done:
            return "env_done"
        if completion_ids and completion_ids[-1] not in eos:
            return "truncated"
        return "max_turns" if rollout.max_turns else "stop"

    def outcomes(self, rows: list[tuple[Rollout, int, dict[str, Any]]]) -> None:
        """TRL scored a group: ``(rollout, policy version, outcome)`` rows; tags and outcomes in one batch."""
        self.store.set_outcomes([{"episode_id": r.episode, **self.tags(r, step), "finish_reason": r.finish_reason, **o}
                                 for r, step, o in rows if r.episode is not None])  # fmt: skip

    def close(self) -> None:
        self.store.close()


class RecordingFactory:
    """The worker's session factory, whose sessions are recorded (``create`` as TRL calls it)."""

    def __init__(self, inner: Any, recorder: ChildRecorder) -> None:
        self.inner, self.recorder = inner, recorder

    def create(self, task: Any = None, seed: int | None = None, episode_id: str | None = None) -> Any:
        session = self.inner.create(task, seed=seed, episode_id=episode_id)
        rollout = self.recorder.current()
        if rollout is None:  # created outside a rollout: not ours to record
            return session
        try:
            self.recorder.open_episode(rollout, session, {"episode_id": episode_id, "seed": seed})
        except BaseException:
            session.close()
            raise
        return RecordingSession(session, self.recorder, rollout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class RecordingSession:
    """A session whose tool calls are the episode's steps; its loop-owning extras pass through
    (``wait_for_completion`` noting a timeout, ``fetch_training_trace`` the first prompt), so TRL
    sees the same kind of session."""

    def __init__(self, inner: Any, recorder: ChildRecorder, rollout: Rollout) -> None:
        self.inner, self.recorder, self.rollout = inner, recorder, rollout

    def initial_messages(self) -> Any:
        return self.inner.initial_messages()

    def list_tools(self) -> Any:
        return self.inner.list_tools()

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        t0 = time.perf_counter()
        try:
            result = self.inner.call_tool(name, arguments)
        except Exception as exc:
            self.rollout.env_error = True
            self.recorder.tool_step(self.rollout, name, arguments, None, f"{type(exc).__name__}: {exc}",
                                    (time.perf_counter() - t0) * 1000)  # fmt: skip
            raise
        self.recorder.tool_step(self.rollout, name, arguments, result, None, (time.perf_counter() - t0) * 1000)
        return result

    def verify(self, transcript: Any, final_state: Any | None = None) -> Any:
        result = self.inner.verify(transcript, final_state)
        self.rollout.env_done = self.rollout.env_done or bool(getattr(result, "done", False))
        return result

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if not callable(value) or name not in ("wait_for_completion", "fetch_training_trace"):
            return value
        rollout = self.rollout

        def watched(*args: Any, **kwargs: Any) -> Any:
            try:
                out = value(*args, **kwargs)
            except TimeoutError:
                rollout.timed_out = rollout.timed_out or name == "wait_for_completion"
                raise
            turns = getattr(out, "turns", None) if name == "fetch_training_trace" else None
            if turns and rollout.first_prompt is None:  # the agent's first call: where the training row's prompt ends
                rollout.first_prompt = list(turns[0].prompt_token_ids)
            return out

        return watched


class AdapterProxy:
    """The worker's harness adapter, noting when its loop stopped before the model or env did."""

    def __init__(self, inner: Any, recorder: ChildRecorder) -> None:
        self.inner, self.recorder = inner, recorder

    def run_white_box(self, model_step: Any, session: Any, limits: Any = None) -> Any:
        result = self.inner.run_white_box(model_step, session, limits)
        rollout = self.recorder.current()
        if rollout is not None:
            rollout.max_turns = not getattr(result, "done", True) or bool((getattr(result, "metrics", None) or {}).get("truncated"))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
