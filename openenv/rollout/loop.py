"""The rollout loop: N model episodes, K at a time, every step and completion recorded.

    rollout = Rollout(env_url, ModelEndpoint(url, model="m"), store, RolloutSettings(episodes=8))
    summary = await rollout.run()

Each of the K workers keeps one WebSocket session (a recording ``GenericEnvClient``, source
``model``) and plays episodes on it: reset with the episode's seed, then per step ask the model,
turn its reply into an action, step, and record the turn (prompt messages, raw completion, tool
calls, tokens, latency; ``EpisodeStore.record_turn``). A reply that is not a valid action (ours or
the server's ``VALIDATION_ERROR``) is retried once with the error; a second one is recorded as a
failed turn and ends the episode ``invalid_action``. A model server that fails after its bounded
retries ends the episode ``model_error`` (its recorded steps stay); an env error ends it ``env_error``.
No exception of one episode stops the others.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openenv.core.errors import ActionValidationError, CapacityError, ConnectionLostError, OpenEnvError
from openenv.core.generic_client import GenericEnvClient
from openenv.recording import EpisodeStore, RecordingError, record

from .chat import ChatClient, Completion, ModelEndpoint
from .errors import InvalidReplyError, ModelError, RolloutError
from .policy import Conversation, Policy
from .results import EpisodeResult, summarise
from .spec import EnvSpec, fetch_env_spec, mentions_tools

__all__ = ["Rollout", "RolloutSettings", "discover_tools", "play_turn"]

CAPACITY_RETRIES = 5  # a lone worker refused for capacity tries again this often before skipping


@dataclass
class RolloutSettings:
    """How many episodes, how they are seeded and judged. Episode ``i`` gets seed
    ``seed + i // samples_per_seed`` (``None``: no seed); success is ``done`` with a return of at
    least ``success_threshold`` (default: above 0)."""

    episodes: int = 1
    concurrency: int = 1
    max_steps: int = 20
    seed: int | None = 0
    samples_per_seed: int = 1
    label: str | None = None
    success_threshold: float | None = None
    history_turns: int = 16
    template: str | None = None
    tools: str = "auto"  # auto | on | off
    model_error_limit: int = 3  # consecutive failed episodes after which the rest are skipped

    def seed_for(self, index: int) -> int | None:
        return None if self.seed is None else self.seed + index // max(1, self.samples_per_seed)


async def discover_tools(base_url: str, headers: dict[str, str] | None = None) -> list[dict[str, Any]] | None:
    """An MCP env's tools, asked over a session of its own (``{"type": "list_tools"}``), so no
    recorded episode holds the discovery; ``None`` when the env has no tools."""
    async with GenericEnvClient(base_url=base_url, headers=headers) as env:
        await env.reset()
        try:
            result = await env.step({"type": "list_tools"})
        except ActionValidationError:
            return None
    tools = result.observation.get("tools") if isinstance(result.observation, dict) else None
    return [t for t in tools if isinstance(t, dict) and t.get("name")] if isinstance(tools, list) else None


def _turn_data(endpoint: ModelEndpoint, messages: list[dict[str, Any]], c: Completion | None,
               attempts: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    data: dict[str, Any] = {"model": endpoint.model, "messages": messages, "attempts": attempts}
    if c is not None:
        data.update(completion=c.text, tool_calls=c.tool_calls, prompt_tokens=c.prompt_tokens,
                    completion_tokens=c.completion_tokens, latency_ms=round(c.latency_ms, 3),
                    finish_reason=c.finish_reason, http_attempts=c.attempts)  # fmt: skip
        if c.capture is not None:  # the same turn record as `openenv capture` writes (openenv.capture.recording)
            cap = dict(c.capture)
            data.update(tools=tools, reply=cap.pop("reply"), capture=cap)
    return data


async def play_turn(env: Any, conv: Conversation, chat: ChatClient, result: EpisodeResult | None = None,
                    phase: Callable[[str], None] | None = None) -> Any:  # fmt: skip
    """One model turn on a recording client: ask, act, retry once on an invalid action, record the
    turn. Returns the ``StepResult``; raises ``InvalidReplyError`` (the failed turn is recorded at
    the next index) or ``ModelError``. ``phase("model" | "env" | "idle")`` tells a caller when the
    turn may be cancelled without losing anything (while it waits for the model)."""
    attempts: list[dict[str, Any]] = []
    mark = phase or (lambda _p: None)
    for attempt in (0, 1):
        messages = conv.prompt()
        mark("model")
        completion = await chat.complete(messages, conv.policy.tools)
        mark("env")
        if result is not None:
            result.model_ms.append(completion.latency_ms)
            result.prompt_tokens += completion.prompt_tokens or 0
            result.completion_tokens += completion.completion_tokens or 0
        try:
            action = conv.take(completion)
            step = await env.step(action)
        except (InvalidReplyError, ActionValidationError) as exc:
            error = exc.message
            if isinstance(exc, ActionValidationError) and exc.details.get("errors"):
                error = f"{error}: {exc.details['errors']}"
            failed = _turn_data(chat.endpoint, messages, completion, [], conv.policy.tools)
            failed.pop("attempts")
            failed["error"] = error
            attempts.append(failed)
            if result is not None:
                result.invalid_replies += 1
            if attempt == 0:
                conv.retry(error)
                continue
            data = {**failed, "failed": True, "attempts": attempts[:-1]}
            env.record_turn("model", data, index=env.step_index + 1)
            mark("idle")
            raise InvalidReplyError(error, completion=completion.text) from None
        env.record_turn("model", _turn_data(chat.endpoint, messages, completion, attempts, conv.policy.tools))
        mark("idle")
        return step
    raise AssertionError("unreachable")


class Rollout:
    """One rollout run; ``results`` fill in live (``on_update(result)`` after each change)."""

    def __init__(
        self,
        env_url: str,
        endpoint: ModelEndpoint,
        store: EpisodeStore,
        settings: RolloutSettings,
        *,
        on_update: Callable[[EpisodeResult], None] | None = None,
        info: dict[str, Any] | None = None,
        env_headers: dict[str, str] | None = None,
    ) -> None:
        self.env_url = env_url.rstrip("/")
        self.env_headers = dict(env_headers or {})  # e.g. a Ray env's bearer token; never recorded
        self.endpoint = endpoint
        self.store = store
        self.settings = settings
        self.id = uuid.uuid4().hex[:12]
        self.label = settings.label or f"rollout-{self.id}"
        self.on_update = on_update
        self.extra_info = info or {}
        self.results = [EpisodeResult(index=i, seed=settings.seed_for(i)) for i in range(max(0, settings.episodes))]
        self.spec: EnvSpec | None = None
        self.started_at: float | None = None
        self.wall_s: float | None = None
        self._failing = 0
        self._stopping = False
        self._sessions = 0  # env sessions the workers hold
        self._live = 0  # workers still running
        self.capacity_note: str | None = None  # set when the env served fewer sessions than asked
        self._phases: dict[asyncio.Task[Any], str] = {}

    def info(self) -> dict[str, Any]:
        """What each recorded run keeps (``env_run.info``): model and settings, never the API key."""
        s = self.settings
        return {
            "rollout": {"id": self.id, "label": self.label, "episodes": s.episodes, "concurrency": s.concurrency,
                        "max_steps": s.max_steps, "seed": s.seed, "samples_per_seed": s.samples_per_seed,
                        "mode": self.policy.mode if self.spec else None, "custom_prompt": s.template is not None},
            "model": self.endpoint.settings(),
            **self.extra_info,
        }  # fmt: skip

    async def prepare(self) -> Policy:
        """Read the env's metadata, schemas and tools; build the policy."""
        spec = await fetch_env_spec(self.env_url, headers=self.env_headers)
        mode = self.settings.tools
        if mode == "on" or (mode == "auto" and mentions_tools(spec.action_schema)):
            tools = await discover_tools(self.env_url, self.env_headers)
            if tools:
                spec = EnvSpec(spec.name, spec.description, spec.version, spec.action_schema,
                               spec.observation_schema, tools)  # fmt: skip
        self.spec = spec
        self.policy = Policy(spec, template=self.settings.template, history_turns=self.settings.history_turns,
                             max_steps=self.settings.max_steps)  # fmt: skip
        return self.policy

    async def run(self) -> dict[str, Any]:
        """Play every episode; returns the summary (``results.summarise``)."""
        if self.spec is None:
            await self.prepare()
        self.started_at = time.time()
        t0 = time.perf_counter()
        queue: asyncio.Queue[EpisodeResult] = asyncio.Queue()
        for r in self.results:
            queue.put_nowait(r)
        async with ChatClient(self.endpoint, max_connections=max(4, self.settings.concurrency)) as chat:
            workers = [asyncio.create_task(self._worker(queue, chat)) for _ in range(max(1, self.settings.concurrency))]
            self._phases = dict.fromkeys(workers, "idle")
            try:
                done = await asyncio.gather(*workers, return_exceptions=True)
                errors = [e for e in done if isinstance(e, BaseException) and not isinstance(e, asyncio.CancelledError)]
                if errors:
                    raise errors[0]
            finally:
                for w in workers:
                    w.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                self.wall_s = time.perf_counter() - t0
                for r in self.results:
                    if r.status == "pending":
                        r.status, r.error = "skipped", "skipped: the run was stopped"
        return self.summary()

    def stop(self) -> None:
        """End the run soon without losing a step: episodes waiting for the model are cancelled
        (they end ``closed``), the others end ``cancelled`` after the step they are taking."""
        self._stopping = True
        for task, phase in self._phases.items():
            if phase == "model":
                task.cancel()

    def _phase(self, value: str) -> None:
        task = asyncio.current_task()
        if task in self._phases:
            self._phases[task] = value
            if self._stopping and value == "model":
                task.cancel()

    def summary(self) -> dict[str, Any]:
        out = summarise(self.results, wall_s=self.wall_s)
        if self.capacity_note:
            out["note"] = self.capacity_note
        return out

    def _update(self, r: EpisodeResult) -> None:
        if self.on_update is not None:
            self.on_update(r)

    def _recording_client(self) -> Any:
        return record(GenericEnvClient(base_url=self.env_url, headers=self.env_headers), store=self.store, source="model", label=self.label,
                      env_name=self.spec.name if self.spec else None, info=self.info())  # fmt: skip

    async def _worker(self, queue: asyncio.Queue[EpisodeResult], chat: ChatClient) -> None:
        env, holding = None, False  # holding: this worker's session was accepted (a reset went through)
        refusals = 0
        self._live += 1
        try:
            while not queue.empty():
                r = queue.get_nowait()
                if self._stopping or self._failing >= max(1, self.settings.model_error_limit):
                    why = "the run was stopped" if self._stopping else "the model server kept failing"
                    r.status, r.error = "skipped", f"skipped: {why}"
                    self._update(r)
                    continue
                if env is None:
                    env = self._recording_client()
                try:
                    await env.connect()  # a no-op once open
                    lost = await self._episode(env, r, chat)
                except (_NoSession, OpenEnvError) as exc:
                    await _close(env)
                    env = None
                    cause = exc.__cause__ if isinstance(exc, _NoSession) else exc
                    if isinstance(cause, CapacityError) and self._live > 1 and not holding:
                        # the env serves fewer sessions than the concurrency asked for: leave the
                        # episode to the other workers
                        self.capacity_note = f"the env accepted fewer sessions than the concurrency: {cause}"
                        r.status, r.started_at = "pending", None
                        queue.put_nowait(r)
                        return
                    if isinstance(cause, CapacityError) and not holding and refusals < CAPACITY_RETRIES:
                        refusals += 1  # the last worker: the sessions the others held are being freed
                        r.status, r.started_at = "pending", None
                        queue.put_nowait(r)
                        await asyncio.sleep(0.1 * refusals)
                        continue
                    r.status, r.error = "skipped", f"cannot open an env session: {cause}"
                    self._update(r)
                    continue
                if not holding:
                    holding = True
                    self._sessions += 1
                if lost:
                    await _close(env)
                    env = None
        finally:
            self._live -= 1
            if holding:
                self._sessions -= 1
            if env is not None:
                await _close(env)

    async def _episode(self, env: Any, r: EpisodeResult, chat: ChatClient) -> bool:
        """Play one episode; True when the env session is unusable afterwards."""
        s = self.settings
        r.status, r.started_at = "running", time.time()
        lost = False
        try:
            try:
                result = await (env.reset(seed=r.seed) if r.seed is not None else env.reset())
            except (CapacityError, ConnectionLostError) as exc:  # no session: the worker decides
                raise _NoSession() from exc
            r.episode_id = env.episode_id
            self._update(r)
            conv = self.policy.conversation()
            conv.observe(result.observation, result.reward, result.done, 0)
            r.done = bool(result.done)
            while not r.done and r.steps < s.max_steps and not self._stopping:
                result = await play_turn(env, conv, chat, r, self._phase)
                r.steps += 1
                r.total_reward += float(result.reward or 0.0)
                r.done = bool(result.done)
                conv.observe(result.observation, result.reward, result.done, r.steps)
                self._update(r)
            r.end_reason = "done" if r.done else "cancelled" if self._stopping else "max_steps"
            if not r.done:
                env.end_episode(r.end_reason)
            self._failing = 0
        except asyncio.CancelledError:
            if self._stopping:  # stopped while waiting for the model: nothing was in flight at the env
                r.end_reason = "cancelled"
                env.end_episode("cancelled")
            raise
        except InvalidReplyError as exc:
            r.end_reason, r.error = "invalid_action", exc.message
            env.end_episode("invalid_action")
            self._failing = 0
        except ModelError as exc:
            r.end_reason, r.error = "model_error", str(exc)
            env.end_episode("model_error")
            self._failing += 1
        except RolloutError as exc:  # the prompt template failed
            r.end_reason, r.error = "prompt_error", str(exc)
            env.end_episode("prompt_error")
        except RecordingError:
            raise  # the store failed: stop the run rather than play on unrecorded
        except (ConnectionLostError, OSError) as exc:
            r.end_reason, r.error, lost = "env_error", str(exc), True
            env.end_episode("env_error")
        except OpenEnvError as exc:
            r.end_reason, r.error = "env_error", str(exc)
            env.end_episode("env_error")
        finally:
            r.status, r.ended_at = "finished", time.time()
        threshold = s.success_threshold
        r.success = r.done and (r.total_reward >= threshold if threshold is not None else r.total_reward > 0)
        self._update(r)
        return lost


class _NoSession(Exception):
    """The env refused or dropped the session before the episode began (``__cause__`` says why)."""


async def _close(env: Any) -> None:
    try:
        await env.close()
    except (OpenEnvError, OSError):
        pass
