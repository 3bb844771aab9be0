"""TRL's OpenEnv quick start with one added line (``record_trl``), trained on our echo server and
on the published 0.10: every rollout of every step is in the store once, grouped by prompt, with
the reward TRL used; the run reads the same in the CLI; both servers give the same recorded run."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openenv.cli.main import cli
from openenv.recording import EpisodeFilter, EpisodeStore
from tests.peer010 import serving_ours, serving_published
from tests.training.conftest import HERE, run_training, step_logs

SCRIPT = HERE / "scripts" / "echo_quickstart_recorded.py"
SERVER = HERE / "echo_server.py"


def _recorded(out: Path, history: list[dict[str, Any]]) -> list[list[tuple[str, int, float, int]]]:
    """Check the run in the store against what TRL logged; returns per step the rollouts'
    (group, index, trainer reward, env steps)."""
    logs = step_logs(history)
    with EpisodeStore(out / "runs.db") as store:
        (run,), _ = store.list_training_runs()
        assert (run.name, run.trainer, run.status, run.steps, run.episodes) == ("echo-quickstart", "trl", "finished", 2, 8)
        per_step = []
        for step, log in enumerate(logs):
            eps = sorted(store.iter_episodes(EpisodeFilter(training_run_id=run.id, step_min=step, step_max=step)),
                         key=lambda e: e.group_index)  # fmt: skip
            assert [(e.group_id, e.group_index) for e in eps] == [("0", i) for i in range(4)]
            rewards = [e.trainer_reward for e in eps]
            assert statistics.fmean(rewards) == pytest.approx(log["reward"], abs=1e-6)  # the reward TRL logged
            assert statistics.stdev(rewards) == pytest.approx(log["reward_std"], abs=1e-6)
            for e in eps:
                assert e.finished and e.end_reason == "rollout_end" and e.step_count >= 1
                assert e.trainer_reward == pytest.approx(e.total_reward)  # the env's reward is what TRL used
                first = store.load_steps(e.id, limit=1)[0]
                assert first.index == 0 and first.observation is None  # stepped without a reset, as the guide does
            per_step.append([(e.group_id, e.group_index, round(e.trainer_reward, 6), e.step_count) for e in eps])
    result = CliRunner().invoke(cli, ["runs", "--db", str(out / "runs.db"), "show", "echo-quickstart"])
    assert result.exit_code == 0 and "rollouts: 8 (0 unfinished)" in result.stdout
    return per_step


def test_the_quick_start_with_one_added_line_records_its_run(echo_model: Path, tmp_path: Path) -> None:
    got = {}
    for side, serving in (("ours", serving_ours), ("published", serving_published)):
        out = tmp_path / side / "out"
        out.parent.mkdir()
        with serving(SERVER) as url:
            history = run_training(SCRIPT, str(echo_model), url, out=out)
        got[side] = _recorded(out, history)
    assert got["ours"] == got["published"]
