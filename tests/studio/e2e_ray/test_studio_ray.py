"""The same launch on the Ray provider, in the browser: the two-node cluster at a routable address
(each env guarded by the token minted for it, which the studio carries), node shown, played, stopped."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from openenv.core.containers.runtime import RayProvider
from tests.studio.conftest import make_settings, running_studio
from tests.studio.e2e.test_studio_browser import _launch, _step

pytestmark = [pytest.mark.browser, pytest.mark.ray, pytest.mark.usefixtures("ray_driver")]
PROJECT = "e2e-ray"


@pytest.fixture(scope="module")
def ray_studio(tmp_path_factory: pytest.TempPathFactory, ray_cluster: Any) -> Iterator[str]:
    data = tmp_path_factory.mktemp("studio-ray")
    try:
        with running_studio(make_settings(data, project=PROJECT, ray_address=ray_cluster.address)) as url:
            yield url
    finally:
        RayProvider.cleanup(project=PROJECT, address=ray_cluster.address)


def test_ray_launch_shows_the_node_plays_and_stops(page: Any, ray_studio: str, ray_cluster: Any, shot: Any) -> None:
    url = ray_studio
    page.goto(f"{url}/envs")
    assert page.locator(".ray-off").count() == 0
    assert "2 nodes" in page.inner_text(".ray-on")
    rid = _launch(page, url, "echo", "ray")
    page.wait_for_selector(f'#running tr[data-runtime="{rid}"] .health .badge.done')
    placement = page.inner_text(f'#running tr[data-runtime="{rid}"] .placement')
    (info,) = RayProvider.list_runtimes(project=PROJECT, address=ray_cluster.address)
    assert placement == f"node {info.extra['node_id'][:8]} ({ray_cluster.host})"
    assert page.request.post(f"{info.base_url}/reset", data={}).status == 401  # the browser itself cannot
    shot(page, "launched")
    page.click(f'#running tr[data-runtime="{rid}"] a:text("Play")')
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    _step(page, "from a ray actor", 1)
    assert "from a ray actor" in page.inner_text("#observation")
    page.goto(f"{url}/envs/r/{rid}")
    page.wait_for_selector("#logs pre")
    assert "serving echo" in page.inner_text("#logs pre")
    shot(page, "runtime")
    page.click("#stop-button")
    page.wait_for_url(f"{url}/envs")
    page.wait_for_selector(f'#running tr[data-runtime="{rid}"]', state="detached")
    assert RayProvider.list_runtimes(project=PROJECT, address=ray_cluster.address) == []
