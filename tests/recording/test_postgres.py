"""The same store on a real PostgreSQL: recording through a client, several writer processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import EpisodeFilter, EpisodeStore, SchemaVersionError, record, rerun_sync

pytestmark = pytest.mark.postgres
WRITER = Path(__file__).with_name("writer_proc.py")
REPO = Path(__file__).resolve().parents[2]


def test_record_and_rerun_on_postgres(pg_url: str, echo_url: str) -> None:
    from openenv.core.generic_client import GenericEnvClient

    with EpisodeStore(pg_url) as store:
        assert store.dialect == "postgresql"
        with record(EchoEnv(base_url=echo_url).sync(), store=store, label="pg") as env:
            env.reset(seed=2)
            for m in ("a", "bc"):
                env.step(EchoAction(message=m))
            eid = env.episode_id
        ep = store.get_episode(eid)
        assert (ep.step_count, ep.end_reason, ep.label) == (2, "closed", "pg")
        assert store.list_episodes(EpisodeFilter(label="pg", finished=True)).items[0].id == eid
        assert store.resolve_id(eid[:10]) == eid
        with GenericEnvClient(base_url=echo_url).sync() as fresh:
            assert rerun_sync(store, eid, fresh).deterministic


def test_writer_processes_on_postgres(pg_url: str) -> None:
    EpisodeStore(pg_url).close()  # also exercised: concurrent schema set-up under the advisory lock
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, str(WRITER), pg_url, "2", "100"], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(6)]  # fmt: skip
    errors = []
    for p in procs:
        _, err = p.communicate(timeout=180)
        if p.returncode:
            errors.append(err[-400:])
    assert errors == []
    with EpisodeStore(pg_url) as store:
        assert store.count_episodes() == 12
        assert sum(e.step_count for e in store.iter_episodes()) == 1200
        assert all(e.done for e in store.iter_episodes())


def test_newer_schema_on_postgres(pg_url: str) -> None:
    with EpisodeStore(pg_url) as store:
        store.write(lambda c: c.exec_driver_sql("UPDATE recording_meta SET value = '7'"))
    try:
        EpisodeStore(pg_url)
    except SchemaVersionError as exc:
        assert exc.found == 7
    else:
        raise AssertionError("a newer schema must be refused")


def test_reconnects_after_the_server_drops_the_connection(pg_url: str) -> None:
    from openenv.recording import RecordingError

    from .conftest import _pg_connect, fill

    with EpisodeStore(pg_url) as store:
        (eid,) = fill(store, steps=1, done=False)
        with _pg_connect() as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (pg_url.rsplit("/", 1)[1],),
            )
        with pytest.raises(RecordingError):  # the lost connection is reported, not hidden
            store.append_step(eid, 2, action={}, observation={})
        store.append_step(eid, 2, action={}, observation={}, done=True)  # the next write reconnects
        assert store.get_episode(eid).step_count == 2
