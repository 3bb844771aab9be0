"""The reader process (``webui.studio.offload``): the heavy read-only pages it serves are the
pages the studio itself serves; everything else, and those while it is down, stay in the studio;
the token is checked before a request is handed over; the process goes with the studio."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.gen_store import generate
from tests.server_utils import running_server
from tests.studio.conftest import make_settings
from webui.studio import create_studio_app
from webui.studio import offload as offload_mod

RUN = "7" * 32
LONG = "f" * 32
READ_PAGES = [f"/runs/trend?run={RUN}", f"/runs/dashboard?run={RUN}", "/runs/dashboard?run=label:nosuch",
              "/episodes/stats", "/episodes/stats?run=" + RUN, f"/episodes/{LONG}/tokens", "/episodes/export?format=jsonl",
              f"/episodes/{LONG}/export", "/episodes/nosuchid/tokens"]


def _until(check: Any, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _same_text(html: str) -> str:
    return re.sub(r"\d+[smhd]( \d+[smhd])? ago", "ago", html)  # relative times move between two requests


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("studio-offload")
    generate(data / "episodes.db", episodes=120, steps_per_episode=3, train_steps=4, rollouts=8, group_size=4,
             long_call_tokens=200)
    return data


@pytest.fixture(scope="module")
def served(data: Path) -> Iterator[tuple[str, Any]]:
    app = create_studio_app(make_settings(data, page_size=10), reader_process=True)
    with running_server(app) as url:
        reader = app.state.reader
        _until(lambda: reader.ready)
        yield url, reader


def test_read_pages_from_the_reader_match_the_studios_own(served: tuple[str, Any]) -> None:
    url, reader = served
    with httpx.Client(base_url=url, trust_env=False, timeout=60) as http:
        for path in READ_PAGES:
            before = reader.forwarded
            remote = http.get(path)
            assert reader.forwarded == before + 1, path
            reader.ready = False  # served here while the reader is "down"
            try:
                local = http.get(path)
            finally:
                reader.ready = True
            assert reader.forwarded == before + 1, path
            assert (remote.status_code, remote.headers["content-type"]) == (local.status_code,
                                                                            local.headers["content-type"]), path
            assert _same_text(remote.text) == _same_text(local.text), path
            assert remote.headers.get("x-frame-options") and "server-timing" in remote.headers


def test_health_writes_and_live_pages_stay_in_the_studio(served: tuple[str, Any]) -> None:
    url, reader = served
    with httpx.Client(base_url=url, trust_env=False, timeout=60) as http:
        before = reader.forwarded
        assert http.get("/health").status_code == 200
        assert http.get("/envs").status_code == 200
        assert http.get("/episodes").status_code == 200  # a list page: a few ms, not worth the hop
        assert http.get(f"/episodes/{LONG}").status_code == 200  # the episode page offers running envs
        assert http.post("/episodes/delete", data={"ids": LONG}).status_code == 403  # no CSRF token: refused here
        assert reader.forwarded == before


def test_a_dead_reader_is_served_around_and_restarted(served: tuple[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    url, reader = served
    monkeypatch.setattr(offload_mod, "RESTART_S", 0.0)
    reader._proc.kill()
    reader._proc.wait(10)
    with httpx.Client(base_url=url, trust_env=False, timeout=60) as http:
        assert http.get("/episodes/stats").status_code == 200  # answered here; the reader respawned
        _until(lambda: reader.ready)
        before = reader.forwarded
        assert http.get("/episodes/stats").status_code == 200
        assert reader.forwarded == before + 1


def test_the_token_is_checked_before_a_page_is_handed_over(tmp_path: Path) -> None:
    app = create_studio_app(make_settings(tmp_path, token="tok-123456"), reader_process=True)
    with running_server(app) as url:
        reader = app.state.reader
        _until(lambda: reader.ready)
        with httpx.Client(base_url=url, trust_env=False, timeout=60) as http:
            assert http.get("/episodes/stats").status_code == 401
            assert reader.forwarded == 0
            assert http.get("/episodes/stats", params={"token": "tok-123456"}).status_code == 200
            assert reader.forwarded == 1
        proc, folder = reader._proc, os.path.dirname(reader.socket)
    assert proc.poll() is not None  # stopped with the studio
    assert not os.path.exists(folder)
