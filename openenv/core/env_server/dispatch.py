"""reset/step/state on one session's environment — written once, shared by HTTP, WS and /web."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from openenv.core._deadline import with_deadline
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.serialization import (
    ActionCodec,
    observation_to_wire,
    safe_error_text,
    to_jsonable,
)
from openenv.core.env_server.sessions import Session
from openenv.core.env_server.types import State
from openenv.core.errors import (
    ActionValidationError,
    EnvBusyError,
    EnvExecutionError,
    OpenEnvError,
    StepInterruptedError,
    StepTimeoutError,
)

__all__ = ["Dispatcher", "parse_timeout", "reset_parameters"]

log = logging.getLogger("openenv.server")


@lru_cache(maxsize=128)
def _signature_params(cls: type, method: str) -> tuple[frozenset[str], bool]:
    """Names a method accepts, and whether it takes ``**kwargs``."""
    fn = getattr(cls, method, None)
    if fn is None:
        return frozenset(), False
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return frozenset(), True
    names = frozenset(p.name for p in sig.parameters.values() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))
    var_kw = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    return names - {"self"}, var_kw


def reset_parameters(env_cls: type) -> list[inspect.Parameter]:
    """The env's own reset keyword parameters (beyond seed/episode_id), for forms and docs."""
    method = "reset_async" if _overrides_cls(env_cls, "reset_async") else "reset"
    fn = getattr(env_cls, method, None)
    if fn is None:
        return []
    try:
        sig = inspect.signature(fn, eval_str=True)
    except (NameError, SyntaxError):  # an annotation that cannot be resolved: keep it as text
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    skip = {"self", "seed", "episode_id"}
    return [
        p
        for p in sig.parameters.values()
        if p.name not in skip and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def parse_timeout(value: Any) -> float | None:
    """Validate a request's optional ``timeout_s`` (a positive number)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ActionValidationError(
            "timeout_s must be a positive number",
            errors=[{"type": "greater_than", "loc": ["timeout_s"], "msg": "Input should be greater than 0"}],
        )
    return float(value)


def _overrides_cls(cls: type, name: str) -> bool:
    impl = getattr(cls, name, None)
    return impl is not None and impl is not getattr(Environment, name, None)


def _has_own_state(env: Any) -> bool:
    return _traits(type(env)).own_state or "state" in getattr(env, "__dict__", {})


@dataclass(frozen=True)
class _Traits:
    """What the dispatcher needs to know about an environment class, computed once."""

    async_reset: bool
    async_step: bool
    step_takes_timeout: bool
    own_state: bool
    default_deadline_to_step: bool


@lru_cache(maxsize=256)
def _traits(cls: type) -> _Traits:
    async_step = _overrides_cls(cls, "step_async")
    names, var_kw = _signature_params(cls, "step_async" if async_step else "step")
    return _Traits(
        async_reset=_overrides_cls(cls, "reset_async"),
        async_step=async_step,
        step_takes_timeout=var_kw or "timeout_s" in names,
        own_state=_overrides_cls(cls, "state"),
        # An env with its own per-step budget (HarnessEnvironment: the harness config's turn
        # timeout) gets ``timeout_s`` only when the request sends one, as on 0.10; the server's
        # default deadline still bounds the call from outside.
        default_deadline_to_step=getattr(cls, "_openenv_default_deadline_to_step", True),
    )


class UnexpectedObservation(EnvExecutionError):
    """A step answered with another observation class than the caller needs (MCP-style tools)."""


class Dispatcher:
    """Runs environment calls with deadlines, error translation and episode bookkeeping."""

    def __init__(self, *, codec: ActionCodec, executor: ThreadPoolExecutor, default_timeout_s: float | None,
                 nest_metadata: bool = True) -> None:
        self.codec = codec
        self.executor = executor
        self.default_timeout_s = default_timeout_s
        self.nest_metadata = nest_metadata  # see observation_to_wire

    # -- public operations ----------------------------------------------------------------

    async def reset(self, session: Session, data: dict[str, Any], *, timeout_s: float | None = None) -> dict[str, Any]:
        """Start an episode; ``data`` holds seed/episode_id and env-specific kwargs.

        A step still running on the session's own environment is interrupted first (an async
        step is cancelled; a sync one left running in its thread gets the environment replaced
        by a fresh one from the factory, see ``_drain_pending``), so a reset answers within its
        own deadline even after a step that never ends.
        """
        kwargs = self._reset_kwargs(session.env, data)
        episode_id = kwargs.get("episode_id") or Environment.new_episode_id()
        session.interrupt("interrupted by a reset on the same session")
        env_cls = type(session.env)
        use_async = _traits(env_cls).async_reset
        call_kwargs = self._filter(env_cls, "reset_async" if use_async else "reset", kwargs)
        # ``session.env`` is read once the lock is held: a renewed environment is the one reset
        if use_async:
            obs = await self._run(session, lambda: session.env.reset_async(**call_kwargs), None, timeout_s,
                                  renew=True)
        else:
            obs = await self._run(session, None, lambda: session.env.reset(**call_kwargs), timeout_s, renew=True)
        session.episode_id, session.step_count = episode_id, 0
        session.reset_done = True
        payload = observation_to_wire(obs, nest_metadata=self.nest_metadata)
        session.done = payload["done"]
        self._sync_default_state(session)
        return payload

    async def step(
        self,
        session: Session,
        action_data: Any,
        *,
        timeout_s: float | None = None,
        require_reset: bool = True,
        kwargs: dict[str, Any] | None = None,
        expect: type | None = None,
    ) -> dict[str, Any]:
        """Validate and apply one action; ``kwargs`` (HTTP body keys, as 0.10) go to a step that accepts them.

        A step on a session never reset steps the fresh environment, as 0.10 does (TRL's echo
        example never resets): the session's episode then starts without a reset (a new episode id,
        step count from 0). ``require_reset=False`` (a throwaway HTTP session, MCP routes) leaves
        the session's episode bookkeeping alone.

        ``expect``: the observation class the step must return (MCP-style ``tools/list`` and
        ``tools/call``), else :class:`UnexpectedObservation`.
        """
        action = self.codec.parse(action_data)
        if not session.reset_done and require_reset and not self.codec.is_mcp_request(action_data):
            self._begin_without_reset(session)
        env = session.env
        deadline = self._deadline(timeout_s)
        traits = _traits(type(env))
        to_env = deadline if traits.default_deadline_to_step else timeout_s
        extra = {"timeout_s": to_env} if traits.step_takes_timeout and to_env else {}
        if kwargs:
            method = "step_async" if traits.async_step else "step"
            extra = {**self._filter(type(env), method, {k: v for k, v in kwargs.items() if k != "timeout_s"}), **extra}
        if traits.async_step or "step_async" in getattr(env, "__dict__", ()):  # 0.10 honours an instance's own
            obs = await self._run(session, lambda: env.step_async(action, **extra), None, deadline, interruptible=True)
        else:
            obs = await self._run(session, None, lambda: env.step(action, **extra), deadline, interruptible=True)
        if expect is not None and not isinstance(obs, expect):
            raise UnexpectedObservation(f"returned {type(obs).__name__}, expected {expect.__name__}")
        session.step_count += 1
        payload = observation_to_wire(obs, nest_metadata=self.nest_metadata)
        session.done = payload["done"]
        if not traits.own_state:
            self._sync_default_state(session)
        return payload

    async def state(self, session: Session) -> dict[str, Any]:
        """The session's state as a JSON object."""
        env = session.env
        if not _has_own_state(env):
            return {"episode_id": session.episode_id, "step_count": session.step_count}
        try:
            value = env.state
        except OpenEnvError:
            raise
        except Exception as exc:
            log.exception("environment state failed")
            raise EnvExecutionError(safe_error_text(exc)) from None
        data = to_jsonable(value)
        return data if isinstance(data, dict) else {"value": data}

    async def web_view(self, session: Session, data: Any) -> dict[str, Any]:
        """The environment's own view of ``data["observation"]``: ``{"html", "actions", "problem"}``.

        ``html`` is ``render_web(observation)`` (``None``: no view), ``actions`` the
        ``web_actions(observation)`` pairs as ``{"label", "action"}``. The hooks run like a step
        (the session's lock, a worker thread, the deadline), so a slow one never stalls the server;
        one that raises, overruns or returns the wrong shape is reported in ``problem``.
        """
        if data is None:
            data = {}
        observation = data.get("observation") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(observation, (dict, type(None))):
            raise ActionValidationError(
                "web_view needs {\"observation\": {...}}",
                errors=[{"type": "dict_type", "loc": ["data", "observation"], "msg": "Input should be an object"}],
            )
        env = session.env

        def draw() -> tuple[Any, Any]:
            html = env.render_web(dict(observation or {})) if callable(getattr(env, "render_web", None)) else None
            pairs = env.web_actions(dict(observation or {})) if callable(getattr(env, "web_actions", None)) else []
            return html, pairs

        view: dict[str, Any] = {"html": None, "actions": [], "problem": None}
        try:
            html, pairs = await self._run(session, None, draw, None)
            if html is not None and not isinstance(html, str):
                raise TypeError(f"render_web returned {type(html).__name__}, not str or None")
            actions = []
            for pair in pairs or []:
                label, action = pair
                if not isinstance(action, dict):
                    raise TypeError(f"web_actions gave {type(action).__name__} for {label!r}, not an action dict")
                actions.append({"label": str(label), "action": to_jsonable(action)})
        except OpenEnvError as exc:  # the hook raised (EnvExecutionError), overran or the env is busy
            view["problem"] = exc.message
            return view
        except (TypeError, ValueError) as exc:
            view["problem"] = safe_error_text(exc)
            return view
        view.update(html=html, actions=actions)
        return view

    async def call(self, session: Session, method: Callable[..., Any], *args: Any,
                   timeout_s: float | None = None) -> Any:
        """Run another env method like a step: the session's lock, the deadline, errors translated.

        A sync method runs in a worker thread (an awaitable it returns is then awaited); an async
        one is awaited on the loop.
        """
        if inspect.iscoroutinefunction(method):
            return await self._run(session, lambda: method(*args), None, timeout_s)
        result = await self._run(session, None, lambda: method(*args), timeout_s)
        if inspect.isawaitable(result):
            result = await self._run(session, lambda: result, None, timeout_s)
        return result

    # -- internals ------------------------------------------------------------------------

    def _deadline(self, timeout_s: float | None) -> float | None:
        return timeout_s if timeout_s is not None else self.default_timeout_s

    def _reset_kwargs(self, env: Any, data: Any) -> dict[str, Any]:
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise ActionValidationError(
                "Reset parameters must be a JSON object",
                errors=[{"type": "dict_type", "loc": ["data"], "msg": "Input should be an object"}],
            )
        errors = []
        seed = data.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            errors.append({"type": "int_type", "loc": ["seed"], "msg": "seed must be a non-negative integer"})
        episode_id = data.get("episode_id")
        if episode_id is not None and not isinstance(episode_id, str):
            errors.append({"type": "string_type", "loc": ["episode_id"], "msg": "episode_id must be a string"})
        if errors:
            raise ActionValidationError("Invalid reset parameters", errors=errors)
        return dict(data)

    @staticmethod
    def _filter(cls: type, method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        names, var_kw = _signature_params(cls, method)
        if var_kw:
            return kwargs
        return {k: v for k, v in kwargs.items() if k in names}

    async def _run(
        self,
        session: Session,
        make_coro: Callable[[], Awaitable[Any]] | None,
        sync_call: Callable[[], Any] | None,
        timeout_s: float | None,
        *,
        interruptible: bool = False,
        renew: bool = False,
    ) -> Any:
        """Run one env call under the session lock and a deadline, translating failures.

        ``interruptible``: a step, which ``Session.interrupt`` (a reset) may end; ``renew``: a
        reset, which replaces an environment still busy with an abandoned call (owned sessions).
        """
        timeout_s = self._deadline(timeout_s)
        async with session.lock:
            if session.pending is not None:
                await self._drain_pending(session, timeout_s, renew=renew)
            session.busy = True
            task = asyncio.current_task() if interruptible else None
            if task is not None:
                session.running, session.interrupted = task, None
            try:
                if make_coro is not None:
                    return await session.deadline.run(make_coro(), timeout_s)
                fut = asyncio.get_running_loop().run_in_executor(self.executor, sync_call)
                try:
                    return await session.deadline.run(asyncio.shield(fut), timeout_s)
                except (TimeoutError, asyncio.CancelledError):  # the thread runs on: remember it
                    session.pending = fut
                    fut.add_done_callback(_consume_result)
                    raise
            except TimeoutError:
                raise StepTimeoutError(
                    f"The environment did not answer within {timeout_s:g} s", timeout_s=timeout_s
                ) from None
            except asyncio.CancelledError:
                if task is None or session.interrupted is None:
                    raise
                reason, session.interrupted = session.interrupted, None
                task.uncancel()
                raise StepInterruptedError(f"The step was {reason}; its result was discarded") from None
            except OpenEnvError:
                raise
            except Exception as exc:
                log.exception("environment raised")
                raise EnvExecutionError(safe_error_text(exc)) from None
            finally:
                if task is not None:
                    if session.interrupted is not None:  # finished before the interruption landed
                        session.interrupted = None
                        task.uncancel()
                    session.running = None
                session.busy = False
                session.touch()

    async def _drain_pending(self, session: Session, timeout_s: float | None, *, renew: bool = False) -> None:
        """Settle a call that overran (or was interrupted) and still runs in its thread: a reset on a
        session that owns its environment swaps in a fresh one (``renew``); anything else waits a
        bounded time for it, then answers ``ENV_BUSY``."""
        pending = session.pending
        if pending is None:
            return
        if not pending.done() and renew and session.renew is not None:
            await session.renew()
            return
        if not pending.done():
            try:
                await with_deadline(asyncio.shield(pending), min(timeout_s or 5.0, 5.0))
            except TimeoutError:
                raise EnvBusyError(
                    "The environment is still running an earlier step that overran its deadline"
                ) from None
            except Exception:  # its outcome was already reported to the caller as a timeout
                log.debug("late outcome of an overrun call", exc_info=True)
        session.pending = None

    @staticmethod
    def _begin_without_reset(session: Session) -> None:
        """Open the session's episode at its first step when no reset came before it."""
        session.episode_id, session.step_count = Environment.new_episode_id(), 0
        session.reset_done = True
        log.debug("session %s stepped before any reset: episode %s starts without a reset", session.id,
                  session.episode_id)

    @staticmethod
    def _sync_default_state(session: Session) -> None:
        """Keep the default ``Environment.state`` (episode id, step count) true for envs without their own."""
        if _traits(type(session.env)).own_state:
            return
        state = session.env.__dict__.get("_openenv_default_state") if hasattr(session.env, "__dict__") else None
        if state is None and isinstance(session.env, Environment) and not _has_own_state(session.env):
            state = State()
            session.env.__dict__["_openenv_default_state"] = state
        if isinstance(state, State):
            state.episode_id = session.episode_id
            state.step_count = session.step_count


def _consume_result(fut: Any) -> None:
    """Retrieve a late result/exception so it is never reported as unhandled."""
    if not fut.cancelled():
        fut.exception()
