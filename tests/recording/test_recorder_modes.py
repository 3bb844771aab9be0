"""record(client) is called as the client it wraps (sync or async), its .sync() records too, and a
client that never resets (TRL's echo example) records an episode started without a reset."""

from __future__ import annotations

import asyncio
import threading

import pytest

from openenv.core.sync_client import is_async_client
from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import (
    EpisodeStore,
    RecordingEnvClient,
    RecordingError,
    SyncRecordingEnvClient,
    fork_sync,
    record,
    rerun_sync,
)
from openenv.recording.parquet import export_parquet, import_parquet


def _messages(store: EpisodeStore, eid: str) -> list:
    return [s.observation["echoed_message"] if s.observation else None for s in store.load_steps(eid)]


def test_plain_calls_in_sync_code_return_results(store: EpisodeStore, echo_url: str) -> None:
    env = record(EchoEnv(base_url=echo_url), store=store)  # a fresh client, as 0.10 scripts make one
    assert isinstance(env, RecordingEnvClient) and is_async_client(env) == is_async_client(EchoEnv(base_url=echo_url))
    first = env.reset(seed=3)
    assert first.observation.echoed_message == "Echo environment ready!"
    assert env.step(EchoAction(message="abc")).observation.echoed_message == "abc"
    eid = env.episode_id
    env.close()
    episode = store.get_episode(eid)
    assert episode.step_count == 1 and episode.end_reason == "closed" and episode.reset_kwargs == {"seed": 3}
    assert _messages(store, eid) == ["Echo environment ready!", "abc"]


def test_await_works_in_async_code(store: EpisodeStore, echo_url: str) -> None:
    async def play() -> str:
        env = record(EchoEnv(base_url=echo_url), store=store)
        assert is_async_client(env)
        await env.reset()
        result = await env.step(EchoAction(message="hi"))
        assert result.reward == pytest.approx(0.2)
        eid = env.episode_id
        await env.close()
        return eid

    eid = asyncio.run(play())
    assert _messages(store, eid) == ["Echo environment ready!", "hi"]


def test_sync_face_records_into_the_same_run(store: EpisodeStore, echo_url: str) -> None:
    env = record(EchoEnv(base_url=echo_url), store=store, label="adapter")
    face = env.sync()  # what 0.10's StepEnvSessionAdapter does with the client it is given
    assert isinstance(face, SyncRecordingEnvClient) and face.sync() is face and env.sync() is face
    face.reset()
    face.step(EchoAction(message="x"))
    assert env.episode_id == face.episode_id and env.run_id == face.run_id
    eid = face.episode_id
    face.close()
    assert _messages(store, eid) == ["Echo environment ready!", "x"]


def test_a_client_that_never_resets_records_an_episode_started_without_a_reset(
    store: EpisodeStore, echo_url: str
) -> None:
    env = record(EchoEnv(base_url=echo_url), store=store)
    for message in ("Hello", "World!"):  # TRL's echo tool: step only, no reset
        assert env.step(EchoAction(message=message)).observation.echoed_message == message
    first = env.episode_id
    env.reset()  # a later reset ends it and starts an ordinary episode
    env.step(EchoAction(message="z"))
    second = env.episode_id
    env.close()
    episode = store.get_episode(first)
    assert episode.reset_kwargs is None and episode.seed is None and episode.step_count == 2
    assert episode.end_reason == "reset" and episode.total_reward == pytest.approx(1.1)
    assert _messages(store, first) == [None, "Hello", "World!"]
    assert store.load_steps(first)[0].metadata == {"reset": False}
    assert store.get_episode(second).reset_kwargs == {}

    with EchoEnv(base_url=echo_url).sync() as fresh:  # a rerun steps a fresh session too, no reset
        report = rerun_sync(store, first, fresh, make_action=lambda a: EchoAction(**a))
        assert report.deterministic and report.steps_compared == 2
    with EchoEnv(base_url=echo_url).sync() as fresh, pytest.raises(RecordingError, match="started without a reset"):
        fork_sync(store, first, fresh, step=1)


def test_an_episode_started_without_a_reset_survives_export(store: EpisodeStore, echo_url: str, tmp_path) -> None:
    with record(EchoEnv(base_url=echo_url).sync(), store=store) as env:
        env.step(EchoAction(message="a"))
        eid = env.episode_id
    path = tmp_path / "e.parquet"
    assert export_parquet(store, path, episode_ids=[eid]) == 1
    with EpisodeStore(tmp_path / "other.db") as other:
        import_parquet(other, path)
        assert other.get_episode(eid).reset_kwargs is None and _messages(other, eid) == [None, "a"]


def test_sync_calls_from_a_thread_while_another_loop_runs(store: EpisodeStore, echo_url: str) -> None:
    """TRL calls an environment's tools from worker threads: each uses its own client, blocking."""
    out: dict[int, str] = {}

    def play(i: int) -> None:
        env = record(EchoEnv(base_url=echo_url), store=store)
        out[i] = env.step(EchoAction(message=f"t{i}")).observation.echoed_message
        env.close()

    threads = [threading.Thread(target=play, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert out == {i: f"t{i}" for i in range(4)}


def test_0_10s_step_env_session_adapter_records_through_sync(store: EpisodeStore, echo_url: str) -> None:
    """``StepEnvSessionAdapter`` (``build_harness_rollout_func``'s sessions) calls ``client.sync()``:
    the face it gets records into the same run."""
    from openenv.core.env_server.mcp_types import Tool
    from openenv.core.harness import StepEnvSessionAdapter

    env = record(EchoEnv(base_url=echo_url), store=store, label="adapter")
    session = StepEnvSessionAdapter(
        env, tool_specs=[Tool(name="echo")], action_builder=lambda name, args: EchoAction(message=args["text"]),
        initial_messages_builder=lambda result, task: [{"role": "user", "content": result.observation.echoed_message}],
    )
    for text in ("one", "three"):
        session.call_tool("echo", {"text": text})
    eid = env.episode_id
    session.close()
    assert eid is not None and _messages(store, eid) == ["Echo environment ready!", "one", "three"]
    assert store.get_episode(eid).end_reason == "closed"
