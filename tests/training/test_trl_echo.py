"""TRL's OpenEnv quick start (``environment_factory``, a client that never resets) trains on our
echo server with a real reward signal, and gives the same rewards against the published 0.10."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peer010 import serving_ours, serving_published
from tests.training.conftest import HERE, run_training, step_logs

SCRIPT = HERE / "scripts" / "echo_quickstart.py"
SERVER = HERE / "echo_server.py"


@pytest.fixture(scope="module")
def ours_history(echo_model: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    with serving_ours(SERVER) as url:
        return run_training(SCRIPT, str(echo_model), url, out=tmp_path_factory.mktemp("ours") / "out")


def test_quickstart_trains_on_a_nonzero_reward(ours_history: list[dict]) -> None:
    steps = step_logs(ours_history)
    assert len(steps) == 2
    for log in steps:
        assert log["tools/call_frequency"] > 0 and log["tools/failure_frequency"] == 0  # the env was stepped
        assert log["reward"] > 0 and log["reward_std"] > 0  # "Hello World!" (1.2) and "hi" (0.2) both sampled
        assert log["grad_norm"] > 0


def test_quickstart_gives_the_same_rewards_on_the_published_010(
    ours_history: list[dict], echo_model: Path, tmp_path: Path
) -> None:
    with serving_published(SERVER) as url:
        theirs = run_training(SCRIPT, str(echo_model), url, out=tmp_path / "out")
    keys = ("reward", "reward_std", "tools/call_frequency", "tools/failure_frequency")
    got = [{k: log[k] for k in keys} for log in step_logs(ours_history)]
    want = [{k: log[k] for k in keys} for log in step_logs(theirs)]
    assert len(got) == len(want) == 2 and want[0]["reward"] > 0
    for mine, published in zip(got, want, strict=True):
        assert mine == pytest.approx(published)
