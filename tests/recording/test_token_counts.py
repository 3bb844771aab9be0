"""Schema 6: a model turn's token counts, kept on the turn and summed on its episode by every write
path (the journal on SQLite, a direct write, PostgreSQL, an import), counted again by the 5 -> 6
migration, and read per training step by the run dashboard's query."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select, text

from openenv.recording import EpisodeFilter, EpisodeStore
from openenv.recording import run_queries as rq
from openenv.recording.models import StepAgent
from openenv.recording.schema import SCHEMA_VERSION, read_version
from openenv.recording.tokens import turn_counts
from openenv.recording.transfer import export_jsonl, import_jsonl


def _turn(prompt: int, sampled: int) -> dict:
    return {"model": "m", "capture": {"prompt_ids": list(range(prompt)), "sampled_ids": list(range(sampled)),
                                      "logprobs": [-0.5] * sampled}}  # fmt: skip


def test_turn_counts_read_ids_else_usage_and_add_failed_attempts() -> None:
    assert turn_counts(_turn(7, 3)) == (7, 3)
    assert turn_counts({"prompt_tokens": 12, "completion_tokens": 4}) == (12, 4)
    assert turn_counts({"prompt_tokens": 12, "completion_tokens": 4,
                        "attempts": [{"prompt_tokens": 10, "completion_tokens": 2}, "junk"]}) == (22, 6)
    assert turn_counts({"completion": "hi"}) == (None, None)
    assert turn_counts(None) == (None, None)
    assert turn_counts({"prompt_tokens": -1, "completion_tokens": "3"}) == (None, None)


@pytest.mark.parametrize("journaled", [True, False])
def test_sqlite_sums_turns_on_the_episode_with_and_without_the_journal(tmp_path: Path, journaled: bool) -> None:
    with EpisodeStore(tmp_path / "t.db", journal=journaled) as store:
        run = store.create_run(env_name="echo", journaled=store.journaled)
        eid = store.start_episode(run, observation={}, journaled=store.journaled)
        store.record_turn(eid, 1, "model", _turn(100, 20), journaled=store.journaled)
        store.record_turn(eid, 2, "model", {"prompt_tokens": 130, "completion_tokens": 5}, journaled=store.journaled)
        store.record_turn(eid, 3, "human", None, journaled=store.journaled)
        store.flush()
        episode = store.get_episode(eid)
        assert (episode.prompt_tokens, episode.completion_tokens) == (230, 25)
        with store.engine.connect() as conn:
            c = StepAgent.__table__.c
            rows = conn.execute(select(c.idx, c.prompt_tokens, c.completion_tokens).where(c.episode_id == eid)
                                .order_by(c.idx)).all()  # fmt: skip
        assert [tuple(r) for r in rows] == [(1, 100, 20), (2, 130, 5), (3, None, None)]


def test_every_dialect_counts_replaced_turns_once_and_the_dashboard_reads_them(any_store: EpisodeStore) -> None:
    run_id = any_store.open_training_run("grpo", trainer="custom")
    ids = []
    for step in range(2):
        for i in range(2):
            eid = any_store.start_episode(any_store.create_run(env_name="echo"), observation={},
                                          training={"training_run_id": run_id, "train_step": step,
                                                    "group_id": "0", "group_index": i})  # fmt: skip
            any_store.record_turn(eid, 1, "model", _turn(10 * (step + 1), 2 + i))
            ids.append(eid)
    any_store.record_turn(ids[0], 1, "model", _turn(50, 5))  # recorded again: replaces, not adds
    any_store.record_turn(ids[1], 2, "model", {"completion": "no counts"})
    assert (any_store.get_episode(ids[0]).prompt_tokens, any_store.get_episode(ids[0]).completion_tokens) == (50, 5)
    untouched = any_store.start_episode(any_store.create_run(env_name="echo"), observation={},
                                        training={"training_run_id": run_id, "train_step": 1, "group_id": "1",
                                                  "group_index": 0})  # fmt: skip
    assert any_store.get_episode(untouched).prompt_tokens is None
    with any_store.engine.connect() as conn:
        steps = rq.run_steps(conn, rq.RunScope(run_id))
    assert [s.x for s in steps] == [0, 1]
    assert steps[0].prompt_tokens == pytest.approx(30) and steps[0].completion_tokens == pytest.approx(4)
    assert steps[0].tokens == 50 + 5 + 10 + 3
    assert steps[1].n == 3 and steps[1].prompt_tokens == pytest.approx(20) and steps[1].tokens == 40 + 2 + 3


def test_an_import_counts_its_turns_again(tmp_path: Path) -> None:
    with EpisodeStore(tmp_path / "a.db") as a:
        eid = a.start_episode(a.create_run(env_name="echo"), observation={})
        a.append_step(eid, 1, action={"m": "x"}, observation={"y": 1}, reward=1.0)
        a.record_turn(eid, 1, "model", _turn(9, 4))
        export_jsonl(a, tmp_path / "e.jsonl")
    with EpisodeStore(tmp_path / "b.db") as b:
        import_jsonl(b, tmp_path / "e.jsonl")
        episode = b.get_episode(eid)
        assert (episode.prompt_tokens, episode.completion_tokens) == (9, 4)
        assert len(list(b.iter_episodes(EpisodeFilter()))) == 1


def _downgrade_to_5(store: EpisodeStore) -> None:
    def tx(conn) -> None:  # noqa: ANN001
        for table in ("episode", "step_agent"):
            for column in ("prompt_tokens", "completion_tokens"):
                conn.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
        conn.execute(text("UPDATE recording_meta SET value = '5' WHERE key = 'schema_version'"))

    store.write(tx)


@pytest.mark.parametrize("dialect", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_version_5_store_gains_counts_for_the_turns_it_has(
    request: pytest.FixtureRequest, tmp_path: Path, dialect: str
) -> None:
    target = tmp_path / "v5.db" if dialect == "sqlite" else request.getfixturevalue("pg_url")
    with EpisodeStore(target) as s:
        run = s.create_run(env_name="echo")
        counted = s.start_episode(run, observation={})
        s.record_turn(counted, 1, "model", _turn(30, 7))
        s.record_turn(counted, 2, "model", {"prompt_tokens": 40, "completion_tokens": 1})
        plain = s.start_episode(run, observation={})
        s.record_turn(plain, 1, "human")
        _downgrade_to_5(s)
    with EpisodeStore(target) as s:
        assert s.write(read_version) == SCHEMA_VERSION == 6
        assert (s.get_episode(counted).prompt_tokens, s.get_episode(counted).completion_tokens) == (70, 8)
        assert s.get_episode(plain).prompt_tokens is None
        assert s.load_turns(counted)[1][1]["capture"]["sampled_ids"] == list(range(7))  # the turn reads as it was
