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
    with serve(zoo_app(max_concurrent_envs=1)) as url, httpx.Client(base_url=url, timeout=30) as http:
        first = Tab.open(http)
        busy = http.get("/web")
        assert busy.status_code == 503
        assert "All sessions are busy" in busy.text and "1 of 1 in use" in busy.text
        assert "Traceback" not in busy.text
        assert first.post("close", {}).status_code == 204
        second = Tab.open(http)
        assert second.sid != first.sid


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
    app = zoo_app(session_timeout_s=0.3)
    server = app.state.env_server
    with serve(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        tab = Tab.open(http)
        assert {"session_id": tab.sid, "kind": "web"}.items() <= server.list_sessions()[0].items()
        assert tab.reset().status_code == 200
        for _ in range(300):
            if all(s["session_id"] != tab.sid for s in server.list_sessions()):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the idle session was never reaped")
        resp = tab.step(**{"a.text": "late"})
        assert resp.status_code == 410 and "This session has ended" in resp.text
        assert "Traceback" not in resp.text


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
