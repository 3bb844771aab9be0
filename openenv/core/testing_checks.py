"""In-process contract checks on one environment (what ``check_env`` runs before the wire checks).

Expectations, one line each:

* ``reset``/``step`` return the declared observation type, serialisable, ``reward`` a number
  or ``None``, ``done`` a bool.
* an env with its own ``state`` reports the episode: ``episode_id`` as passed to ``reset``,
  ``step_count`` 0 after reset and +1 per step (or, without ``step_count``, a state that changes).
* ``reset(seed=s)`` gives the same first observation every time, on any instance; and, unless
  steps are declared non-deterministic, the same actions then give the same observations.
* a step after ``done`` returns an observation or raises an ``OpenEnvError`` (a coded error on
  the wire); any other exception is a failure. A step before reset is refused by the server.
* ``close()`` stops the threads and child processes the environment started.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.introspection import method_annotation, resolve_env, state_class
from openenv.core.env_server.serialization import (
    ActionCodec,
    dumps,
    json_schema,
    observation_to_wire,
    to_jsonable,
)
from openenv.core.errors import OpenEnvError
from openenv.core.testing_report import (
    CheckFailed,
    CheckSkipped,
    CheckWarning,
    episode_id_warning,
    first_difference,
)
from openenv.core.testing_schema import sample_value

__all__ = ["IN_PROCESS_CHECKS", "EnvUnderTest"]

EPISODE_ID = "check-env-episode"
RELEASE_WAIT_S = 5.0
DETERMINISM_STEPS = 5


class EnvUnderTest:
    """An environment source (class, factory or instance) with its types and the actions to try."""

    def __init__(
        self,
        env: Any,
        *,
        actions: Sequence[Any] | None = None,
        action_cls: type | None = None,
        observation_cls: type | None = None,
        reset_observation_cls: type | None = None,
        seed: int = 0,
        max_steps: int = 50,
        deterministic_steps: bool = True,
    ) -> None:
        resolved = resolve_env(env)
        self.factory: Callable[[], Any] | None = resolved.factory
        self.instance: Any = resolved.instance
        self.env_cls = env_cls = resolved.env_cls
        self.action_cls = action_cls or method_annotation(env_cls, "step", "action")
        self.observation_cls = observation_cls or method_annotation(env_cls, "step", "return")
        self.reset_observation_cls = reset_observation_cls or self.observation_cls  # 0.10's reset_observation_cls
        #: a reset observation class was given: reset is held to it (else, as 0.10 serves it, reset may
        #: return any observation, e.g. an MCP env's plain ``Observation`` beside ``CallToolObservation``)
        self.reset_declared = reset_observation_cls is not None
        self.state_cls = state_class(env_cls)
        self.seed = seed
        self.max_steps = max_steps
        self.deterministic_steps = deterministic_steps
        self.codec = ActionCodec(self.action_cls)
        self.actions = [self._action(a) for a in actions] if actions else []
        self.name = getattr(env_cls, "__name__", None) or repr(env)

    @property
    def source(self) -> Any:
        return self.factory if self.factory is not None else self.instance

    def _action(self, action: Any) -> Any:
        return self.codec.parse(action) if isinstance(action, dict) and self.action_cls not in (None, dict) else action

    def sample_actions(self) -> list[Any]:
        """The given actions, or one sampled from the action type's schema."""
        if not self.actions:
            if self.action_cls is None:
                raise CheckFailed("cannot tell the action type: annotate step(action: MyAction) or pass action_cls")
            try:
                self.actions = [self.codec.parse(sample_value(json_schema(self.action_cls)))]
            except OpenEnvError as exc:
                raise CheckFailed(f"could not build a sample {self.action_cls.__name__}; pass actions=[...] ({exc.message})") from None
        return self.actions

    def make(self) -> Any:
        return self.factory() if self.factory is not None else self.instance

    def dispose(self, env: Any) -> None:
        if self.factory is not None:
            close(env)

    def wire(self, obs: Any, what: str) -> dict[str, Any]:
        """Check one observation's type and serialisability; return its wire form."""
        reset = what.startswith("reset")
        expected = self.reset_observation_cls if reset else self.observation_cls
        if (reset and not self.reset_declared and expected is not None and not isinstance(obs, expected)
                and (isinstance(obs, BaseModel) or dataclasses.is_dataclass(obs))):
            expected = None  # undeclared: any Observation model or dataclass will do, as on 0.10
        if expected is not None and not isinstance(obs, expected):
            raise CheckFailed(f"{what} returned {type(obs).__name__}, expected {expected.__name__}")
        if expected is None and not (isinstance(obs, BaseModel) or dataclasses.is_dataclass(obs)):
            raise CheckFailed(f"{what} returned {type(obs).__name__}, expected an Observation model or dataclass")
        payload = observation_to_wire(obs)
        try:
            dumps(payload)
        except TypeError as exc:
            raise CheckFailed(f"{what}: observation is not JSON-serialisable ({exc})") from None
        reward = payload["reward"]
        if reward is not None and not isinstance(reward, (bool, int, float)):
            raise CheckFailed(f"{what}: reward must be a number or None, got {type(reward).__name__}")
        if not isinstance(getattr(obs, "done", False), bool):
            raise CheckFailed(f"{what}: done must be a bool")
        return payload


