"""Live sessions routes: the runtime page's panel, closing one, and clear answers for bad input."""

from __future__ import annotations

import asyncio

import httpx

from tests.studio.conftest import StudioClient
from tests.studio.html import fragment
from tests.webui.servers import echo_app, serve
from webui.studio.live_sessions import close_session, read_sessions


def test_panel_lists_and_closes_sessions(sc: StudioClient) -> None:
    with serve(echo_app(max_concurrent_envs=3)) as env_url:
        resp = sc.post("/envs/attach", {"url": env_url})
        assert resp.status_code == 200
        rid = next(r for r in sc.fragment("/envs/running").find_all("tr")
                   if r.attrs.get("data-status") == "attached" and env_url in r.text()).attrs["data-runtime"]
        try:
            panel = sc.page(f"/envs/r/{rid}").by_id("live-sessions")
            assert "No open sessions" in panel.text() and panel.by_id("session-count").text() == "0 / 3"
            sid = httpx.post(env_url + "/reset", json={}, headers={"X-OpenEnv-Session": "new"},
                             trust_env=False).headers["X-OpenEnv-Session"]
            panel = sc.fragment(f"/envs/r/{rid}/sessions")
            row = panel.find("tr", data_session=sid)
            assert row is not None and row.attrs["data-kind"] == "http" and "client gone?" not in row.text()
            resp = sc.post(f"/envs/r/{rid}/sessions/{sid}/close")
            assert resp.status_code == 200
            assert fragment(resp.text).find("tr", data_session=sid) is None
            resp = sc.post(f"/envs/r/{rid}/sessions/nope/close")  # already gone: nothing to free
            assert resp.status_code == 200 and "No open sessions" in resp.text
            assert sc.post("/envs/r/nope/sessions/x/close").status_code == 404
        finally:
            sc.post(f"/envs/r/{rid}/stop")


def test_unreachable_server_is_a_readable_message() -> None:
    view = asyncio.run(read_sessions("http://127.0.0.1:9"))
    assert view.sessions == [] and "could not reach" in view.error
    assert "could not reach" in asyncio.run(close_session("http://127.0.0.1:9", "abc"))


def test_a_server_without_sessions_listing_says_so() -> None:
    from fastapi import FastAPI

    bare = FastAPI()
    bare.get("/health")(lambda: {"status": "healthy"})
    with serve(bare) as url:
        view = asyncio.run(read_sessions(url))
    assert "does not list its sessions" in view.error
