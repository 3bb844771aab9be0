"""Contract tests for environment authors: ``check_env`` and the ``EnvContractTests`` mixin.

    from openenv.core.testing import EnvContractTests, check_env

    check_env(MyEnvironment, actions=[MyAction(x=1)])    # raises EnvCheckError listing failures

    class TestMyEnv(EnvContractTests):                    # one pytest test per check
        env_factory = MyEnvironment
        actions = [MyAction(x=1)]

The checks run the environment in process (types, state, seeded determinism, step after done,
close; see :mod:`openenv.core.testing_checks`), then serve it on 127.0.0.1 and run a real
episode over WebSocket and HTTP (serialisation round trip, error shapes, step before reset,
capacity, close; see :mod:`openenv.core.testing_wire_checks`).
"""

from __future__ import annotations

import inspect
import sys
import unittest
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import TypeAdapter, ValidationError

from openenv.core.env_server.serialization import observation_to_wire, to_jsonable
from openenv.core.testing_checks import IN_PROCESS_CHECKS, EnvUnderTest
from openenv.core.testing_report import (
    FAIL,
    SKIP,
    CheckFailed,
    CheckReport,
    CheckResult,
    EnvCheckError,
)
from openenv.core.testing_server import serve_in_thread
from openenv.core.testing_wire import Wire, WsSession, expect_observation, expect_state
from openenv.core.testing_wire_checks import run_wire_checks

__all__ = [
    "CheckReport",
    "CheckResult",
    "EnvCheckError",
    "EnvContractTests",
    "check_env",
    "check_round_trip",
    "run_wire_checks",
    "serve_in_thread",
]


def _rebuild(cls: type | None, data: dict[str, Any], what: str) -> Any:
    if cls is None:
        return data
    try:
        return TypeAdapter(cls).validate_python(data)
    except ValidationError as exc:
        raise CheckFailed(f"{what} does not rebuild into {cls.__name__}: {exc.errors(include_url=False)[:2]}") from None


def check_round_trip(ctx: EnvUnderTest, base_url: str) -> str:
    """Actions, observations and state survive the trip over the wire unchanged."""
    wire = Wire(base_url)
    try:
        with wire.ws() as ws:
            return _round_trip(ctx, ws)
    finally:
        wire.close()


def _round_trip(ctx: EnvUnderTest, ws: WsSession) -> str:
    for action in ctx.sample_actions():
        data = to_jsonable(action)
        if ctx.codec.parse(data) != action:
            raise CheckFailed(f"action {data} does not parse back into an equal {type(action).__name__}")
    payloads = [expect_observation(ws.request({"type": "reset", "data": {"seed": ctx.seed}}), None, "reset")]
    for action in ctx.sample_actions()[: ctx.max_steps]:
        payloads.append(expect_observation(ws.request({"type": "step", "data": to_jsonable(action)}), None, "step"))
        if payloads[-1]["done"]:
            break
    for n, payload in enumerate(payloads):
        fields = {**payload["observation"], "reward": payload["reward"], "done": payload["done"]}
        if payload.get("metadata"):
            fields["metadata"] = payload["metadata"]
        cls = ctx.reset_observation_cls if n == 0 else ctx.observation_cls
        try:
            obs = _rebuild(cls, fields, f"observation {n}")
        except CheckFailed:
            if n == 0 and not ctx.reset_declared:
                continue  # an undeclared reset observation (0.10 allows any): not held to the step class
            raise
        if cls is not None and observation_to_wire(obs) != payload:
            raise CheckFailed(f"observation {n} changes on a round trip: {payload} -> {observation_to_wire(obs)}")
    state = expect_state(ws.request({"type": "state"}), None, "state")
    if to_jsonable(_rebuild(ctx.state_cls, state, "state")) != state:
        raise CheckFailed(f"state changes on a round trip: {state}")
    return f"{len(payloads)} observation(s) and the state round-tripped"


def _served(ctx: EnvUnderTest, report: CheckReport) -> None:
    from openenv.core.env_server.http_server import create_app

    options = {}
    if ctx.factory is not None:  # a small cap, so the capacity check runs too
        options["max_concurrent_envs"] = 2 if getattr(ctx.env_cls, "SUPPORTS_CONCURRENT_SESSIONS", False) else 1
    app = create_app(ctx.source, ctx.action_cls, ctx.observation_cls, web=False, **options)
    with serve_in_thread(app) as url:
        report.run("wire.round_trip", lambda: check_round_trip(ctx, url))
        actions = [to_jsonable(a) for a in ctx.actions]
        run_wire_checks(url, actions=actions, seed=ctx.seed, max_steps=ctx.max_steps,
                        deterministic_steps=ctx.deterministic_steps, report=report)


