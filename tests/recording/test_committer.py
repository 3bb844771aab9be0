"""The journal's ring and its committer: wrap and jump, a lagging or dead committer, the wire path."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from openenv.core import GenericEnvClient
from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import EpisodeStore, record
from openenv.recording.journal import StepJournal, journal_folder
from openenv.stepjournal import format as fmt

from .conftest import hold_write_lock


def _journal(store: EpisodeStore) -> StepJournal:
    journal = store._step_journal()
    assert journal is not None
    return journal


def _write(store: EpisodeStore, eid: str, first: int, count: int) -> None:
    for i in range(first, first + count):
        store.journal_steps([store.step_row(eid, i, action={"i": i}, observation={"o": "x" * 40}, reward=1.0)])


def _indexes(store: EpisodeStore, eid: str) -> list[int]:
    return [s.index for s in store.load_steps(eid)]


def test_scan_follows_wraps_and_jumps_and_ignores_other_laps() -> None:
    rows = [fmt.pack_rows([["e", i, None, "{}", None, False, None, None, 0.0, None]]) for i in range(4)]
    top = fmt.DATA_START
    # lap 1: rows 0 and 1, then the wrap
    lap1 = fmt.record(1, rows[0]) + fmt.record(1, rows[1]) + fmt.record(1, fmt.pack_wrap())
    data = bytearray(fmt.control_page() + lap1 + bytes(8192))
    # lap 2 from the top, over lap 1's committed records: row 2, then a jump to 9000 and row 3
    two = fmt.record(2, rows[2]) + fmt.record(2, fmt.pack_jump(9000))
    data[top : top + len(two)] = two
    three = fmt.record(2, rows[3]) + bytes(fmt.HEADER.size)
    data[9000 : 9000 + len(three)] = three

    def read(at: int, n: int) -> bytes:
        return bytes(data[at : at + n])

    # a committer that had committed rows 0 and 1 before the writer wrapped
    start = fmt.Progress(1, top + len(fmt.record(1, rows[0])) * 2)
    payloads, end = fmt.scan(read, start)
    assert [p[:1] for p in payloads] == [b"R", b"R"]
    assert end == fmt.Progress(2, 9000 + len(fmt.record(2, rows[3])))
    assert fmt.scan(read, end) == ([], end)  # the end mark: nothing more yet
    stale = fmt.scan(read, fmt.Progress(1, top))  # lap 1 is gone from the top: nothing is misread
    assert stale == ([], fmt.Progress(1, top))


def test_ring_wraps_and_stays_small_while_the_committer_keeps_up(db_path: Path) -> None:
    with EpisodeStore(db_path) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
        for burst in range(10):  # ~500 KB of records through a 64 KB ring, the committer caught up between
            _write(store, eid, 1 + 300 * burst, 300)
            store.flush()
        journal = _journal(store)
        assert journal._lap >= 5 and journal._size == 1 << 16
        assert _indexes(store, eid) == list(range(3001))
        assert store.get_episode(eid).total_reward == 3000.0


def test_a_lagging_committer_costs_disk_not_records(db_path: Path) -> None:
    with EpisodeStore(db_path) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
        _write(store, eid, 1, 300)
        store.flush()  # committed up to near the end of the ring
        held = hold_write_lock(db_path, 1.0)
        # the committer is stuck: the writer wraps to the top, runs into the records not yet
        # committed, jumps past the end of the file (which grows) and goes on there
        _write(store, eid, 301, 4300)
        journal = _journal(store)
        assert journal._lap == 2  # no second wrap while the committer is a lap behind
        assert journal._wrapped_at == 0  # reset by the jump
        grown = journal._size
        held.join()
        _write(store, eid, 4601, 3000)
        assert grown > 1 << 16
        assert _indexes(store, eid) == list(range(7601))
        ep = store.get_episode(eid)
        assert (ep.step_count, ep.total_reward) == (7600, 7600.0)
    assert not any(journal_folder(str(db_path.resolve())).glob("*.jnl"))


def test_a_dead_committer_process_is_replaced_by_a_thread(db_path: Path) -> None:
    with EpisodeStore(db_path) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
        _write(store, eid, 1, 10)
        journal = _journal(store)
        assert journal.committer_kind == "process"
        os.kill(journal._host.pid, signal.SIGKILL)
        _write(store, eid, 11, 2000)  # fills the ring: the writer notices on its way
        assert _indexes(store, eid) == list(range(2011))
        assert journal.committer_kind == "thread"


def test_the_thread_committer_when_asked(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_JOURNAL_COMMITTER", "thread")
    with EpisodeStore(db_path) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
        _write(store, eid, 1, 1000)
        assert _journal(store).committer_kind == "thread"
        assert _indexes(store, eid) == list(range(1001))


def _steps(db: Path, eid: str) -> list[tuple[object, ...]]:
    with EpisodeStore(db) as store:
        return [(s.index, s.action, s.observation, s.reward, s.done, s.metadata) for s in store.load_steps(eid)]


@pytest.mark.parametrize("kind", ["typed", "generic", "sync"])
def test_the_wire_path_stores_what_the_row_path_stores(tmp_path: Path, echo_url: str, kind: str) -> None:
    """A journaled store takes each step's wire texts; ``journal=False`` serialises the parsed
    result: both must store the same step."""

    def client() -> object:
        return GenericEnvClient(base_url=echo_url) if kind == "generic" else EchoEnv(base_url=echo_url)

    def action(i: int) -> object:
        return {"message": f"m{i}"} if kind == "generic" else EchoAction(message=f"m{i}")

    ids = {}
    for journal in (True, False):
        db = tmp_path / f"{journal}.db"
        with EpisodeStore(db, journal=journal) as store:
            if kind == "sync":
                with record(client().sync(), store=store) as env:
                    env.reset(seed=3)
                    for i in range(5):
                        env.step(action(i))
                    ids[journal] = env.episode_id
            else:

                async def play(store: EpisodeStore = store) -> str:
                    async with record(client(), store=store) as env:
                        await env.reset(seed=3)
                        for i in range(5):
                            await env.step(action(i))
                        return env.episode_id

                ids[journal] = asyncio.run(play())
    wire, rows = _steps(tmp_path / "True.db", ids[True]), _steps(tmp_path / "False.db", ids[False])
    assert len(wire) == 6 and wire == rows
    assert wire[3][1] == {"message": "m2"} and wire[3][2]["echoed_message"] == "m2"


_REPLIES = [  # reply text, then what reading the step back gives: observation, reward, done, metadata
    ('{"type":"observation","data":{"observation":{"a":1,"s":"\\u00e9t\\u00e9"},"reward":1,"done":false}}',
     {"a": 1, "s": "\u00e9t\u00e9"}, 1.0, False, None),
    ('{"type":"observation","data":{"observation":{"a":[1,2.5,{"b":null}]},"reward":null,"done":true,'
     '"metadata":{"k":"v"}}}', {"a": [1, 2.5, {"b": None}]}, None, True, {"k": "v"}),
    ('{"type": "observation", "data": {"observation": {"a": 1, "reward": 9, "metadata": {}}, "done": false,'
     ' "metadata": {}}}', {"a": 1}, None, False, None),  # json.dumps spacing; lifted keys in the observation
    ('{"type":"observation","data":{"observation":"just text","reward":"2.5"}}', "just text", 2.5, False, None),
    ('{"type":"observation","data":{}}', None, None, False, None),
    ("not json at all", {"__openenv_unserializable__": "wire reply", "repr": "not json at all"}, None, False, None),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "observation", "reward", "done", "metadata"), _REPLIES)
def test_a_chunked_wire_step_reads_back_whole(
    db_path: Path, reply: str, observation: Any, reward: float | None, done: bool, metadata: Any
) -> None:
    """The committer stores a wire step in a chunk, its texts as journaled; reading it back picks
    the action, observation and metadata out of them (odd replies included) and counts it."""
    from openenv.stepjournal import committer, wire_steps

    with EpisodeStore(db_path, journal=False) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
    request = b'{"type":"step","data":{"message":"hi"},"request_id":3}'
    assert wire_steps.outcome(reply) == (reward, done)  # how W records of the last release read
    entries = committer.decode([fmt.pack_step(eid.encode(), 1, 10.0, 0.5, reward, done, request, reply.encode())])
    raw = committer.connect(str(db_path), 5000)
    committer.commit(raw, entries)
    committer.commit(raw, entries)  # offered twice (a replay): stored once
    assert raw.execute("SELECT COUNT(*) FROM step_chunk").fetchone() == (1,)
    raw.close()
    with EpisodeStore(db_path) as store:
        step = store.load_steps(eid)[1]
        got = (step.action, step.observation, step.reward, step.done, step.metadata, step.t, step.latency_ms)
        assert got == ({"message": "hi"}, observation, reward, done, metadata, 10.0, 0.5)
        ep = store.get_episode(eid)
        assert (ep.step_count, ep.total_reward, ep.end_reason) == (1, reward, "done" if done else None)


def test_records_the_database_cannot_take_are_kept_not_dropped(db_path: Path) -> None:
    """A failure that is not a row's fault (here the step table is gone for a while) keeps the
    records in the journal: reported to the writer, retried, committed once it works again."""
    from openenv.recording import RecordingError

    with EpisodeStore(db_path) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
        journal = _journal(store)
        con = sqlite3.connect(db_path, isolation_level=None, timeout=30)
        con.execute("ALTER TABLE step RENAME TO step_away")
        _write(store, eid, 1, 3)
        deadline = time.monotonic() + 10
        while fmt.error_seq(journal._map) == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert fmt.read_error(journal._map)[2].startswith("record step: no such table")
        con.execute("ALTER TABLE step_away RENAME TO step")
        con.close()
        _write(store, eid, 4, 1)  # an append never raises it: the record is kept
        with pytest.raises(RecordingError, match="no such table"):  # reported once, by check
            store.check()
        store.check()
        _write(store, eid, 5, 1)
        assert _indexes(store, eid) == list(range(6))


def test_a_store_dropped_without_close_still_gets_its_steps_committed(db_path: Path) -> None:
    """A journal collected without ``close`` lets go of its pipes and file: its committer commits
    what is left, removes the file and ends (and is reaped when the next committer starts)."""
    import gc

    store = EpisodeStore(db_path)
    run = store.create_run(env_name="echo")
    eid = store.start_episode(run, observation={})
    _write(store, eid, 1, 50)
    pid = _journal(store)._host.pid
    folder = journal_folder(str(db_path.resolve()))
    store.engine.dispose()
    del store
    gc.collect()
    deadline = time.monotonic() + 20
    while any(folder.glob("*.jnl")) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(folder.glob("*.jnl"))
    with EpisodeStore(db_path) as again:
        assert _indexes(again, eid) == list(range(51))
        _write(again, eid, 51, 1)  # starts a committer, which reaps the old one
        assert not Path(f"/proc/{pid}").exists()


def test_chunks_split_large_batches_and_a_partly_committed_batch_adds_only_the_rest(db_path: Path) -> None:
    """A batch longer than a chunk is cut (``MAX_CHUNK_STEPS``); offered again after part of it
    was committed, only the steps above the stored ones are added; pages read across chunks."""
    from openenv.stepjournal import committer, wire_steps

    with EpisodeStore(db_path, journal=False) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
    n = wire_steps.MAX_CHUNK_STEPS * 2 + 100
    records = [fmt.pack_step(eid.encode(), i, float(i), 0.1, 0.5, i == n, b'{"data":{"m":%d}}' % i,
                             b'{"data":{"observation":{"o":%d},"reward":0.5,"done":false}}' % i)
               for i in range(1, n + 1)]  # fmt: skip
    raw = committer.connect(str(db_path), 5000)
    committer.commit(raw, committer.decode(records[:700]))
    committer.commit(raw, committer.decode(records))
    spans = raw.execute("SELECT first_idx, last_idx FROM step_chunk ORDER BY first_idx").fetchall()
    raw.close()
    assert spans == [(1, 512), (513, 700), (701, 1124)]
    with EpisodeStore(db_path) as store:
        ep = store.get_episode(eid)
        assert (ep.step_count, ep.total_reward, ep.end_reason) == (n, 0.5 * n, "done")
        assert [s.index for s in store.load_steps(eid)] == list(range(n + 1))
        page = store.load_steps(eid, start=480, limit=100)
        assert [s.index for s in page] == list(range(480, 580)) and page[40].action == {"m": 520}
        assert [s.index for s in store.load_steps(eid, start=1120)] == [1120, 1121, 1122, 1123, 1124]


def test_the_strict_append_refuses_wire_steps(db_path: Path) -> None:
    """``append`` (the store's own writes) takes prepared rows; a wire step is refused before
    anything is written, not half-inserted."""
    from openenv.stepjournal import committer, sqlite_steps

    with EpisodeStore(db_path, journal=False) as store:
        eid = store.start_episode(store.create_run(env_name="echo"), observation={})
    (wire,) = committer.decode([fmt.pack_step(eid.encode(), 1, 1.0, 0.1, None, False, b'{"data":{}}', b'{"data":{}}')])
    raw = committer.connect(str(db_path), 5000)
    raw.execute("BEGIN IMMEDIATE")
    with pytest.raises(TypeError, match="append_new"):
        sqlite_steps.append(raw, [sqlite_steps.Insert("env_run", {"id": "x" * 32}), wire])
    raw.execute("ROLLBACK")
    raw.close()


def test_decode_groups_each_episodes_steps_as_wire_batch_add_does() -> None:
    """The committer's inlined decode of ``S`` records and ``WireBatch.add`` agree: one batch per
    episode, where its first step was, with its records in order, the rewards that are there, the
    first and last index and the time of the first ``done`` step; a ``W`` record joins its batch."""
    from openenv.stepjournal import committer, sqlite_steps

    a, b = b"a" * 32, b"b" * 32
    steps = [(a, 1, 1.0, 0.5, False), (b, 1, 1.5, None, False), (a, 2, 2.0, None, True), (a, 3, 3.0, -1.0, True),
             (b, 2, 4.0, 2.0, False)]  # fmt: skip
    records = [fmt.pack_step(eid, i, t, 0.1, r, d, b'{"data":{}}', b'{"data":{}}') for eid, i, t, r, d in steps]
    wire = fmt.pack_wire(b, 3, 5.0, 0.1, b'{"data":{}}', b'{"data":{"reward":1.5,"done":true}}')
    end = fmt.pack_end("a" * 32, "closed", 6.0)
    entries = committer.decode([*records, wire, end])
    assert [type(e).__name__ for e in entries] == ["WireBatch", "WireBatch", "dict"]
    for got, eid in zip(entries[:2], (a, b), strict=True):
        want = sqlite_steps.WireBatch(eid.decode())
        for payload in records:
            if payload[fmt.STEP_HEAD.size : fmt.STEP_HEAD.size + 32] == eid:
                want.add(payload)
        if eid == b:
            want.add(fmt.pack_step(b, 3, 5.0, 0.1, 1.5, True, b'{"data":{}}', b'{"data":{"reward":1.5,"done":true}}'))
        assert [getattr(got, k) for k in want.__slots__] == [getattr(want, k) for k in want.__slots__]
    assert (entries[0].first, entries[0].last, entries[0].rewards, entries[0].done_t) == (1, 3, [0.5, -1.0], 2.0)
    assert (entries[1].first, entries[1].last, entries[1].rewards, entries[1].done_t) == (1, 3, [2.0, 1.5], 5.0)
    assert entries[1].above(1).records == entries[1].records[1:]


@pytest.mark.parametrize("sync", [False, True])
def test_a_commit_error_is_raised_before_the_next_step_moves_the_env(db_path: Path, echo_url: str, sync: bool) -> None:
    """A recording client raises an error its committer met before it sends the next step (sync
    and async clients), so no step is taken that the caller never sees, and none is left out."""
    from openenv.recording import RecordingError

    client = EchoEnv(base_url=echo_url)
    with EpisodeStore(db_path) as store:
        env = record(client.sync(), store=store) if sync else record(client, store=store).sync()
        with env:
            env.reset()
            env.step(EchoAction(message="1"))
            store.flush()
            journal = _journal(store)
            seq = fmt.error_seq(journal._map)
            con = sqlite3.connect(db_path, isolation_level=None, timeout=30)
            con.execute("ALTER TABLE step_chunk RENAME TO step_chunk_away")
            env.step(EchoAction(message="2"))  # journaled; committing it fails until the table is back
            deadline = time.monotonic() + 10
            while fmt.error_seq(journal._map) == seq and time.monotonic() < deadline:
                time.sleep(0.02)
            con.execute("ALTER TABLE step_chunk_away RENAME TO step_chunk")
            con.close()
            journal.drain(raise_error=False)  # committed now; the error is still to be told
            with pytest.raises(RecordingError, match="no such table"):
                env.step(EchoAction(message="never sent"))
            env.step(EchoAction(message="3"))
            eid, taken = env.episode_id, env.state().step_count
        assert taken == 3 and _indexes(store, eid) == [0, 1, 2, 3]
        assert [s.action for s in store.load_steps(eid)][1:] == [{"message": m} for m in "123"]
