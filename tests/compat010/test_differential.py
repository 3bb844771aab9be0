"""0.10-style environment modules served by ours and by the published 0.10, driven by one client script.

Each module under tests/peers010/envs is written only against the published import surface. The
same plain HTTP/WebSocket script (tests/peers010/clients/drive.py) drives both servers; its output
(observations, rewards, done, metadata, state, error codes, /schema) must be identical.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.peer010 import PEERS010, ROOT, peer010_python, run_with, serving_ours, serving_published

ENVS = PEERS010 / "envs"
DRIVE = PEERS010 / "clients" / "drive.py"
IMPORT_PROBE = PEERS010 / "clients" / "import_probe.py"

SCENARIOS = [
    ("rubric_env.py", "rubric", None),
    ("generic_env.py", "generic", None),
    ("server_subclass.py", "subclass", None),
    ("concurrency_app.py", "concurrency", None),
    ("concurrency_app.py", "production", {"OPENENV_MODE": "production"}),
    ("task_env.py", "tasks", None),
    ("task_env.py", "tasks_plain", {"TASK_ENV_VARIANT": "plain"}),
]


def _drive(serving: Any, module: str, scenario: str, extra_env: dict[str, str] | None) -> list[dict[str, Any]]:
    with serving(ENVS / module, extra_env=extra_env) as url:
        done = run_with(sys.executable, DRIVE, url, scenario)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize(("module", "scenario", "extra_env"), SCENARIOS, ids=[s[1] for s in SCENARIOS])
def test_same_episode_on_ours_and_published(module: str, scenario: str, extra_env: dict[str, str] | None) -> None:
    peer010_python()  # skip (or fail under OPENENV_REQUIRE_ALL) before starting anything
    ours = _drive(serving_ours, module, scenario, extra_env)
    published = _drive(serving_published, module, scenario, extra_env)
    assert [c["call"] for c in ours] == [c["call"] for c in published]
    for mine, theirs in zip(ours, published, strict=True):
        assert mine == theirs, mine["call"]
    assert len(ours) >= 5
    calls = {c["call"]: c["value"] for c in ours}
    if scenario == "rubric":  # the trajectory rubric's discounted credit reached the client
        assert calls["step 7"]["observation"]["metadata"]["step_rewards"] == [0.125, 0.25, 0.5, 1.0]
        assert calls["step 7"]["observation"]["done"] is True
    if scenario == "concurrency":
        assert calls["third"] == {"type": "error", "code": "CAPACITY_REACHED", "max": 2}
    if scenario == "production":
        assert calls["reset"] == calls["step"] == calls["state"] == 404 and calls["health"] == 200
    if scenario == "tasks":  # the Task API answered on both, errors included
        assert calls["list_environments"] == {"status": 200, "body": ["quiz"]}
        assert len(calls["tasks train"]["body"]["tasks"]) == 5 and calls["num_tasks"]["body"] == {"num_tasks": 3}
        assert calls["task 99"] == calls["range past end"] == {"status": 400, "detail": "Invalid task index"}
        assert calls["tasks huge"]["status"] == 501 and calls["tasks nope"] == {"status": 500}
        assert calls["tasks unknown env"]["status"] == 404 and calls["task word"]["status"] == 422
    if scenario == "tasks_plain":
        assert calls["splits"] == {"status": 501, "detail": "list_splits is not supported for this environment"}


BAD = {
    "class": "ConcurrencyConfigurationError",  # a class not marked SUPPORTS_CONCURRENT_SESSIONS, 4 sessions
    "factory": "ConcurrencyConfigurationError",  # a plain factory (called once to learn its class)
    "partial": "ConcurrencyConfigurationError",  # functools.partial of such a class
    "both": "ValueError",  # max_concurrent_envs and concurrency_config together
    "mode": "ValueError",  # an unknown mode
    "ok_single": None,  # one session is always allowed
}


def _import(python: str) -> list[dict[str, Any]]:
    ours = python == sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if ours:
        env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [python, *([] if ours else ["-P"]), str(IMPORT_PROBE), str(ENVS / "concurrency_app.py"), *BAD],
        cwd=str(ROOT) if ours else "/", capture_output=True, text=True, timeout=180, env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_bad_configurations_fail_the_same_way() -> None:
    published = _import(peer010_python())
    ours = _import(sys.executable)
    assert ours == published
    assert [r.get("type") for r in ours] == list(BAD.values())
    assert ours[0]["environment_name"] == "SoloEnvironment" and ours[0]["max_concurrent_envs"] == 4


def test_our_own_defaults_are_kept() -> None:
    """Ours beyond 0.10: instances, no-argument class defaults (256 for concurrent envs), duck-typed envs."""
    from openenv.core.env_server import HTTPEnvServer

    sys.path.insert(0, str(ENVS))
    try:
        import concurrency_app as mod  # noqa: PLC0415 - the module lives beside the peers
    finally:
        sys.path.remove(str(ENVS))
    assert HTTPEnvServer(mod.TickEnvironment).sessions.max_sessions == 256
    assert HTTPEnvServer(mod.SoloEnvironment).sessions.max_sessions == 1
    assert HTTPEnvServer(mod.SoloEnvironment()).sessions.max_sessions == 1

    class Duck:  # not an Environment subclass: our own rules, no 0.10 guard
        def reset(self, **kw: Any) -> dict:
            return {}

        def step(self, action: Any) -> dict:
            return {}

    assert HTTPEnvServer(Duck, max_concurrent_envs=3).sessions.max_sessions == 3
    with pytest.raises(ValueError, match="instance serves one session"):
        HTTPEnvServer(mod.TickEnvironment(), max_concurrent_envs=2)
    assert Path(mod.__file__).parent == ENVS


def test_generic_env_client_of_either_side_on_either_server() -> None:
    """0.10's GenericEnvClient (peer python) and ours, each against our server and 0.10's: one transcript."""
    peer = peer010_python()
    script = PEERS010 / "clients" / "generic_client_drive.py"
    transcripts = {}
    for serving in (serving_ours, serving_published):
        with serving(ENVS / "rubric_env.py") as url:
            for python in (sys.executable, peer):
                done = run_with(python, script, url)
                assert done.returncode == 0, done.stderr[-3000:]
                transcripts[(serving.__name__, python)] = done.stdout
    first = next(iter(transcripts.values()))
    assert all(t == first for t in transcripts.values()), transcripts
    lines = [json.loads(line) for line in first.splitlines()]
    assert lines[-2]["done"] is True and lines[-1]["state"]["history"] == [3, 6, 7]


@pytest.mark.parametrize("module", ["rubric_env.py", "generic_env.py", "server_subclass.py"])
def test_validate_of_either_side_passes_on_our_server(module: str) -> None:
    """Our ``openenv validate URL`` and the published 0.10's ``openenv validate --url`` pass on each module served by ours."""
    published_cli = str(Path(peer010_python()).parent / "openenv")
    with serving_ours(ENVS / module) as url:
        ours = subprocess.run([sys.executable, "-m", "openenv.cli.main", "validate", url], capture_output=True,
                              text=True, timeout=180, cwd=str(ROOT))
        assert ours.returncode == 0, ours.stdout[-3000:] + ours.stderr[-2000:]
        theirs = subprocess.run([published_cli, "validate", "--url", url], capture_output=True, text=True,
                                timeout=180, cwd="/")
        assert theirs.returncode == 0, theirs.stdout[-3000:] + theirs.stderr[-2000:]
        assert "Verdict: PASS" in theirs.stdout
