"""GRPO with TRL's ``rollout_func`` over our ``VectorEnvClient`` (recorded): trains 2 steps on the
env's reward, and every session's episode of every rollout call is in the store with its step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv.recording import EpisodeStore
from tests.peer010 import serving_ours
from tests.training.conftest import HERE, run_training, step_logs

SCRIPT = HERE / "scripts" / "vector_rollout.py"


def test_rollout_func_over_the_vector_client_trains_and_records(echo_model: Path, tmp_path: Path) -> None:
    db, out = tmp_path / "runs.db", tmp_path / "out"
    with serving_ours(HERE / "echo_server.py") as url:
        history = run_training(SCRIPT, str(echo_model), url, str(db), out=out)
    steps = step_logs(history)
    assert len(steps) == 2 and all(log["reward"] > 0 for log in steps)
    calls = json.loads((out / "episodes.json").read_text())
    assert len(calls) == 2 and all(len(set(ids)) == 4 for ids in calls)
    with EpisodeStore(db) as store:
        for call, ids in enumerate(calls):
            rewards = []
            for eid in ids:
                episode = store.get_episode(eid)
                assert episode.label == "rollout-func" and episode.run.info == {"trainer": "trl"}
                assert episode.step_count == 1 and episode.reset_kwargs == {}
                rewards.append(episode.total_reward)
            assert sum(rewards) / 4 == pytest.approx(steps[call]["reward"], rel=1e-5)  # what TRL optimised
