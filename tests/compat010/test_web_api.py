"""0.10's JSON web API beside our ``/web`` page: a script driving ``/web/reset`` (with and without a
body, unknown keys dropped), ``/web/step`` (a ``call_tool`` with JSON-string arguments),
``/web/state`` and ``/web/metadata`` gets the same answers from ours and from the published 0.10."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fastapi.testclient import TestClient

from openenv.core.env_server.types import Action, Observation
from openenv.core.env_server.web_interface import create_web_interface_app
from tests.peer010 import PEERS010, ROOT, peer010_python

CLIENTS = PEERS010 / "clients"


def _run(python: str, ours: bool) -> list:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(CLIENTS)] if ours else [str(CLIENTS)])
    done = subprocess.run(
        [python, *([] if ours else ["-P"]), "-m", "web_api_probe"],
        cwd=str(ROOT) if ours else "/", capture_output=True, text=True, timeout=180, env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_web_json_api_matches_010() -> None:
    ours, theirs = _run(sys.executable, True), _run(peer010_python(), False)
    assert ours == theirs
    assert ours[-1] == [200, {"echoed": {"message": "hello"}, "is_dict": True}]


class _Echo(Action):
    message: str


def test_web_state_before_reset_and_a_bad_step_are_coded_errors() -> None:
    from tests.peers010.envs.plain_env_for_web import PlainEnv  # noqa: PLC0415

    client = TestClient(create_web_interface_app(PlainEnv, _Echo, Observation))
    state = client.get("/web/state")
    assert state.status_code == 409 and state.json()["code"] == "STEP_BEFORE_RESET"
    assert "Call reset() first" in state.json()["detail"]
    client.post("/web/reset")
    bad = client.post("/web/step", json={"action": {"nope": 1}})
    assert bad.status_code == 422 and bad.json()["code"] == "VALIDATION_ERROR"
    not_object = client.post("/web/step", json={"action": "text"})
    assert not_object.status_code == 400 and "Traceback" not in not_object.text
