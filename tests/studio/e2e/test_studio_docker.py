"""The same launch with the Docker provider: the cached echo image, played and stopped in the browser."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from openenv.core.containers.runtime import LocalDockerProvider
from openenv.core.containers.runtime.docker_engine import engine_client
from tests.studio.conftest import make_settings, running_studio
from tests.studio.e2e.test_studio_browser import _launch, _step

pytestmark = [pytest.mark.browser, pytest.mark.docker]
PROJECT = "e2e-docker"


@pytest.fixture(scope="module")
def docker_studio(tmp_path_factory: pytest.TempPathFactory, echo_image: str) -> Iterator[tuple[str, str]]:
    data = tmp_path_factory.mktemp("studio-docker")
    try:
        with running_studio(make_settings(data, project=PROJECT, docker=True)) as url:
            yield url, echo_image
    finally:
        LocalDockerProvider.cleanup(project=PROJECT)


def test_docker_launch_play_stop(page: Any, docker_studio: tuple[str, str], shot: Any) -> None:
    url, image = docker_studio
    page.goto(f"{url}/envs")
    assert page.locator(".docker-off").count() == 0
    rid = _launch(page, url, image, "docker")
    row = page.wait_for_selector(f'#running tr[data-runtime="{rid}"] .health .badge.done')
    assert row is not None
    assert "docker" in page.inner_text(f'#running tr[data-runtime="{rid}"]')
    assert len(LocalDockerProvider.list_runtimes(project=PROJECT)) == 1
    shot(page, "launched")
    page.click(f'#running tr[data-runtime="{rid}"] a:text("Play")')
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    _step(page, "from docker", 1)
    assert "from docker" in page.inner_text("#observation")
    page.goto(f"{url}/envs/r/{rid}")
    page.wait_for_selector("#logs pre")
    shot(page, "runtime")
    page.click("#stop-button")
    page.wait_for_url(f"{url}/envs")
    page.wait_for_selector(f'#running tr[data-runtime="{rid}"]', state="detached")
    assert LocalDockerProvider.list_runtimes(project=PROJECT) == []


def test_docker_options_reach_the_container(page: Any, docker_studio: tuple[str, str]) -> None:
    url, image = docker_studio
    page.goto(f"{url}/envs")
    page.click(f'tr[data-target="{image}"] .launch-open')
    page.select_option("#launch-provider", "docker")
    page.wait_for_selector("#launch-memory")
    page.fill("#launch-memory", "256m")
    page.fill("#launch-env", "FOO=bar baz; echo not-a-shell")
    page.click("#launch-button")
    status = page.wait_for_selector('.launch-status[data-status="running"]', timeout=120_000)
    rid = status.get_attribute("data-runtime")
    (info,) = LocalDockerProvider.list_runtimes(project=PROJECT)
    client = engine_client()
    try:
        attrs = client.containers.get(info.runtime_id).attrs
        assert attrs["HostConfig"]["Memory"] == 256 * 1024 * 1024
        assert "FOO=bar baz; echo not-a-shell" in attrs["Config"]["Env"]
    finally:
        client.close()
    page.goto(f"{url}/envs")
    page.click(f'#running tr[data-runtime="{rid}"] button.stop')
    page.wait_for_selector(f'#running tr[data-runtime="{rid}"]', state="detached")
