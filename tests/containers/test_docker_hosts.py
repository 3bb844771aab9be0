"""A container published on loopback answers loopback names and IPs only: a page whose DNS name
is rebound to 127.0.0.1 cannot reach it, though it binds 0.0.0.0 inside (docs/security.md)."""

from __future__ import annotations

import httpx

from openenv.core import GenericEnvClient
from openenv.core.containers.runtime.docker import LocalDockerProvider


def test_a_published_container_refuses_rebound_names(docker_provider: LocalDockerProvider, echo_image: str) -> None:
    url = docker_provider.start_container(echo_image, env_name="echo")
    docker_provider.wait_for_ready(url, timeout_s=60)
    port = url.rsplit(":", 1)[1]
    refused = httpx.get(f"{url}/schema", headers={"Host": f"rebound.example:{port}"}, timeout=10)
    assert refused.status_code == 403 and refused.json()["code"] == "HOST_NOT_ALLOWED"
    assert httpx.get(f"{url}/schema", headers={"Host": f"localhost:{port}"}, timeout=10).status_code == 200
    foreign = httpx.post(f"{url}/reset", json={}, headers={"Origin": "http://127.0.0.1:9"}, timeout=10)
    assert foreign.status_code == 403 and foreign.json()["code"] == "ORIGIN_NOT_ALLOWED"
    with GenericEnvClient(base_url=url).sync() as env:  # the provider's own client: unaffected
        env.reset()
        assert env.step({"message": "hi"}).observation["echoed_message"] == "hi"
    docker_provider.stop_container()
