"""0.10's observation shape (``metadata`` nested in ``observation``) through the recorder and
``openenv validate``; our server keeps 0.3's shape."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from openenv.core import GenericEnvClient
from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import EpisodeStore, record


def _validate(url: str) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "openenv", "validate", "--json", url],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    return done.returncode, json.loads(done.stdout)


def _statuses(report: dict) -> dict[str, str]:
    return {c["name"]: c["status"] for c in report["checks"]}


def test_our_server_keeps_0_3_shape(echo_url):
    import httpx

    body = httpx.post(f"{echo_url}/reset", json={}).json()
    assert "metadata" not in body["observation"]


def test_validate_passes_a_010_server_and_checks_its_mcp(published_url):
    code, report = _validate(published_url)
    statuses = _statuses(report)
    assert code == 0, [c for c in report["checks"] if c["status"] == "fail"]
    assert statuses["http.mcp"] == "pass" and statuses["ws.reset_step_state"] == "pass"


def test_validate_checks_our_mcp_and_passes_a_server_without_one(echo_url):
    code, report = _validate(echo_url)
    assert code == 0 and _statuses(report)["http.mcp"] == "pass"
    from fastapi import FastAPI, Response

    from openenv.core.env_server import create_app
    from openenv.envs.echo import EchoEnvironment, EchoObservation
    from tests.server_utils import running_server

    outer = FastAPI()  # a 0.3-style server: no /mcp route
    outer.post("/mcp")(lambda: Response(status_code=404))
    outer.mount("/", create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", web=False))
    with running_server(outer, lifespan="off") as url:
        code, report = _validate(url)
    check = next(c for c in report["checks"] if c["name"] == "http.mcp")
    assert code == 0 and check["status"] == "pass" and "no /mcp" in check["message"]


def test_validate_fails_an_mcp_route_that_is_not_json_rpc():
    from fastapi import FastAPI

    from openenv.core.env_server import create_app
    from openenv.envs.echo import EchoEnvironment, EchoObservation
    from tests.server_utils import running_server

    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo", web=False)
    outer = FastAPI()
    outer.post("/mcp")(lambda: {"tools": []})
    outer.mount("/", app)
    with running_server(outer, lifespan="off") as url:
        code, report = _validate(url)
    assert code == 1 and _statuses(report)["http.mcp"] == "fail"


@pytest.mark.parametrize("journal", [True, False])
@pytest.mark.parametrize("typed", [True, False])
def test_the_recorder_stores_010_metadata_once(published_url, tmp_path, journal, typed):
    with EpisodeStore(tmp_path / "e.db", journal=journal) as store:
        client = EchoEnv(base_url=published_url) if typed else GenericEnvClient(base_url=published_url)
        with record(client.sync(), store=store) as env:
            env.reset(seed=7)
            env.step(EchoAction(message="abc") if typed else {"message": "abc"})
            episode_id = env.episode_id
        store.flush()
        steps = list(store.iter_steps(episode_id))
    assert [s.index for s in steps] == [0, 1]
    assert steps[0].metadata == {"seed": 7} and steps[1].metadata == {"step": 1}
    assert "metadata" not in steps[1].observation and steps[1].observation["echoed_message"] == "abc"
