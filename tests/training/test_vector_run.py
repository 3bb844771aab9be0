"""The plain training-run API over a recorded ``VectorEnvClient``: each reset's episodes are tagged
with step/group/index from ``episode_ids`` afterwards, rewards and advantages attached per batch."""

from __future__ import annotations

from pathlib import Path

from openenv.core.vector_client import VectorEnvClient
from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import EpisodeFilter, EpisodeStore
from openenv.training import TrainingRun


def test_a_vector_loop_records_a_run(tmp_path: Path, echo_url: str) -> None:
    db = tmp_path / "vec.db"
    with TrainingRun(str(db), "vector-ppo", trainer="custom", config={"G": 2}) as run:
        with VectorEnvClient([echo_url], num_envs=4, store=run.store, client_class=EchoEnv,
                             info={"training_run": run.id}) as envs:  # fmt: skip
            for step in range(2):
                envs.reset(seed=step).raise_first()
                ids = list(envs.episode_ids)
                run.tag_episodes([{"episode_id": e, "step": step, "group": i // 2, "index": i % 2}
                                  for i, e in enumerate(ids)])  # fmt: skip
                result = envs.step([EchoAction(message="x" * (i + 1)) for i in range(4)]).raise_first()
                rewards = [float(r or 0.0) for r in result.rewards]
                run.outcomes([{"episode_id": e, "trainer_reward": r, "advantage": r - sum(rewards) / 4,
                               "finish_reason": "stop"} for e, r in zip(ids, rewards, strict=True)])  # fmt: skip
    with EpisodeStore(db) as store:
        (rec,), _ = store.list_training_runs()
        assert (rec.status, rec.steps, rec.episodes) == ("finished", 2, 8)
        eps = list(store.iter_episodes(EpisodeFilter(training_run_id=rec.id, step_min=1, step_max=1, group_id="1")))
        assert sorted((e.group_index, e.step_count, e.trainer_reward) for e in eps) == [(0, 1, 0.3), (1, 1, 0.4)]
        assert all(e.trainer_reward == e.total_reward for e in eps)
