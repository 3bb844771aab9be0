"""Training runs in the store (SQLite and PostgreSQL): open/end, tags at start and afterwards,
outcomes in one batch, listings with counts, filters by run/step/group/seed, a dead run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv.recording import EpisodeFilter, EpisodeStore, RecordingError
from openenv.recording.errors import EpisodeNotFoundError

REPO = Path(__file__).resolve().parents[2]


def _rollouts(store: EpisodeStore, run: str, steps: int = 2, groups: int = 2, g: int = 3) -> list[str]:
    env_run = store.create_run(env_name="echo", journaled=store.journaled)
    ids = []
    for step in range(steps):
        for group in range(groups):
            for index in range(g):
                tags = {"training_run_id": run, "train_step": step, "group_id": str(group), "group_index": index}
                eid = store.start_episode(env_run, reset_kwargs={"seed": group}, observation={"x": 0},
                                          journaled=store.journaled, training=tags)  # fmt: skip
                store.journal_steps([store.step_row(eid, 1, action={"m": "a"}, observation={"x": 1}, reward=1.0,
                                                    done=index == 0)])  # fmt: skip
                ids.append(eid)
    return ids


def test_a_run_with_tags_outcomes_counts_and_filters(any_store: EpisodeStore) -> None:
    store = any_store
    run = store.open_training_run("grpo-echo", trainer="trl", env_name="echo", config={"lr": 1e-6, "G": 3})
    ids = _rollouts(store, run)
    outcomes = [{"episode_id": eid, "trainer_reward": i * 0.5, "reward_components": {"f": i * 0.5, "g": None},
                 "advantage": -1.0 + i, "finish_reason": "stop"} for i, eid in enumerate(ids)]  # fmt: skip
    outcomes[1]["trainer_reward"] = float("nan")  # unscorable: stored as no value
    assert store.set_outcomes(outcomes) == len(ids)
    ep = store.get_episode(ids[2])
    assert (ep.training_run_id, ep.train_step, ep.group_id, ep.group_index) == (run, 0, "0", 2)
    assert (ep.trainer_reward, ep.advantage, ep.finish_reason) == (1.0, 1.0, "stop")
    assert ep.reward_components == {"f": 1.0, "g": None}
    assert store.get_episode(ids[1]).trainer_reward is None

    (listed,), cursor = store.list_training_runs()
    assert cursor is None and listed.id == run and listed.status == "running"
    assert (listed.episodes, listed.steps, listed.last_step, listed.config) == (12, 2, 1, {"lr": 1e-6, "G": 3})
    assert store.get_training_run(run[:8]).id == run == store.get_training_run("grpo-echo").id
    steps = store.training_steps(run)
    assert [(s.step, s.episodes, s.groups) for s in steps] == [(0, 6, 2), (1, 6, 2)]
    assert steps[0].finish_reasons == {"stop": 6} and steps[0].reward_max == 2.5

    page = store.list_episodes(EpisodeFilter(training_run_id=run, step_min=1, step_max=1, group_id="1"), limit=2)
    rest = store.list_episodes(EpisodeFilter(training_run_id=run, step_min=1, step_max=1, group_id="1"),
                               limit=2, cursor=page.next_cursor)  # fmt: skip
    got = [e.id for e in page.items + rest.items]
    assert sorted(got) == sorted(ids[9:12]) and len(set(got)) == 3
    assert store.count_episodes(EpisodeFilter(training_run_id=run, seed=0)) == 6

    store.end_training_run(run, status="finished")
    assert store.get_training_run(run).status == "finished"
    assert store.get_training_run(run).ended_at is not None


def test_tags_afterwards_and_bad_input(any_store: EpisodeStore) -> None:
    store = any_store
    run = store.open_training_run("plain", trainer="custom")
    env_run = store.create_run(env_name="echo")
    eids = [store.start_episode(env_run, observation={}) for _ in range(3)]
    n = store.tag_episodes(run, [{"episode_id": e, "train_step": 7, "group_id": "g", "group_index": i}
                                 for i, e in enumerate(eids)] + [{"episode_id": "0" * 32, "train_step": 7}])  # fmt: skip
    assert n == 3
    assert [store.get_episode(e).group_index for e in eids] == [0, 1, 2]
    assert store.count_episodes(EpisodeFilter(training_run_id=run, step_min=7)) == 3
    for bad in ({"episode_id": eids[0], "train_step": -1}, {"episode_id": eids[0], "group_index": "x"},
                {"episode_id": eids[0], "bogus": 1}, {"train_step": 1}, {"episode_id": eids[0], "group_id": 3}):
        with pytest.raises(RecordingError) as info:
            store.set_outcomes([bad])
        assert info.value.code == "BAD_TRAINING_TAG"
    with pytest.raises(RecordingError):
        store.end_training_run(run, status="exploded")
    with pytest.raises(EpisodeNotFoundError):
        store.end_training_run("f" * 32)
    with pytest.raises(EpisodeNotFoundError):
        store.get_training_run("no-such-run")
    with pytest.raises(RecordingError):
        store.open_training_run("")
    with pytest.raises(RecordingError):
        store.list_training_runs(cursor="nonsense")


def test_a_run_whose_process_died_reads_as_dead(tmp_path: Path) -> None:
    db = tmp_path / "dead.db"
    script = (
        "import os, sys\n"
        "from openenv.recording import EpisodeStore\n"
        "s = EpisodeStore(sys.argv[1])\n"
        "run = s.open_training_run('doomed', trainer='custom')\n"
        "env = s.create_run(env_name='echo', journaled=True)\n"
        "t = {'training_run_id': run, 'train_step': 4, 'group_id': '0', 'group_index': 1}\n"
        "e = s.start_episode(env, observation={}, journaled=True, training=t)\n"
        "s.journal_steps([s.step_row(e, 1, action={}, observation={}, reward=1.0)])\n"
        "os.kill(os.getpid(), 9)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", script, str(db)], env=env, timeout=120, capture_output=True)
    assert proc.returncode == -9, proc.stderr[-400:]
    with EpisodeStore(db) as store:
        (run,), _ = store.list_training_runs()
        assert (run.status, run.stored_status, run.episodes, run.last_step) == ("dead", "running", 1, 4)
        (ep,) = store.list_episodes(EpisodeFilter(training_run_id=run.id)).items
        assert (ep.train_step, ep.group_index, ep.step_count) == (4, 1, 1)


def test_the_plain_training_api_with_a_recording_client(any_store: EpisodeStore, echo_url: str) -> None:
    from openenv.envs.echo import EchoAction, EchoEnv
    from openenv.training import TrainingRun

    with TrainingRun(any_store, "plain-loop", config={"G": 2}) as run:
        env = run.record(EchoEnv(base_url=echo_url).sync())
        ids = []
        for index in range(2):
            run.tag(env, step=3, group="p7", index=index)
            env.reset(seed=7)
            env.step(EchoAction(message="x" * (index + 1)))
            ids.append(env.episode_id)
        env.close()
        assert run.outcomes([{"episode_id": e, "advantage": a} for e, a in zip(ids, (-1.0, 1.0), strict=True)]) == 2
        assert run.tag_episodes([{"episode_id": ids[0], "step": 3, "group": "p7", "index": 0}]) == 1
    got = [any_store.get_episode(e) for e in ids]
    assert [(e.train_step, e.group_id, e.group_index, e.advantage, e.step_count) for e in got] == [
        (3, "p7", 0, -1.0, 1), (3, "p7", 1, 1.0, 1)]
    assert any_store.get_training_run(run.id).status == "finished" and run.status == "finished"
    with pytest.raises(ValueError), TrainingRun(any_store, "fails") as failing:
        raise ValueError("boom")
    assert any_store.get_training_run(failing.id).status == "failed"
    assert any_store.get_training_run(failing.id).info == {"error": "ValueError: boom"}
