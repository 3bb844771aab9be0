"""A real studio (uvicorn in a thread) on a temporary data dir, and a client that reads its pages."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from openenv.core.containers.runtime import LocalProcessProvider
from tests.containers.conftest import base_image, echo_image  # noqa: F401 - the providers' cached image fixtures
from tests.server_utils import running_server
from tests.studio.html import Node, fragment, page
from webui.studio import create_studio_app, load_settings
from webui.studio.settings import StudioSettings

HX = {"HX-Request": "true"}
LAUNCH_WAIT_S = 90.0


def make_settings(data_dir: Path, **overrides: object) -> StudioSettings:
    values = {"data_dir": data_dir, "docker": False, **overrides}
    return load_settings(values, environ={})


@contextlib.contextmanager
def running_studio(settings: StudioSettings, *, cleanup: bool = True) -> Iterator[str]:
    """Serve a studio; afterwards stop every env process it left (they are detached)."""
    try:
        with running_server(create_studio_app(settings)) as url:
            yield url
    finally:
        if cleanup:
            LocalProcessProvider.cleanup(project=settings.project, data_dir=settings.runtimes_dir)


def recorded_tool_names(data_dir: Path, episode_id: str) -> list[str | None]:
    """The ``tool_name`` of each recorded step (after the reset) of an episode in the studio's store."""
    from openenv.recording import EpisodeStore

    with EpisodeStore(data_dir / "episodes.db") as store:
        return [s.action.get("tool_name") for s in store.load_steps(episode_id, start=1)]


@dataclass
class StudioClient:
    """Talks to a studio like its pages do: CSRF header on writes, HX-Request for fragments."""

    http: httpx.Client
    csrf: str = ""

    def page(self, path: str, status: int = 200, params: dict[str, str] | None = None) -> Node:
        resp = self.http.get(path, params=params)
        assert resp.status_code == status, resp.text[:2000]
        self.csrf = re.search(r'name="csrf_token" value="([^"]+)"', resp.text).group(1) if (
            'name="csrf_token"' in resp.text) else self.csrf
        return page(resp.text)

    def fragment(self, path: str, status: int = 200, params: dict[str, str] | None = None) -> Node:
        resp = self.http.get(path, params=params, headers=HX)
        assert resp.status_code == status, resp.text[:2000]
        return fragment(resp.text)

    def post(self, path: str, data: dict | None = None, *, htmx: bool = True, **headers: str) -> httpx.Response:
        if not self.csrf:
            self.page("/envs")
        h = {"X-CSRF-Token": self.csrf, **(HX if htmx else {}), **headers}
        return self.http.post(path, data=data or {}, headers=h)

    def open_play(self, rid: str, query: str = "") -> httpx.Response:
        """The Play page ``/play/<rid><query>`` as a browser gets it: when it has no open session, the
        page's start form is submitted (``POST /play/<rid>``, what its script does) and followed."""
        resp = self.http.get(f"/play/{rid}{query}")
        if 'id="play-start-form"' not in resp.text:
            return resp
        fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', resp.text))
        self.csrf = fields.get("csrf_token", self.csrf)
        return self.http.post(f"/play/{rid}", data=fields, follow_redirects=True)

    def entry_key(self, target: str) -> str:
        row = self.page("/envs").find("tr", data_target=target)
        assert row is not None, f"{target} not in the catalogue"
        return row.attrs["data-entry"]

    def launch(self, target: str, **options: str) -> str:
        """Launch ``target`` with the process provider, poll its status fragment; return its id."""
        resp = self.post(f"/envs/launch/{self.entry_key(target)}", {"provider": "process", **options})
        assert resp.status_code == 200, resp.text
        rid = fragment(resp.text).find("div", data_status="starting").attrs["data-runtime"]
        self.wait_launch(rid)
        return rid

    def wait_launch(self, rid: str) -> Node:
        deadline = time.monotonic() + LAUNCH_WAIT_S
        while time.monotonic() < deadline:
            node = self.fragment(f"/envs/r/{rid}/status")
            status = node.find("div").attrs["data-status"]
            if status != "starting":
                return node
            time.sleep(0.2)
        raise AssertionError(f"{rid} still starting after {LAUNCH_WAIT_S}s")


@pytest.fixture(scope="session")
def studio_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("studio")


@pytest.fixture(scope="session")
def studio_url(studio_data: Path) -> Iterator[str]:
    with running_studio(make_settings(studio_data, page_size=5)) as url:
        yield url


@pytest.fixture()
def sc(studio_url: str) -> Iterator[StudioClient]:
    with httpx.Client(base_url=studio_url, timeout=60.0, trust_env=False) as http:
        client = StudioClient(http)
        client.page("/envs")
        yield client


@pytest.fixture(scope="session")
def echo_rid(studio_url: str) -> str:
    """An echo env launched through the studio (process provider), shared by the session."""
    with httpx.Client(base_url=studio_url, timeout=60.0, trust_env=False) as http:
        client = StudioClient(http)
        rid = client.launch("echo")
        status = client.wait_launch(rid).find("div").attrs["data-status"]
        assert status == "running"
        return rid
