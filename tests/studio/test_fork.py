"""Fork at step k from Python (``openenv.recording.fork``/``fork_sync``) and the CLI: the recorded
actions are replayed on a fresh session, observations compared, the first divergence stops it
(or not), and the new episode records its parent and fork step; schema 2 stores gain the columns."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from openenv.core import GenericEnvClient
from openenv.recording import EpisodeStore, RecordingError, fork, fork_sync, record
from openenv.recording.schema import SCHEMA_VERSION, read_version
from tests.recording.conftest import pg_url  # noqa: F401,F811 - a fresh PostgreSQL database
from tests.studio.drift_env import drift_app
from tests.webui.servers import serve


@pytest.fixture()
def drift_url() -> Iterator[str]:
    with serve(drift_app()) as url:
        yield url


def _played(store: EpisodeStore, url: str, adds: list[int]) -> str:
    with record(GenericEnvClient(base_url=url).sync(), store=store, label="parent") as env:
        env.reset(seed=7)
        for a in adds:
            env.step({"add": a})
        return env.episode_id


def test_fork_replays_to_k_and_continues_as_a_linked_episode(tmp_path: Path, echo_url: str) -> None:
    store = EpisodeStore(tmp_path / "e.db")
    with record(GenericEnvClient(base_url=echo_url).sync(), store=store) as env:
        env.reset()
        for m in ("a", "bb", "ccc", "dddd", "eeeee"):
            env.step({"message": m})
        parent = env.episode_id
    with GenericEnvClient(base_url=echo_url).sync() as client:
        forked = fork_sync(store, parent, client, step=3)
        assert forked.report.complete and not forked.report.diverged and forked.report.replayed == 3
        result = forked.client.step({"message": "a new branch"})
        assert result.observation["echoed_message"] == "a new branch"
        child = forked.report.episode_id
    store.flush()
    ep = store.get_episode(child)
    assert (ep.parent_episode_id, ep.fork_step, ep.step_count) == (parent, 3, 4)
    assert [s.action["message"] for s in store.load_steps(child)[1:]] == ["a", "bb", "ccc", "a new branch"]
    assert ep.total_reward == pytest.approx(0.1 + 0.2 + 0.3 + 1.2)
    assert [e.id for e in store.list_forks(parent)] == [child] and store.list_forks(child) == []
    assert store.get_episode(parent).parent_episode_id is None
    from openenv.recording import export_jsonl, export_parquet, import_jsonl, import_parquet

    export_parquet(store, tmp_path / "f.parquet", episode_ids=[child])
    with open(tmp_path / "f.jsonl", "w") as fh:
        export_jsonl(store, fh, episode_ids=[child])
    for name, load in (("p.db", lambda s: import_parquet(s, tmp_path / "f.parquet")),
                       ("j.db", lambda s: import_jsonl(s, tmp_path / "f.jsonl"))):
        with EpisodeStore(tmp_path / name) as other:
            load(other)
            copy = other.get_episode(child)
            assert (copy.parent_episode_id, copy.fork_step, copy.step_count) == (parent, 3, 4)
    with pytest.raises(RecordingError, match="steps 0..5"):
        with GenericEnvClient(base_url=echo_url).sync() as client:
            fork_sync(store, parent, client, step=6)
    store.close()


def test_fork_stops_at_the_first_divergence_unless_told(tmp_path: Path, drift_url: str) -> None:
    store = EpisodeStore(tmp_path / "e.db")
    parent = _played(store, drift_url, [1, 2, 3, 4])

    async def go(keep_going: bool) -> tuple:  # noqa: ANN202
        client = GenericEnvClient(base_url=drift_url)
        try:
            forked = await fork(store, parent, client, step=4, keep_going=keep_going, label="fork")
            before = forked.report.replayed
            if not keep_going:
                assert not forked.report.complete and len(forked.pending) == 2
                await forked.proceed()
            return forked.report, before
        finally:
            await client.close()

    report, before = asyncio.run(go(False))
    assert report.divergence.diverged_at == 2 and report.divergence.field == "observation"
    assert [c.path for c in report.divergence.observation_diff.changed] == ["drift"]
    assert before == 2 and report.complete and report.replayed == 4
    assert "diverged at step 2" in report.describe()
    report, before = asyncio.run(go(True))
    assert before == 4 and report.divergences == 1 and report.complete
    store.flush()
    forks = store.list_forks(parent)
    assert [(f.fork_step, f.step_count, f.label) for f in forks] == [(4, 4, "fork"), (4, 4, "fork")]
    store.close()


def test_cli_fork(tmp_path: Path, drift_url: str, echo_url: str) -> None:
    from openenv.cli.main import cli

    db = tmp_path / "e.db"
    with EpisodeStore(db) as store:
        parent = _played(store, drift_url, [5, 6, 7])
    run = CliRunner().invoke
    out = run(cli, ["episodes", "--db", str(db), "fork", parent[:10], "--step", "1", "--url", drift_url])
    assert out.exit_code == 0, out.output
    assert "1 steps replayed, no divergence" in out.output
    out = run(cli, ["episodes", "--db", str(db), "fork", parent, "--step", "3", "--url", drift_url, "--json"])
    assert out.exit_code == 2, out.output  # diverged (step 2): stopped there
    report = json.loads(out.output)
    assert report["diverged_at"] == 2 and report["replayed"] == 2 and report["parent_id"] == parent
    out = run(cli, ["episodes", "--db", str(db), "fork", parent, "--step", "3", "--url", drift_url, "--keep-going"])
    assert out.exit_code == 2 and "replayed anyway" in out.output
    out = run(cli, ["episodes", "--db", str(db), "fork", parent, "--step", "9", "--url", drift_url])
    assert out.exit_code != 0 and "steps 0..3" in out.output
    with EpisodeStore(db) as store:
        assert len(store.list_forks(parent)) == 3
        shown = run(cli, ["episodes", "--db", str(db), "show", store.list_forks(parent)[0].id])
        assert f"forked from {parent[:12]} at step 1" in shown.output


def _downgrade_sqlite(db: Path) -> None:
    con = sqlite3.connect(db)
    con.executescript("""
        DROP INDEX ix_episode_parent;
        ALTER TABLE episode DROP COLUMN parent_episode_id;
        ALTER TABLE episode DROP COLUMN fork_step;
        UPDATE recording_meta SET value = '2' WHERE key = 'schema_version';
    """)
    con.close()


def test_a_schema_2_sqlite_store_gains_the_fork_columns(tmp_path: Path, echo_url: str) -> None:
    db = tmp_path / "old.db"
    with EpisodeStore(db) as store:
        with record(GenericEnvClient(base_url=echo_url).sync(), store=store) as env:
            env.reset()
            env.step({"message": "kept"})
            old = env.episode_id
    _downgrade_sqlite(db)
    with EpisodeStore(db) as store:
        assert store.write(read_version) == SCHEMA_VERSION
        assert store.get_episode(old).parent_episode_id is None
        assert store.load_steps(old)[1].action == {"message": "kept"}
        with GenericEnvClient(base_url=echo_url).sync() as client:
            child = fork_sync(store, old, client, step=1).report.episode_id
        assert store.get_episode(child).fork_step == 1


@pytest.mark.postgres
def test_a_schema_2_postgres_store_gains_the_fork_columns(pg_url: str, echo_url: str) -> None:  # noqa: F811
    with EpisodeStore(pg_url) as store:
        with record(GenericEnvClient(base_url=echo_url).sync(), store=store) as env:
            env.reset()
            env.step({"message": "kept"})
            old = env.episode_id
        store.write(lambda c: c.exec_driver_sql(
            "DROP INDEX ix_episode_parent; ALTER TABLE episode DROP COLUMN parent_episode_id, DROP COLUMN fork_step;"
            " UPDATE recording_meta SET value = '2' WHERE key = 'schema_version'"))
    with EpisodeStore(pg_url) as store:
        assert store.write(read_version) == SCHEMA_VERSION
        with GenericEnvClient(base_url=echo_url).sync() as client:
            child = fork_sync(store, old, client, step=1).report.episode_id
        ep = store.get_episode(child)
        assert (ep.parent_episode_id, ep.fork_step) == (old, 1)
        assert [f.id for f in store.list_forks(old)] == [child]


def test_fork_routes_answer_bad_input_clearly(sc, studio_data: Path) -> None:  # noqa: ANN001 - StudioClient
    from tests.studio.test_play_reset_state import attach
    from tests.webui.servers import echo_app

    with serve(echo_app()) as url:
        rid = attach(sc, url)
        try:
            store = EpisodeStore(studio_data / "episodes.db")
            with record(GenericEnvClient(base_url=url).sync(), store=store) as env:
                env.reset()
                env.step({"message": "one"})
                eid = env.episode_id
            store.close()
            assert "Fork here" in sc.page(f"/episodes/{eid}").by_id("fork-form").text()
            assert sc.post(f"/episodes/{eid}/fork", {"runtime": rid, "step": "x"}).status_code == 400
            resp = sc.post(f"/episodes/{eid}/fork", {"runtime": rid, "step": "5"})
            assert resp.status_code == 400 and "steps 0..1" in resp.text
            assert sc.post(f"/episodes/{eid}/fork", {"runtime": "nope", "step": "1"}).status_code == 404
            assert sc.post(f"/episodes/{'0' * 32}/fork", {"runtime": rid, "step": "1"}).status_code == 404
            resp = sc.post(f"/episodes/{eid}/fork", {"runtime": rid, "step": "1"})
            assert resp.status_code == 200 and resp.headers["HX-Redirect"].startswith(f"/play/{rid}?session=")
            play = sc.page(resp.headers["HX-Redirect"])
            assert f"forked from {eid[:12]} at step 1" in play.by_id("play-episode").text()
            assert sc.post("/play/s/nope/fork/proceed").status_code == 404
        finally:
            sc.post(f"/envs/r/{rid}/stop")
