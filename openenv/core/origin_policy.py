"""Which requests a local server answers: the ``Host`` it was addressed to and the browser ``Origin``
it came from. One policy for every server this package starts (env servers, the studio, the capture
proxy, the REPL), so no web page a user visits can drive them (DNS rebinding, cross-site requests).

* ``Host`` (every request but ``/health``): accepted when it is a loopback name (``localhost``,
  ``*.localhost``), any IP literal (a rebound page always has a DNS name), the bound host, or a name
  in ``allow_hosts``. Another DNS name is accepted only over a connection that arrived on a
  non-loopback address (a server bound to 0.0.0.0 or a LAN address: Docker service names, a proxy's
  name; a token guards those) and only while no ``allow_hosts`` is configured; ``*`` accepts any.
* ``Origin`` (every WebSocket, every request but GET/HEAD/OPTIONS): a browser request (``Origin``, or
  ``Sec-Fetch-Site: cross-site``/``same-site``) must come from the server's own origin (the
  ``Host`` it addressed) or one in ``allow_origins``; ``null`` is refused. Non-browser clients send
  no ``Origin`` and are not affected.

Pages served over a loopback connection may be framed only by the server's own pages and
``allow_origins`` (CSP ``frame-ancestors``); a deployment reached over the network (a Space that
embeds its app) is left as it is.

Refused: HTTP 403 ``{"detail", "code", "message"}`` (``HOST_NOT_ALLOWED`` / ``ORIGIN_NOT_ALLOWED``),
or a WebSocket accepted and closed with code 4403 and the reason.
``OPENENV_ALLOW_HOSTS`` / ``OPENENV_ALLOW_ORIGINS`` (comma-separated) configure env servers.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "ALLOW_HOSTS_ENV",
    "ALLOW_ORIGINS_ENV",
    "OriginGuard",
    "OriginPolicy",
    "WS_CLOSE_FORBIDDEN",
    "host_name",
    "normalise_origin",
]

ALLOW_HOSTS_ENV = "OPENENV_ALLOW_HOSTS"
ALLOW_ORIGINS_ENV = "OPENENV_ALLOW_ORIGINS"
WS_CLOSE_FORBIDDEN = 4403
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_OPEN_PATHS = frozenset({"/health"})
_CHECKED = "openenv.origin_checked"
_WANTED = frozenset({b"host", b"origin", b"sec-fetch-site"})
_HOST_CACHE = 256
_WS_REASONS = {"HOST_NOT_ALLOWED": "HOST_NOT_ALLOWED: this server does not answer that Host (see --allow-host)",
               "ORIGIN_NOT_ALLOWED": "ORIGIN_NOT_ALLOWED: pages from another origin may not use this server"}


def host_name(host: str) -> str:
    """The name part of a ``Host`` value (lower case, no port, no brackets, no trailing dot)."""
    host = host.strip()
    if not host:
        return ""
    try:
        name = urlsplit(f"//{host}").hostname or ""
    except ValueError:  # e.g. an unbalanced bracket
        return "\0invalid"
    return name.rstrip(".").lower()


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _is_loopback_ip(name: str) -> bool:
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def normalise_origin(origin: str) -> str:
    """``scheme://host[:port]`` in lower case, default ports dropped (``ValueError`` when not one)."""
    origin = origin.strip().rstrip("/")
    if origin == "*":
        return origin
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
        raise ValueError(f"not an origin (scheme://host[:port]): {origin!r}")
    port = parts.port
    default = {"http": 80, "https": 443}[parts.scheme]
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def _split(raw: str | None) -> list[str]:
    return [p.strip() for p in (raw or "").split(",") if p.strip()]


