"""Faults: corrupt or newer files, foreign tables, migrations, disk full, killed writers, many writers."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import inspect

from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import (
    SCHEMA_VERSION,
    EpisodeFilter,
    EpisodeStore,
    RecordingError,
    SchemaVersionError,
    StoreBusyError,
    StoreCorruptError,
    StoreFullError,
    record,
)
from openenv.recording.schema import ensure_schema, read_version
from tests._require import require

from .conftest import fill, hold_write_lock, stored_steps

WRITER = Path(__file__).with_name("writer_proc.py")
REPO = Path(__file__).resolve().parents[2]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _popen(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, str(WRITER), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_corrupt_file_is_refused_untouched(db_path: Path) -> None:
    db_path.write_bytes(b"this is not sqlite at all\n" * 400)
    before = _digest(db_path)
    with pytest.raises(StoreCorruptError, match="not a usable SQLite database"):
        EpisodeStore(db_path)
    assert _digest(db_path) == before


def test_newer_schema_is_refused_untouched(db_path: Path) -> None:
    with EpisodeStore(db_path) as s:
        fill(s)
    con = sqlite3.connect(db_path)
    con.execute("UPDATE recording_meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = _digest(db_path)
    with pytest.raises(SchemaVersionError) as info:
        EpisodeStore(db_path)
    assert info.value.code == "SCHEMA_TOO_NEW" and info.value.found == 99
    assert _digest(db_path) == before


def test_our_tables_without_version_are_refused(db_path: Path) -> None:
    con = sqlite3.connect(db_path)
    con.execute("CREATE TABLE episode (id TEXT)")
    con.close()
    with pytest.raises(StoreCorruptError, match="no schema version"):
        EpisodeStore(db_path)


def _sql(db_path: Path, *statements: str) -> None:
    """Run ``statements`` on the file in one transaction, as another program would."""
    con = sqlite3.connect(db_path)
    try:
        for statement in statements:
            con.execute(statement)
        con.commit()
    finally:
        con.close()


def test_foreign_tables_are_left_alone(db_path: Path) -> None:
    _sql(db_path, "CREATE TABLE notes (x TEXT)", "INSERT INTO notes VALUES ('keep')")
    with EpisodeStore(db_path) as s:
        fill(s)
    assert sqlite3.connect(db_path).execute("SELECT x FROM notes").fetchall() == [("keep",)]


def test_migration_runs_in_order_and_bumps_version(store: EpisodeStore) -> None:
    (eid,) = fill(store)

    def add_rating(conn) -> None:  # noqa: ANN001
        conn.exec_driver_sql("ALTER TABLE episode ADD COLUMN rating INTEGER")

    now = SCHEMA_VERSION
    assert store.write(lambda c: ensure_schema(c, target=now + 1, migrations={now: add_rating})) == now + 1
    assert store.write(read_version) == now + 1
    assert "rating" in {c["name"] for c in inspect(store.engine).get_columns("episode")}
    assert store.get_episode(eid).step_count == 3
    with pytest.raises(SchemaVersionError, match="no migration"):
        store.write(lambda c: ensure_schema(c, target=now + 2, migrations={}))
    assert store.write(read_version) == now + 1  # the failed migration rolled back


def test_a_first_release_store_gains_step_chunks_and_keeps_its_steps(db_path: Path, echo_url: str) -> None:
    """Schema 1 had no ``step_chunk`` table: opening such a store adds it (and nothing else
    changes), after which wire steps are recorded into it."""
    with EpisodeStore(db_path) as s:
        (old,) = fill(s)
    _sql(db_path, "DROP TABLE step_chunk", "UPDATE recording_meta SET value = '1' WHERE key = 'schema_version'")
    with EpisodeStore(db_path) as s:
        assert s.write(read_version) == SCHEMA_VERSION == 6
        assert [x.index for x in s.load_steps(old)] == [0, 1, 2, 3]
        with record(EchoEnv(base_url=echo_url).sync(), store=s) as env:
            env.reset()
            env.step(EchoAction(message="after the upgrade"))
            new = env.episode_id
        assert s.load_steps(new)[1].observation == {"echoed_message": "after the upgrade", "message_length": 17}
    con = sqlite3.connect(db_path)
    assert stored_steps(con, new) == 2 and con.execute("SELECT COUNT(*) FROM step_chunk").fetchone() == (1,)
    con.close()


def test_disk_full_is_a_clear_error_and_keeps_earlier_steps(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "root, to mount a tiny tmpfs")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=384k", "tmpfs", str(mnt)], check=True)
    try:
        store = EpisodeStore(mnt / "full.db")
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={"o": ""})
        written = 0
        with pytest.raises(StoreFullError) as info:
            for i in range(1, 2000):
                store.append_step(
                    eid, i, action={"m": i}, observation={"o": uuid.uuid4().hex * 64}, reward=1.0
                )
                written = i
        assert info.value.code == "STORE_FULL" and "disk full" in str(info.value)
        assert written > 5
        steps = store.load_steps(eid)
        assert [s.index for s in steps] == list(range(written + 1))
        assert store.get_episode(eid).step_count == written
        store.close()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _expect_line(proc: subprocess.Popen[str], prefix: str) -> str:
    """The writer's next status line, which must start with ``prefix``; returns its episode id."""
    line = proc.stdout.readline() if proc.stdout else ""
    assert line.startswith(prefix), proc.stderr.read() if proc.stderr else line
    return line.split()[1]


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _committer_of(proc: subprocess.Popen[str]) -> int:
    """The pid of the writer's journal committer (its one child process)."""
    deadline = time.monotonic() + 10
    while not (found := _children(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(found) == 1, found
    return found[0]


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # gone, possibly between the open and the read (ESRCH)
            return
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return  # a zombie: dead, waiting for init to reap it
        time.sleep(0.01)


def _run_until_ready_then_kill(*args: str) -> str:
    """Start a writer, wait until it reports ``ready`` (it then hangs), SIGKILL it; returns the episode id."""
    proc = _popen(*args)
    try:
        return _expect_line(proc, "ready")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)


def test_killed_writer_leaves_unfinished_episode_with_steps(db_path: Path) -> None:
    eid = _run_until_ready_then_kill(str(db_path), "1", "50", "--hang-after", "17")
    with EpisodeStore(db_path) as s:
        ep = s.get_episode(eid)
        assert not ep.finished and ep.end_reason is None and ep.step_count == 17
        assert [x.index for x in s.load_steps(eid)] == list(range(18))
        s.append_step(eid, 18, action={}, observation={}, done=True)  # still writable after the crash
        assert s.get_episode(eid).finished


def test_killed_training_script_leaves_episode_unfinished(db_path: Path, echo_url: str) -> None:
    eid = _run_until_ready_then_kill(str(db_path), "--client", echo_url, "--hang-after", "12")
    folder = Path(str(db_path) + ".steps")
    deadline = time.monotonic() + 30
    while any(folder.glob("*.jnl")) and time.monotonic() < deadline:  # its committer finishes alone
        time.sleep(0.02)
    assert not any(folder.glob("*.jnl"))
    with EpisodeStore(db_path) as s:
        ep = s.get_episode(eid)
        assert not ep.finished and ep.step_count == 12 and ep.label == "training-script"
        steps = s.load_steps(eid)
        assert [x.index for x in steps] == list(range(13))
        assert steps[12].observation == {"echoed_message": "step 11", "message_length": 7}
        assert s.list_episodes(EpisodeFilter(finished=False)).items[0].id == eid


def test_killed_script_keeps_journaled_steps_no_commit_could_reach(db_path: Path, echo_url: str) -> None:
    """The durability of the journal itself: while another connection holds the database's write
    lock, no step can be committed; steps whose ``step()`` returned still survive a SIGKILL of the
    script and of its committer."""
    proc = _popen(str(db_path), "--client", echo_url, "--hang-after", "25", "--wait-go")
    con = sqlite3.connect(db_path, isolation_level=None, timeout=30)
    committer = None
    try:
        eid = _expect_line(proc, "reset")
        con.execute("BEGIN IMMEDIATE")  # from here on the script cannot commit anything
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        _expect_line(proc, "ready")
        committer = _committer_of(proc)
    finally:
        if committer is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(committer, signal.SIGKILL)
            _wait_gone(committer)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        if con.in_transaction:
            con.execute("COMMIT")
    # at most the reset step got in (the episode start is journaled too: its commit races the lock)
    assert stored_steps(con, eid) <= 1
    con.close()
    journals = list(Path(str(db_path) + ".steps").glob("*.jnl"))
    assert len(journals) == 1 and journals[0].stat().st_size > 0
    with EpisodeStore(db_path) as s:  # opening replays the dead script's journal
        ep = s.get_episode(eid)
        assert not ep.finished and ep.step_count == 25 and ep.total_reward is not None
        steps = s.load_steps(eid)
        assert [x.index for x in steps] == list(range(26))
        assert steps[25].observation == {"echoed_message": "step 24", "message_length": 7}
    assert not any(Path(str(db_path) + ".steps").glob("*.jnl"))
    with EpisodeStore(db_path) as s:  # replaying is done once; opening again changes nothing
        assert s.get_episode(eid).step_count == 25 and len(s.load_steps(eid)) == 26


@pytest.mark.parametrize("how", ["commit", "journal"])
def test_many_writer_processes_lose_nothing(db_path: Path, how: str) -> None:
    extra = ["--journal"] if how == "journal" else []
    procs = [_popen(str(db_path), "8", "250", *extra) for _ in range(16)]  # 16 writers at once, 8 episodes each
    failures = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        if p.returncode != 0:
            failures.append((p.returncode, err[-500:]))
    assert failures == []
    con = sqlite3.connect(db_path)
    assert con.execute("SELECT COUNT(*) FROM env_run").fetchone() == (16,)
    assert con.execute("SELECT COUNT(*), SUM(step_count), SUM(done) FROM episode").fetchone() == (
        128,
        32_000,
        128,
    )
    assert con.execute("SELECT COUNT(*) FROM step WHERE idx > 0").fetchone() == (32_000,)
    assert con.execute("SELECT COUNT(*) FROM step").fetchone() == (32_000 + 128,)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert not list(Path(str(db_path) + ".steps").glob("*.jnl"))  # every journal committed and removed


def test_unopenable_path_is_a_recording_error(tmp_path: Path) -> None:
    with pytest.raises(RecordingError):
        EpisodeStore(tmp_path / "missing-dir" / "x.db")


def test_damaged_pages_are_a_corrupt_store_error(db_path: Path) -> None:
    with EpisodeStore(db_path) as s:
        (eid,) = fill(s, steps=400)
    con = sqlite3.connect(db_path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = con.execute("PRAGMA page_size").fetchone()[0]
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    con.close()
    data = bytearray(db_path.read_bytes())
    for n in range(2, pages):  # keep page 1 (header + schema), scramble the rest
        data[n * page : n * page + 64] = b"\xff" * 64
    db_path.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError):
        with EpisodeStore(db_path) as s:
            s.load_steps(eid)
            s.list_episodes()


def test_busy_store_is_retried_then_written(db_path: Path) -> None:
    with EpisodeStore(db_path, busy_timeout_ms=30) as s:
        (eid,) = fill(s, steps=1, done=False)
        thread = hold_write_lock(db_path, 0.25)  # longer than one lock wait, shorter than the retries
        s.append_step(eid, 2, action={}, observation={})  # the raw hot path
        thread.join()
        thread = hold_write_lock(db_path, 0.25)
        s.finish_episode(eid, "closed")  # the SQLAlchemy path
        thread.join()
        ep = s.get_episode(eid)
        assert (ep.step_count, ep.end_reason) == (2, "closed")


def test_store_locked_too_long_is_a_clear_busy_error(db_path: Path) -> None:
    with EpisodeStore(db_path, busy_timeout_ms=10) as s:
        (eid,) = fill(s, steps=1, done=False)
        thread = hold_write_lock(db_path, 3.0)
        try:
            with pytest.raises(StoreBusyError, match="stayed locked"):
                s.append_step(eid, 2, action={}, observation={})
        finally:
            thread.join()
        s.append_step(eid, 2, action={}, observation={})  # usable again once the lock is gone
        assert s.get_episode(eid).step_count == 2
