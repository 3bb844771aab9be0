"""Exchange dicts of many episodes, read a batch at a time (a handful of queries per batch of
episodes rather than several per episode): what large exports stream.

    for batch in iter_episode_batches(store, filters=EpisodeFilter(env="repl")):
        for obj in batch: ...

The dicts are the ones ``transfer.iter_episode_dicts`` yields (``episode_format.episode_to_dict``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from openenv.stepjournal import wire_steps

from . import queries
from .engine import guarded
from .episode_format import episode_to_dict
from .errors import StoreCorruptError
from .jsonable import loads
from .models import EnvRun, Episode, Step, StepAgent, StepChunk
from .records import EpisodeRecord, RunRecord, StepRecord

__all__ = ["iter_episode_batches"]

_EP, _RUN, _STEP, _CHUNK, _AGENT = (t.__table__ for t in (Episode, EnvRun, Step, StepChunk, StepAgent))


def iter_episode_batches(
    store: Any, *, filters: queries.EpisodeFilter | None = None, episode_ids: Iterable[str] | None = None,
    batch: int = 200,
) -> Iterator[list[dict[str, Any]]]:
    """Lists of exchange dicts (ids in the given order, else the filter's episodes newest first)."""
    store.flush()
    if episode_ids is not None:
        ids = list(episode_ids)
        for i in range(0, len(ids), batch):
            yield _batch(store, ids[i : i + batch])
        return
    cursor: str | None = None
    for _ in range(10_000_000):
        page = store.list_episodes(filters, limit=batch, cursor=cursor)
        if page.items:
            yield _batch(store, [e.id for e in page.items])
        cursor = page.next_cursor
        if cursor is None:
            return


def _batch(store: Any, ids: list[str]) -> list[dict[str, Any]]:
    with guarded("export episodes"), store.engine.connect() as conn:
        rows = {r.id: r for r in conn.execute(select(_EP).where(_EP.c.id.in_(ids)))}
        runs = _runs(conn, {r.run_id for r in rows.values()})
        tags = queries._tags_for(conn, ids)
        steps = _steps(conn, ids)
        turns = _turns(conn, ids)
    out = []
    for eid in ids:
        row = rows.get(eid)
        if row is None:
            continue  # deleted meanwhile
        ep: EpisodeRecord = queries._episode(row, tags=tags.get(eid, ()), run=runs.get(row.run_id))
        own = steps.get(eid, [])
        ep_turns = turns.get(eid, {})
        if ep_turns:
            own = [replace(s, actor=ep_turns[s.index][0], agent=ep_turns[s.index][1]) if s.index in ep_turns else s
                   for s in own]  # fmt: skip
        after = own[-1].index + 1 if own else 0
        late = sorted(i for i in ep_turns if i >= after)
        failed = {"index": late[0], "actor": ep_turns[late[0]][0], "agent": ep_turns[late[0]][1]} if late else None
        out.append(episode_to_dict(ep, own, failed))
    return out


def _runs(conn: Connection, run_ids: set[str]) -> dict[str, RunRecord]:
    out = {}
    for row in conn.execute(select(_RUN).where(_RUN.c.id.in_(run_ids))):
        m = dict(row._mapping)
        m["info"] = loads(m["info"])
        out[m["id"]] = RunRecord(**m)
    return out


def _steps(conn: Connection, ids: list[str]) -> dict[str, list[StepRecord]]:
    by_ep: dict[str, dict[int, StepRecord]] = {}
    for row in conn.execute(select(_STEP).where(_STEP.c.episode_id.in_(ids))):
        r = row._mapping
        by_ep.setdefault(r["episode_id"], {})[r["idx"]] = StepRecord(
            index=r["idx"], action=loads(r["action"]), observation=loads(r["observation"]), reward=r["reward"],
            done=bool(r["done"]), metadata=loads(r["metadata"]), latency_ms=r["latency_ms"], t=r["t"],
            state=loads(r["state"]))  # fmt: skip
    c = _CHUNK.c
    for eid, first, last, data in conn.execute(select(c.episode_id, c.first_idx, c.last_idx, c.data)
                                               .where(c.episode_id.in_(ids))):  # fmt: skip
        own = by_ep.setdefault(eid, {})
        try:
            for step in wire_steps.iter_chunk(bytes(data)):
                if step.idx not in own:
                    action, observation, metadata = wire_steps.values(step.request, step.reply)
                    own[step.idx] = StepRecord(index=step.idx, action=action, observation=observation,
                                               reward=step.reward, done=step.done, metadata=metadata,
                                               latency_ms=step.latency_ms, t=step.t)  # fmt: skip
        except ValueError as exc:
            raise StoreCorruptError(f"the stored steps {first}..{last} of episode {eid} are damaged ({exc})") from None
    return {eid: [own[i] for i in sorted(own)] for eid, own in by_ep.items()}


def _turns(conn: Connection, ids: list[str]) -> dict[str, dict[int, tuple[str, Any]]]:
    out: dict[str, dict[int, tuple[str, Any]]] = {}
    c = _AGENT.c
    for eid, idx, actor, data in conn.execute(select(c.episode_id, c.idx, c.actor, c.data)
                                              .where(c.episode_id.in_(ids))):  # fmt: skip
        out.setdefault(eid, {})[idx] = (actor, loads(data))
    return out