@dataclass(frozen=True)
class OriginPolicy:
    """Hosts and browser origins a server answers (see the module docstring)."""

    allow_hosts: frozenset[str] = field(default_factory=frozenset)
    allow_origins: frozenset[str] = field(default_factory=frozenset)
    bind_host: str | None = None

    @classmethod
    def build(cls, allow_hosts: Iterable[str] = (), allow_origins: Iterable[str] = (),
              bind_host: str | None = None) -> OriginPolicy:
        """A policy from user-given names and origins (``ValueError`` on a malformed origin)."""
        hosts = frozenset("*" if h.strip() == "*" else host_name(h) for h in allow_hosts if h.strip())
        origins = frozenset(normalise_origin(o) for o in allow_origins if o.strip())
        return cls(hosts, origins, host_name(bind_host) if bind_host else None)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, allow_hosts: Iterable[str] = (),
                 allow_origins: Iterable[str] = (), bind_host: str | None = None) -> OriginPolicy:
        """``OPENENV_ALLOW_HOSTS`` / ``OPENENV_ALLOW_ORIGINS`` plus the given values."""
        env = os.environ if environ is None else environ
        return cls.build([*_split(env.get(ALLOW_HOSTS_ENV)), *allow_hosts],
                         [*_split(env.get(ALLOW_ORIGINS_ENV)), *allow_origins], bind_host)

    def host_ok(self, host: str, local_address: str | None = None) -> bool:
        """Whether a request addressed to ``host`` (its ``Host`` header) is answered."""
        name = host_name(host)
        if not name:
            return not host.strip()  # no Host at all: an HTTP/1.0 client, not a browser
        if "*" in self.allow_hosts or name in self.allow_hosts or name == self.bind_host:
            return True
        if name == "localhost" or name.endswith(".localhost") or _is_ip(name):
            return True
        if self.allow_hosts:
            return False
        return local_address is not None and not _is_loopback_ip(local_address) and local_address != "localhost"

    def origin_ok(self, headers: Mapping[str, str]) -> bool:
        """Whether a browser-made request (by its ``Origin``/``Sec-Fetch-Site``) may act here."""
        origin = headers.get("origin")
        fetch_site = headers.get("sec-fetch-site", "")
        if origin is None:
            return fetch_site not in ("cross-site", "same-site")
        if "*" in self.allow_origins:
            return True
        try:
            given = normalise_origin(origin)
        except ValueError:
            return False  # "null" (sandboxed frames, file:) or garbage
        if given in self.allow_origins:
            return True
        own = headers.get("host", "")
        # host and port only: behind a TLS proxy the page is https:// while this server sees http
        return bool(own) and _authority(given.split("://", 1)[1]) == _authority(own)


def _authority(netloc: str) -> tuple[str, int | None] | None:
    try:
        parts = urlsplit(f"//{netloc.strip()}")
        port = parts.port
    except ValueError:
        return None
    return host_name(netloc), None if port in (80, 443) else port


def _body(status_code: str, message: str) -> bytes:
    return json.dumps({"detail": message, "code": status_code, "message": message}).encode()


class OriginGuard:
    """ASGI middleware applying an :class:`OriginPolicy` (once, however many times it is stacked)."""

    def __init__(self, app: Any, policy: OriginPolicy | None = None) -> None:
        self.app = app
        self.policy = policy if policy is not None else OriginPolicy.from_env()
        self._hosts: dict[tuple[str, str | None], bool] = {}  # (Host, local address) -> answered
        others = " ".join(sorted(o for o in self.policy.allow_origins if o != "*"))
        ancestors = "*" if "*" in self.policy.allow_origins else f"'self' {others}".strip()
        self._frame_header = (b"content-security-policy", f"frame-ancestors {ancestors}".encode())

    def refusal(self, scope: dict[str, Any]) -> tuple[str, str] | None:
        """``(code, message)`` when this request is refused, else ``None``."""
        headers: dict[str, str] = {}
        for key, value in scope.get("headers") or ():
            name = key.lower()
            if name in _WANTED:
                headers[name.decode("latin-1")] = value.decode("latin-1")
        host = headers.get("host", "")
        local = (scope.get("server") or (None, None))[0]
        ok = self._hosts.get((host, local))
        if ok is None:
            ok = self.policy.host_ok(host, local)
            if len(self._hosts) >= _HOST_CACHE:
                self._hosts.clear()
            self._hosts[(host, local)] = ok
        if not ok:
            return ("HOST_NOT_ALLOWED",
                    f"This server does not answer requests addressed to {host_name(host) or host!r}: use 127.0.0.1 "
                    "or localhost, or start it with --allow-host NAME (OPENENV_ALLOW_HOSTS).")
        if scope["type"] == "websocket" or scope.get("method", "GET") not in _SAFE_METHODS:
            if not self.policy.origin_ok(headers):
                origin = headers.get("origin") or headers.get("sec-fetch-site", "")
                return ("ORIGIN_NOT_ALLOWED",
                        f"A web page from {origin!r} may not use this server (Origin check): only its own pages "
                        "may; start it with --allow-origin ORIGIN (OPENENV_ALLOW_ORIGINS) to allow another.")
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get(_CHECKED) or scope.get("path") in _OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope)
        if refused is None:
            scope[_CHECKED] = True
            local = (scope.get("server") or (None, None))[0]
            if scope["type"] == "websocket" or local is None or not _is_loopback_ip(local):
                await self.app(scope, receive, send)
                return
            frame = self._frame_header

            async def framed(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []), frame]}
                await send(message)

            await self.app(scope, receive, framed)
            return
        code, message = refused
        if scope["type"] == "websocket":
            first = await receive()
            if first.get("type") == "websocket.connect":
                await send({"type": "websocket.accept"})
                await send({"type": "websocket.close", "code": WS_CLOSE_FORBIDDEN, "reason": _WS_REASONS[code]})
            return
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"), (b"vary", b"Origin")]})
        await send({"type": "http.response.body", "body": _body(code, message)})
