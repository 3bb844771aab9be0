"""``openenv build`` with 0.10's flags: the current directory by default, 0.10's default tag,
``-f/--dockerfile``, ``-c/--context``, ``--build-arg`` and ``--no-cache`` (real Docker, local base image)."""

from __future__ import annotations

from pathlib import Path

import docker
from tests.authoring.conftest import openenv

DOCKERFILE = """ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
ARG GREETING=unset
COPY note.txt /note.txt
RUN echo "$GREETING" > /greeting
"""


def _read(tag: str, path: str) -> str:
    """The file's text, read after the container exited: ``containers.run`` follows the log stream while the
    container runs and, for a container that exits at once, that stream can come back empty."""
    client = docker.from_env()
    container = client.containers.create(tag, ["cat", path])
    try:
        container.start()
        status = container.wait(timeout=60)["StatusCode"]
        out = container.logs(stdout=True, stderr=True).decode().strip()
        assert status == 0, out
        return out
    finally:
        container.remove(force=True)
        client.close()


def _drop(tag: str) -> None:
    client = docker.from_env()
    try:
        client.images.remove(tag, force=True)
    except docker.errors.ImageNotFound:
        pass
    finally:
        client.close()


def test_own_dockerfile_in_cwd_with_build_args_and_010s_default_tag(tmp_path: Path, base_image: str):
    env_dir = tmp_path / "probe_env"
    (env_dir / "server").mkdir(parents=True)
    (env_dir / "server" / "Dockerfile").write_text(DOCKERFILE)
    (env_dir / "note.txt").write_text("from the context")
    try:
        done = openenv("build", "-f", "server/Dockerfile", "--build-arg", f"BASE_IMAGE={base_image}",
                       "--build-arg", "GREETING=hello", "--build-arg", "oops", "--no-cache", cwd=env_dir)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.strip() == "openenv-probe:latest"  # 0.10: openenv-<dir without _env>
        assert "Warning: Invalid build arg format: oops" in done.stderr
        assert _read("openenv-probe:latest", "/greeting") == "hello"
        assert _read("openenv-probe:latest", "/note.txt") == "from the context"
    finally:
        _drop("openenv-probe:latest")


def test_context_flag_picks_the_context_and_its_dockerfile(tmp_path: Path, base_image: str):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(DOCKERFILE)
    (ctx / "note.txt").write_text("context two")
    tag = "openenv-build-flags:test"
    try:
        done = openenv("build", str(tmp_path), "-c", str(ctx), "-t", tag, "--build-arg", f"BASE_IMAGE={base_image}",
                       "-q")
        assert done.returncode == 0, done.stderr[-3000:]
        assert _read(tag, "/note.txt") == "context two" and _read(tag, "/greeting") == "unset"
    finally:
        _drop(tag)


def test_a_missing_dockerfile_is_one_clean_line(tmp_path: Path, docker_engine: None):
    done = openenv("build", str(tmp_path), "-f", str(tmp_path / "nope"))
    assert done.returncode == 1 and "Dockerfile not found" in done.stderr and "Traceback" not in done.stderr
