"""``openenv rollout`` as a user runs it: a subprocess, a bundled env started by the process
provider (or a URL), the loopback model server, a fresh store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from openenv.recording import EpisodeFilter, EpisodeStore

from .conftest import model_requests


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "openenv", "rollout", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})  # fmt: skip


def test_rollout_starts_the_env_runs_concurrently_and_prints_json(model_url: str, tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    p = _cli("--env", "echo", "--model-url", model_url, "--model", "echo#cli", "--episodes", "6", "--concurrency", "3",
             "--max-steps", "3", "--seed", "5", "--samples-per-seed", "2", "--label", "cli-run", "--db", str(db),
             "--temperature", "0.7", "--api-key-env", "ROLLOUT_TEST_KEY", "--json",
             env={"ROLLOUT_TEST_KEY": "sk-cli-secret"})  # fmt: skip
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["label"] == "cli-run" and out["finished"] == 6 and out["steps"]["total"] == 18
    assert out["seeds"] == 3 and out["samples_per_seed"] == 2 and set(out["pass_at_k"]) == {"pass@1", "pass@2"}
    assert out["return"]["mean"] > 0 and out["tokens"]["prompt"] > 0 and out["model_latency_ms"]["p50"] > 0
    assert sorted(e["seed"] for e in out["episodes_detail"]) == [5, 5, 6, 6, 7, 7]
    assert "episodes" in p.stderr and "6/6" in p.stderr  # the progress bar
    with EpisodeStore(db) as store:
        eps = store.list_episodes(EpisodeFilter(label="cli-run")).items
        assert len(eps) == 6 and all(e.source == "model" and e.step_count == 3 for e in eps)
        steps = store.load_steps(eps[0].id)
        assert steps[3].actor == "model" and steps[3].agent["completion"] == '{"message":"m3"}'
        assert store.get_episode(eps[0].id).run.info["model"]["temperature"] == 0.7
    assert b"sk-cli-secret" not in b"".join(f.read_bytes() for f in tmp_path.rglob("*") if f.is_file())
    assert any(r["authorization"] == "Bearer sk-cli-secret" for r in model_requests(model_url, "echo#cli"))


def test_rollout_table_and_a_failing_model(model_url: str, echo_url: str, tmp_path: Path) -> None:
    p = _cli("--env", echo_url, "--model-url", model_url, "--model", "fail-after-4", "--episodes", "3",
             "--max-steps", "3", "--db", str(tmp_path / "e.db"), "--label", "failing")  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "success rate" in p.stdout and "pass@1" in p.stdout and "model_error" in p.stdout
    assert "ended early" in p.stderr and "HTTP 500" in p.stderr and "Traceback" not in p.stderr
    with EpisodeStore(tmp_path / "e.db") as store:
        eps = sorted(store.list_episodes(EpisodeFilter(label="failing")).items, key=lambda e: e.started_at)
        assert [e.step_count for e in eps] == [3, 1, 0]
        assert [e.end_reason for e in eps] == ["max_steps", "model_error", "model_error"]


def test_bad_input_is_a_clear_error(model_url: str, tmp_path: Path) -> None:
    p = _cli("--env", "echo", "--model-url", model_url, "--model", "echo", "--api-key-env", "NOPE_NOT_SET_X",
             "--db", str(tmp_path / "e.db"))  # fmt: skip
    assert p.returncode == 2 and "NOPE_NOT_SET_X" in p.stderr and "Traceback" not in p.stderr
    p = _cli("--env", "no-such-env-here", "--model-url", model_url, "--model", "echo", "--db", str(tmp_path / "e.db"))
    assert p.returncode == 1 and "could not start environment" in p.stderr and "Traceback" not in p.stderr
    p = _cli("--env", "http://127.0.0.1:9", "--model-url", model_url, "--model", "echo", "--db", str(tmp_path / "e.db"))
    assert p.returncode == 1 and "cannot reach the environment" in p.stderr and "Traceback" not in p.stderr


def test_the_default_store_is_the_studios(model_url: str, echo_url: str, tmp_path: Path) -> None:
    env = {"OPENENV_STUDIO_DATA_DIR": str(tmp_path / "studio"), "OPENENV_EPISODES_DB": ""}
    p = _cli("--env", echo_url, "--model-url", model_url, "--model", "echo", "--max-steps", "1", "--label", "dflt",
             "--quiet", env=env)  # fmt: skip
    assert p.returncode == 0, p.stderr
    with EpisodeStore(tmp_path / "studio" / "episodes.db") as store:
        assert [e.label for e in store.iter_episodes()] == ["dflt"]
