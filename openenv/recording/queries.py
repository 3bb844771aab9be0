"""Read queries: listings (keyset-paginated, aggregate-free), one episode, its steps."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import func, select, tuple_, union_all
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql import ColumnElement

from openenv.stepjournal import wire_steps

from .errors import EpisodeNotFoundError, RecordingError, StoreCorruptError
from .jsonable import loads
from .models import EnvRun, Episode, EpisodeTag, Step, StepAgent, StepChunk
from .records import EpisodePage, EpisodeRecord, RunRecord, StepRecord
from .tokens import unpack as unpack_tokens

__all__ = [
    "SORTS",
    "EpisodeFilter",
    "count_episodes",
    "distinct_values",
    "get_episode",
    "list_episodes",
    "list_forks",
    "load_agent_turns",
    "load_rewards",
    "load_steps",
    "resolve_id",
]

_EP = Episode.__table__
_RUN = EnvRun.__table__
_STEP = Step.__table__
_CHUNK = StepChunk.__table__
_TAG = EpisodeTag.__table__
_AGENT = StepAgent.__table__
_LIST_COLUMNS = [c for c in _EP.c if c.name not in ("reset_kwargs", "notes")]
MAX_PAGE = 1000


def _epoch(value: datetime | float | None) -> float | None:
    if value is None or isinstance(value, (int, float)):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


@dataclass(frozen=True)
class EpisodeFilter:
    """Listing filters; ``None`` means "any". Dates are datetimes (naive = UTC) or epoch seconds."""

    env: str | None = None
    source: str | None = None
    label: str | None = None
    run_id: str | None = None
    tag: str | None = None
    since: datetime | float | None = None
    until: datetime | float | None = None
    min_return: float | None = None
    max_return: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    finished: bool | None = None
    seed: int | None = None
    training_run_id: str | None = None  # a training run's rollouts (schema 5), by step (or range) and group
    train_step: int | None = None
    step_min: int | None = None
    step_max: int | None = None
    group_id: str | None = None

    def clauses(self, *, ranges: bool = True) -> list[ColumnElement[bool]]:
        """The WHERE terms (without the return/length ranges when ``ranges`` is false)."""
        c = _EP.c
        out: list[ColumnElement[bool]] = []
        for column, value in (
            (c.env_name, self.env),
            (c.source, self.source),
            (c.label, self.label),
            (c.run_id, self.run_id),
            (c.seed, self.seed),
            (c.training_run_id, self.training_run_id),
            (c.train_step, self.train_step),
            (c.group_id, self.group_id),
        ):
            if value is not None:
                out.append(column == value)
        if self.tag is not None:
            out.append(c.id.in_(select(_TAG.c.episode_id).where(_TAG.c.tag == self.tag)))
        if self.since is not None:
            out.append(c.started_at >= _epoch(self.since))
        if self.until is not None:
            out.append(c.started_at < _epoch(self.until))
        if self.step_min is not None:
            out.append(c.train_step >= self.step_min)
        if self.step_max is not None:
            out.append(c.train_step <= self.step_max)
        if ranges:
            out += _range_terms(self, plain=False)
        if self.finished is not None:
            out.append(c.ended_at.is_not(None) if self.finished else c.ended_at.is_(None))
        return out

    def has_range(self) -> bool:
        return any(v is not None for v in (self.min_return, self.max_return, self.min_length, self.max_length))

def _range_terms(f: EpisodeFilter, *, plain: bool) -> list[ColumnElement[bool]]:
    """Return/length ranges: ``plain`` for an index on the column to serve them, else as
    ``column + 0`` so a planner without statistics walks the listing's order instead (many
    matches: a page fills early)."""
    c = _EP.c
    out: list[ColumnElement[bool]] = []
    for column, lo, hi in ((c.total_reward, f.min_return, f.max_return), (c.step_count, f.min_length, f.max_length)):
        term = column if plain else column + 0
        if lo is not None:
            out.append(term >= lo)
        if hi is not None:
            out.append(term <= hi)
    return out


RANGE_PROBE = 2000  # a range with fewer ended matches than this is read through its index


def _few_in_range(conn: Connection, filters: EpisodeFilter) -> bool:
    """Whether the return/length range holds fewer than ``RANGE_PROBE`` ended episodes (an index
    range count, stopped at the limit)."""
    inner = (select(_EP.c.id).where(_EP.c.ended_at.is_not(None), *_range_terms(filters, plain=True))
             .limit(RANGE_PROBE).subquery())
    return int(conn.execute(select(func.count()).select_from(inner)).scalar_one()) < RANGE_PROBE


# sortable listing orders: name -> column (every order ends with the id, so a page boundary is exact).
SORTS: dict[str, Any] = {
    "started": _EP.c.started_at, "return": _EP.c.total_reward, "length": _EP.c.step_count,
    "reward": _EP.c.trainer_reward, "advantage": _EP.c.advantage, "step": _EP.c.train_step,
}


def _cursor(record: EpisodeRecord, sort: str = "started") -> str:
    return f"{getattr(record, SORTS[sort].name)!r}~{record.id}"


def _parse_cursor(cursor: str) -> tuple[float, str]:
    try:
        value, eid = cursor.split("~", 1)
        return float(value), eid
    except ValueError as exc:
        raise RecordingError(f"bad listing cursor {cursor!r}", code="BAD_CURSOR") from exc


def _episode(row: Row[Any], *, tags: tuple[str, ...] = (), run: RunRecord | None = None) -> EpisodeRecord:
    m = row._mapping
    return EpisodeRecord(
        id=m["id"],
        run_id=m["run_id"],
        env_name=m["env_name"],
        source=m["source"],
        label=m["label"],
        seed=m["seed"],
        started_at=m["started_at"],
        ended_at=m["ended_at"],
        end_reason=m["end_reason"],
        step_count=m["step_count"],
        total_reward=m["total_reward"],
        done=bool(m["done"]),
        notes=m.get("notes"),
        reset_kwargs=loads(m["reset_kwargs"]) if "reset_kwargs" in m else {},
        tags=tags,
        run=run,
        parent_episode_id=m.get("parent_episode_id"),
        fork_step=m.get("fork_step"),
        training_run_id=m.get("training_run_id"),
        train_step=m.get("train_step"),
        group_id=m.get("group_id"),
        group_index=m.get("group_index"),
        finish_reason=m.get("finish_reason"),
        trainer_reward=m.get("trainer_reward"),
        reward_components=loads(m["reward_components"]) if m.get("reward_components") else None,
        advantage=m.get("advantage"),
        prompt_tokens=m.get("prompt_tokens"),
        completion_tokens=m.get("completion_tokens"),
    )


def _tags_for(conn: Connection, ids: list[str]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    if ids:
        rows = conn.execute(
            select(_TAG.c.episode_id, _TAG.c.tag).where(_TAG.c.episode_id.in_(ids)).order_by(_TAG.c.tag)
        )
        for eid, tag in rows:
            out.setdefault(eid, []).append(tag)
    return {k: tuple(v) for k, v in out.items()}


def list_episodes(
    conn: Connection, filters: EpisodeFilter, *, limit: int = 50, cursor: str | None = None,
    sort: str = "started", descending: bool = True,
) -> EpisodePage:
    """One page in ``sort`` order (``SORTS``; newest first by default), then by id; a page
    boundary is a row-value cursor ``(value, id) < (:v, :id)`` an index on the order can seek to.
    Episodes whose sort value is null are left out of a sort other than ``started``, and live
    ones out of the ``return`` and ``length`` orders."""
    if sort not in SORTS:
        raise RecordingError(f"unknown sort {sort!r}; one of {sorted(SORTS)}", code="BAD_SORT")
    limit = max(1, min(int(limit), MAX_PAGE))
    column = SORTS[sort]
    few = filters.has_range() and sort == "started" and _few_in_range(conn, filters)
    where = filters.clauses(ranges=not few)
    if sort in ("return", "length"):
        where.append(_EP.c.ended_at.is_not(None))  # the partial indexes: a live episode's value still moves
    if sort != "started":
        where.append(column.is_not(None))
    if cursor:
        value, eid = _parse_cursor(cursor)
        key = tuple_(column, _EP.c.id)
        where.append(key < tuple_(value, eid) if descending else key > tuple_(value, eid))
    if few:  # the few ended matches through the range's partial index, the live ones through theirs
        ended = select(*_LIST_COLUMNS).where(*where, _EP.c.ended_at.is_not(None), *_range_terms(filters, plain=True))
        live = select(*_LIST_COLUMNS).where(*where, _EP.c.ended_at.is_(None), *_range_terms(filters, plain=False))
        both = union_all(ended, live).subquery()
        cols, source = [both.c[c.name] for c in _LIST_COLUMNS], both
        sort_col, id_col = both.c[column.name] + 0, both.c.id  # + 0: no arm walks the order's index
    else:
        cols, source, sort_col, id_col = _LIST_COLUMNS, None, column, _EP.c.id
    order = (sort_col.desc(), id_col.desc()) if descending else (sort_col.asc(), id_col.asc())
    stmt = select(*cols).where(*([] if few else where))
    if source is not None:
        stmt = stmt.select_from(source)
    rows = conn.execute(stmt.order_by(*order).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    tags = _tags_for(conn, [r.id for r in rows])
    items = [_episode(r, tags=tags.get(r.id, ())) for r in rows]
    return EpisodePage(items=items, next_cursor=_cursor(items[-1], sort) if more else None)


def list_forks(conn: Connection, episode_id: str, *, limit: int = 100) -> list[EpisodeRecord]:
    """Episodes forked from ``episode_id``, oldest first (an index read on ``parent_episode_id``)."""
    stmt = (select(*_LIST_COLUMNS).where(_EP.c.parent_episode_id == episode_id)
            .order_by(_EP.c.started_at, _EP.c.id).limit(max(1, min(int(limit), MAX_PAGE))))
    return [_episode(r) for r in conn.execute(stmt)]


def count_episodes(conn: Connection, filters: EpisodeFilter) -> int:
    return int(conn.execute(select(func.count()).select_from(_EP).where(*filters.clauses())).scalar_one())


def get_episode(conn: Connection, episode_id: str) -> EpisodeRecord:
    row = conn.execute(select(_EP).where(_EP.c.id == episode_id)).first()
    if row is None:
        raise EpisodeNotFoundError(f"no episode {episode_id!r}", episode_id=episode_id)
    run_row = conn.execute(select(_RUN).where(_RUN.c.id == row.run_id)).first()
    run = None
    if run_row is not None:
        m = dict(run_row._mapping)
        m["info"] = loads(m["info"])
        run = RunRecord(**m)
    return _episode(row, tags=_tags_for(conn, [episode_id]).get(episode_id, ()), run=run)


def load_steps(
    conn: Connection, episode_id: str, *, start: int = 0, limit: int | None = None
) -> list[StepRecord]:
    """Steps ``start``.. of an episode (at most ``limit``), in order: its ``step`` rows merged with
    the steps of its chunks (``step_chunk``)."""
    stmt = select(_STEP).where(_STEP.c.episode_id == episode_id, _STEP.c.idx >= start).order_by(_STEP.c.idx)
    if limit is not None:
        stmt = stmt.limit(limit)
    out = {}
    for row in conn.execute(stmt):
        r = row._mapping
        out[r["idx"]] = StepRecord(
            index=r["idx"],
            action=loads(r["action"]),
            observation=loads(r["observation"]),
            reward=r["reward"],
            done=bool(r["done"]),
            metadata=loads(r["metadata"]),
            latency_ms=r["latency_ms"],
            t=r["t"],
            state=loads(r["state"]),
        )
    for step in _chunk_steps(conn, episode_id, start, limit):
        if step.idx not in out:
            action, observation, metadata = wire_steps.values(step.request, step.reply)
            out[step.idx] = StepRecord(index=step.idx, action=action, observation=observation, reward=step.reward,
                                       done=step.done, metadata=metadata, latency_ms=step.latency_ms, t=step.t)  # fmt: skip
    steps = [out[i] for i in sorted(out)]
    steps = steps if limit is None else steps[:limit]
    if steps:
        turns = load_agent_turns(conn, episode_id, start=steps[0].index, stop=steps[-1].index)
        if turns:
            steps = [replace(s, actor=turns[s.index][0], agent=turns[s.index][1]) if s.index in turns else s
                     for s in steps]  # fmt: skip
    return steps


def load_agent_turns(
    conn: Connection, episode_id: str, *, start: int = 0, stop: int | None = None
) -> dict[int, tuple[str, dict[str, Any] | None]]:
    """``{index: (actor, data)}`` of an episode's ``step_agent`` rows with ``start <= index <= stop``
    (a turn that never became a step included)."""
    c = _AGENT.c
    stmt = select(c.idx, c.actor, c.data, c.tokens).where(c.episode_id == episode_id, c.idx >= start)
    if stop is not None:
        stmt = stmt.where(c.idx <= stop)
    out = {}
    for idx, actor, data, tokens in conn.execute(stmt):
        try:
            out[idx] = (actor, unpack_tokens(loads(data), tokens) if tokens else loads(data))
        except ValueError as exc:
            raise StoreCorruptError(f"the tokens of turn {idx} of episode {episode_id} are damaged ({exc})") from None
    return out


def load_rewards(conn: Connection, episode_id: str) -> list[float | None]:
    """Every stored step's reward in index order (index 0 is the reset): ``step`` rows merged with
    the steps of its chunks, which are read from their record heads (no text parsed). A gap in
    the indexes (never expected) is ``None``."""
    by_index: dict[int, float | None] = {}
    rows = select(_STEP.c.idx, _STEP.c.reward).where(_STEP.c.episode_id == episode_id)
    for idx, reward in conn.execute(rows):
        by_index[idx] = reward
    c = _CHUNK.c
    chunks = select(c.first_idx, c.last_idx, c.data).where(c.episode_id == episode_id).order_by(c.first_idx)
    for first, last, data in conn.execute(chunks):
        try:
            for idx, reward in wire_steps.chunk_rewards(bytes(data)):
                by_index.setdefault(idx, reward)
        except ValueError as exc:
            raise StoreCorruptError(
                f"the stored steps {first}..{last} of episode {episode_id} are damaged ({exc})"
            ) from None
    if not by_index:
        return []
    out: list[float | None] = [None] * (max(by_index) + 1)
    for idx, reward in by_index.items():
        out[idx] = reward
    return out


def _chunk_steps(conn: Connection, episode_id: str, start: int, limit: int | None) -> Iterator[wire_steps.ChunkStep]:
    """The chunked steps ``start``.. of an episode, in order (at least ``limit`` of them if there are)."""
    c = _CHUNK.c  # chunks of an episode hold disjoint, increasing index ranges: seek to the one with ``start``
    holding = select(func.max(c.first_idx)).where(c.episode_id == episode_id, c.first_idx <= start).scalar_subquery()
    stmt = (select(c.first_idx, c.last_idx, c.data).where(c.episode_id == episode_id,
            c.first_idx >= func.coalesce(holding, 0), c.last_idx >= start).order_by(c.first_idx))  # fmt: skip
    found = 0
    for first, last, data in conn.execute(stmt):
        try:
            for step in wire_steps.iter_chunk(bytes(data)):
                if step.idx >= start:
                    yield step
                    found += 1
                    if limit is not None and found >= limit:
                        return
        except ValueError as exc:
            raise StoreCorruptError(
                f"the stored steps {first}..{last} of episode {episode_id} are damaged ({exc}); "
                "pages before the damage still read"
            ) from None


def resolve_id(conn: Connection, prefix: str) -> str:
    """Exact id, else the single id with this prefix (an index range scan)."""
    prefix = prefix.strip().lower()
    if not prefix or not all(ch in "0123456789abcdef" for ch in prefix):
        raise EpisodeNotFoundError(f"no episode {prefix!r} (ids are hexadecimal)", episode_id=prefix)
    c = _EP.c
    rows = conn.execute(select(c.id).where(c.id >= prefix, c.id < prefix + "g").order_by(c.id).limit(2)).all()
    exact = [r.id for r in rows if r.id == prefix]
    if exact:
        return exact[0]
    if not rows:
        raise EpisodeNotFoundError(f"no episode {prefix!r}", episode_id=prefix)
    if len(rows) > 1:
        raise RecordingError(
            f"episode id prefix {prefix!r} is ambiguous; give more digits", code="AMBIGUOUS_ID"
        )
    return rows[0].id


_FACETS = {"env": _EP.c.env_name, "source": _EP.c.source, "label": _EP.c.label, "tag": _TAG.c.tag}


def distinct_values(conn: Connection, facet: str, limit: int = 500) -> list[str]:
    """Distinct env names, sources, labels or tags (for filter menus), sorted."""
    if facet not in _FACETS:
        raise RecordingError(f"unknown facet {facet!r}; one of {sorted(_FACETS)}", code="BAD_FACET")
    column = _FACETS[facet]
    stmt = select(column).where(column.is_not(None)).distinct().order_by(column).limit(limit)
    return [row[0] for row in conn.execute(stmt)]
