"""``HarnessEnvironment``: an environment whose each ``step`` is one turn of an external harness (RFC 005).

``reset()`` starts a fresh harness process (after injecting the environment's MCP tools, served
by a loopback :class:`~openenv.core.harness.bridge.HarnessMCPBridge`); ``step(HarnessAction(message=...))``
sends one user message and returns the harness's answer and the turn's events; ``ListToolsAction``
and ``CallToolAction`` keep their MCP meaning. A harness that died or overran its turn budget ends
the episode with a terminal observation (``metadata.error_type`` ``harness_crashed`` /
``turn_timeout``), its process group stopped. It serves with ``create_app`` like any environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from uuid import uuid4

from fastmcp import FastMCP

from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction, Tool
from openenv.core.env_server.types import Action, Observation, State
from openenv.core.harness.adapter import (
    AgenticHarnessAdapter,
    HarnessError,
    HarnessNotRunningError,
    HarnessTurnTimeoutError,
)
from openenv.core.harness.bridge import HarnessMCPBridge, build_bridge_server
from openenv.core.harness.events import HarnessEvent, HarnessEventType, events_to_metadata
from openenv.core.harness.tools import resolve_tool_conflicts
from openenv.core.utils import run_async_safely

__all__ = ["HarnessAction", "HarnessEnvironment"]

log = logging.getLogger(__name__)

_WRONG_ACTION = "HarnessEnvironment only accepts HarnessAction, ListToolsAction, or CallToolAction; got {}"


class HarnessAction(Action):
    """One user message: a conversational turn of the harness."""

    message: str


class HarnessEnvironment(MCPEnvironment):
    """An environment wrapping one turn-based agentic harness.

    Args:
        adapter: owns the harness process; give every environment instance its own (a factory
            for ``create_app`` builds a fresh adapter each time). Nothing starts before ``reset``.
        mcp: the environment's ``FastMCP`` tools to inject into the harness (``None``: none).
        rubric: scores each turn's observation after the turn completes.
        transform: applied to every observation.
    """

    SUPPORTS_CONCURRENT_SESSIONS = False
    # A turn's budget is the config's session_timeout_s unless the request sets timeout_s: our
    # server must not hand its default deadline down as the turn budget (0.10 does not either).
    _openenv_default_deadline_to_step = False

    def __init__(self, adapter: AgenticHarnessAdapter, mcp: Any | None = None, rubric: Any | None = None,
                 transform: Any | None = None):
        super().__init__(mcp if mcp is not None else FastMCP("harness-env-tools"), transform=transform)
        self.rubric = rubric
        self.adapter = adapter
        self._state = State(episode_id=None, step_count=0)
        self._trajectory: list[HarnessEvent] = []
        self._episode_active = False
        self._closed = False
        self._bridge: HarnessMCPBridge | None = None

    @property
    def state(self) -> State:
        """The episode's id and number of completed turns."""
        return self._state

    @property
    def trajectory(self) -> list[HarnessEvent]:
        """Every event of the episode so far, all turns (a copy)."""
        return list(self._trajectory)

    # -- reset -----------------------------------------------------------------------------

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        """Stop any running harness, inject the (conflict-resolved) tools and start a fresh one.

        Returns an observation with ``done=False``, ``reward=0.0`` and ``metadata`` holding the
        ``episode_id`` and the ``injected_tools`` names. ``seed`` is accepted and unused.

        Raises:
            ValueError: the tools cannot be injected (reserved or irreconcilable names).
            HarnessStartupError: the harness did not start.
        """
        self._episode_active = False
        starting: asyncio.Task[str] | None = None
        old_bridge_stuck = False
        try:
            await self.adapter.stop()  # always: a dead harness still holds pipes and threads
            if self._bridge is not None:
                try:
                    await asyncio.to_thread(self._bridge.stop)
                except Exception:
                    old_bridge_stuck = True  # keep it for a later retry; never start a second one
                    raise
            source = await self._injectable_tools()
            resolved = resolve_tool_conflicts(source, self.adapter.BUILTIN_TOOL_NAMES)
            url: str | None = None
            if resolved:
                renames = {new.name: old.name for new, old in zip(resolved, source, strict=True) if new.name != old.name}
                self._bridge = HarnessMCPBridge(await build_bridge_server(self._require_server(), renames))
                starting = asyncio.create_task(asyncio.to_thread(self._bridge.start))
                url = await asyncio.shield(starting)
            await self.adapter.inject_tools(resolved, url)
            await self.adapter.start(self.adapter.config.working_directory)
            self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
            self._trajectory = []
            if self.rubric is not None:
                await self._reset_rubric_async()
            self._episode_active = True
            first = Observation(
                done=False,
                reward=0.0,
                metadata={"episode_id": self._state.episode_id, "injected_tools": [t.name for t in resolved]},
            )
            return self._apply_transform(first)
        except BaseException:
            if not old_bridge_stuck:
                await self._end_episode(starting)
            raise

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        """Synchronous :meth:`reset_async`."""
        return run_async_safely(self.reset_async(seed=seed, episode_id=episode_id, **kwargs))

    # -- step ------------------------------------------------------------------------------

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        """A :class:`HarnessAction` runs one turn (budget ``timeout_s``, default the config's
        ``session_timeout_s``); MCP actions go to the tools.

        Raises:
            HarnessNotRunningError: no episode is active (``reset`` first, or the last one ended).
            TypeError: any other action type.
        """
        if isinstance(action, (ListToolsAction, CallToolAction)):
            return await super().step_async(action, timeout_s=timeout_s, **kwargs)
        if isinstance(action, HarnessAction):
            return await self._turn(action, timeout_s)
        raise TypeError(_WRONG_ACTION.format(type(action).__name__))

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        if isinstance(action, HarnessAction):
            return run_async_safely(self._turn(action, timeout_s))
        raise TypeError(_WRONG_ACTION.format(type(action).__name__))

    async def _turn(self, action: HarnessAction, timeout_s: float | None) -> Observation:
        if not self._episode_active:
            raise HarnessNotRunningError("No active episode; call reset() before step()")
        try:
            if not await self.adapter.is_alive():
                return await self._failed_turn("harness process is not running", "harness_crashed")
            budget = timeout_s if timeout_s is not None else self.adapter.config.session_timeout_s
            try:
                reply = await asyncio.wait_for(self.adapter.send_message(action.message), budget)
            except asyncio.TimeoutError:
                return await self._failed_turn(f"harness turn exceeded {budget} seconds", "turn_timeout")
            except HarnessTurnTimeoutError as exc:  # before HarnessError: a timeout, not a crash
                return await self._failed_turn(str(exc), "turn_timeout")
            except HarnessError as exc:
                return await self._failed_turn(str(exc), "harness_crashed")
            self._trajectory.extend(reply.events)
            self._state.step_count += 1
            obs = Observation(
                done=reply.done,
                reward=0.0,
                metadata={
                    "response": reply.response,
                    "turn_events": events_to_metadata(reply.events),
                    "turn_number": self._state.step_count,
                },
            )
            if self.rubric is not None:
                obs.reward = await self._apply_rubric_async(action, obs)
            return self._apply_transform(obs)
        except BaseException:
            # A turn that failed or was cancelled cannot be resumed: release everything, re-raise.
            await self._end_episode()
            raise

    async def _failed_turn(self, message: str, error_type: str) -> Observation:
        """Stop the harness and answer with a terminal observation describing why."""
        await self._end_episode()
        event = HarnessEvent(type=HarnessEventType.ERROR, data={"message": message, "recoverable": False})
        self._trajectory.append(event)
        obs = Observation(
            done=True,
            reward=0.0,
            metadata={"error": message, "error_type": error_type, "turn_events": events_to_metadata([event])},
        )
        return self._apply_transform(obs)

    # -- teardown --------------------------------------------------------------------------

    async def _end_episode(self, starting: asyncio.Task[str] | None = None) -> None:
        """Stop the harness and the bridge; finishes even if the caller is cancelled (it re-raises after)."""
        self._episode_active = False

        async def teardown() -> None:
            try:
                if starting is not None:
                    # A to_thread worker cannot be cancelled: let the bridge finish starting.
                    with contextlib.suppress(Exception):
                        await starting
            finally:
                try:
                    with contextlib.suppress(Exception):
                        await self.adapter.stop()
                finally:
                    await self._stop_bridge()

        task = asyncio.create_task(teardown())
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            while not task.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(task)
            task.result()
            raise

    async def _stop_bridge(self) -> None:
        if self._bridge is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._bridge.stop)

    async def _injectable_tools(self) -> list[Tool]:
        """The environment's tools that the bridge can serve (mode-specific tools are left out)."""
        listed = await self._list_tools_observation()
        error = listed.metadata.get("error")
        if error:
            raise HarnessError(f"Failed to enumerate environment tools: {error}")
        tools = list(listed.tools)
        mode_only = set(getattr(self, "_mode_tool_schemas", None) or ())
        skipped = sorted(t.name for t in tools if t.name in mode_only)
        if skipped:
            log.warning("Not injecting mode-specific tools into harness %r: %s", self.adapter.config.name,
                        ", ".join(skipped))
        return [t for t in tools if t.name not in mode_only]

    def close(self) -> None:
        """Stop the harness process group and the bridge; release the environment."""
        if self._closed and self._bridge is None:
            return
        self._closed = True
        self._episode_active = False
        with contextlib.suppress(Exception):
            run_async_safely(self.adapter.stop())
        if self._bridge is not None:
            try:
                self._bridge.stop()
            except Exception:
                pass
            else:
                self._bridge = None
        super().close()
