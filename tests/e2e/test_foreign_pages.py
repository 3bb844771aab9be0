"""A hostile web page (served from another loopback port) in Chromium tries to drive what runs on
the machine: WebSockets to ``/ws`` and ``/mcp`` of echo and the REPL (both from ``openenv serve``),
``text/plain`` POSTs (no preflight) to ``/step`` and to the capture proxy's ``/sessions``, and
framing the studio. Every attempt is refused; the env's own pages still work."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from openenv.capture import CaptureServer
from tests.capture.fake_engine import make_engine
from tests.server_utils import free_port, running_server, stop_process, wait_healthy
from tests.studio.conftest import make_settings, running_studio
from tests.webui.servers import serve

WS_ATTEMPT = """async ([url, frames]) => await new Promise((resolve) => {
  const got = []; let opened = false;
  const ws = new WebSocket(url);
  ws.onopen = () => { opened = true; frames.forEach((f) => ws.send(f)); };
  ws.onmessage = (e) => got.push(String(e.data));
  ws.onclose = (e) => resolve({opened, code: e.code, reason: e.reason, got});
  setTimeout(() => resolve({opened, code: -1, reason: "timeout", got}), 10000);
})"""

SIMPLE_POST = """async ([url, body]) => {
  try { await fetch(url, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body}); }
  catch (e) { return String(e); }
  return "sent";
}"""


def _attacker_app() -> FastAPI:
    app = FastAPI()

    @app.get("/")
    async def index() -> HTMLResponse:
        return HTMLResponse("<!doctype html><title>a page on the web</title><p>nothing to see</p>")

    return app


def _cli_server(*args: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "openenv.cli.main", "serve", *args, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, timeout_s=60)
        yield url
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def echo_cli() -> Iterator[str]:
    yield from _cli_server("echo")


@pytest.fixture(scope="module")
def repl_cli() -> Iterator[str]:
    yield from _cli_server("repl")


@pytest.fixture(scope="module")
def attacker() -> Iterator[str]:
    with serve(_attacker_app()) as url:
        yield url


@pytest.fixture()
def hostile(context: Any, attacker: str) -> Iterator[Any]:
    """A tab showing the attacker's page (console errors are expected here: refused sockets, frames)."""
    tab = context.new_page()
    tab.goto(attacker)
    yield tab
    tab.close()


@pytest.mark.parametrize(("server", "path", "frames"), [
    ("echo", "/ws", ['{"type": "reset", "data": {}}', '{"type": "step", "data": {"message": "pwned"}}']),
    ("echo", "/mcp", ['{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}']),
    ("repl", "/ws", ['{"type": "reset", "data": {}}', '{"type": "step", "data": {"code": "print(6 * 7)"}}']),
    ("repl", "/mcp", ['{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}']),
])
def test_websockets_from_a_foreign_page_are_closed(request: pytest.FixtureRequest, hostile: Any, server: str,
                                                    path: str, frames: list[str]) -> None:
    url = request.getfixturevalue(f"{server}_cli").replace("http://", "ws://") + path
    result = hostile.evaluate(WS_ATTEMPT, [url, frames])
    assert result["code"] == 4403 and result["reason"].startswith("ORIGIN_NOT_ALLOWED"), result
    assert result["got"] == []  # not one frame answered


def test_text_plain_post_to_step_is_refused(hostile: Any, echo_cli: str, repl_cli: str) -> None:
    for url, body in ((f"{echo_cli}/step", '{"action": {"message": "pwned"}}'),
                      (f"{repl_cli}/step", '{"action": {"code": "print(6 * 7)"}}'),
                      (f"{repl_cli}/reset", "{}")):
        with hostile.expect_response(url) as info:
            assert hostile.evaluate(SIMPLE_POST, [url, body]) == "sent"
        assert info.value.status == 403, url  # the page cannot read it; the browser did send it


def test_capture_sessions_are_no_relay(hostile: Any) -> None:
    with running_server(make_engine()) as engine, running_server(make_engine()) as victim, \
            CaptureServer(llm_url=f"{engine}/v1", port=0) as proxy:
        url = f"{proxy.base_url}/sessions"
        with hostile.expect_response(url) as info:
            hostile.evaluate(SIMPLE_POST, [url, f'{{"llm_url": "{victim}/v1", "model": "m"}}'])
        assert info.value.status == 403
        assert proxy.registry.list_ids() == [] and httpx.get(f"{victim}/_requests", timeout=10).json() == []


def _framed(hostile: Any, src: str) -> list[Any]:
    """The frames of the hostile page after it framed ``src``."""
    hostile.evaluate("""(src) => { const f = document.createElement("iframe"); f.src = src;
                        document.body.appendChild(f); }""", src)
    hostile.wait_for_timeout(1500)
    return [f for f in hostile.frames if f is not hostile.main_frame]


def test_the_studio_cannot_be_framed(hostile: Any, tmp_path: Path) -> None:
    with running_studio(make_settings(tmp_path)) as studio:
        framed = _framed(hostile, f"{studio}/envs")
        assert framed and all(not f.url.startswith(studio) for f in framed), [f.url for f in framed]
        assert all(f.evaluate("document.querySelector('form') === null") for f in framed)


def test_the_repl_web_page_cannot_be_framed(hostile: Any, repl_cli: str) -> None:
    framed = _framed(hostile, f"{repl_cli}/web")
    assert framed and all(not f.url.startswith(repl_cli) for f in framed), [f.url for f in framed]


def test_own_pages_still_work(context: Any, echo_cli: str) -> None:
    """The env's own /web page (same origin: its posts carry its own Origin) resets and steps."""
    tab = context.new_page()
    tab.goto(f"{echo_cli}/web")
    tab.click("#reset-button")
    tab.wait_for_selector("#observation .badge.step:text('reset')")
    tab.fill('[id="f-a.message"]', "hello from /web")
    tab.click("#step-button")
    tab.wait_for_selector("#observation .badge.step:text('step 1')")
    assert "hello from /web" in tab.inner_text("#observation")
    tab.close()
