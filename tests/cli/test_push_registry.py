"""``openenv push --registry`` to a real registry (Debian's docker-registry on loopback,
scripts/system/80-registry.sh): the scaffold's image is built from the local base image, pushed,
listed by the registry's API, and pulled back after the local copy is removed."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

import docker
from tests._require import require
from tests.cli.conftest import run_cli
from tests.containers.conftest import base_image, docker_engine  # noqa: F401  (fixtures)

REGISTRY = f"127.0.0.1:{os.environ.get('OPENENV_REGISTRY_PORT', '55000')}"


def _registry_up() -> bool:
    try:
        return httpx.get(f"http://{REGISTRY}/v2/", timeout=3).status_code == 200
    except httpx.HTTPError:
        return False


def test_push_registry_builds_pushes_and_the_registry_serves_it(tmp_path: Path, base_image: str):  # noqa: F811
    require(_registry_up(), f"a local registry at {REGISTRY} (scripts/system/80-registry.sh)")
    assert run_cli("init", "registry_probe_env", "-o", str(tmp_path)).returncode == 0
    env_dir = tmp_path / "registry_probe_env"
    done = run_cli("push", "--registry", REGISTRY, "--offline", "--base-image", base_image, cwd=env_dir, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    tag = f"{REGISTRY}/registry_probe_env:latest"
    assert f"Image: {tag}" in done.stdout
    tags = httpx.get(f"http://{REGISTRY}/v2/registry_probe_env/tags/list", timeout=10).json()
    assert tags["tags"] == ["latest"]
    client = docker.from_env()
    try:
        local = client.images.get(tag)
        assert local.labels.get("io.openenv.build-hash")  # built by our build path
        client.images.remove(tag, force=True)
        pulled = client.images.pull(f"{REGISTRY}/registry_probe_env", tag="latest")
        assert pulled.id == local.id
    finally:
        try:
            client.images.remove(tag, force=True)
        except docker.errors.ImageNotFound:
            pass
        client.close()


def test_push_to_a_registry_nobody_serves_is_one_clean_line(tmp_path: Path, base_image: str):  # noqa: F811
    assert run_cli("init", "registry_gone_env", "-o", str(tmp_path)).returncode == 0
    done = run_cli("push", "--registry", "127.0.0.1:9", "--offline", "--base-image", base_image,
                   cwd=tmp_path / "registry_gone_env", timeout=900)
    assert done.returncode == 1 and "Docker push of 127.0.0.1:9/registry_gone_env:latest failed" in done.stderr
    assert "Traceback" not in done.stderr
    client = docker.from_env()
    try:
        client.images.remove("127.0.0.1:9/registry_gone_env:latest", force=True)
    finally:
        client.close()
