"""Wire interop with the published openenv-core, in both directions."""

from __future__ import annotations

import json

import pytest

from openenv.core import ActionValidationError, CapacityError, GenericEnvClient
from openenv.core.env_server import create_app
from openenv.envs.echo import EchoAction, EchoEnv, EchoEnvironment, EchoObservation
from tests.interop.conftest import run_peer
from tests.server_utils import running_server

pytestmark = pytest.mark.interop


def test_published_client_drives_our_echo_server(peer_python, echo_url):
    proc = run_peer(peer_python, "published_client_check.py", echo_url)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["reset"]["echoed_message"] == "Echo environment ready!"
    assert report["step"] == {
        "observation": {"echoed_message": "interop", "message_length": 7, "metadata": {"step": 1}},
        "reward": pytest.approx(0.7),
        "done": False,
    }
    assert report["state"]["episode_id"] == "pub-1" and report["state"]["step_count"] == 1
    assert "VALIDATION_ERROR" in report["invalid"] and report["invalid"].startswith("Server error:")
    assert report["after_invalid"]["echoed_message"] == "after error"


def test_published_client_sees_our_capacity_error(peer_python):
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, max_concurrent_envs=2, web=False)
    with running_server(app) as url:
        proc = run_peer(peer_python, "published_capacity_check.py", url, "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["opened"] == 2
    assert "CAPACITY_REACHED" in report["error"]


def test_our_client_drives_the_published_server(published_server):
    with EchoEnv(base_url=published_server).sync() as env:
        first = env.reset(episode_id="ours-1")
        assert first.observation.echoed_message == "Echo environment ready!"
        result = env.step(EchoAction(message="hello"))
        assert result.observation.echoed_message == "hello" and result.reward == pytest.approx(0.5)
        state = env.state()
        assert state.step_count == 1
    with GenericEnvClient(base_url=published_server).sync() as client:
        client.reset()
        with pytest.raises(ActionValidationError):
            client.step({"nope": 1})
        assert client.step({"message": "still"}).observation["echoed_message"] == "still"


def test_our_client_sees_the_published_capacity_error(published_server):
    a = GenericEnvClient(base_url=published_server).sync()
    b = GenericEnvClient(base_url=published_server).sync()
    c = GenericEnvClient(base_url=published_server).sync()
    try:
        a.reset()
        b.reset()
        with pytest.raises(CapacityError):
            c.reset()
    finally:
        for client in (a, b, c):
            client.close()


def test_validate_passes_the_published_server(roomy_published_server: str) -> None:
    """``openenv validate URL`` holds a foreign server to the published protocol: our stricter
    answers (validated WebSocket reset kwargs, 400 INVALID_JSON) are checked
    only on servers that announce themselves with ``x-openenv-features``."""
    from openenv.core.testing import run_wire_checks

    report = run_wire_checks(roomy_published_server, timeout_s=10)
    assert report.ok, report.format_text()
    statuses = {r.name: r.status for r in report.results}
    assert statuses["ws.reset_step_state"] == statuses["ws.error_shapes"] == "pass"
    assert statuses["ws.step_before_reset"] == "pass"  # it steps the fresh env, as we do now


def test_recording_a_published_server_stores_its_steps(roomy_published_server: str, tmp_path) -> None:
    """record() journals the wire texts; the published server's replies must give the same rows
    as the typed client's parsed results would."""
    from openenv.recording import EpisodeStore, record

    with EpisodeStore(tmp_path / "e.db") as store:
        with record(EchoEnv(base_url=roomy_published_server).sync(), store=store) as env:
            env.reset()
            for msg in ("a", "héllo"):
                env.step(EchoAction(message=msg))
            eid = env.episode_id
        steps = store.load_steps(eid)
    assert [s.action for s in steps] == [None, {"message": "a"}, {"message": "héllo"}]
    assert steps[2].observation["echoed_message"] == "héllo" and steps[2].reward == pytest.approx(0.5)
