"""``openenv rollout`` on a live verifiers env against a loopback OpenAI-compatible fake model, recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from openenv.recording import EpisodeFilter, EpisodeStore
from tests.capture.fake_engine import make_engine
from tests.importers.helpers import ROOT, SOURCES, need
from tests.server_utils import running_server


def test_rollout_records_verifiers_episodes(tmp_path: Path) -> None:
    need("verifiers")
    db = tmp_path / "r.db"
    target = f"verifiers:{SOURCES / 'vf_multi' / 'vf_multi.py'}"
    with running_server(make_engine()) as engine:
        run = subprocess.run([sys.executable, "-m", "openenv", "rollout", "--env", target, "--model-url",
                              engine + "/v1", "--model", "json", "--episodes", "2", "--max-steps", "8", "--capture", "tokens",
                              "--label", "vf-rollout", "--db", str(db), "--json"],
                             capture_output=True, text=True, timeout=240, cwd=str(ROOT))  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout)
    assert summary["finished"] == 2, summary
    with EpisodeStore(db) as store:
        episodes = store.list_episodes(EpisodeFilter(label="vf-rollout")).items
        assert len(episodes) == 2
        for ep in episodes:
            steps = store.load_steps(ep.id)
            # the fake model guesses "m1".."m5": wrong every time, so the env's max_turns (5) ends it
            assert len(steps) == 6
            last = steps[-1]
            assert last.done and last.reward == 0.0
            assert last.metadata["metrics"] == {"found": 0.0, "num_turns": 5.0}
            assert last.metadata["stop_condition"] == "max_turns_reached"
            assert [s.action["message"] for s in steps[1:]] == ["m1", "m2", "m3", "m4", "m5"]
            assert last.observation["messages"][0] == {"role": "user", "content": "Guess my number (1-9)."}
            captured = [s.agent["capture"] for s in steps[1:]]  # the engine's token ids, per turn
            assert all(c["prompt_ids"] and c["sampled_ids"] for c in captured)
