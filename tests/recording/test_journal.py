"""The step journal: record format, replay after a crash, ordering, read-your-writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openenv.recording import EpisodeStore
from openenv.recording.journal import journal_folder, parse_journal
from openenv.stepjournal import format as fmt

LAP = fmt.FIRST_LAP


def _record(rows: list[list[object]], lap: int = LAP) -> bytes:
    return fmt.record(lap, fmt.pack_rows(rows))


def _journal(*records: bytes) -> bytes:
    """A journal file: the control page (nothing committed yet), the records, the end mark."""
    return fmt.control_page() + b"".join(records) + bytes(fmt.HEADER.size)


def _row(store: EpisodeStore, eid: str, idx: int, reward: float | None = 1.0, done: bool = False) -> dict:
    return store.step_row(eid, idx, action={"m": idx}, observation={"o": idx}, reward=reward, done=done)


def test_parse_stops_at_the_end_mark_and_at_a_torn_record() -> None:
    a, b = (
        [["e", 1, None, "{}", None, False, None, None, 1.0, None]],
        [["e", 2, None, "{}", 0.5, True, None, None, 2.0, None]],
    )
    data = _journal(_record(a), _record(b)) + _record(a)  # stale record after the end mark
    assert [r[1] for r in parse_journal(data)] == [1, 2]
    torn = _journal(_record(a), _record(b)[:-3] + b"xyz")
    assert [r[1] for r in parse_journal(torn)] == [1]
    stale_lap = _journal(_record(a), _record(b, lap=LAP + 1))  # left from another lap: not ours
    assert [r[1] for r in parse_journal(stale_lap)] == [1]
    assert parse_journal(b"") == [] and parse_journal(bytes(8192)) == []


def test_a_dead_process_journal_is_replayed_once_on_open(db_path: Path) -> None:
    with EpisodeStore(db_path, journal=False) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
        gone = store.start_episode(run, observation={})
        store.append_steps([_row(store, eid, 1, reward=0.25)])
        rows = [
            _row(store, eid, 1, reward=0.25),
            _row(store, eid, 2, reward=0.5),
            _row(store, eid, 3, done=True),
        ]
        lost = [_row(store, gone, 1)]
        store.delete_episodes([gone])
    folder = journal_folder(str(db_path.resolve()))
    folder.mkdir()
    (folder / "4242-dead.jnl").write_bytes(
        _journal(
            _record([list(r.values()) for r in rows[:2]]),
            _record([list(r.values()) for r in rows[2:] + lost]),
        )
    )
    with EpisodeStore(db_path) as store:
        ep = store.get_episode(eid)
        assert (ep.step_count, ep.total_reward, ep.end_reason) == (3, 0.25 + 0.5 + 1.0, "done")
        assert [s.index for s in store.load_steps(eid)] == [0, 1, 2, 3]
        assert store.count_episodes() == 1  # the deleted episode did not come back
    assert not any(folder.glob("*.jnl"))


def test_a_long_lived_store_replays_on_demand(db_path: Path) -> None:
    with EpisodeStore(db_path) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
        folder = journal_folder(str(db_path.resolve()))
        folder.mkdir(exist_ok=True)
        (folder / "4243-dead.jnl").write_bytes(_journal(_record([list(_row(store, eid, 1).values())])))
        assert store.get_episode(eid).step_count == 0
        assert store.recover_journals() == 1 and store.recover_journals() == 0
        assert store.get_episode(eid).step_count == 1


def test_live_journal_is_left_alone_and_read_through_in_process(db_path: Path) -> None:
    with EpisodeStore(db_path) as writer:
        run = writer.create_run(env_name="echo")
        eid = writer.start_episode(run, observation={})
        writer.journal_steps([_row(writer, eid, 1)])
        (journal,) = journal_folder(str(db_path.resolve())).glob("*.jnl")
        with EpisodeStore(db_path) as reader:  # opening does not replay a live journal...
            assert journal.exists()
            assert [s.index for s in reader.load_steps(eid)] == [0, 1]  # ...and reads see its steps
        writer.journal_steps([_row(writer, eid, 2, done=True)])
    assert not journal.exists()  # closed cleanly: everything committed, file removed
    with EpisodeStore(db_path) as store:
        assert store.get_episode(eid).step_count == 2


def test_queued_reset_end_keeps_a_done_reason_and_follows_the_steps(db_path: Path) -> None:
    with EpisodeStore(db_path) as store:
        run = store.create_run(env_name="echo")
        done_ep = store.start_episode(run, observation={})
        open_ep = store.start_episode(run, observation={})
        store.journal_steps([_row(store, done_ep, 1, done=True), _row(store, open_ep, 1, reward=None)])
        store.journal_end(done_ep, "reset")
        store.journal_end(open_ep, "reset")
        a, b = store.get_episode(done_ep), store.get_episode(open_ep)
        assert (a.end_reason, a.done, a.step_count) == ("done", True, 1)
        assert (b.end_reason, b.done, b.step_count, b.total_reward) == ("reset", False, 1, None)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() of a threaded process (3.12+)
def test_a_forked_child_records_with_its_own_journal(db_path: Path) -> None:
    with EpisodeStore(db_path) as store:
        run = store.create_run(env_name="echo")
        parent_ep, child_ep = (
            store.start_episode(run, observation={}),
            store.start_episode(run, observation={}),
        )
        store.journal_steps([_row(store, parent_ep, 1)])
        pid = os.fork()
        if pid == 0:  # the child: a fresh lock and journal, whatever the parent's thread held
            code = 1
            try:
                store.journal_steps([_row(store, child_ep, 1), _row(store, child_ep, 2, done=True)])
                store.close()
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        store.journal_steps([_row(store, parent_ep, 2)])
        assert store.get_episode(parent_ep).step_count == 2
        assert store.get_episode(child_ep).step_count == 2


def test_a_journal_of_the_first_release_is_replayed(db_path: Path) -> None:
    """Journals written before the ring format (``<u32 length><u32 crc32>`` + a JSON list of rows
    from offset 0) left by a crash just before an upgrade are replayed, not lost."""
    import struct
    import zlib

    import orjson

    with EpisodeStore(db_path, journal=False) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
        rows = [list(_row(store, eid, i, reward=0.5).values()) for i in (1, 2)]
    body = orjson.dumps(rows)
    folder = journal_folder(str(db_path.resolve()))
    folder.mkdir()
    (folder / "77-old.jnl").write_bytes(struct.pack("<II", len(body), zlib.crc32(body)) + body + bytes(8))
    with EpisodeStore(db_path) as store:
        ep = store.get_episode(eid)
        assert (ep.step_count, ep.total_reward) == (2, 1.0)
    assert not any(folder.glob("*.jnl"))


def test_wire_records_without_reward_and_done_are_replayed(db_path: Path) -> None:
    """The previous ring release wrote wire steps as ``W`` records, which do not carry reward and
    done: replaying one left by a crash takes them from the reply text."""
    with EpisodeStore(db_path, journal=False) as store:
        run = store.create_run(env_name="echo")
        eid = store.start_episode(run, observation={})
    request = b'{"type":"step","data":{"message":"hi"}}'
    replies = [b'{"type":"observation","data":{"observation":{"m":1},"reward":0.5,"done":false}}',
               b'{"type":"observation","data":{"observation":{"m":2},"reward":2,"done":true}}']  # fmt: skip
    records = [fmt.record(LAP, fmt.pack_wire(eid.encode(), i, 10.0 + i, 0.5, request, reply))
               for i, reply in enumerate(replies, start=1)]  # fmt: skip
    folder = journal_folder(str(db_path.resolve()))
    folder.mkdir()
    (folder / "78-ring-v1.jnl").write_bytes(_journal(*records))
    with EpisodeStore(db_path) as store:
        ep = store.get_episode(eid)
        assert (ep.step_count, ep.total_reward, ep.end_reason) == (2, 2.5, "done")
        steps = store.load_steps(eid)
        assert [(s.observation, s.reward, s.done, s.action) for s in steps[1:]] == [
            ({"m": 1}, 0.5, False, {"message": "hi"}), ({"m": 2}, 2.0, True, {"message": "hi"})]
    assert not any(folder.glob("*.jnl"))
