"""One env module recorded against our server and the published 0.10 is one environment in the
store: ``/metadata``'s name is the env's own (the class name by default) on both."""

from __future__ import annotations

from pathlib import Path

import httpx

from openenv.core import GenericEnvClient
from openenv.recording import EpisodeFilter, EpisodeStore, record
from tests.peer010 import serving_ours, serving_published

SERVER = Path(__file__).resolve().parents[1] / "training" / "echo_server.py"  # create_app(..., env_name="echo_env")


def test_one_env_module_is_one_environment_in_the_store(tmp_path: Path) -> None:
    names = {}
    with EpisodeStore(tmp_path / "e.db") as store:
        for side, serving in (("ours", serving_ours), ("0.10", serving_published)):
            with serving(SERVER) as url:
                names[side] = httpx.get(f"{url}/metadata", timeout=30).json()["name"]
                with record(GenericEnvClient(base_url=url).sync(), store=store, label=side) as env:
                    env.reset()
                    env.step({"message": "hi"})
        assert names == {"ours": "EchoEnvironment", "0.10": "EchoEnvironment"}
        assert store.distinct_values("env") == ["EchoEnvironment"]
        assert store.count_episodes(EpisodeFilter(env="EchoEnvironment")) == 2
