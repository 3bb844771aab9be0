"""Re-run a recorded episode on a fresh environment and find the first divergence.

    report = await rerun(store, episode_id, GenericEnvClient(base_url=url))
    if not report.deterministic:
        print(report.diverged_at, report.field, report.observation_diff.summary())

The recorded reset kwargs (seed included) start the episode; then each recorded action is sent
as recorded (the JSON object from ``_step_payload``), so the client must take dict actions
(``GenericEnvClient``) or be given ``make_action`` to rebuild typed ones. Fields the env's
``replay_rules`` say are not expected to repeat (the REPL's timings), and numbers within its
tolerance, do not count as a divergence; the report says which passed and how often.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from openenv.core.sync_client import is_async_client

from .diff import Diff, diff
from .recorder import normalise_observation
from .records import StepRecord
from .replay_rules import Passed, ReplayRules, rules_for
from .store import EpisodeStore

__all__ = ["RerunReport", "rerun", "rerun_sync"]


@dataclass(frozen=True)
class RerunReport:
    """Outcome of a re-run; ``diverged_at`` is ``None`` when every compared step matched."""

    episode_id: str
    steps_compared: int
    diverged_at: int | None = None
    field: str | None = None
    expected: Any = None
    actual: Any = None
    observation_diff: Diff | None = None
    rules: str = ""  # the replay rules applied (``ReplayRules.describe``)
    passed: dict[str, int] | None = None  # field path -> steps where the rules let a difference pass

    @property
    def deterministic(self) -> bool:
        return self.diverged_at is None

    def describe(self) -> str:
        if self.diverged_at is None:
            return f"episode {self.episode_id}: {self.steps_compared} steps re-run, no divergence"
        what = (
            self.observation_diff.summary()
            if self.observation_diff
            else f"{self.expected!r} -> {self.actual!r}"
        )
        return f"episode {self.episode_id}: diverged at step {self.diverged_at} ({self.field}: {what})"


class _Checker:
    def __init__(self, episode_id: str, rules: ReplayRules | None = None) -> None:
        self.episode_id = episode_id
        self.compared = 0
        self.rules = rules or rules_for(None)
        self.passed = Passed()

    def _same_reward(self, a: float | None, b: float | None) -> bool:
        if a is None or b is None:
            return a is b
        return a == b or self.rules.close(a, b) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)

    def check(self, recorded: StepRecord, result: Any) -> RerunReport | None:
        self.compared += 1
        observation = normalise_observation(result.observation)
        obs_diff, passed = self.rules.apply(diff(recorded.observation, observation))
        self.passed.add(passed)
        found: tuple[str, Any, Any, Diff | None] | None = None
        if obs_diff:
            found = ("observation", recorded.observation, observation, obs_diff)
        elif not self._same_reward(recorded.reward, result.reward):
            found = ("reward", recorded.reward, result.reward, None)
        elif bool(recorded.done) != bool(result.done):
            found = ("done", recorded.done, bool(result.done), None)
        if found is None:
            return None
        name, expected, actual, d = found
        return RerunReport(self.episode_id, self.compared, recorded.index, name, expected, actual, d,
                           rules=self.rules.describe(), passed=dict(self.passed.counts))

    def report(self) -> RerunReport:
        return RerunReport(self.episode_id, self.compared, rules=self.rules.describe(),
                           passed=dict(self.passed.counts))


def _plan(store: EpisodeStore, episode_id: str) -> tuple[dict[str, Any] | None, Iterator[StepRecord], str]:
    episode = store.get_episode(episode_id)
    return episode.reset_kwargs, store.iter_steps(episode_id), episode.env_name


async def rerun(
    store: EpisodeStore,
    episode_id: str,
    client: Any,
    *,
    make_action: Callable[[dict[str, Any]], Any] | None = None,
    rules: ReplayRules | None = None,
) -> RerunReport:
    """Replay ``episode_id``'s actions on ``client`` (async); stops at the first divergence.

    The client is used as given and not closed; pass a fresh one (a new session). ``rules``
    default to the episode's env's (``replay_rules.rules_for``).
    """
    if not is_async_client(client):
        raise TypeError("rerun() needs an async client; use rerun_sync() for a SyncEnvClient")
    episode = await asyncio.to_thread(store.get_episode, episode_id)  # reads stay off the event loop
    kwargs = episode.reset_kwargs
    checker = _Checker(episode_id, rules or rules_for(episode.env_name))
    async for recorded in _pages(store, episode_id):
        if recorded.index == 0:
            if kwargs is None:  # started without a reset: the fresh session is stepped as it was
                continue
            result = await client.reset(**kwargs)
        else:
            action = recorded.action if make_action is None else make_action(recorded.action or {})
            result = await client.step(action)
        if (report := checker.check(recorded, result)) is not None:
            return report
    return checker.report()


async def _pages(store: EpisodeStore, episode_id: str, batch: int = 1000) -> AsyncIterator[StepRecord]:
    """Every step of an episode, a page at a time, each page read in a worker thread."""
    start = 0
    while True:
        page = await asyncio.to_thread(store.load_steps, episode_id, start=start, limit=batch)
        for step in page:
            yield step
        if len(page) < batch:
            return
        start = page[-1].index + 1


def rerun_sync(
    store: EpisodeStore,
    episode_id: str,
    client: Any,
    *,
    make_action: Callable[[dict[str, Any]], Any] | None = None,
    rules: ReplayRules | None = None,
) -> RerunReport:
    """``rerun`` for a ``SyncEnvClient``."""
    kwargs, steps, env_name = _plan(store, episode_id)
    checker = _Checker(episode_id, rules or rules_for(env_name))
    for recorded in steps:
        if recorded.index == 0:
            if kwargs is None:
                continue
            result = client.reset(**kwargs)
        else:
            action = recorded.action if make_action is None else make_action(recorded.action or {})
            result = client.step(action)
        if (report := checker.check(recorded, result)) is not None:
            return report
    return checker.report()
