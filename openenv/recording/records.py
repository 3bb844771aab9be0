"""Plain read-side records returned by the store (decoupled from the ORM rows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["EpisodePage", "EpisodeRecord", "RunRecord", "StepRecord"]


@dataclass(frozen=True)
class RunRecord:
    """Where and how a group of episodes was recorded."""

    id: str
    env_name: str
    env_version: str | None = None
    base_url: str | None = None
    provider: str | None = None
    image: str | None = None
    action_schema_hash: str | None = None
    observation_schema_hash: str | None = None
    source: str = "programmatic"
    label: str | None = None
    created_at: float = 0.0
    hostname: str | None = None
    pid: int | None = None
    info: dict[str, Any] | None = None


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode row; ``finished`` is false for an episode whose writer died."""

    id: str
    run_id: str
    env_name: str
    source: str
    label: str | None
    seed: int | None
    started_at: float
    ended_at: float | None
    end_reason: str | None
    step_count: int
    total_reward: float | None
    done: bool
    notes: str | None = None
    #: ``None``: the episode started at a step, with no reset (a 0.10-style client on a fresh session)
    reset_kwargs: dict[str, Any] | None = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    run: RunRecord | None = None
    parent_episode_id: str | None = None
    fork_step: int | None = None
    # a training run's rollout (schema 5; ``None`` elsewhere): see ``models.Episode``
    training_run_id: str | None = None
    train_step: int | None = None
    group_id: str | None = None
    group_index: int | None = None
    finish_reason: str | None = None
    trainer_reward: float | None = None
    reward_components: dict[str, float] | None = None
    advantage: float | None = None
    # tokens its model turns read and wrote (schema 6; ``None`` when no turn said)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def finished(self) -> bool:
        return self.ended_at is not None


@dataclass(frozen=True)
class StepRecord:
    """One stored transition; ``index`` 0 is the reset (``action`` is ``None``). ``actor``
    (``"model"``/``"human"``) and ``agent`` (a model's prompt, completion, tokens, latency) are set
    when the step has a ``step_agent`` row (rollouts, takeover in the studio)."""

    index: int
    action: dict[str, Any] | None
    observation: Any
    reward: float | None
    done: bool
    metadata: dict[str, Any] | None
    latency_ms: float | None
    t: float
    state: Any = None
    actor: str | None = None
    agent: dict[str, Any] | None = None


@dataclass(frozen=True)
class EpisodePage:
    """One page of a listing; pass ``next_cursor`` back to get the next page."""

    items: list[EpisodeRecord]
    next_cursor: str | None
