"""``openenv serve`` really serves, binds loopback by default and refuses open binds without a token."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from openenv.core.errors import AuthenticationError
from openenv.envs.echo import EchoAction, EchoEnv
from tests.server_utils import free_port, wait_healthy

OPENENV = [sys.executable, "-m", "openenv.cli.main"]


def _serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*OPENENV, "serve", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def test_serve_echo_on_a_port():
    port = free_port()
    proc = _serve("echo", "--port", str(port))
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url)
        with EchoEnv(base_url=url).sync() as env:
            env.reset()
            assert env.step(EchoAction(message="cli")).observation.echoed_message == "cli"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_serve_refuses_a_public_bind_without_token():
    proc = subprocess.run([*OPENENV, "serve", "echo", "--host", "0.0.0.0"], capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "without a token" in proc.stderr


def test_token_is_required_when_set():
    port = free_port()
    proc = subprocess.Popen(
        [*OPENENV, "serve", "echo", "--port", str(port)],
        env={**os.environ, "OPENENV_TOKEN": "s3cret"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url)
        assert httpx.get(url + "/schema").status_code == 401
        assert httpx.get(url + "/schema", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        for headers, said in ((None, "none was sent"), ({"Authorization": "Bearer wrong"}, "was refused")):
            with pytest.raises(AuthenticationError, match=f"requires a bearer token and .*{said}"):
                with EchoEnv(base_url=url, headers=headers, reconnect_attempts=50).sync() as env:
                    env.reset()  # refused at once, not retried
        with EchoEnv(base_url=url, headers={"Authorization": "Bearer s3cret"}).sync() as env:
            env.reset()
            assert env.step(EchoAction(message="let in")).observation.echoed_message == "let in"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_unknown_target_is_a_clear_error():
    proc = subprocess.run([*OPENENV, "serve", "no-such-env"], capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "Unknown environment" in proc.stderr and "Traceback" not in proc.stderr


def test_two_env_directories_with_top_level_app_py_load_separately(tmp_path):
    from openenv.cli.targets import load_app

    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "app.py").write_text(
            "from openenv.core.env_server import create_app\n"
            "from openenv.envs.echo import EchoEnvironment\n"
            f"app = create_app(EchoEnvironment, env_name={name!r})\n"
        )
    first, second = load_app(str(tmp_path / "first")), load_app(str(tmp_path / "second"))
    assert (first.title, second.title) == ("first", "second")
