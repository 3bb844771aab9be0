"""Two episodes aligned by step for the comparison page: per step the two actions, observations,
rewards and model turns, what differs between them (``openenv.recording.diff``) and the first
step where they diverge; plus the episodes worth comparing an episode with (its parent, its forks,
other episodes of its env and seed).

    cmp = compare_episodes(store, store.get_episode(a), store.get_episode(b))
    cmp.first_divergence   # the index of the first differing step, None when they agree
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from openenv.recording import (
    Diff,
    EpisodeFilter,
    EpisodeNotFoundError,
    EpisodeRecord,
    EpisodeStore,
    StepRecord,
    diff,
)

__all__ = ["MAX_STEPS", "Comparison", "Row", "candidates", "compare_episodes", "relation"]

MAX_STEPS = 1000  # steps compared per episode (a longer episode is cut, and says so)
FIELDS = ("action", "observation", "reward", "done", "model")


@dataclass
class Row:
    """Step ``index`` of both episodes (``None`` where one has no such step) and what differs."""

    index: int
    a: StepRecord | None
    b: StepRecord | None
    action: Diff | None = None
    observation: Diff | None = None
    differs: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.differs


@dataclass
class Comparison:
    """Aligned rows of episodes ``a`` and ``b``; ``first_divergence`` is the first differing index."""

    a: EpisodeRecord
    b: EpisodeRecord
    rows: list[Row]
    first_divergence: int | None
    relation: str
    truncated: bool = False

    @property
    def same_count(self) -> int:
        return sum(r.same for r in self.rows)


def _model_text(step: StepRecord | None) -> Any:
    """The part of a model turn that two runs can share: the reply and its tool calls (latency and
    token counts always differ, so they are shown but not compared)."""
    agent = step.agent if step is not None else None
    if not isinstance(agent, dict):
        return None
    return {"completion": agent.get("completion"), "tool_calls": agent.get("tool_calls")}


def _row(index: int, a: StepRecord | None, b: StepRecord | None) -> Row:
    row = Row(index, a, b)
    if a is None or b is None:
        row.differs.append("missing")
        return row
    row.action = diff(a.action, b.action)
    row.observation = diff(a.observation, b.observation)
    if row.action:
        row.differs.append("action")
    if row.observation:
        row.differs.append("observation")
    if a.reward != b.reward:
        row.differs.append("reward")
    if a.done != b.done:
        row.differs.append("done")
    if _model_text(a) != _model_text(b):
        row.differs.append("model")
    return row


def relation(a: EpisodeRecord, b: EpisodeRecord) -> str:
    """How two episodes are related, in words (shown above the comparison)."""
    if b.parent_episode_id == a.id:
        return f"B is a fork of A at step {b.fork_step}"
    if a.parent_episode_id == b.id:
        return f"A is a fork of B at step {a.fork_step}"
    if a.parent_episode_id and a.parent_episode_id == b.parent_episode_id:
        return "A and B are forks of the same episode"
    if a.env_name != b.env_name:
        return f"Different environments ({a.env_name} and {b.env_name})"
    if a.seed is not None and a.seed == b.seed:
        return f"Two episodes of {a.env_name} with seed {a.seed}"
    return f"Two episodes of {a.env_name}"


def compare_episodes(store: EpisodeStore, a: EpisodeRecord, b: EpisodeRecord, *, limit: int = MAX_STEPS) -> Comparison:
    """Align ``a`` and ``b`` step by step (index 0 is each reset), at most ``limit`` steps each."""
    steps_a = store.load_steps(a.id, limit=limit + 1)
    steps_b = store.load_steps(b.id, limit=limit + 1)
    truncated = len(steps_a) > limit or len(steps_b) > limit
    by_a = {s.index: s for s in steps_a[:limit]}
    by_b = {s.index: s for s in steps_b[:limit]}
    rows = [_row(i, by_a.get(i), by_b.get(i)) for i in sorted(by_a.keys() | by_b.keys())]
    first = next((r.index for r in rows if not r.same), None)
    return Comparison(a, b, rows, first, relation(a, b), truncated)


def candidates(store: EpisodeStore, ep: EpisodeRecord, *, limit: int = 20) -> list[tuple[EpisodeRecord, str]]:
    """Episodes to compare ``ep`` with, each with why: its parent, its forks, then other episodes
    of the same env and seed (newest first)."""
    out: list[tuple[EpisodeRecord, str]] = []
    seen = {ep.id}

    def add(other_id: str, why: str) -> None:
        if other_id not in seen and len(out) < limit:
            seen.add(other_id)
            try:
                out.append((store.get_episode(other_id), why))
            except EpisodeNotFoundError:  # deleted meanwhile: not a candidate
                pass

    if ep.parent_episode_id:
        add(ep.parent_episode_id, f"parent (forked at step {ep.fork_step})")
    for f in store.list_forks(ep.id, limit=limit):
        add(f.id, f"fork at step {f.fork_step}")
    if ep.seed is not None:
        page = store.list_episodes(EpisodeFilter(env=ep.env_name, seed=ep.seed), limit=limit + 1)
        for other in page.items:
            if other.id not in seen and len(out) < limit:
                seen.add(other.id)
                out.append((other, f"same seed {ep.seed}"))
    return out
