"""Env images: the Dockerfile's promises, content-hash caching, user env directories, the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from openenv.cli.main import cli
from openenv.core.containers.images import ImageBuildError, build_env_image, dockerfile_path
from openenv.core.containers.runtime import LocalDockerProvider
from openenv.core.containers.runtime.docker_engine import engine_client
from openenv.core.generic_client import GenericEnvClient

pytestmark = pytest.mark.docker

USER_APP = """
from openenv.core.env_server import create_app
from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation

app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="mine")
"""


def test_dockerfile_defaults_to_a_public_python_and_a_non_root_user() -> None:
    text = dockerfile_path().read_text()
    assert "ARG BASE_IMAGE=python:3.11-slim" in text
    assert "\nUSER openenv\n" in text
    assert "--host 0.0.0.0" in text and "OPENENV_WEB=1" in text


def test_rebuild_with_same_content_is_skipped(echo_image: str, base_image: str) -> None:
    # build once more first: the work tree may have changed since the session fixture built it
    build_env_image("echo", tag=echo_image, base_image=base_image, offline=True)
    client = engine_client()
    try:
        before = client.images.get(echo_image).id
        output: list[str] = []
        assert (
            build_env_image("echo", tag=echo_image, base_image=base_image, offline=True, on_log=output.append)
            == echo_image
        )
        assert output == []  # no build ran
        assert client.images.get(echo_image).id == before
    finally:
        client.close()


def test_cli_build_reports_the_tag(echo_image: str, base_image: str) -> None:
    args = ["build", "echo", "--offline", "--base-image", base_image, "--tag", echo_image, "--quiet"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == echo_image


def test_unknown_env_is_refused() -> None:
    with pytest.raises(ImageBuildError, match="neither a bundled env nor an env directory"):
        build_env_image("no-such-env")
    result = CliRunner().invoke(cli, ["build", "no-such-env"])
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_user_env_directory(tmp_path: Path, echo_image: str, base_image: str, project: str) -> None:
    env_dir = tmp_path / "my_env"
    env_dir.mkdir()
    (env_dir / "app.py").write_text(USER_APP)
    tag = build_env_image(str(env_dir), tag="openenv-my-env:test", base_image=base_image, offline=True)
    provider = LocalDockerProvider(project=project)
    try:
        url = provider.start_container(tag)
        provider.wait_for_ready(url, timeout_s=60)
        with GenericEnvClient(base_url=url).sync() as env:
            env.reset()
            assert env.step({"message": "mine"}).observation["echoed_message"] == "mine"
    finally:
        provider.stop_container()
