"""The store on SQLite and PostgreSQL: writes, listings, filters, pagination, notes, tags, delete."""

from __future__ import annotations

import time

import pytest

from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import EpisodeFilter, EpisodeNotFoundError, EpisodeStore, record

from .conftest import fill


def test_episode_round_trip(any_store: EpisodeStore) -> None:
    run = any_store.create_run(
        env_name="echo",
        env_version="1.0",
        base_url="http://h",
        provider="local",
        image="img:1",
        action_schema_hash="a" * 64,
        label="ppo",
        info={"k": [1]},
    )
    eid = any_store.start_episode(
        run, reset_kwargs={"seed": 7, "mode": "x"}, observation={"o": 0}, state={"step_count": 0}
    )
    any_store.append_step(
        eid,
        1,
        action={"message": "hi"},
        observation={"o": "hi"},
        reward=0.5,
        metadata={"m": 1},
        latency_ms=1.5,
    )
    any_store.append_step(eid, 2, action={"message": "yo"}, observation={"o": "yo"}, reward=None, done=True)
    ep = any_store.get_episode(eid)
    assert (ep.env_name, ep.label, ep.source, ep.seed) == ("echo", "ppo", "programmatic", 7)
    assert ep.reset_kwargs == {"seed": 7, "mode": "x"}
    assert (ep.step_count, ep.total_reward, ep.done, ep.end_reason, ep.finished) == (
        2,
        0.5,
        True,
        "done",
        True,
    )
    assert ep.run is not None and ep.run.image == "img:1" and ep.run.info == {"k": [1]}
    steps = any_store.load_steps(eid)
    assert [s.index for s in steps] == [0, 1, 2]
    assert steps[0].action is None and steps[0].state == {"step_count": 0}
    assert (
        steps[1].action == {"message": "hi"} and steps[1].metadata == {"m": 1} and steps[1].latency_ms == 1.5
    )
    assert steps[2].done and steps[2].reward is None
    assert [s.index for s in any_store.load_steps(eid, start=1, limit=1)] == [1]


def test_unfinished_and_finish(any_store: EpisodeStore) -> None:
    (eid,) = fill(any_store, steps=2, done=False)
    assert not any_store.get_episode(eid).finished
    any_store.finish_episode(eid, "closed")
    any_store.finish_episode(eid, "reset")  # first reason wins
    ep = any_store.get_episode(eid)
    assert ep.finished and ep.end_reason == "closed" and not ep.done


def test_listing_filters(any_store: EpisodeStore) -> None:
    a = fill(any_store, env="echo", label="a", episodes=3, steps=2)
    b = fill(any_store, env="repl", label="b", episodes=2, steps=4, source="human", done=False)
    f = EpisodeFilter
    ids = lambda flt: {e.id for e in any_store.iter_episodes(flt)}  # noqa: E731
    assert ids(f(env="echo")) == set(a)
    assert ids(f(label="b")) == set(b) == ids(f(source="human")) == ids(f(finished=False))
    assert ids(f(finished=True)) == set(a)
    assert ids(f(min_return=10)) == set(b)  # 1+2+3+4
    assert ids(f(max_return=3)) == set(a)
    assert ids(f(min_length=4)) == set(b) and ids(f(max_length=2)) == set(a)
    assert ids(f(since=time.time() + 60)) == set() and len(ids(f(until=time.time() + 60))) == 5
    assert any_store.count_episodes(f(env="echo")) == 3
    any_store.set_tags(a[0], ["good", "replay"])
    any_store.set_notes(a[0], "agent looped")
    assert ids(f(tag="good")) == {a[0]}
    ep = any_store.get_episode(a[0])
    assert ep.tags == ("good", "replay") and ep.notes == "agent looped"
    page = any_store.list_episodes(f(tag="good"))
    assert page.items[0].tags == ("good", "replay")


