"""Access token, CSRF and Origin checks, and a ``Server-Timing`` header.

* ``TokenGate`` (ASGI): with a token configured, every request needs it (``Authorization: Bearer``,
  the ``openenv_studio_token`` cookie, or ``?token=`` once, which sets the cookie).
* ``check_csrf`` (dependency on every state-changing route): the per-process secret must come back
  in the ``X-CSRF-Token`` header (htmx sends it via ``hx-headers``), a ``csrf_token`` form field or
  query parameter; a browser ``Origin`` (or ``Sec-Fetch-Site: cross-site``) from elsewhere is refused.

``Host`` and ``Origin`` are checked for every request by ``openenv.core.origin_policy.OriginGuard``
(the studio's ``allow_hosts`` / ``allow_origins`` settings).
"""

from __future__ import annotations

import hmac
import secrets
import time
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from fastapi import HTTPException
from starlette.requests import Request

from openenv.core.origin_policy import OriginPolicy

__all__ = ["COOKIE", "CSRF_HEADER", "NoFraming", "TimingMiddleware", "TokenGate", "check_csrf", "new_secret"]

COOKIE = "openenv_studio_token"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def _same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


class TokenGate:
    """Reject requests that do not carry the studio's access token (401 page)."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token

    def _found(self, scope: dict[str, Any]) -> tuple[bool, bool]:
        """(authorised, came from the query string)."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and _same(auth[7:].strip(), self.token or ""):
            return True, False
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # a malformed cookie header is just "no cookie"
            cookie = SimpleCookie()
        if COOKIE in cookie and _same(cookie[COOKIE].value, self.token or ""):
            return True, False
        query = parse_qs((scope.get("query_string") or b"").decode("latin-1"))
        if any(_same(v, self.token or "") for v in query.get("token", [])):
            return True, True
        return False, False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.token is None or scope.get("path") == "/health":
            await self.app(scope, receive, send)
            return
        ok, from_query = self._found(scope)
        if not ok:
            body = (b"<!doctype html><title>Token required</title><h1>Token required</h1>"
                    b"<p>Open the studio with <code>?token=...</code> (printed when it started).</p>")
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"text/html; charset=utf-8")]})
            await send({"type": "http.response.body", "body": body})
            return
        if not from_query:
            await self.app(scope, receive, send)
            return
        cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/".encode()

        async def send_with_cookie(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


class NoFraming:
    """No studio page may be framed by another page (clickjacking Stop, Delete, Launch):
    ``X-Frame-Options: DENY`` and CSP ``frame-ancestors 'none'`` on every answer."""

    _HEADERS = ((b"x-frame-options", b"DENY"), (b"content-security-policy", b"frame-ancestors 'none'"))

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def framed(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *self._HEADERS]}
            await send(message)

        await self.app(scope, receive, framed)


class TimingMiddleware:
    """Adds ``Server-Timing: app;dur=<ms>`` (time to the first response byte) to every answer."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()

        async def timed(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                ms = (time.perf_counter() - start) * 1000
                header = (b"server-timing", f"app;dur={ms:.2f}".encode())
                message = {**message, "headers": [*message.get("headers", []), header]}
            await send(message)

        await self.app(scope, receive, timed)


def _origin_ok(request: Request) -> bool:
    policy = getattr(request.app.state, "origin_policy", None) or OriginPolicy()
    return policy.origin_ok({k.lower(): v for k, v in request.headers.items()})


async def check_csrf(request: Request) -> None:
    """Refuse a state-changing request without the CSRF secret or from another origin (403)."""
    if request.method in _SAFE:
        return
    if not _origin_ok(request):
        raise HTTPException(403, "This request came from another site and was refused (Origin check).")
    secret: str = request.app.state.csrf_secret
    sent = request.headers.get(CSRF_HEADER) or request.query_params.get(CSRF_FIELD)
    if sent is None and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        value = (await request.form()).get(CSRF_FIELD)
        sent = value if isinstance(value, str) else None
    if not _same(sent, secret):
        raise HTTPException(403, "Missing or wrong CSRF token: reload the page and try again.")
