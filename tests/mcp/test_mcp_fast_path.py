"""``POST /mcp`` is answered in front of the app's router (``McpFastPath``): the same answers,
with the author's own middleware still around it, a token still required, oversized and
chunked bodies handled, and every other route untouched."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.mcp.apps import tools_app as _app
from tests.server_utils import running_server

LIST = {"jsonrpc": "2.0", "method": "tools/list", "id": 1}


def test_the_fast_path_answers_and_the_authors_middleware_still_runs():
    from openenv.core.env_server.mcp_routes import McpFastPath

    app = _app(max_message_bytes=4096)
    assert any(m.cls is McpFastPath for m in app.user_middleware)
    seen: list[str] = []

    @app.middleware("http")  # added by the author after create_app: outside the fast path
    async def tag(request, call_next):
        seen.append(request.url.path)
        response = await call_next(request)
        response.headers["x-author"] = "yes"
        return response

    with running_server(app) as url, httpx.Client(base_url=url, trust_env=False) as http:
        listed = http.post("/mcp", json=LIST)
        assert listed.status_code == 200 and listed.headers["x-author"] == "yes"
        assert "echo_message" in {t["name"] for t in listed.json()["result"]["tools"]}
        big = http.post("/mcp", content=b'{"x": "' + b"a" * 5000 + b'"}', headers={"content-type": "application/json"})
        assert big.status_code == 200 and big.json()["error"]["code"] == -32600 and "4096" in big.json()["error"]["message"]
        assert http.get("/mcp").status_code == 405  # only POST is MCP; the router answers the rest
        assert http.get("/health").status_code == 200
        assert seen.count("/mcp") == 3


def test_a_chunked_body_in_pieces():
    with running_server(_app()) as url:
        host, port = url.removeprefix("http://").split(":")
        body = b'{"jsonrpc": "2.0", "method": "tools/call", "id": 3, "params": {"name": "echo_message", "arguments": {"message": "pieces"}}}'
        parts = [body[:10], body[10:50], body[50:]]
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
        head = (f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(head + chunked)
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
        assert reply.startswith(b"HTTP/1.1 200") and b'"data":"pieces"' in reply.replace(b" ", b"")


@pytest.mark.parametrize("given", [None, "wrong"])
def test_a_token_is_still_required(given):
    from openenv.core.env_server.auth import TokenAuthMiddleware

    with running_server(TokenAuthMiddleware(_app(), "s3cret")) as url:
        headers = {"Authorization": f"Bearer {given}"} if given else {}
        assert httpx.post(f"{url}/mcp", json=LIST, headers=headers).status_code == 401
        ok = httpx.post(f"{url}/mcp", json=LIST, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and "result" in ok.json()


def test_the_route_alone_answers_the_same():
    """An app that takes the MCP router without the fast path (``build_mcp_router``) is answered by
    the same ``McpPost``: the same results and errors, GET refused."""
    from fastapi import FastAPI

    from openenv.core.env_server.mcp_routes import build_mcp_router

    bare = FastAPI()
    bare.get("/health")(lambda: {"status": "healthy"})  # what running_server waits for
    bare.include_router(build_mcp_router(_app(max_message_bytes=4096).state.env_server))
    with running_server(bare) as url, httpx.Client(base_url=url, trust_env=False) as http:
        assert "echo_message" in {t["name"] for t in http.post("/mcp", json=LIST).json()["result"]["tools"]}
        assert http.post("/mcp", content=b"{").json()["error"]["code"] == -32700
        big = http.post("/mcp", content=b'{"x": "' + b"a" * 5000 + b'"}')
        assert big.json()["error"]["code"] == -32600
        assert http.get("/mcp").status_code == 405
