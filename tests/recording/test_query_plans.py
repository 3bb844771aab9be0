"""Listings and step pages are index walks (no sort of the whole table, no scan of all steps)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from openenv.recording import EpisodeFilter, EpisodeStore
from openenv.recording.models import Episode, Step, StepChunk
from openenv.recording.queries import _LIST_COLUMNS

from .conftest import fill


def _plan(store: EpisodeStore, stmt) -> str:  # noqa: ANN001
    sql = str(stmt.compile(store.engine, compile_kwargs={"literal_binds": True}))
    with store.engine.connect() as conn:
        return " | ".join(row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}"))


@pytest.mark.parametrize(
    ("flt", "index"),
    [
        (EpisodeFilter(), "ix_episode_started"),
        (EpisodeFilter(env="echo"), "ix_episode_env_started"),
        (EpisodeFilter(source="human"), "ix_episode_source_started"),
        (EpisodeFilter(label="a", finished=True, min_return=1.0), "ix_episode_label_started"),
    ],
)
def test_listing_walks_an_index_in_order(store: EpisodeStore, flt: EpisodeFilter, index: str) -> None:
    fill(store, episodes=3)
    ep = Episode.__table__
    stmt = (select(*_LIST_COLUMNS).where(*flt.clauses())
            .order_by(ep.c.started_at.desc(), ep.c.id.desc()).limit(51))  # fmt: skip
    plan = _plan(store, stmt)
    assert index in plan and "TEMP B-TREE" not in plan, plan


def test_step_page_is_a_primary_key_range(store: EpisodeStore) -> None:
    (eid,) = fill(store, steps=5)
    st = Step.__table__
    stmt = select(st).where(st.c.episode_id == eid, st.c.idx >= 2).order_by(st.c.idx).limit(100)
    plan = _plan(store, stmt)
    assert "PRIMARY KEY" in plan and "TEMP B-TREE" not in plan, plan


def test_chunk_reads_walk_the_episode_s_chunks_in_order(store: EpisodeStore) -> None:
    (eid,) = fill(store, steps=5)
    ch = StepChunk.__table__
    stmt = select(ch.c.data).where(ch.c.episode_id == eid, ch.c.last_idx >= 2).order_by(ch.c.first_idx)
    plan = _plan(store, stmt)
    assert "sqlite_autoindex_step_chunk_1" in plan and "TEMP B-TREE" not in plan, plan
