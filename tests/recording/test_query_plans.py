"""Listings and step pages are index walks (no sort of the whole table, no scan of all steps)."""

from __future__ import annotations

from pathlib import Path

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


def test_a_step_page_seeks_to_the_chunk_that_holds_its_start(db_path: Path) -> None:
    """An episode stepped slowly has a chunk per step: a page near its end must not read them all."""
    from sqlalchemy import event

    from openenv.stepjournal import committer
    from openenv.stepjournal import format as fmt

    with EpisodeStore(db_path, journal=False) as s:
        eid = s.start_episode(s.create_run(env_name="echo"), observation={})
    raw = committer.connect(str(db_path), 5000)
    for i in range(1, 301):
        record = fmt.pack_step(eid.encode(), i, float(i), 0.1, None, False, b'{"data":{"m":%d}}' % i, b'{"data":{}}')
        committer.commit(raw, committer.decode([record]))
    raw.close()
    with EpisodeStore(db_path) as s:
        plans: list[str] = []

        def explain(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001, PLR0913
            if "step_chunk" in statement and not statement.startswith("EXPLAIN"):
                rows = cursor.connection.execute("EXPLAIN QUERY PLAN " + statement, parameters).fetchall()
                plans.append(" | ".join(row[-1] for row in rows))

        event.listen(s.engine, "before_cursor_execute", explain)
        page = s.load_steps(eid, start=250, limit=10)
        assert [x.index for x in page] == list(range(250, 260)) and page[0].action == {"m": 250}
        assert plans and all("USING INDEX sqlite_autoindex_step_chunk_1 (episode_id=? AND first_idx>?)" in p
                             for p in plans), plans  # fmt: skip
