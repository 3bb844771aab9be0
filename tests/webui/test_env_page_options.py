"""/web under a session cap, and switched off."""

from __future__ import annotations

import httpx
import pytest

from tests.webui.page import Tab
from tests.webui.servers import echo_app, serve, zoo_app


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
