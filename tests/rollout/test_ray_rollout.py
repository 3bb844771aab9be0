"""``openenv rollout --provider ray``: the env on the test cluster at its routable address, guarded
by the token minted for it, which the rollout carries (the model server runs inside the cluster's
network too: this module's thread is there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.core.containers.runtime import RayProvider
from openenv.recording import EpisodeFilter, EpisodeStore
from tests.server_utils import running_server

from .fake_openai import make_app

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]


@pytest.fixture(scope="module")
def inside_model_url(ray_driver) -> Iterator[str]:
    with running_server(make_app()) as url:
        yield url + "/v1"


def test_rollout_on_a_ray_env_carries_its_token(inside_model_url: str, ray_cluster, tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    env = {**os.environ, "RAY_ADDRESS": ray_cluster.address}
    p = subprocess.run([sys.executable, "-m", "openenv", "rollout", "--env", "echo", "--provider", "ray",
                        "--model-url", inside_model_url, "--model", "echo#ray", "--episodes", "2", "--max-steps", "2",
                        "--label", "on-ray", "--db", str(db), "--json"],
                       capture_output=True, text=True, timeout=240, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    assert out["finished"] == 2 and out["steps"]["total"] == 4
    with EpisodeStore(db) as store:
        eps = store.list_episodes(EpisodeFilter(label="on-ray")).items
        assert len(eps) == 2 and all(e.step_count == 2 for e in eps)
        assert ray_cluster.host in (store.get_episode(eps[0].id).run.base_url or "")
    stored = b"".join(f.read_bytes() for f in tmp_path.rglob("*") if f.is_file())
    assert b"Bearer" not in stored and b"OPENENV_TOKEN" not in stored
    assert RayProvider.list_runtimes(address=ray_cluster.address) == []  # the rollout stopped its env
