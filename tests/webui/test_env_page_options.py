"""/web under a session cap, and switched off."""

from __future__ import annotations

import time

import httpx
import pytest
from starlette.requests import Request

from tests.webui.page import Tab
from tests.webui.servers import echo_app, serve, zoo_app
from webui.env_page import EnvPage


def test_capacity_is_shared_with_other_sessions_and_freed_on_close() -> None:
    app = zoo_app(max_concurrent_envs=1)
    server = app.state.env_server
    with serve(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        first, second = Tab.open(http), Tab.open(http)
        assert server.list_sessions() == []  # viewing the page holds no session
        assert first.reset().status_code == 200
        assert [s["kind"] for s in server.list_sessions()] == ["web"]
        busy = second.reset()
        assert busy.status_code == 503
        assert "All sessions are busy" in busy.text and "1 of 1 in use" in busy.text
        assert "Traceback" not in busy.text
        assert first.post("close", {}).status_code == 204
        assert server.list_sessions() == []
        assert second.reset().status_code == 200
        second.post("close", {})


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_web_can_be_switched_off(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "environment":
        monkeypatch.setenv("OPENENV_WEB", "0")
        app = echo_app()
    else:
        app = echo_app(web=False)
    with serve(app) as url:
        assert httpx.get(f"{url}/web", timeout=30).status_code == 404
        assert httpx.get(f"{url}/web/static/webui.css", timeout=30).status_code == 404
        assert httpx.get(f"{url}/schema", timeout=30).status_code == 200


def test_idle_sessions_are_reaped_and_the_page_says_so() -> None:
    app = zoo_app(session_timeout_s=1.0)
    server = app.state.env_server
    with serve(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        tab = Tab.open(http)
        assert tab.reset().status_code == 200
        (session,) = server.list_sessions()
        assert session["kind"] == "web"
        for _ in range(300):
            if not server.list_sessions():
                break
            time.sleep(0.05)
        else:
            pytest.fail("the idle session was never reaped")
        resp = tab.step(**{"a.text": "late"})
        assert resp.status_code == 410 and "session has ended" in resp.text and "Press Reset" in resp.text
        assert "Traceback" not in resp.text
        again = tab.reset()
        assert again.status_code == 200 and "ready seed=None" in again.text
        assert [s["session_id"] != session["session_id"] for s in server.list_sessions()] == [True]


def test_unexpected_failures_show_a_notice_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(self: EnvPage, request: Request, sid: str) -> None:
        raise ValueError("secret internal detail")

    monkeypatch.setattr(EnvPage, "state", broken)
    with serve(zoo_app()) as url, httpx.Client(base_url=url, timeout=30) as http:
        tab = Tab.open(http)
        resp = tab.get("state")
        assert resp.status_code == 500 and "Something went wrong" in resp.text
        assert "secret internal detail" not in resp.text and "Traceback" not in resp.text
        plain = http.get(f"/web/s/{tab.sid}/state")
        assert plain.status_code == 500 and "<html" in plain.text and "secret" not in plain.text


def test_env_failures_and_timeouts_are_notices() -> None:
    with serve(zoo_app(step_timeout_s=0.3)) as url, httpx.Client(base_url=url, timeout=30) as http:
        tab = Tab.open(http)
        assert tab.reset().status_code == 200
        boom = tab.step(**{"a.text": "boom"})
        assert boom.status_code == 500 and "Step failed" in boom.text and "EXECUTION_ERROR" in boom.text
        assert "kaboom from the environment" in boom.text and "Traceback" not in boom.text
        slow = tab.step(**{"a.text": "slow"})
        assert slow.status_code == 504 and "TIMEOUT" in slow.text
        assert 'id="history"' in slow.text
