"""The Host/Origin policy (``openenv.core.origin_policy``) on env servers: DNS-rebound names and
other origins' pages refused on HTTP, ``/ws`` and ``/mcp``; clients without ``Origin`` unaffected."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from openenv.core.env_server.http_server import create_app
from openenv.core.origin_policy import OriginGuard, OriginPolicy, normalise_origin
from openenv.envs.echo.environment import EchoEnvironment
from openenv.envs.echo.models import EchoAction, EchoObservation
from tests.server_utils import free_port, running_server, stop_process, wait_healthy

FOREIGN = "http://127.0.0.1:9"  # a page served from another loopback port


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    with running_server(create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo")) as url:
        yield url


def _port(url: str) -> str:
    return url.rsplit(":", 1)[1]


@pytest.mark.parametrize(("host", "local", "ok"), [
    ("127.0.0.1:8000", "127.0.0.1", True),
    ("localhost:8000", "127.0.0.1", True),
    ("app.localhost", "127.0.0.1", True),
    ("[::1]:8000", "::1", True),
    ("10.1.2.3:8000", "127.0.0.1", True),  # an IP literal is never a rebound name
    ("", "127.0.0.1", True),  # no Host: HTTP/1.0, not a browser
    ("127.0.0.1.evil.example:8000", "127.0.0.1", False),  # the prefix the studio once matched
    ("localhost.evil.example", "127.0.0.1", False),
    ("evil.example", "127.0.0.1", False),
    ("evil.example", "172.17.0.2", True),  # reached over a network interface (0.0.0.0 bind)
    ("[bad", "127.0.0.1", False),
])
def test_host_rule(host: str, local: str, ok: bool) -> None:
    assert OriginPolicy().host_ok(host, local) is ok


def test_configured_hosts_are_the_list() -> None:
    policy = OriginPolicy.build(["notebook.lan"])
    assert policy.host_ok("notebook.lan:8000", "127.0.0.1") and policy.host_ok("NoteBook.LAN.", "127.0.0.1")
    assert not policy.host_ok("evil.example", "172.17.0.2")  # configured: other names refused everywhere
    assert policy.host_ok("localhost", "127.0.0.1") and policy.host_ok("172.17.0.2:80", "172.17.0.2")
    assert OriginPolicy.build(["*"]).host_ok("anything.example", "127.0.0.1")
    assert OriginPolicy.build(bind_host="box.lan").host_ok("box.lan:1", "127.0.0.1")


@pytest.mark.parametrize(("headers", "ok"), [
    ({"host": "127.0.0.1:8000"}, True),  # our clients, 0.10's, 0.3's, TRL's: no Origin
    ({"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:8000"}, True),
    ({"host": "x.hf.space", "origin": "https://x.hf.space"}, True),  # TLS ends at a proxy
    ({"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:8001"}, False),
    ({"host": "127.0.0.1:8000", "origin": "http://localhost:8000"}, False),
    ({"host": "127.0.0.1:8000", "origin": "null"}, False),
    ({"host": "127.0.0.1:8000", "sec-fetch-site": "cross-site"}, False),
    ({"host": "127.0.0.1:8000", "sec-fetch-site": "same-site"}, False),
    ({"host": "127.0.0.1:8000", "sec-fetch-site": "same-origin"}, True),
])
def test_origin_rule(headers: dict[str, str], ok: bool) -> None:
    assert OriginPolicy().origin_ok(headers) is ok


def test_allowed_origins() -> None:
    policy = OriginPolicy.build(allow_origins=["http://LOCALHOST:8888/"])
    assert policy.origin_ok({"host": "127.0.0.1:1", "origin": "http://localhost:8888"})
    assert not policy.origin_ok({"host": "127.0.0.1:1", "origin": "http://localhost:8889"})
    assert normalise_origin("https://a.b:443") == "https://a.b"
    with pytest.raises(ValueError, match="not an origin"):
        OriginPolicy.build(allow_origins=["localhost:8888"])


def test_rebound_host_is_refused_with_a_json_403(echo: str) -> None:
    port = _port(echo)
    for name in ("127.0.0.1.evil.example", "evil.example", "localhost.evil.example"):
        resp = httpx.get(f"{echo}/schema", headers={"Host": f"{name}:{port}"}, timeout=10)
        assert resp.status_code == 403, name
        body = resp.json()
        assert body["code"] == "HOST_NOT_ALLOWED" and "--allow-host" in body["message"]
    assert httpx.get(f"{echo}/health", headers={"Host": "evil.example"}, timeout=10).status_code == 200
    assert httpx.get(f"{echo}/schema", headers={"Host": f"localhost:{port}"}, timeout=10).status_code == 200


def test_text_plain_posts_from_other_pages_are_refused(echo: str) -> None:
    body = json.dumps({"action": {"message": "hi"}})
    for path in ("/reset", "/step", "/mcp"):
        for headers in ({"Origin": FOREIGN}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
            resp = httpx.post(f"{echo}{path}", content=body, headers={"Content-Type": "text/plain", **headers}, timeout=10)
            assert resp.status_code == 403 and resp.json()["code"] == "ORIGIN_NOT_ALLOWED", (path, headers)
    own = httpx.post(f"{echo}/step", json={"action": {"message": "hi"}}, headers={"Origin": echo}, timeout=10)
    assert own.status_code == 200 and own.json()["observation"]["echoed_message"] == "hi"
    plain = httpx.post(f"{echo}/step", json={"action": {"message": "hi"}}, timeout=10)  # a script: no Origin
    assert plain.status_code == 200


@pytest.mark.parametrize("path", ["/ws", "/mcp"])
def test_websockets_from_other_pages_are_closed_4403(echo: str, path: str) -> None:
    url = echo.replace("http://", "ws://") + path
    with connect(url, origin=FOREIGN, compression=None) as sock:  # type: ignore[arg-type]
        with pytest.raises(ConnectionClosed) as closed:
            sock.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
    assert closed.value.rcvd.reason.startswith("ORIGIN_NOT_ALLOWED")
    port = _port(echo)
    with connect(url, additional_headers={"Host": f"evil.example:{port}"}, compression=None) as sock:
        with pytest.raises(ConnectionClosed) as closed:
            sock.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.reason.startswith("HOST_NOT_ALLOWED")


def test_websocket_without_origin_and_from_own_page_works(echo: str) -> None:
    url = echo.replace("http://", "ws://") + "/ws"
    for origin in (None, echo):
        with connect(url, origin=origin, compression=None) as sock:  # type: ignore[arg-type]
            sock.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(sock.recv(timeout=10))["type"] == "observation"


def test_allowed_origin_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_ALLOW_ORIGINS", "http://127.0.0.1:9")
    monkeypatch.setenv("OPENENV_ALLOW_HOSTS", "notebook.lan")
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo")
    with running_server(app) as url:
        ok = httpx.post(f"{url}/reset", json={}, headers={"Origin": FOREIGN}, timeout=10)
        assert ok.status_code == 200
        assert httpx.get(f"{url}/schema", headers={"Host": "notebook.lan"}, timeout=10).status_code == 200
        assert httpx.post(f"{url}/reset", json={}, headers={"Origin": "http://127.0.0.1:10"}, timeout=10).status_code == 403


def test_guard_runs_once_however_stacked(echo: str) -> None:
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo")
    outer = OriginGuard(app, OriginPolicy.build(allow_origins=[FOREIGN]))  # what `openenv serve` adds
    with running_server(outer) as url:
        assert httpx.post(f"{url}/reset", json={}, headers={"Origin": FOREIGN}, timeout=10).status_code == 200


def test_serve_flags_allow_a_host_and_an_origin() -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "openenv.cli.main", "serve", "echo", "--port", str(port),
                             "--allow-host", "notebook.lan", "--allow-origin", FOREIGN],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, timeout_s=60)
        assert httpx.post(f"{url}/reset", json={}, headers={"Origin": FOREIGN}, timeout=10).status_code == 200
        assert httpx.get(f"{url}/schema", headers={"Host": "notebook.lan"}, timeout=10).status_code == 200
        assert httpx.get(f"{url}/schema", headers={"Host": "other.lan"}, timeout=10).status_code == 403
    finally:
        stop_process(proc)
    bad = subprocess.run([sys.executable, "-m", "openenv.cli.main", "serve", "echo", "--allow-origin", "localhost:1"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not an origin" in bad.stderr and "Traceback" not in bad.stderr


def test_pages_over_loopback_may_be_framed_by_their_own_origin_only(echo: str) -> None:
    page = httpx.get(f"{echo}/web", timeout=10)
    assert page.status_code == 200 and page.headers["content-security-policy"] == "frame-ancestors 'self'"
    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo")
    with running_server(OriginGuard(app, OriginPolicy.build(allow_origins=["http://localhost:8888"]))) as url:
        csp = httpx.get(f"{url}/web", timeout=10).headers["content-security-policy"]
        assert csp == "frame-ancestors 'self' http://localhost:8888"  # a notebook allowed to embed it
