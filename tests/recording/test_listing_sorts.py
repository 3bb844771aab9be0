"""Listing orders: every sort pages through all its episodes exactly once, and each page is an
index seek (a row-value cursor, not an OR the planner scans through)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import event

from bench.gen_store import generate
from openenv.recording import EpisodeFilter, EpisodeStore
from openenv.recording.errors import RecordingError
from openenv.recording.queries import SORTS

RUN = "7" * 32


@pytest.fixture(scope="module")
def gen_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sorts") / "gen.db"
    generate(path, episodes=300, steps_per_episode=3, train_steps=5, rollouts=16, group_size=4, long_call_tokens=50)
    return path


def _all_pages(store: EpisodeStore, flt: EpisodeFilter, sort: str, descending: bool) -> list:
    out, cursor = [], None
    for _ in range(100):
        page = store.list_episodes(flt, limit=7, cursor=cursor, sort=sort, descending=descending)
        out.extend(page.items)
        cursor = page.next_cursor
        if cursor is None:
            return out
    raise AssertionError("paging did not end")


@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("sort", sorted(SORTS))
def test_every_sort_pages_through_each_episode_once_in_order(gen_store: Path, sort: str, descending: bool) -> None:
    flt = EpisodeFilter(training_run_id=RUN) if sort in ("reward", "advantage", "step") else EpisodeFilter()
    with EpisodeStore(gen_store) as store:
        items = _all_pages(store, flt, sort, descending)
        column = SORTS[sort].name
        keys = [(getattr(e, column), e.id) for e in items]
        assert keys == sorted(keys, reverse=descending)
        assert len({e.id for e in items}) == len(items) == store.count_episodes(flt)


def test_filters_by_run_step_group_and_seed(gen_store: Path) -> None:
    with EpisodeStore(gen_store) as store:
        group = store.list_episodes(EpisodeFilter(training_run_id=RUN, train_step=2, group_id="s2-g1")).items
        assert sorted(e.group_index for e in group) == [0, 1, 2, 3]
        assert {e.seed for e in store.list_episodes(EpisodeFilter(seed=3), limit=200).items} == {3}


def test_a_bad_sort_or_cursor_is_a_coded_error(gen_store: Path) -> None:
    with EpisodeStore(gen_store) as store:
        with pytest.raises(RecordingError) as bad_sort:
            store.list_episodes(sort="nope")
        assert bad_sort.value.code == "BAD_SORT"
        with pytest.raises(RecordingError) as bad_cursor:
            store.list_episodes(cursor="x~y")
        assert bad_cursor.value.code == "BAD_CURSOR"


@pytest.mark.parametrize(
    ("flt", "sort", "index"),
    [
        (EpisodeFilter(), "started", "ix_episode_started"),
        (EpisodeFilter(), "return", "ix_episode_return"),
        (EpisodeFilter(), "length", "ix_episode_length"),
        (EpisodeFilter(finished=False), "started", "ix_episode_live"),
        (EpisodeFilter(seed=3), "started", "ix_episode_seed"),
        (EpisodeFilter(training_run_id=RUN), "reward", "ix_episode_run_reward"),
        (EpisodeFilter(training_run_id=RUN), "advantage", "ix_episode_run_advantage"),
    ],
)
def test_a_deep_page_seeks_its_index(gen_store: Path, flt: EpisodeFilter, sort: str, index: str) -> None:
    with EpisodeStore(gen_store) as store:
        first = store.list_episodes(flt, limit=3, sort=sort)
        plans: list[str] = []

        def explain(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001, PLR0913
            if statement.lstrip().upper().startswith("SELECT") and "FROM episode" in statement and "LIMIT" in statement:
                rows = cursor.connection.execute("EXPLAIN QUERY PLAN " + statement, parameters).fetchall()
                plans.append(" | ".join(row[-1] for row in rows))

        event.listen(store.engine, "before_cursor_execute", explain)
        # the live episodes are few: their first page is what matters (a deep one seeks the started index)
        cursor = None if flt.finished is False else (first.next_cursor or "0.0~0")
        store.list_episodes(flt, limit=3, sort=sort, cursor=cursor)
        event.remove(store.engine, "before_cursor_execute", explain)
        (plan,) = plans
        assert index in plan and "TEMP B-TREE" not in plan, plan
        if flt == EpisodeFilter() or sort != "started":
            assert "SEARCH" in plan, plan  # seeks to the cursor


def test_a_narrow_range_reads_its_index_and_keeps_live_episodes(tmp_path: Path) -> None:
    with EpisodeStore(tmp_path / "r.db") as store:
        run = store.create_run(env_name="echo")
        ids = []
        for n in range(30):
            eid = store.start_episode(run, observation={})
            for i in range(1, n % 6 + 1):
                store.append_step(eid, i, action={}, observation={}, reward=1.0, done=i == 5 and n % 2 == 0)
            if n % 2 == 0:
                store.finish_episode(eid, "closed")
            ids.append(eid)
        plans: list[str] = []

        def explain(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001, PLR0913
            if "LIMIT" in statement and "count(" not in statement:
                rows = cursor.connection.execute("EXPLAIN QUERY PLAN " + statement, parameters).fetchall()
                plans.append(" | ".join(row[-1] for row in rows))

        event.listen(store.engine, "before_cursor_execute", explain)
        got = [e.id for e in store.list_episodes(EpisodeFilter(min_length=5), limit=100).items]
        event.remove(store.engine, "before_cursor_execute", explain)
        assert got == [eid for n, eid in reversed(list(enumerate(ids))) if n % 6 == 5]  # live and ended alike
        assert "ix_episode_length" in plans[-1] and "ix_episode_live" in plans[-1], plans
        wide = [e.id for e in store.iter_episodes(EpisodeFilter(min_length=0, max_length=4), batch=7)]
        assert wide == [eid for n, eid in reversed(list(enumerate(ids))) if n % 6 <= 4]
