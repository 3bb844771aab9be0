"""Bearer-token gate for servers exposed beyond loopback.

Accepts ``Authorization: Bearer <token>``, ``X-OpenEnv-Token: <token>`` or ``?token=<token>``
(the last for browsers and WebSocket clients that cannot set headers). ``/health`` stays open.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any
from urllib.parse import parse_qs

from openenv.core.env_server.serialization import dumps

__all__ = ["TokenAuthMiddleware", "is_loopback"]

_OPEN_PATHS = frozenset({"/health"})


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost`` (binding anything else needs a token)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TokenAuthMiddleware:
    """ASGI middleware rejecting requests without the right token (HTTP 401 / WS close 4401)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._token = token.encode()

    def _authorised(self, scope: dict[str, Any]) -> bool:
        headers = dict(scope.get("headers") or [])
        candidates = []
        auth = headers.get(b"authorization", b"")
        if auth.lower().startswith(b"bearer "):
            candidates.append(auth[7:].strip())
        if b"x-openenv-token" in headers:
            candidates.append(headers[b"x-openenv-token"].strip())
        query = parse_qs((scope.get("query_string") or b"").decode("latin-1"))
        candidates.extend(v.encode() for v in query.get("token", []))
        return any(hmac.compare_digest(c, self._token) for c in candidates)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in _OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self._authorised(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4401, "reason": "token required"})
            return
        body = dumps({"detail": "A valid token is required", "code": "UNAUTHORIZED", "message": "A valid token is required"})
        await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})