def close(env: Any) -> None:
    """Close as the server would: ``close_async`` when only that is overridden."""
    if Environment.overrides(env, "close_async") and not Environment.overrides(env, "close"):
        asyncio.run(env.close_async())
    else:
        env.close()


def _own_state(env: Any) -> bool:
    return Environment.overrides(env, "state") or "state" in getattr(env, "__dict__", {})


def _comparable(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: payload[k] for k in ("observation", "reward", "done")}


def check_reset(ctx: EnvUnderTest) -> str:
    env = ctx.make()
    try:
        ctx.wire(env.reset(seed=ctx.seed, episode_id=EPISODE_ID), "reset()")
    finally:
        ctx.dispose(env)
    return f"{type(env).__name__}.reset -> {ctx.observation_cls.__name__ if ctx.observation_cls else 'observation'}"


def check_step(ctx: EnvUnderTest) -> str:
    env = ctx.make()
    steps = 0
    try:
        ctx.wire(env.reset(seed=ctx.seed), "reset()")
        for action in ctx.sample_actions()[: ctx.max_steps]:
            steps += 1
            if ctx.wire(env.step(action), f"step {steps}")["done"]:
                break
    finally:
        ctx.dispose(env)
    return f"{steps} step(s)"


def check_state(ctx: EnvUnderTest) -> str:
    env = ctx.make()
    try:
        if not _own_state(env):
            raise CheckSkipped("the default state is kept by the server; checked over the wire")
        env.reset(seed=ctx.seed, episode_id=EPISODE_ID)
        before = _state_dict(ctx, env, "after reset")
        warning = episode_id_warning(before["episode_id"], EPISODE_ID) if "episode_id" in before else ""
        if "step_count" in before and before["step_count"] != 0:
            raise CheckFailed(f"state.step_count is {before['step_count']} after reset, expected 0")
        for n, action in enumerate(ctx.sample_actions()[: ctx.max_steps], 1):
            obs = env.step(action)
            after = _state_dict(ctx, env, f"after step {n}")
            if "step_count" in after and after["step_count"] != n:
                raise CheckFailed(f"state.step_count is {after['step_count']} after {n} step(s): state does not follow steps")
            if "step_count" not in after and after == before:
                raise CheckFailed(f"state did not change after step {n}")
            before = after
            if getattr(obs, "done", False):
                break
    finally:
        ctx.dispose(env)
    if warning:
        raise CheckWarning(warning)
    return ""


def _state_dict(ctx: EnvUnderTest, env: Any, when: str) -> dict[str, Any]:
    state = env.state
    if ctx.state_cls is not None and not isinstance(state, ctx.state_cls):
        raise CheckFailed(f"state {when} is {type(state).__name__}, expected {ctx.state_cls.__name__}")
    data = to_jsonable(state)
    if not isinstance(data, dict):
        raise CheckFailed(f"state {when} is not an object: {type(state).__name__}")
    return data


def check_seed_determinism(ctx: EnvUnderTest) -> str:
    env = ctx.make()
    try:
        first = _comparable(ctx.wire(env.reset(seed=ctx.seed), "reset()"))
        for action in ctx.sample_actions()[:3]:
            if getattr(env.step(action), "done", False):
                break
        again = _comparable(ctx.wire(env.reset(seed=ctx.seed), "reset() again"))
    finally:
        ctx.dispose(env)
    if again != first:
        raise CheckFailed(
            f"reset(seed={ctx.seed}) gave a different first observation the second time: {first_difference(first, again)}"
        )
    if ctx.factory is None:
        return "same instance only (no factory)"
    fresh = ctx.make()
    try:
        other = _comparable(ctx.wire(fresh.reset(seed=ctx.seed), "reset() on a new instance"))
    finally:
        ctx.dispose(fresh)
    if other != first:
        raise CheckFailed(
            f"reset(seed={ctx.seed}) on a new instance gave a different first observation: {first_difference(first, other)}"
        )
    return f"seed {ctx.seed}"


