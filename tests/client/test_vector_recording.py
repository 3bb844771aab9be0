"""VectorEnvClient(store=...): each session's episode id exposed, info kept with its run, steps
pipelined and journaled from the wire, sessions never reset recorded as started without a reset,
and a store that commits rows (no journal) recorded the same."""

from __future__ import annotations

import pytest

from openenv.core import VectorEnvClient
from openenv.recording import EpisodeStore


def test_episode_ids_info_and_pipelined_steps(echo_url, tmp_path, monkeypatch):
    with EpisodeStore(tmp_path / "v.db") as store:
        with VectorEnvClient(echo_url, num_envs=4, store=store, label="grpo", info={"run": "r1", "lr": 1e-5}) as envs:
            assert envs.episode_ids == [None] * 4 and envs.run_ids == [None] * 4
            envs.reset(seed=2)
            first = envs.episode_ids
            assert len(set(first)) == 4 and None not in first
            sends = []
            real_send = type(envs.clients[0])._send

            async def counting_send(self, message, step=False):
                sends.append(message["type"])
                return await real_send(self, message, step)

            monkeypatch.setattr(type(envs.clients[0]), "_send", counting_send)
            for n in range(3):
                assert envs.step([{"message": f"m{n}{i}"} for i in range(4)]).ok
            assert sends == ["step"] * 12  # every recorded step went through the pipelined send
            assert envs.episode_ids == first
            envs.reset(indices=[1])
            assert envs.episode_ids[1] != first[1] and envs.episode_ids[0] == first[0]
        store.flush()
        for i, eid in enumerate(first):
            episode = store.get_episode(eid)
            assert episode.run.info == {"run": "r1", "lr": 1e-5} and episode.label == "grpo"
            steps = store.load_steps(eid)
            assert [s.observation["echoed_message"] for s in steps[1:]] == [f"m{n}{i}" for n in range(3)]
            assert [s.reward for s in steps[1:]] == pytest.approx([0.3] * 3)
        assert store.get_episode(first[1]).end_reason == "reset"


def test_sessions_never_reset_are_recorded_as_started_without_a_reset(echo_url, tmp_path):
    with EpisodeStore(tmp_path / "v.db") as store:
        with VectorEnvClient(echo_url, num_envs=3, store=store) as envs:
            envs.reset(indices=[0])
            assert envs.step([{"message": "a"}, {"message": "bb"}, None]).ok
            ids = envs.episode_ids
            assert ids[0] and ids[1] and ids[2] is None
            assert envs.step([{"message": "c"}] * 3).ok
            ids = envs.episode_ids
        store.flush()
        assert store.get_episode(ids[0]).reset_kwargs == {}
        for eid, messages in ((ids[1], ["bb", "c"]), (ids[2], ["c"])):
            assert store.get_episode(eid).reset_kwargs is None
            assert [s.observation["echoed_message"] for s in store.load_steps(eid)[1:]] == messages


def test_a_store_without_journal_records_every_session(echo_url, tmp_path):
    with EpisodeStore(tmp_path / "v.db", journal=False) as store:
        with VectorEnvClient(echo_url, num_envs=3, store=store, auto_reset=True) as envs:
            envs.reset()
            for _ in range(2):
                assert envs.step([{"message": "xy"}] * 3).ok
            ids = envs.episode_ids
        for eid in ids:
            assert [s.index for s in store.load_steps(eid)] == [0, 1, 2]
