"""One error contract for fragments on an env's /web page: every POST route, sent oversized,
out-of-range, empty and garbage values, answers below 500; a 4xx is a message fragment."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI

from tests._require import require
from tests.studio.test_fragment_errors import VALUES, assert_message, post_routes
from tests.webui.page import Tab
from tests.webui.servers import echo_app, fresh_toolbox_app, serve

# a /web POST route -> the fields its form posts (``{i}``: the first tool or view action)
FORMS = {"web_step": ("step", ("mode", "a.message", "raw_json")), "web_reset": ("reset", ("r.seed", "r.episode_id")),
         "web_editor": ("editor", ("mode", "raw_json")), "web_mcp_call": ("mcp/call/0", ("t0.value", "t0.message")),
         "web_view_act": ("view/act/0", ("value",))}


def _toolbox() -> FastAPI:
    require(importlib.util.find_spec("fastmcp") is not None, "fastmcp (the mcp extra)")
    return fresh_toolbox_app()


@pytest.fixture(scope="module", params=["echo", "toolbox"])
def web_app(request: pytest.FixtureRequest) -> Iterator[tuple[FastAPI, str]]:
    app = echo_app() if request.param == "echo" else _toolbox()
    with serve(app) as url:
        yield app, url


def test_every_web_post_route_is_covered(web_app: tuple[FastAPI, str]) -> None:
    web = {n for n in post_routes(web_app[0].routes) if n.startswith("web_")}
    assert web - {"web_close"} <= set(FORMS) and "web_step" in web


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_bad_values_get_a_message_never_a_5xx(web_app: tuple[FastAPI, str], kind: str) -> None:
    app, url = web_app
    with httpx.Client(base_url=url, timeout=30.0) as http:
        _bad_values(app, Tab.open(http), VALUES[kind], kind)


def _bad_values(app: FastAPI, tab: Tab, value: str, kind: str) -> None:
    assert tab.reset().status_code == 200
    routes = post_routes(app.routes)
    for name, (what, fields) in FORMS.items():
        if name not in routes:
            continue
        resp = tab.post(what, {f: [value] for f in fields})
        assert_message(resp, htmx=True, what=f"/web {what} {kind}")
        if kind == "oversized" and what in ("step", "reset", "editor"):
            assert resp.status_code == 413 and resp.headers["X-Fragment-Error"] == "1", resp.text[:300]
    assert tab.reset().status_code == 200  # the tab goes on
    assert tab.post("close", {"junk": [value]}).status_code == 204


def test_two_megabyte_message_is_a_413_message_not_a_500() -> None:
    with serve(echo_app()) as url, httpx.Client(base_url=url, timeout=30.0) as http:
        _two_megabytes(Tab.open(http))


def _two_megabytes(tab: Tab) -> None:
    tab.reset()
    resp = tab.step(**{"a.message": "x" * 2_000_000})
    assert resp.status_code == 413 and "larger than the 1 MB limit" in resp.text
    assert "Traceback" not in resp.text and "<html" not in resp.text
    page = tab.post("step", {"a.message": ["x" * 2_000_000]}, htmx=False)
    assert page.status_code == 413 and "<html" in page.text and "larger than the 1 MB limit" in page.text
    assert tab.step(**{"a.message": "small"}).status_code == 200
