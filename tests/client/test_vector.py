"""VectorEnvClient: 64 sessions on one loop against our echo server and a published 0.10 server;
several URLs; per-session errors; auto-reset; recording; the async face."""

from __future__ import annotations

import asyncio

import pytest

from openenv.core import EpisodeLostError, StepResult, VectorEnvClient, VectorResult
from openenv.core.env_server import create_app
from openenv.envs.echo import EchoEnv, EchoObservation
from tests.client.conftest import restartable
from tests.core.envs import SleepAction, SleepObservation, SleepyEnvironment
from tests.server_utils import running_server


def test_64_sessions_step_together(any_url):
    with VectorEnvClient(any_url, num_envs=64) as envs:
        first = envs.reset()
        assert isinstance(first, VectorResult) and first.ok and len(first) == 64
        for n in range(1, 4):
            batch = envs.step([{"message": f"{i}-{n}"} for i in range(64)])
            assert batch.ok, [e for e in batch.errors if e]
            assert [o["echoed_message"] for o in batch.observations] == [f"{i}-{n}" for i in range(64)]
            assert all(r.metadata == {"step": n} for r in batch.results)
        states = envs.state()
        assert {s["step_count"] for s in states} == {3}
        assert len({s["episode_id"] for s in states}) == 64  # 64 separate sessions


def test_typed_sessions_across_two_servers(echo_url, published_url):
    with VectorEnvClient([echo_url, published_url], num_envs=6, client_class=EchoEnv) as envs:
        envs.reset()
        from openenv.envs.echo import EchoAction

        batch = envs.step([EchoAction(message="x" * i) for i in range(1, 7)])
        assert batch.ok and all(isinstance(o, EchoObservation) for o in batch.observations)
        assert batch.rewards == pytest.approx([0.1 * i for i in range(1, 7)])
        assert [c.base_url for c in envs.clients] == [echo_url, published_url] * 3


def test_one_sessions_error_does_not_stop_the_others():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False, max_concurrent_envs=8)
    with running_server(app) as url, VectorEnvClient(url, num_envs=4) as envs:
        envs.reset(indices=[0, 1, 2])  # session 3 never reset: its fresh env is stepped, as on 0.10
        batch = envs.step([{"seconds": 0}, {"seconds": 0, "fail": True}, None, {"seconds": 0}])
        assert batch.results[0] is not None and batch.results[0].reward == 1.0
        assert batch.errors[1] is not None and batch.errors[1].code == "EXECUTION_ERROR"
        assert batch.results[2] is None and batch.errors[2] is None  # skipped
        assert batch.errors[3] is None and batch.results[3].reward == 1.0 and not batch.ok
        with pytest.raises(Exception, match="boom|EXECUTION"):
            batch.raise_first()
        again = envs.step([{"seconds": 0}] * 4)
        assert again.errors[0] is None and again.errors[2] is None


def test_auto_reset_starts_a_new_episode_where_one_ended():
    app = create_app(SleepyEnvironment, SleepAction, SleepObservation, web=False, max_concurrent_envs=8)
    with running_server(app) as url, VectorEnvClient(url, num_envs=3, auto_reset=True,
                                                     reset_kwargs={"difficulty": 5}) as envs:  # fmt: skip
        envs.reset()
        for _ in range(2):
            batch = envs.step([{"seconds": 0}] * 3)
            assert batch.dones == [False] * 3 and batch.reset_results == [None] * 3
        batch = envs.step([{"seconds": 0}] * 3)  # the env ends its episode on step 3
        assert batch.dones == [True] * 3
        assert all(r.metadata == {"difficulty": 5, "seed": None} for r in batch.reset_results)
        assert batch.observations == [{"slept": 0.0, "metadata": {"difficulty": 5, "seed": None}}] * 3
        assert {s["step_count"] for s in envs.state()} == {0}


def test_a_restarted_server_loses_its_sessions_episodes_only(echo_url):
    with restartable("ours") as server, VectorEnvClient([echo_url, server.url], num_envs=4,
                                                        client_kwargs={"reconnect_timeout_s": 30}) as envs:  # fmt: skip
        envs.reset()
        server.kill()
        server.start()
        batch = envs.step([{"message": "m"}] * 4)
        assert batch.errors[0] is None and batch.errors[2] is None
        assert isinstance(batch.errors[1], EpisodeLostError) and isinstance(batch.errors[3], EpisodeLostError)
        envs.reset(indices=[1, 3])
        assert envs.step([{"message": "m"}] * 4).ok


def test_async_face_and_recording(echo_url, tmp_path):
    from openenv.recording import EpisodeStore

    async def main(store):
        async with VectorEnvClient(echo_url, num_envs=5, store=store, label="vec") as envs:
            await envs.reset(seed=1)
            for n in range(3):
                batch = await envs.step([{"message": f"s{n}"}] * 5)
                assert batch.ok and isinstance(batch.results[0], StepResult)
            return [env.episode_id for env in envs._envs]

    with EpisodeStore(tmp_path / "v.db") as store:
        ids = asyncio.run(main(store))
        store.flush()
        assert len(set(ids)) == 5
        for episode_id in ids:
            steps = list(store.iter_steps(episode_id))
            assert [s.index for s in steps] == [0, 1, 2, 3]
            assert steps[3].observation["echoed_message"] == "s2" and steps[3].metadata == {"step": 3}
            assert store.get_episode(episode_id).end_reason == "closed"


def test_bad_arguments_are_clear(echo_url):
    with pytest.raises(ValueError, match="at least one"):
        VectorEnvClient([])
    with VectorEnvClient(echo_url, num_envs=2) as envs, pytest.raises(ValueError, match="needs 2 actions"):
        envs.step([{"message": "x"}])
