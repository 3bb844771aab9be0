"""Fork a recorded episode at step k: replay its reset and actions 1..k on a fresh session, compare
each observation with the recording, and go on from there as a new episode that records its parent.

    forked = await fork(store, episode_id, GenericEnvClient(base_url=url), step=40)
    if forked.report.diverged:                # stopped at the first divergence
        print(forked.report.describe())
        await forked.proceed()                # or replay the rest anyway
    await forked.client.step({...})           # step 41 of the new episode, recorded

The new episode's steps 0..k are the replayed ones as the env answered them now (so its return
and chart are its own); ``parent_episode_id``/``fork_step`` link it to the episode it came from.
The client is wrapped with ``record`` unless it already records into ``store``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openenv.core.sync_client import is_async_client

from .errors import RecordingError
from .recorder import RecordingEnvClient, SyncRecordingEnvClient, record
from .records import EpisodeRecord, StepRecord
from .replay_rules import rules_for
from .rerun import RerunReport, _Checker
from .store import EpisodeStore

__all__ = ["Fork", "ForkReport", "fork", "fork_sync"]


@dataclass
class ForkReport:
    """Where a fork's replay got to: ``replayed`` recorded steps of ``fork_step`` (the reset not
    counted) and the first ``divergence`` met, if any."""

    parent_id: str
    fork_step: int
    episode_id: str | None = None
    replayed: int = 0
    divergence: RerunReport | None = None
    divergences: int = 0

    @property
    def diverged(self) -> bool:
        return self.divergence is not None

    @property
    def complete(self) -> bool:
        """Every step up to ``fork_step`` was replayed: the new episode stands at step k."""
        return self.replayed >= self.fork_step

    def describe(self) -> str:
        where = f"fork of {self.parent_id} at step {self.fork_step} -> {self.episode_id}"
        if self.divergence is None:
            return f"{where}: {self.replayed} steps replayed, no divergence"
        state = "replayed anyway" if self.complete else "stopped there"
        return f"{where}: diverged at step {self.divergence.diverged_at} ({self.divergence.field}), {state}"


@dataclass
class Fork:
    """A fork in progress: ``client`` records the new episode; ``proceed`` replays what a
    divergence left (comparing nothing more) so the new episode reaches ``fork_step``."""

    store: EpisodeStore
    client: Any
    report: ForkReport
    pending: list[StepRecord] = field(default_factory=list)
    make_action: Callable[[dict[str, Any]], Any] | None = None
    on_result: Callable[[StepRecord, Any], None] | None = None

    def _seen(self, recorded: StepRecord, result: Any) -> None:
        self.report.replayed = recorded.index
        if recorded.actor is not None and recorded.index > 0:  # a replayed step keeps who took it
            self.client.record_turn(recorded.actor, recorded.agent, index=recorded.index)
        if self.on_result is not None:
            self.on_result(recorded, result)

    def _action(self, step: StepRecord) -> Any:
        return step.action if self.make_action is None else self.make_action(step.action or {})

    async def proceed(self) -> ForkReport:
        """Replay the remaining recorded actions up to ``fork_step`` (async client)."""
        pending, self.pending = self.pending, []
        for i, step in enumerate(pending):
            try:
                result = await self.client.step(self._action(step))
            except BaseException:
                self.pending = pending[i:]  # what is left, for another try
                raise
            self._seen(step, result)
        return self.report

    def proceed_sync(self) -> ForkReport:
        """``proceed`` for a sync client."""
        pending, self.pending = self.pending, []
        for i, step in enumerate(pending):
            try:
                result = self.client.step(self._action(step))
            except BaseException:
                self.pending = pending[i:]  # what is left, for another try
                raise
            self._seen(step, result)
        return self.report


def _plan(store: EpisodeStore, episode_id: str, step: int) -> tuple[EpisodeRecord, list[StepRecord]]:
    parent = store.get_episode(episode_id)
    if not 0 <= step <= parent.step_count:
        raise RecordingError(f"cannot fork episode {episode_id} at step {step}: it has steps 0..{parent.step_count}",
                             code="BAD_FORK_STEP")  # fmt: skip
    if parent.reset_kwargs is None:
        raise RecordingError(f"episode {episode_id} started without a reset: a fork needs a reset to start from",
                             code="BAD_FORK")  # fmt: skip
    steps = store.load_steps(episode_id, start=0, limit=step + 1)
    if [s.index for s in steps] != list(range(step + 1)):
        raise RecordingError(f"episode {episode_id} does not hold every step up to {step}", code="BAD_FORK_STEP")
    return parent, steps


def _recording(client: Any, store: EpisodeStore, parent: EpisodeRecord, sync: bool, options: dict[str, Any]) -> Any:
    if sync and isinstance(client, RecordingEnvClient) and not is_async_client(client):
        client = client.sync()  # a recording client used from sync code: its blocking face
    kind = SyncRecordingEnvClient if sync else RecordingEnvClient
    if isinstance(client, kind):
        if client._rec.store is not store:
            raise RecordingError("the client records into another store than the one forked from", code="BAD_FORK")
        return client
    options.setdefault("label", parent.label)
    options.setdefault("env_name", parent.env_name)
    return record(client, store=store, **options)


async def fork(
    store: EpisodeStore, episode_id: str, client: Any, *, step: int, keep_going: bool = False,
    make_action: Callable[[dict[str, Any]], Any] | None = None,
    on_result: Callable[[StepRecord, Any], None] | None = None, **record_options: Any,
) -> Fork:  # fmt: skip
    """Fork ``episode_id`` at ``step`` on ``client`` (an async client for a fresh session of an
    env of the same kind); stops at the first divergence unless ``keep_going``. ``on_result(recorded,
    result)`` sees each replayed step; ``record_options`` go to ``record`` (``label``, ``source``...)
    when ``client`` is not recording already."""
    if not is_async_client(client):
        raise TypeError("fork() needs an async client; use fork_sync() for a SyncEnvClient")
    parent, steps = await asyncio.to_thread(_plan, store, episode_id, step)  # reads stay off the event loop
    rec = _recording(client, store, parent, False, dict(record_options))
    out = Fork(store, rec, ForkReport(parent.id, step), make_action=make_action, on_result=on_result)
    checker = _Checker(parent.id, rules_for(parent.env_name))
    result = await rec.reset(**parent.reset_kwargs)
    out.report.episode_id = rec.episode_id
    await asyncio.to_thread(store.mark_fork, rec.episode_id, parent.id, step)
    out._seen(steps[0], result)
    _check(out, checker, steps[0], result)
    for i, recorded in enumerate(steps[1:], start=1):
        if out.report.divergence is not None and not keep_going:
            out.pending = steps[i:]
            break
        result = await rec.step(out._action(recorded))
        out._seen(recorded, result)
        _check(out, checker, recorded, result)
    return out


def fork_sync(
    store: EpisodeStore, episode_id: str, client: Any, *, step: int, keep_going: bool = False,
    make_action: Callable[[dict[str, Any]], Any] | None = None,
    on_result: Callable[[StepRecord, Any], None] | None = None, **record_options: Any,
) -> Fork:  # fmt: skip
    """``fork`` for a ``SyncEnvClient``."""
    parent, steps = _plan(store, episode_id, step)
    rec = _recording(client, store, parent, True, dict(record_options))
    out = Fork(store, rec, ForkReport(parent.id, step), make_action=make_action, on_result=on_result)
    checker = _Checker(parent.id, rules_for(parent.env_name))
    result = rec.reset(**parent.reset_kwargs)
    out.report.episode_id = rec.episode_id
    store.mark_fork(rec.episode_id, parent.id, step)
    out._seen(steps[0], result)
    _check(out, checker, steps[0], result)
    for i, recorded in enumerate(steps[1:], start=1):
        if out.report.divergence is not None and not keep_going:
            out.pending = steps[i:]
            break
        result = rec.step(out._action(recorded))
        out._seen(recorded, result)
        _check(out, checker, recorded, result)
    return out


def _check(out: Fork, checker: _Checker, recorded: StepRecord, result: Any) -> None:
    found = checker.check(recorded, result)
    if found is not None:
        out.report.divergences += 1
        if out.report.divergence is None:
            out.report.divergence = found