def _trajectory(ctx: EnvUnderTest, env: Any) -> list[dict[str, Any]]:
    seen = [_comparable(ctx.wire(env.reset(seed=ctx.seed), "reset()"))]
    actions = itertools.cycle(ctx.sample_actions())
    for n in range(1, min(ctx.max_steps, DETERMINISM_STEPS) + 1):
        seen.append(_comparable(ctx.wire(env.step(next(actions)), f"step {n}")))
        if seen[-1]["done"]:
            break
    return seen


def check_step_determinism(ctx: EnvUnderTest) -> str:
    if not ctx.deterministic_steps:
        raise CheckSkipped("steps declared non-deterministic")
    runs = []
    for _ in range(2):
        env = ctx.make()
        try:
            runs.append(_trajectory(ctx, env))
        finally:
            ctx.dispose(env)
    for n, (one, two) in enumerate(zip(runs[0], runs[1], strict=False)):
        if one != two:
            raise CheckFailed(
                f"same seed and actions, different observation at step {n}: {first_difference(one, two)} "
                "(seed every random source from reset's seed, or declare steps non-deterministic)"
            )
    return f"{len(runs[0]) - 1} step(s) replayed"


def check_step_after_done(ctx: EnvUnderTest) -> str:
    env = ctx.make()
    try:
        env.reset(seed=ctx.seed)
        actions = itertools.cycle(ctx.sample_actions())
        for n in range(1, ctx.max_steps + 1):
            if ctx.wire(env.step(next(actions)), f"step {n}")["done"]:
                break
        else:
            raise CheckSkipped(f"the episode did not end within {ctx.max_steps} steps")
        try:
            ctx.wire(env.step(next(actions)), "step after done")
            outcome = "an observation"
        except OpenEnvError as exc:
            outcome = f"{type(exc).__name__} ({exc.code})"
        except CheckFailed:
            raise
        except Exception as exc:
            raise CheckFailed(
                f"step after done raised {type(exc).__name__}: {exc}; return an observation or raise an OpenEnvError"
            ) from None
    finally:
        ctx.dispose(env)
    return f"done after {n} step(s); step after done gave {outcome}"


def _children() -> set[int]:
    me, found = os.getpid(), set()
    if not os.path.isdir("/proc"):
        return found
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(entry))
    return found


def _lifecycle(ctx: EnvUnderTest) -> None:
    env = ctx.make()
    try:
        env.reset(seed=ctx.seed)
        env.step(ctx.sample_actions()[0])
    finally:
        close(env)


def _pool_of(thread: threading.Thread) -> object | None:
    """The ``ThreadPoolExecutor`` a worker thread belongs to (None for other threads).

    A pool that already ran before the check may grow by a thread during it (two calls at once
    on an event loop's default executor): that is the pool's, not a thread the env leaked."""
    target = getattr(thread, "_target", None)
    if getattr(target, "__module__", None) != "concurrent.futures.thread":
        return None
    args = getattr(thread, "_args", ())
    return args[0]() if args and callable(args[0]) else None


def check_close(ctx: EnvUnderTest) -> str:
    if ctx.factory is None:
        raise CheckSkipped("needs a class or factory to build instances of its own")
    _lifecycle(ctx)  # warm up: pools a library starts once are not the env's to stop
    threads, children = set(threading.enumerate()), _children()
    pools = {id(pool) for pool in map(_pool_of, threads) if pool is not None}
    _lifecycle(ctx)
    deadline = time.monotonic() + RELEASE_WAIT_S
    while True:
        left = [t.name for t in threading.enumerate()
                if t not in threads and t.is_alive() and id(_pool_of(t)) not in pools]
        procs = sorted(_children() - children)
        if not (left or procs) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if left or procs:
        found = ([f"threads {left}"] if left else []) + ([f"child processes {procs}"] if procs else [])
        raise CheckFailed(f"close() left {' and '.join(found)} running")
    return "no threads or child processes left"


IN_PROCESS_CHECKS: list[tuple[str, Callable[[EnvUnderTest], Any]]] = [
    ("env.reset", check_reset),
    ("env.step", check_step),
    ("env.state", check_state),
    ("env.seed_determinism", check_seed_determinism),
    ("env.step_determinism", check_step_determinism),
    ("env.step_after_done", check_step_after_done),
    ("env.close", check_close),
]
