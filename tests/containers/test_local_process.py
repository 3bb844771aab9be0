"""LocalProcessProvider against real subprocesses: start, readiness, faults, cleanup."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from openenv.core.containers.runtime import (
    LocalProcessProvider,
    PortInUseError,
    ProviderError,
    RuntimeNotFoundError,
    RuntimeStatus,
    StartupError,
    StartupTimeoutError,
)
from openenv.core.containers.runtime.records import process_start_ticks

from .conftest import REPO

OK_APP = "tests.containers.apps:ok"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_gone(pgid: int, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return True
        time.sleep(0.1)
    return False


def test_start_serves_on_loopback_and_stop_ends_the_group(process_provider: LocalProcessProvider) -> None:
    url = process_provider.start_container(OK_APP, env_vars={"OPENENV_TEST_VALUE": "42"}, cwd=REPO)
    assert url.startswith("http://127.0.0.1:")
    process_provider.wait_for_ready(url, timeout_s=30)
    assert process_provider.status() is RuntimeStatus.RUNNING
    assert httpx.get(f"{url}/env", params={"name": "OPENENV_TEST_VALUE"}).json() == {"value": "42"}
    assert "Uvicorn running" in process_provider.logs(20)
    pgid = process_provider._record["pid"]
    process_provider.stop_container()
    assert not _group_alive(pgid)
    assert process_provider.status() is RuntimeStatus.STOPPED
    process_provider.stop_container()  # stopping twice is a no-op


def test_bundled_env_name_is_served(process_provider: LocalProcessProvider) -> None:
    url = process_provider.start_container("echo")
    process_provider.wait_for_ready(url, timeout_s=30)
    reply = httpx.post(f"{url}/step", json={"action": {"message": "hi"}}).json()
    assert reply["observation"]["echoed_message"] == "hi"


def test_env_directory_is_served(process_provider: LocalProcessProvider, tmp_path: Path) -> None:
    env_dir = tmp_path / "dir_env"
    env_dir.mkdir()
    (env_dir / "app.py").write_text(
        "from openenv.core.env_server import create_app\n"
        "from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation\n"
        "app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name='dir-env')\n"
    )
    url = process_provider.start_container(str(env_dir))
    process_provider.wait_for_ready(url, timeout_s=30)
    assert httpx.get(f"{url}/metadata").json()["name"] == "echo"  # the env's own get_metadata, as on 0.10


def test_requested_port_already_taken(process_provider: LocalProcessProvider) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(PortInUseError) as err:
            process_provider.start_container(OK_APP, port=port, cwd=REPO)
    assert err.value.details["port"] == port
    assert process_provider.runtime_id is None


def test_requested_port_is_used(process_provider: LocalProcessProvider) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = process_provider.start_container(OK_APP, port=port, cwd=REPO)
    assert url == f"http://127.0.0.1:{port}"
    process_provider.wait_for_ready(url, timeout_s=30)


def test_process_that_exits_at_once_reports_its_log(process_provider: LocalProcessProvider) -> None:
    process_provider.start_container("tests.containers.crash_app:app", cwd=REPO)
    with pytest.raises(StartupError) as err:
        process_provider.wait_for_ready(timeout_s=30)
    assert "exited with code" in err.value.message
    assert "deliberate test failure" in err.value.details["log_tail"]
    assert process_provider.status() is RuntimeStatus.STOPPED


def test_process_that_never_becomes_healthy_is_stopped(process_provider: LocalProcessProvider) -> None:
    process_provider.start_container("tests.containers.apps:unhealthy", cwd=REPO)
    pgid = process_provider._record["pid"]
    with pytest.raises(StartupTimeoutError) as err:
        process_provider.wait_for_ready(timeout_s=3)
    assert isinstance(err.value, TimeoutError)
    assert "answering 503" in err.value.details["log_tail"]
    assert not _group_alive(pgid)
    assert (
        process_provider.list_runtimes(project=process_provider.project, data_dir=process_provider.store.root)
        == []
    )


def test_unknown_target_fails_with_the_serve_message(process_provider: LocalProcessProvider) -> None:
    process_provider.start_container("no-such-env")
    with pytest.raises(StartupError) as err:
        process_provider.wait_for_ready(timeout_s=30)
    assert "no-such-env" in err.value.details["log_tail"]


def test_unsupported_options_and_double_start_are_refused(process_provider: LocalProcessProvider) -> None:
    with pytest.raises(ProviderError, match="memory"):
        process_provider.start_container(OK_APP, memory="1g")
    process_provider.start_container(OK_APP, cwd=REPO)
    with pytest.raises(ProviderError, match="already started"):
        process_provider.start_container(OK_APP, cwd=REPO)


def test_found_again_after_restart(project: str, data_dir: Path) -> None:
    first = LocalProcessProvider(project=project, data_dir=data_dir)
    url = first.start_container(OK_APP, cwd=REPO, detach=True)
    first.wait_for_ready(url, timeout_s=30)
    (info,) = LocalProcessProvider.list_runtimes(project=project, data_dir=data_dir)
    assert (info.runtime_id, info.base_url, info.status) == (first.runtime_id, url, RuntimeStatus.RUNNING)
    assert LocalProcessProvider.list_runtimes(project="someone-else", data_dir=data_dir) == []
    again = LocalProcessProvider.attach(info.runtime_id, data_dir=data_dir)
    assert again.status() is RuntimeStatus.RUNNING and "Uvicorn running" in again.logs()
    again.stop_container()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/health", timeout=2)
    with pytest.raises(RuntimeNotFoundError):
        LocalProcessProvider.attach(info.runtime_id, data_dir=data_dir)
    first.stop_container()  # the original handle only reaps its (already ended) child
    assert first.status() is RuntimeStatus.STOPPED


_PARENT = """
import sys, time
from openenv.core.containers.runtime import LocalProcessProvider
p = LocalProcessProvider(project=sys.argv[1], data_dir=sys.argv[2])
url = p.start_container("tests.containers.apps:ok", cwd=sys.argv[3])
p.wait_for_ready(url, timeout_s=30)
print(p._record["pid"], flush=True)
time.sleep(120)
"""


def test_parent_killed_leaves_nothing_behind(project: str, data_dir: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, project, str(data_dir), str(REPO)], stdout=subprocess.PIPE, cwd=REPO
    )
    try:
        ready, _, _ = select.select([parent.stdout], [], [], 60)
        assert ready, "the parent did not start its env in time"
        pgid = int(parent.stdout.readline())
        assert process_start_ticks(pgid) is not None
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        parent.stdout.close()
    assert _wait_gone(pgid), "the env process group outlived its parent"
    (info,) = LocalProcessProvider.list_runtimes(project=project, data_dir=data_dir)
    assert info.status is RuntimeStatus.EXITED
    assert LocalProcessProvider.cleanup(project=project, data_dir=data_dir) == 1
    assert LocalProcessProvider.list_runtimes(project=project, data_dir=data_dir) == []


def test_a_detached_env_outlives_its_handle_without_warnings(project: str, data_dir: Path) -> None:
    """Dropping the provider of a detached env leaves no warning (filterwarnings=error would turn
    one collected at gc into a failure report) and no zombie; the env is found and stopped again."""
    import gc
    import warnings

    first = LocalProcessProvider(project=project, data_dir=data_dir)
    url = first.start_container(OK_APP, cwd=REPO, detach=True)
    first.wait_for_ready(url, timeout_s=30)
    runtime_id = first.runtime_id
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del first
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    again = LocalProcessProvider.attach(runtime_id, data_dir=data_dir)
    assert again.status() is RuntimeStatus.RUNNING
    assert httpx.get(url + "/health", timeout=5).status_code == 200
    again.stop_container()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/health", timeout=2)


def test_a_detached_env_that_exits_is_reaped(project: str, data_dir: Path) -> None:
    provider = LocalProcessProvider(project=project, data_dir=data_dir)
    url = provider.start_container(OK_APP, cwd=REPO, detach=True)
    provider.wait_for_ready(url, timeout_s=30)
    pid = provider._record["pid"]
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while provider.status() is not RuntimeStatus.EXITED and time.monotonic() < deadline:
        time.sleep(0.05)
    assert provider.status() is RuntimeStatus.EXITED
    assert not Path(f"/proc/{pid}").exists()  # reaped: no zombie left behind
    provider.stop_container()
