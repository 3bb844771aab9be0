"""Read queries for runs: the run list, a run's per-step aggregates, a step's groups, one group.

A *run* is a ``training_run`` row (its episodes carry ``training_run_id``; the x axis is the
training step, a group is GRPO's ``group_id``) or, for writers without one (``openenv rollout``,
``collect``, studio model runs, captures), the episodes sharing a label (``label:<label>``), or
a source's unlabelled episodes (``source:<source>``); for those the x axis is the episode order
cut into at most ``BUCKETS`` slices, and a group is a seed. One read path
for SQLite and PostgreSQL (SQLAlchemy Core, window functions for the slices); every aggregate is
one scan of the run's index range. Call these off the event loop.

The reward of an episode is the trainer's (``trainer_reward``) when set, else its summed step
rewards; *success* is a reward above zero; an episode's *reason* is its ``finish_reason``, else
``env_done`` for an episode the env ended, else its ``end_reason``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Integer, case, cast, func, literal, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement

from .errors import RecordingError
from .jsonable import loads
from .models import EnvRun, Episode, TrainingRun
from .queries import _LIST_COLUMNS, EpisodeFilter, _episode
from .records import EpisodeRecord
from .training_runs import FINISH_REASONS

__all__ = [
    "BUCKETS", "REASONS", "FilterStats", "GroupStats", "RunInfo", "RunScope", "StepStats",
    "filter_stats", "group_episodes", "list_runs", "run_info", "run_steps", "run_trend", "step_groups",
]

_EP, _RUN, _TRUN = Episode.__table__, EnvRun.__table__, TrainingRun.__table__
BUCKETS = 100
REASONS = FINISH_REASONS
MAX_RUNS = 500
MAX_GROUPS = 2000


@dataclass(frozen=True)
class RunScope:
    """Which episodes make a run: a training run's id, a label (``label:<label>``), or the
    unlabelled episodes of a source (``source:<source>``, e.g. capture sessions)."""

    key: str

    @property
    def label(self) -> str | None:
        return self.key[len("label:"):] if self.key.startswith("label:") else None

    @property
    def source(self) -> str | None:
        return self.key[len("source:"):] if self.key.startswith("source:") else None

    @property
    def training(self) -> bool:
        return self.label is None and self.source is None

    def where(self) -> ColumnElement[bool]:
        if self.label is not None:
            return _EP.c.label == self.label
        if self.source is not None:
            return (_EP.c.source == self.source) & _EP.c.label.is_(None)
        return _EP.c.training_run_id == self.key


@dataclass(frozen=True)
class RunInfo:
    """One run as listed: a training run's row, or what a label's recording clients say."""

    key: str
    name: str
    kind: str  # "training" or the label's episode source ("model", "programmatic", "capture", ...)
    env_name: str | None
    status: str
    started_at: float | None
    ended_at: float | None = None
    trainer: str | None = None
    config: Any = None
    info: Any = None

    @property
    def training(self) -> bool:
        return self.kind == "training"


@dataclass
class StepStats:
    """The aggregates of one training step (or one slice of an eval run's episodes)."""

    x: int
    n: int
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    success: float | None
    length: float | None
    live: int
    reasons: dict[str, int] = field(default_factory=dict)
    groups: int = 0
    zero_spread: int = 0
    first: float | None = None
    last: float | None = None
    # tokens (schema 6): mean prompt/completion tokens per episode that counts them, and their total
    prompt_tokens: float | None = None
    completion_tokens: float | None = None
    tokens: int | None = None

    @property
    def env_errors(self) -> int:
        return self.reasons.get("env_error", 0)

    @property
    def model_errors(self) -> int:
        return self.reasons.get("model_error", 0) + self.reasons.get("invalid_action", 0)


@dataclass
class GroupStats:
    """One group (GRPO's G rollouts of a prompt, or one seed) of a step."""

    group: str
    n: int
    mean: float | None
    min: float | None
    max: float | None
    success: int
    errors: int

    @property
    def spread(self) -> float | None:
        return None if self.min is None or self.max is None else self.max - self.min


def list_runs(conn: Connection, *, limit: int = 200) -> list[RunInfo]:
    """Training runs and labelled recordings, newest first (reads the small run tables only)."""
    limit = max(1, min(int(limit), MAX_RUNS))
    out = []
    t = _TRUN.c
    for row in conn.execute(select(_TRUN).order_by(t.started_at.desc(), t.id.desc()).limit(limit)):
        out.append(_training(row))
    names = {r.name for r in out}
    c = _RUN.c
    labelled = (select(c.label, func.min(c.source), func.min(c.env_name), func.min(c.created_at), func.max(c.created_at))
                .where(c.label.is_not(None)).group_by(c.label)
                .order_by(func.max(c.created_at).desc()).limit(limit))  # fmt: skip
    for label, source, env, first, last in conn.execute(labelled):
        if label not in names:
            out.append(RunInfo(key=f"label:{label}", name=label, kind=source, env_name=env, status="recorded",
                               started_at=first, ended_at=last))
    unlabelled = (select(c.source, func.min(c.env_name), func.min(c.created_at), func.max(c.created_at))
                  .where(c.label.is_(None)).group_by(c.source))  # fmt: skip
    for source, env, first, last in conn.execute(unlabelled):
        out.append(RunInfo(key=f"source:{source}", name=f"{source} (no label)", kind=source, env_name=env,
                           status="recorded", started_at=first, ended_at=last))
    out.sort(key=lambda r: -(r.started_at or 0.0))
    return out[:limit]


def _training(row: Any) -> RunInfo:
    m = row._mapping
    return RunInfo(key=m["id"], name=m["name"], kind="training", env_name=m["env_name"], status=m["status"],
                   started_at=m["started_at"], ended_at=m["ended_at"], trainer=m["trainer"],
                   config=loads(m["config"]) if m["config"] else None, info=loads(m["info"]) if m["info"] else None)


def run_info(conn: Connection, scope: RunScope) -> RunInfo:
    """The run ``scope`` names; ``RecordingError`` (``NO_RUN``) when there is none."""
    if scope.training:
        row = conn.execute(select(_TRUN).where(_TRUN.c.id == scope.key)).first()
        if row is not None:
            return _training(row)
    else:
        c = _RUN.c
        which = c.label == scope.label if scope.label is not None else (c.source == scope.source) & c.label.is_(None)
        row = conn.execute(select(func.min(c.source), func.min(c.env_name), func.min(c.created_at),
                                  func.max(c.created_at)).where(which)).first()
        if row is not None and row[0] is not None:
            name = scope.label if scope.label is not None else f"{scope.source} (no label)"
            return RunInfo(key=scope.key, name=name, kind=row[0], env_name=row[1], status="recorded",
                           started_at=row[2], ended_at=row[3])
    raise RecordingError(f"there is no run {scope.key!r}", code="NO_RUN")


def _x(scope: RunScope) -> tuple[Any, Any]:
    """``(select-from, x column)``: the training step, or an eval run's episode slice."""
    if scope.training:
        return _EP, _EP.c.train_step
    ordered = func.ntile(BUCKETS).over(order_by=(_EP.c.started_at, _EP.c.id))
    sub = select(_EP.c.trainer_reward, _EP.c.total_reward, _EP.c.finish_reason, _EP.c.done, _EP.c.end_reason,
                 _EP.c.step_count, _EP.c.ended_at, _EP.c.started_at, _EP.c.seed, _EP.c.group_id,
                 _EP.c.prompt_tokens, _EP.c.completion_tokens, (ordered - 1).label("x")).where(scope.where()).subquery()  # fmt: skip
    return sub, sub.c.x


def run_steps(conn: Connection, scope: RunScope) -> list[StepStats]:
    """Per step (or slice): count, reward mean/std/min/max, success rate, mean length, live
    episodes, mean prompt/completion tokens and their total, finish reasons, groups and groups
    whose rewards all tie (zero spread)."""
    src, x = _x(scope)
    c = src.c
    r = func.coalesce(c.trainer_reward, c.total_reward)
    reason = func.coalesce(c.finish_reason, case((c.done.is_(True), literal("env_done")), else_=c.end_reason))
    cols = [x, func.count(), func.avg(r), func.min(r), func.max(r), func.avg(r * r),
            func.sum(case((r > 0, 1), else_=0)), func.count(r), func.avg(c.step_count),
            func.sum(case((c.ended_at.is_(None), 1), else_=0)), func.min(c.started_at), func.max(c.started_at)]
    cols += [func.avg(c.prompt_tokens), func.avg(c.completion_tokens), func.sum(c.prompt_tokens),
             func.sum(c.completion_tokens)]
    cols += [func.sum(case((reason == name, 1), else_=0)) for name in REASONS]
    cols.append(func.sum(case((reason.is_(None), 0), (reason.in_(REASONS), 0), else_=1)))
    stmt = select(*cols).select_from(src).where(x.is_not(None)).group_by(x).order_by(x)
    if scope.training:
        stmt = stmt.where(scope.where())
    out = []
    for row in conn.execute(stmt):
        step, n, mean, lo, hi, sq, wins, scored, length, live, first, last, p_mean, c_mean, p_sum, c_sum, *counts = row
        var = None if mean is None else max(0.0, float(sq) - float(mean) ** 2)
        reasons = {name: int(k or 0) for name, k in zip((*REASONS, "other"), counts, strict=True) if k}
        total = None if p_sum is None and c_sum is None else int(p_sum or 0) + int(c_sum or 0)
        out.append(StepStats(x=int(step), n=int(n), mean=mean, std=None if var is None else math.sqrt(var), min=lo,
                             max=hi, success=(int(wins or 0) / scored) if scored else None, length=length,
                             live=int(live or 0), reasons=reasons, first=first, last=last,
                             prompt_tokens=None if p_mean is None else float(p_mean),
                             completion_tokens=None if c_mean is None else float(c_mean), tokens=total))  # fmt: skip
    _add_spread(conn, scope, src, x, out)
    return out


def run_trend(conn: Connection, scope: RunScope) -> tuple[int, list[float | None]]:
    """How many episodes a run has and its mean reward per step (slice): the runs list's trend."""
    src, x = _x(scope)
    r = func.coalesce(src.c.trainer_reward, src.c.total_reward)
    stmt = select(x, func.count(), func.avg(r)).select_from(src).where(x.is_not(None)).group_by(x).order_by(x)
    if scope.training:
        stmt = stmt.where(scope.where())
    rows = conn.execute(stmt).all()
    return sum(int(n) for _, n, _ in rows), [mean for _, _, mean in rows]


def _group_key(src: Any, scope: RunScope) -> Any:
    return src.c.group_id if scope.training else cast(src.c.seed, Integer)


def _add_spread(conn: Connection, scope: RunScope, src: Any, x: Any, steps: list[StepStats]) -> None:
    """Groups per step and those whose rewards all tie (a group of one is not counted as tied)."""
    c = src.c
    r = func.coalesce(c.trainer_reward, c.total_reward)
    key = _group_key(src, scope)
    inner = (select(x.label("x"), func.count(r).label("n"), func.min(r).label("lo"), func.max(r).label("hi"))
             .select_from(src).where(x.is_not(None), key.is_not(None)).group_by(x, key))  # fmt: skip
    if scope.training:
        inner = inner.where(scope.where())
    g = inner.subquery()
    stmt = (select(g.c.x, func.count(), func.sum(case(((g.c.n > 1) & (g.c.lo == g.c.hi), 1), else_=0)))
            .group_by(g.c.x))  # fmt: skip
    by_x = {s.x: s for s in steps}
    for step, groups, tied in conn.execute(stmt):
        if step in by_x:
            by_x[step].groups, by_x[step].zero_spread = int(groups), int(tied or 0)


def step_groups(conn: Connection, scope: RunScope, step: int) -> list[GroupStats]:
    """The groups of one step (slice), worst mean reward first."""
    src, x = _x(scope)
    c = src.c
    r = func.coalesce(c.trainer_reward, c.total_reward)
    reason = func.coalesce(c.finish_reason, case((c.done.is_(True), literal("env_done")), else_=c.end_reason))
    key = _group_key(src, scope)
    errors = func.sum(case((reason.in_(("env_error", "model_error", "invalid_action", "timeout")), 1), else_=0))
    stmt = (select(key, func.count(), func.avg(r), func.min(r), func.max(r), func.sum(case((r > 0, 1), else_=0)),
                   errors).select_from(src).where(x == step, key.is_not(None)).group_by(key)
            .order_by(func.avg(r).asc(), key).limit(MAX_GROUPS))  # fmt: skip
    if scope.training:
        stmt = stmt.where(scope.where())
    return [GroupStats(group=str(k), n=int(n), mean=mean, min=lo, max=hi, success=int(s or 0), errors=int(e or 0))
            for k, n, mean, lo, hi, s, e in conn.execute(stmt)]  # fmt: skip


def group_episodes(conn: Connection, scope: RunScope, group: str, *, step: int | None = None,
                   limit: int = 256) -> list[EpisodeRecord]:
    """One group's episodes, best reward first (a group of a training run, or a seed of a label)."""
    c = _EP.c
    where = [scope.where()]
    if scope.training:
        where.append(c.group_id == group)
        if step is not None:
            where.append(c.train_step == step)
    else:
        try:
            where.append(c.seed == int(group))
        except ValueError:
            raise RecordingError(f"a group of {scope.key} is a seed (a whole number), not {group!r}",
                                 code="BAD_GROUP") from None
    r = func.coalesce(c.trainer_reward, c.total_reward)
    stmt = (select(*_LIST_COLUMNS).where(*where).order_by(r.is_(None), r.desc(), c.group_index, c.id)
            .limit(max(1, min(int(limit), 1000))))  # fmt: skip
    return [_episode(row) for row in conn.execute(stmt)]


@dataclass(frozen=True)
class FilterStats:
    """A count and the means over a listing's filter."""

    count: int
    mean_return: float | None
    mean_length: float | None
    mean_reward: float | None
    finished: int


def filter_stats(conn: Connection, filters: EpisodeFilter) -> FilterStats:
    """One aggregate over the episodes a listing filter matches (a scan of what matches)."""
    c = _EP.c
    stmt = select(func.count(), func.avg(c.total_reward), func.avg(c.step_count), func.avg(c.trainer_reward),
                  func.sum(case((c.ended_at.is_not(None), 1), else_=0))).where(*filters.clauses())
    n, ret, length, reward, finished = conn.execute(stmt).one()
    return FilterStats(int(n), ret, length, reward, int(finished or 0))