def check_env(
    env: Any,
    *,
    actions: Sequence[Any] | None = None,
    action_cls: type | None = None,
    observation_cls: type | None = None,
    seed: int = 0,
    max_steps: int = 50,
    deterministic_steps: bool = True,
    wire: bool = True,
    raise_on_failure: bool = True,
) -> CheckReport:
    """Check that ``env`` (a class, zero-argument factory or instance) honours the contract.

    Args:
        actions: actions to step with (objects or wire dicts); default one sampled from the schema.
        action_cls / observation_cls: override the types inferred from ``step``'s annotations.
        seed: seed for the episodes and the determinism checks.
        max_steps: bound on the episode played to reach ``done``.
        deterministic_steps: the same seed and actions must give the same observations
            (pass False for envs whose steps carry timings or other noise).
        wire: also serve the env on 127.0.0.1 and check it over WebSocket and HTTP.

    Returns:
        The report of every check (pass, fail, skip or warn, with a message).

    Raises:
        EnvCheckError: a check failed (unless ``raise_on_failure`` is false); ``err.report`` has all.
    """
    ctx = EnvUnderTest(env, actions=actions, action_cls=action_cls, observation_cls=observation_cls,
                       seed=seed, max_steps=max_steps, deterministic_steps=deterministic_steps)
    report = CheckReport(ctx.name)
    if ctx.actions or report.run("env.actions", lambda: _describe_actions(ctx)).status != FAIL:
        for name, check in IN_PROCESS_CHECKS:
            report.run(name, lambda check=check: check(ctx))
        if wire:
            _served(ctx, report)
    if raise_on_failure:
        report.raise_for_failures()
    return report


def _describe_actions(ctx: EnvUnderTest) -> str:
    return f"sampled {to_jsonable(ctx.sample_actions()[0])}"


def _unbound(owner: Any, name: str) -> Any:
    value = inspect.getattr_static(owner, name, None)
    return value.__func__ if isinstance(value, (staticmethod, classmethod)) else value


class EnvContractTests:
    """Mixin: one test per contract check. Set ``env_factory`` (class or zero-argument factory).

    Optional: ``actions`` (objects or wire dicts), ``seed``, ``max_steps``, ``action_cls``,
    ``observation_cls``, ``deterministic_steps`` (False when steps carry timings or noise). Override :meth:`make_env` for a factory that needs the test instance.
    """

    env_factory: ClassVar[Any] = None
    actions: ClassVar[Sequence[Any]] = ()
    seed: ClassVar[int] = 0
    max_steps: ClassVar[int] = 50
    deterministic_steps: ClassVar[bool] = True
    action_cls: ClassVar[type | None] = None
    observation_cls: ClassVar[type | None] = None

    def make_env(self) -> Any:
        """A new environment instance."""
        factory = _unbound(self, "env_factory")
        if factory is None:
            raise EnvCheckError(f"{type(self).__name__}: set env_factory (an Environment class or factory)")
        return factory()

    def _env_under_test(self) -> EnvUnderTest:
        overridden = type(self).make_env is not EnvContractTests.make_env
        source = self.make_env if overridden else _unbound(self, "env_factory")
        if source is None:
            raise EnvCheckError(f"{type(self).__name__}: set env_factory (an Environment class or factory)")
        return EnvUnderTest(
            source,
            actions=list(self.actions) or None,
            action_cls=_unbound(self, "action_cls"),
            observation_cls=_unbound(self, "observation_cls"),
            seed=self.seed,
            max_steps=self.max_steps,
            deterministic_steps=self.deterministic_steps,
        )

    def _check(self, name: str) -> None:
        ctx = self._env_under_test()
        check = dict(IN_PROCESS_CHECKS)[name]
        _settle(CheckReport(ctx.name).run(name, lambda: check(ctx)))

    def test_reset_returns_an_observation(self) -> None:
        self._check("env.reset")

    def test_step_returns_an_observation(self) -> None:
        self._check("env.step")

    def test_state_follows_the_episode(self) -> None:
        self._check("env.state")

    def test_same_seed_gives_the_same_first_observation(self) -> None:
        self._check("env.seed_determinism")

    def test_same_seed_and_actions_give_the_same_observations(self) -> None:
        self._check("env.step_determinism")

    def test_step_after_done_is_an_observation_or_a_coded_error(self) -> None:
        self._check("env.step_after_done")

    def test_close_releases_resources(self) -> None:
        self._check("env.close")

    def test_over_the_wire(self) -> None:
        ctx = self._env_under_test()
        report = CheckReport(ctx.name)
        _served(ctx, report)
        report.raise_for_failures()


def _settle(result: CheckResult) -> None:
    if result.status == FAIL:
        raise EnvCheckError(f"{result.name}: {result.message}")
    if result.status == SKIP:
        if "pytest" in sys.modules:  # report the skip at the test, not inside pytest's unittest shim
            sys.modules["pytest"].skip(f"{result.name}: {result.message}")
        raise unittest.SkipTest(f"{result.name}: {result.message}")
