"""record() around real clients of a real echo server; rerun() on fresh sessions."""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv.core import Action, Environment, GenericEnvClient, Observation, State, create_app
from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import EpisodeStore, StoreFullError, record, rerun, rerun_sync
from openenv.recording.journal import parse_journal
from tests.server_utils import running_server

from .conftest import stored_steps


class RollAction(Action):
    sides: int = 6


class RollObservation(Observation):
    value: int = 0


class DiceEnvironment(Environment):
    """Seeded dice; with ``cheat=True`` in reset the rolls ignore the seed from step 3 on."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        self._rng = random.Random(0)
        self._state = State()
        self._cheat = False

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, cheat: bool = False
    ) -> RollObservation:
        self._rng, self._cheat = random.Random(seed), cheat
        self._state = State(episode_id=episode_id or "d", step_count=0)
        return RollObservation(value=0)

    def step(self, action: RollAction, timeout_s: float | None = None, **kwargs: Any) -> RollObservation:
        self._state.step_count += 1
        rng = random.Random() if self._cheat and self._state.step_count >= 3 else self._rng
        value = rng.randint(1, 10**9)
        return RollObservation(value=value, reward=float(value % 7), done=self._state.step_count >= 5)

    @property
    def state(self) -> State:
        return self._state


@pytest.fixture(scope="module")
def dice_url() -> Iterator[str]:
    app = create_app(DiceEnvironment, RollAction, RollObservation, env_name="dice")
    with running_server(app) as url:
        yield url


def test_async_recording_of_typed_client(store: EpisodeStore, echo_url: str) -> None:
    async def play() -> tuple[str, str]:
        async with record(EchoEnv(base_url=echo_url), store=store, label="agent-1") as env:
            await env.reset(seed=5)
            first = env.episode_id
            for msg in ("hi", "hello"):
                await env.step(EchoAction(message=msg))
            await env.reset(seed=6)  # ends the first episode with reason "reset"
            await env.step(EchoAction(message="x"))
            return first, env.episode_id

    first, second = asyncio.run(play())
    ep = store.get_episode(first)
    assert (ep.env_name, ep.label, ep.seed, ep.end_reason, ep.step_count) == (
        "echo",
        "agent-1",
        5,
        "reset",
        2,
    )
    assert ep.total_reward == pytest.approx(0.7)
    assert ep.run is not None and ep.run.env_version == "1.0" and ep.run.base_url == echo_url
    assert ep.run.action_schema_hash and ep.run.observation_schema_hash
    steps = store.load_steps(first)
    assert steps[0].observation == {"echoed_message": "Echo environment ready!", "message_length": 0}
    assert steps[2].action == {"message": "hello"}
    assert steps[2].observation == {"echoed_message": "hello", "message_length": 5}
    assert steps[2].metadata == {"step": 2} and steps[2].latency_ms > 0
    assert store.get_episode(second).end_reason == "closed"


@pytest.mark.parametrize("journal", [False, True])
def test_step_is_durable_when_it_returns(db_path: Path, echo_url: str, journal: bool) -> None:
    def committed(eid: str) -> int:  # a separate connection, as another process would see it
        con = sqlite3.connect(db_path)
        try:
            return stored_steps(con, eid)
        finally:
            con.close()

    with EpisodeStore(db_path, journal=journal) as store:
        env = record(EchoEnv(base_url=echo_url).sync(), store=store)
        with env:
            env.reset()
            for i in range(1, 4):
                env.step(EchoAction(message="m" * i))
                if not journal:  # committed on return
                    assert committed(env.episode_id) == i + 1
                    continue
                # journaled on return (test_faults kills a script to prove it), committed a moment later
                (journal_file,) = Path(str(db_path) + ".steps").glob("*.jnl")
                assert parse_journal(journal_file.read_bytes(), committed_too=True)[-1].last == i  # its index
                deadline = time.monotonic() + 10
                while committed(env.episode_id) < i + 1 and time.monotonic() < deadline:
                    time.sleep(0.005)
                assert committed(env.episode_id) == i + 1
                assert len(store.load_steps(env.episode_id)) == i + 1


def test_sync_generic_client_with_state_capture(store: EpisodeStore, echo_url: str) -> None:
    env = record(
        GenericEnvClient(base_url=echo_url).sync(),
        store=store,
        source="human",
        capture_state=True,
        info={"lr": 0.1},
    )
    with env:
        env.reset(episode_id="abc")
        env.step({"message": "yo"})
        eid = env.episode_id
    ep = store.get_episode(eid)
    assert ep.source == "human" and ep.reset_kwargs == {"episode_id": "abc"} and ep.run.info == {"lr": 0.1}
    steps = store.load_steps(eid)
    assert steps[0].state["episode_id"] == "abc" and steps[1].state["step_count"] == 1


def test_rerun_deterministic_then_diverging(store: EpisodeStore, dice_url: str) -> None:
    env = record(GenericEnvClient(base_url=dice_url).sync(), store=store)
    with env:
        env.reset(seed=11)
        for _ in range(5):
            env.step({"sides": 6})
        same = env.episode_id
        env.reset(seed=11, cheat=True)
        for _ in range(5):
            env.step({"sides": 6})
        cheat = env.episode_id
    assert store.get_episode(same).done

    with GenericEnvClient(base_url=dice_url).sync() as fresh:
        report = rerun_sync(store, same, fresh)
    assert report.deterministic and report.steps_compared == 6

    with GenericEnvClient(base_url=dice_url).sync() as fresh:
        report = rerun_sync(store, cheat, fresh)
    assert (report.diverged_at, report.field) == (3, "observation")
    assert report.observation_diff.paths == ["value"] and "diverged at step 3" in report.describe()


def test_async_rerun_with_typed_actions_finds_tampered_reward(db_path: Path, echo_url: str) -> None:
    async def go() -> Any:
        with EpisodeStore(db_path, journal=False) as store:  # step rows, for the tampering below
            async with record(EchoEnv(base_url=echo_url), store=store) as env:
                await env.reset(seed=1)
                for msg in ("a", "bb", "ccc"):
                    await env.step(EchoAction(message=msg))
                eid = env.episode_id
            con = sqlite3.connect(db_path)
            con.execute("UPDATE step SET reward = 99 WHERE episode_id = ? AND idx = 2", (eid,))
            con.commit()
            con.close()
            async with EchoEnv(base_url=echo_url) as fresh:
                return await rerun(store, eid, fresh, make_action=lambda d: EchoAction(**d))

    report = asyncio.run(go())
    assert (report.diverged_at, report.field, report.expected, report.actual) == (2, "reward", 99.0, 0.2)


@pytest.mark.parametrize("journal", [False, True])
def test_disk_full_reaches_the_training_loop(echo_url: str, tmp_path: Path, journal: bool) -> None:
    import os
    import subprocess

    from tests._require import require

    require(os.geteuid() == 0, "root, to mount a tiny tmpfs")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=320k", "tmpfs", str(mnt)], check=True)
    try:
        store = EpisodeStore(mnt / "e.db", journal=journal)
        env = record(EchoEnv(base_url=echo_url).sync(), store=store)
        done = 0
        with pytest.raises(StoreFullError):
            env.reset()
            for i in range(5000):
                env.step(EchoAction(message=f"{i:06d}" * 300))
                done += 1
        assert done > 3, done
        eid = env.episode_id
        if not journal:  # every step that returned is committed
            assert store.get_episode(eid).step_count == done
        else:  # journaled: reported at the next step, committed once there is room again
            subprocess.run(["mount", "-o", "remount,size=8m", str(mnt)], check=True)
        with contextlib.suppress(StoreFullError):  # ending the episode may not fit either
            env.close()
        store.close()
        with EpisodeStore(mnt / "e.db") as again:  # replays a journal left behind, if any
            assert again.get_episode(eid).step_count == done
            assert [s.index for s in again.load_steps(eid)] == list(range(done + 1))
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_concurrent_async_sessions_share_commits(store: EpisodeStore, echo_url: str) -> None:
    async def one(n: int) -> str:
        async with record(EchoEnv(base_url=echo_url), store=store, label="many") as env:
            await env.reset(seed=n)
            for i in range(20):
                await env.step(EchoAction(message=f"{n}-{i}"))
            return env.episode_id

    async def main() -> list[str]:
        return await asyncio.gather(*(one(n) for n in range(8)))

    ids = asyncio.run(main())
    for n, eid in enumerate(ids):
        steps = store.load_steps(eid)
        assert [s.index for s in steps] == list(range(21))
        assert [s.action["message"] for s in steps[1:]] == [f"{n}-{i}" for i in range(20)]
        assert store.get_episode(eid).step_count == 20


def test_a_bad_row_in_a_batch_fails_alone(store: EpisodeStore) -> None:
    from openenv.recording import RecordingError
    from openenv.recording.batching import batcher_for

    run = store.create_run(env_name="echo")
    a = store.start_episode(run, observation={})
    b = store.start_episode(run, observation={})
    store.append_step(a, 1, action={}, observation={})

    async def main() -> list[Any]:
        batcher = batcher_for(store)
        batcher.in_flight = 1  # as if another session were mid-step: both rows share one commit
        dup = store.step_row(a, 1, action={}, observation={"again": True})  # primary key clash
        ok = store.step_row(b, 1, action={}, observation={"fine": True})
        return await asyncio.gather(batcher.append(dup), batcher.append(ok), return_exceptions=True)

    dup_result, ok_result = asyncio.run(main())
    assert isinstance(dup_result, RecordingError) and ok_result is None
    assert store.load_steps(b)[1].observation == {"fine": True}
    assert store.load_steps(a)[1].observation == {}


def test_batched_rows_share_one_transaction(store: EpisodeStore) -> None:
    from openenv.recording.batching import batcher_for

    run = store.create_run(env_name="echo")
    eids = [store.start_episode(run, observation={}) for _ in range(5)]
    calls: list[int] = []
    original = store.append_steps

    def counting(rows):  # noqa: ANN001, ANN202
        calls.append(len(rows))
        return original(rows)

    store.append_steps = counting  # type: ignore[method-assign]

    async def main() -> None:
        batcher = batcher_for(store)
        batcher.in_flight = 1
        await asyncio.gather(*(batcher.append(store.step_row(e, 1, action={}, observation={})) for e in eids))
        batcher.in_flight = 0
        await batcher.append(store.step_row(eids[0], 2, action={}, observation={}))

    asyncio.run(main())
    assert calls == [5, 1]
    assert all(store.get_episode(e).step_count >= 1 for e in eids)


def test_sync_view_of_a_recording_client_still_records(store: EpisodeStore, echo_url: str) -> None:
    with record(EchoEnv(base_url=echo_url), store=store, label="via-sync").sync() as env:
        env.reset(seed=9)
        env.step(EchoAction(message="abc"), timeout_s=5)
        eid = env.async_client.episode_id
    ep = store.get_episode(eid)
    assert (ep.label, ep.step_count, ep.end_reason) == ("via-sync", 1, "closed")


def test_rerun_reports_done_divergence_and_short_episodes(db_path: Path, echo_url: str) -> None:
    with EpisodeStore(db_path, journal=False) as store:  # step rows, for the tampering below
        with record(GenericEnvClient(base_url=echo_url).sync(), store=store) as env:
            env.reset()
            only_reset = env.episode_id
            env.reset(seed=1)
            env.step({"message": "a"})
            env.step({"message": "b"})
            two = env.episode_id
        store.write(
            lambda c: c.exec_driver_sql("UPDATE step SET done = 1 WHERE episode_id = ? AND idx = 2", (two,))
        )
        with GenericEnvClient(base_url=echo_url).sync() as fresh:
            assert rerun_sync(store, only_reset, fresh).steps_compared == 1
        with GenericEnvClient(base_url=echo_url).sync() as fresh:
            report = rerun_sync(store, two, fresh)
        assert (report.diverged_at, report.field, report.expected, report.actual) == (2, "done", True, False)


def test_commit_every_batches_steps_and_flushes_at_boundaries(db_path: Path, echo_url: str) -> None:
    def stored(eid: str) -> int:
        con = sqlite3.connect(db_path)
        try:
            return stored_steps(con, eid)
        finally:
            con.close()

    async def play(store: EpisodeStore) -> list[int]:
        seen = []
        async with record(EchoEnv(base_url=echo_url), store=store, commit_every=4) as env:
            await env.reset()
            first = env.episode_id
            for i in range(6):
                await env.step(EchoAction(message=str(i)))
                seen.append(stored(first))
            await env.reset()  # flushes the 2 held steps of the first episode
            seen.append(stored(first))
            await env.step(EchoAction(message="x"))
            seen.append(stored(env.episode_id))
            last = env.episode_id
        seen.append(stored(last))  # close flushed
        return seen

    with EpisodeStore(db_path) as store:
        assert asyncio.run(play(store)) == [1, 1, 1, 5, 5, 5, 7, 1, 2]
        with record(EchoEnv(base_url=echo_url).sync(), store=store, commit_every=3) as env:
            env.reset()
            for i in range(5):
                env.step(EchoAction(message=str(i)))
            eid = env.episode_id
            assert stored(eid) == 4
        assert stored(eid) == 6 and store.get_episode(eid).step_count == 5


def test_large_steps_are_recorded_exactly_one_chunk_each(db_path: Path, echo_url: str) -> None:
    """Steps of about 1.5 MB (the message, echoed back) go through the journal and into chunks
    of their own (a chunk holds about 1 MB), and read back byte for byte."""
    messages = [uuid.uuid4().hex * 24_000 + str(i) for i in range(4)]  # 768 kB each way
    with EpisodeStore(db_path) as store:
        with record(EchoEnv(base_url=echo_url).sync(), store=store) as env:
            env.reset()
            for message in messages:
                env.step(EchoAction(message=message))
            eid = env.episode_id
        steps = store.load_steps(eid)
        assert [s.observation["echoed_message"] for s in steps[1:]] == messages
        assert [s.action["message"] for s in steps[1:]] == messages
    con = sqlite3.connect(db_path)
    assert con.execute("SELECT first_idx, last_idx FROM step_chunk ORDER BY first_idx").fetchall() == [
        (i, i) for i in range(1, 5)]  # fmt: skip
    con.close()
