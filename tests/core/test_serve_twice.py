"""An app from ``create_app`` can be served again after its server stopped (a second uvicorn run,
a test fixture reusing a module-level app): the next lifespan starts a fresh worker pool."""

from __future__ import annotations

import httpx

from openenv.core.env_server import create_app
from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation
from tests.server_utils import running_server


def test_the_same_app_serves_twice() -> None:
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo")
    for round_ in range(2):
        with running_server(app) as url:
            reset = httpx.post(f"{url}/reset", json={}, timeout=10)
            assert reset.status_code == 200, (round_, reset.text)
            step = httpx.post(f"{url}/step", json={"action": {"message": f"r{round_}"}}, timeout=10)
            assert step.status_code == 200 and step.json()["observation"]["echoed_message"] == f"r{round_}"
