"""SQLModel tables of the episode store (schema version 6).

JSON-valued columns are TEXT holding JSON written by ``jsonable.dumps`` (one encoder for every
dialect); times are UNIX epoch seconds (float) so ordering and round trips are exact everywhere.
Episode rows carry ``env_name``/``source``/``label`` copied from their run so listings filter
and page on one indexed table, with no join and no aggregate. ``step_count``/``total_reward``
are updated with every commit of steps, so they are deliberately not indexed (an index on each
would add pages to every commit); return/length filters ride the ``started_at`` order.
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, LargeBinary, String, Text, text
from sqlmodel import Field, SQLModel

__all__ = [
    "EnvRun", "Episode", "EpisodeTag", "RecordingMeta", "Step", "StepAgent", "StepChunk", "TrainingRun",
]


class RecordingMeta(SQLModel, table=True):
    """Key/value facts about the store itself (``schema_version``)."""

    __tablename__ = "recording_meta"

    key: str = Field(primary_key=True, max_length=64)
    value: str = Field(sa_column=Column(Text, nullable=False))


class EnvRun(SQLModel, table=True):
    """One recording client: where its episodes ran and who drove them."""

    __tablename__ = "env_run"

    id: str = Field(primary_key=True, max_length=32)
    env_name: str = Field(max_length=200)
    env_version: str | None = Field(default=None, max_length=100)
    base_url: str | None = Field(default=None, sa_column=Column(Text))
    provider: str | None = Field(default=None, max_length=100)
    image: str | None = Field(default=None, sa_column=Column(Text))
    action_schema_hash: str | None = Field(default=None, max_length=64)
    observation_schema_hash: str | None = Field(default=None, max_length=64)
    source: str = Field(default="programmatic", max_length=32)
    label: str | None = Field(default=None, max_length=200)
    created_at: float
    hostname: str | None = Field(default=None, max_length=255)
    pid: int | None = None
    info: str | None = Field(default=None, sa_column=Column(Text))


class TrainingRun(SQLModel, table=True):
    """A training (or evaluation) run: many episodes, grouped by training step and prompt group (schema 5).

    ``status`` is what the run said last (``running``, ``finished``, ``failed``, ``cancelled``);
    a ``running`` run whose ``pid`` is gone on ``hostname`` is dead (readers derive that).
    ``config`` and ``info`` are JSON (the trainer's arguments; free-form facts)."""

    __tablename__ = "training_run"
    __table_args__ = (Index("ix_training_run_started", "started_at", "id"),)

    id: str = Field(primary_key=True, max_length=32)
    name: str = Field(max_length=200)
    trainer: str = Field(max_length=64)
    env_name: str | None = Field(default=None, max_length=200)
    config: str | None = Field(default=None, sa_column=Column(Text))
    status: str = Field(default="running", max_length=16)
    started_at: float
    ended_at: float | None = None
    hostname: str | None = Field(default=None, max_length=255)
    pid: int | None = None
    info: str | None = Field(default=None, sa_column=Column(Text))


def _partial(name: str, *columns: str, where: str) -> Index:
    return Index(name, *columns, sqlite_where=text(where), postgresql_where=text(where))


# the listing's sorts and filters (schema 5): live episodes (small); return and length orders over
# ended episodes only, so the per-commit updates of a live episode's step_count/total_reward touch
# no index; seed; a training run's reward and advantage orders (both written once per episode).
READ_INDEXES = (
    _partial("ix_episode_live", "started_at", "id", where="ended_at IS NULL"),
    _partial("ix_episode_return", "total_reward", "id", where="ended_at IS NOT NULL"),
    _partial("ix_episode_length", "step_count", "id", where="ended_at IS NOT NULL"),
    Index("ix_episode_seed", "seed", "started_at", "id"),
    Index("ix_episode_run_reward", "training_run_id", "trainer_reward", "id"),
    Index("ix_episode_run_advantage", "training_run_id", "advantage", "id"),
)


class Episode(SQLModel, table=True):
    """One episode: a reset and the steps after it."""

    __tablename__ = "episode"
    __table_args__ = (
        Index("ix_episode_started", "started_at", "id"),
        Index("ix_episode_env_started", "env_name", "started_at", "id"),
        Index("ix_episode_source_started", "source", "started_at", "id"),
        Index("ix_episode_label_started", "label", "started_at", "id"),
        Index("ix_episode_run", "run_id"),
        Index("ix_episode_parent", "parent_episode_id"),
        Index("ix_episode_training", "training_run_id", "train_step", "group_id", "group_index"),
        *READ_INDEXES,
    )

    id: str = Field(primary_key=True, max_length=32)
    run_id: str = Field(sa_column=Column(String(32), ForeignKey("env_run.id"), nullable=False))
    env_name: str = Field(max_length=200)
    source: str = Field(max_length=32)
    label: str | None = Field(default=None, max_length=200)
    reset_kwargs: str = Field(default="{}", sa_column=Column(Text, nullable=False))
    seed: int | None = None
    started_at: float
    ended_at: float | None = None
    end_reason: str | None = Field(default=None, max_length=32)
    step_count: int = 0
    total_reward: float | None = None
    done: bool = False
    notes: str | None = Field(default=None, sa_column=Column(Text))
    # a fork (schema version 3): the episode it was forked from and the step it continued after
    # (its steps 0..fork_step replayed the parent's actions). No foreign key: a parent may be deleted.
    parent_episode_id: str | None = Field(default=None, max_length=32)
    fork_step: int | None = None
    # a rollout of a training run (schema version 5): the run, the training step (policy version)
    # that produced it, its prompt group (GRPO's G rollouts of one prompt) and index in it, why it
    # ended (``env_done``, ``max_turns``, ``truncated``, ``env_error``, ``model_error``, ``timeout``),
    # the scalar the trainer optimised, its per-reward-function components (JSON) and the advantage.
    training_run_id: str | None = Field(default=None, max_length=32)
    train_step: int | None = None
    group_id: str | None = Field(default=None, max_length=64)
    group_index: int | None = None
    finish_reason: str | None = Field(default=None, max_length=32)
    trainer_reward: float | None = None
    reward_components: str | None = Field(default=None, sa_column=Column(Text))
    advantage: float | None = None
    # the tokens its model turns read and wrote (schema version 6), summed over its turns when each
    # is recorded (``record_turn``): prompt and completion; ``None`` when no turn said how many
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class EpisodeTag(SQLModel, table=True):
    """A free-form tag on an episode (set by people in the studio or by scripts)."""

    __tablename__ = "episode_tag"
    __table_args__ = (Index("ix_episode_tag_tag", "tag"),)

    episode_id: str = Field(
        sa_column=Column(String(32), ForeignKey("episode.id"), primary_key=True, nullable=False)
    )
    tag: str = Field(sa_column=Column(String(100), primary_key=True, nullable=False))


class Step(SQLModel, table=True):
    """One transition; ``idx`` 0 is the reset observation (``action`` is null there)."""

    __tablename__ = "step"
    __table_args__ = {"sqlite_with_rowid": False}

    episode_id: str = Field(
        sa_column=Column(String(32), ForeignKey("episode.id"), primary_key=True, nullable=False)
    )
    idx: int = Field(primary_key=True)
    action: str | None = Field(default=None, sa_column=Column(Text))
    observation: str = Field(sa_column=Column(Text, nullable=False))
    reward: float | None = None
    done: bool = False
    step_metadata: str | None = Field(default=None, sa_column=Column("metadata", Text))
    latency_ms: float | None = None
    t: float
    state: str | None = Field(default=None, sa_column=Column(Text))


class StepChunk(SQLModel, table=True):
    """Steps ``first_idx``..``last_idx`` of an episode as the recording client journaled them
    (schema version 2): ``data`` is their ``S`` records back to back, wire texts included
    (``openenv/stepjournal/wire_steps.py`` reads them; the store's step reads merge them with
    ``step`` rows). The committer writes these instead of one ``step`` row per step."""

    __tablename__ = "step_chunk"

    episode_id: str = Field(
        sa_column=Column(String(32), ForeignKey("episode.id"), primary_key=True, nullable=False)
    )
    first_idx: int = Field(primary_key=True)
    last_idx: int
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class StepAgent(SQLModel, table=True):
    """Who acted at a step and, for a model, what it was asked and answered (schema version 4).

    ``idx`` matches the step's index; a turn whose reply never became an action (the episode then
    ends ``invalid_action``) has the index the step would have had, and no step. ``actor`` is
    ``"model"`` or ``"human"``; ``data`` is JSON: the prompt messages, the raw completion, tool
    calls, token counts, the model's latency, failed attempts (``openenv/rollout``). A step
    without a row was taken by whatever the episode's ``source`` says."""

    __tablename__ = "step_agent"

    episode_id: str = Field(
        sa_column=Column(String(32), ForeignKey("episode.id"), primary_key=True, nullable=False)
    )
    idx: int = Field(primary_key=True)
    actor: str = Field(max_length=16)
    data: str | None = Field(default=None, sa_column=Column(Text))
    # token arrays of the turn (schema version 5), typed and packed rather than JSON text:
    # ids, logprobs and loss mask, as written by ``openenv.recording`` (see its token codec)
    tokens: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    # how many tokens the turn read and wrote (schema version 6; ``tokens.turn_counts``), its failed
    # attempts included; ``None`` when the turn does not say
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