def test_pagination_is_stable_and_complete(any_store: EpisodeStore) -> None:
    ids = fill(any_store, episodes=23, steps=1)
    seen, cursor = [], None
    for _ in range(10):
        page = any_store.list_episodes(limit=5, cursor=cursor)
        seen += [e.id for e in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == list(reversed(ids))  # newest first, none lost or repeated


def test_delete_and_missing(any_store: EpisodeStore) -> None:
    ids = fill(any_store, episodes=3)
    any_store.set_tags(ids[0], ["x"])
    assert any_store.delete_episodes(ids[:2] + ["nope"]) == 2
    assert [e.id for e in any_store.iter_episodes()] == [ids[2]]
    with pytest.raises(EpisodeNotFoundError):
        any_store.get_episode(ids[0])
    assert any_store.load_steps(ids[0]) == []
    with pytest.raises(EpisodeNotFoundError):
        any_store.set_notes("nope", "x")


def test_deleting_wire_recorded_episodes_removes_their_chunks(store: EpisodeStore, echo_url: str) -> None:
    with record(EchoEnv(base_url=echo_url).sync(), store=store) as env:
        for _ in range(2):
            env.reset()
            env.step(EchoAction(message="x"))
        kept = env.episode_id
    gone = [e.id for e in store.iter_episodes() if e.id != kept]
    chunks = "SELECT episode_id FROM step_chunk"
    assert sorted(r[0] for r in store.write(lambda c: c.exec_driver_sql(chunks).all())) == sorted(gone + [kept])
    assert store.delete_episodes(gone) == 1
    assert [r[0] for r in store.write(lambda c: c.exec_driver_sql(chunks).all())] == [kept]
    assert [s.index for s in store.load_steps(kept)] == [0, 1] and store.load_steps(gone[0]) == []


def test_unserialisable_observation_is_marked(store: EpisodeStore) -> None:
    class Weird:
        def __repr__(self) -> str:
            return "<weird>"

    run = store.create_run(env_name="echo")
    eid = store.start_episode(run, observation={"blob": b"\x00\x01", "obj": Weird(), "nan": float("nan")})
    obs = store.load_steps(eid)[0].observation
    assert obs["blob"]["__openenv_unserializable__"] == "bytes"
    assert obs["obj"] == {
        "__openenv_unserializable__": "test_unserialisable_observation_is_marked.<locals>.Weird",
        "repr": "<weird>",
    }
    assert obs["nan"] is None  # as on the wire


def test_reopen_keeps_data(db_path) -> None:  # noqa: ANN001
    with EpisodeStore(db_path) as s:
        (eid,) = fill(s, steps=5)
    with EpisodeStore(db_path) as s:
        assert s.get_episode(eid).step_count == 5
        assert len(s.load_steps(eid)) == 6


def test_awkward_json_values(store: EpisodeStore) -> None:
    deep: dict = {}
    node = deep
    for _ in range(300):
        node["d"] = {}
        node = node["d"]
    run = store.create_run(env_name="echo")
    eid = store.start_episode(run, observation={"big": 2**70, 1: "int key", "deep": deep, "t": (1, 2)})
    obs = store.load_steps(eid)[0].observation
    assert obs["big"]["__openenv_unserializable__"] == "int" and obs["1"] == "int key" and obs["t"] == [1, 2]
    depth, node = 0, obs["deep"]
    while "d" in node:
        node, depth = node["d"], depth + 1
    assert 50 < depth < 300 and node.get("__openenv_unserializable__") == "dict"


def test_pagination_with_equal_start_times(store: EpisodeStore) -> None:
    fill(store, episodes=7, steps=1)
    store.write(lambda c: c.exec_driver_sql("UPDATE episode SET started_at = 1000.5"))
    seen, cursor = [], None
    for _ in range(5):
        page = store.list_episodes(limit=3, cursor=cursor)
        seen += [e.id for e in page.items]
        if (cursor := page.next_cursor) is None:
            break
    assert len(seen) == len(set(seen)) == 7


def test_in_memory_target_is_refused() -> None:
    from openenv.recording import RecordingError

    with pytest.raises(RecordingError, match="in-memory"):
        EpisodeStore(":memory:")


def test_replay_pages_and_changes(store: EpisodeStore) -> None:
    from openenv.recording import Replay

    (eid,) = fill(store, steps=9)
    replay = Replay(store, eid, page=4)
    assert len(replay) == 10
    assert [replay[i].index for i in (7, 0, 9, 5, -1)] == [7, 0, 9, 5, 9]
    assert [s.index for s in replay] == list(range(10))
    assert replay.changes(3).paths == ["echoed_message", "n"]
    assert replay.changes(0).paths == ["echoed_message", "n"]
    with pytest.raises(IndexError):
        replay[10]


def test_distinct_values_for_filter_menus(any_store: EpisodeStore) -> None:
    from openenv.recording import RecordingError

    a = fill(any_store, env="repl", label="zeta")
    fill(any_store, env="echo", label=None, source="human")
    any_store.set_tags(a[0], ["b", "a"])
    assert any_store.distinct_values("env") == ["echo", "repl"]
    assert any_store.distinct_values("source") == ["human", "programmatic"]
    assert any_store.distinct_values("label") == ["zeta"]
    assert any_store.distinct_values("tag") == ["a", "b"]
    with pytest.raises(RecordingError, match="unknown facet"):
        any_store.distinct_values("nope")
