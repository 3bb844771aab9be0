"""Talk to a running server for the wire checks: raw WebSocket frames and HTTP calls, and
the reply shapes the protocol pins (``observation``/``state``/``error`` frames)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import ClientConnection, connect

from openenv.core.env_client import ws_url
from openenv.core.errors import ConnectionLostError
from openenv.core.testing_report import CheckFailed
from openenv.core.testing_schema import schema_errors

__all__ = ["Wire", "WsSession", "expect_error", "expect_observation", "expect_state"]


class WsSession:
    """One WebSocket session; every reply must be a JSON object."""

    def __init__(self, conn: ClientConnection, timeout_s: float) -> None:
        self.conn = conn
        self.timeout_s = timeout_s

    @property
    def studio_server(self) -> bool:
        """Whether the server is an OpenEnv Studio one (it sends ``x-openenv-features``): its
        stricter answers (validated reset kwargs) are then checked too."""
        response = self.conn.response
        return response is not None and "x-openenv-features" in response.headers

    def send(self, frame: Any) -> None:
        self.conn.send(frame if isinstance(frame, str) else json.dumps(frame))

    def recv(self) -> dict[str, Any]:
        try:
            text = self.conn.recv(timeout=self.timeout_s)
        except TimeoutError:
            raise CheckFailed(f"no reply within {self.timeout_s:g} s") from None
        except ConnectionClosed as exc:
            raise CheckFailed(f"the server closed the socket ({exc.rcvd.code if exc.rcvd else 'no close frame'})") from None
        try:
            reply = json.loads(text)
        except (TypeError, ValueError):
            raise CheckFailed(f"reply is not JSON: {str(text)[:120]!r}") from None
        if not isinstance(reply, dict) or not isinstance(reply.get("type"), str):
            raise CheckFailed(f"reply is not an object with a 'type': {str(reply)[:120]}")
        return reply

    def request(self, frame: Any) -> dict[str, Any]:
        self.send(frame)
        return self.recv()

    def closed_by_peer(self) -> bool:
        """True once the server has closed the socket (waits up to the reply timeout)."""
        deadline = time.monotonic() + self.timeout_s
        try:
            while time.monotonic() < deadline:
                self.conn.recv(timeout=max(0.01, deadline - time.monotonic()))
        except ConnectionClosed:
            return True
        except TimeoutError:
            return False
        return False

    def close(self) -> None:
        self.conn.close()


class Wire:
    """HTTP and WebSocket access to one server (``base_url`` like ``http://127.0.0.1:8000``)."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=self.base_url, headers=self.headers, timeout=timeout_s)

    def close(self) -> None:
        self.http.close()

    def get(self, path: str, *, headers: dict[str, str] | None = None) -> httpx.Response:
        return self._call("GET", path, headers=headers)

    def post(self, path: str, body: Any = None, *, raw: str | None = None,
             headers: dict[str, str] | None = None) -> httpx.Response:
        content = raw if raw is not None else (json.dumps(body) if body is not None else None)
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        return self._call("POST", path, content=content, headers=hdrs)

    def delete(self, path: str) -> httpx.Response:
        return self._call("DELETE", path)

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ConnectionLostError(f"{method} {self.base_url}{path} failed: {exc}") from exc

    def json(self, response: httpx.Response, what: str) -> Any:
        try:
            return response.json()
        except ValueError:
            raise CheckFailed(f"{what}: answer is not JSON ({response.status_code}: {response.text[:120]!r})") from None

    @contextmanager
    def ws(self) -> Iterator[WsSession]:
        """A WebSocket session, closed on exit."""
        try:
            cm = connect(
                ws_url(self.base_url),
                additional_headers=self.headers or None,
                open_timeout=self.timeout_s,
                close_timeout=2,
                compression=None,
                max_size=None,
            )
            conn = cm.__enter__()
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise ConnectionLostError(f"could not open {ws_url(self.base_url)}: {exc}") from exc
        try:
            yield WsSession(conn, self.timeout_s)
        finally:
            cm.__exit__(None, None, None)

    def health_sessions(self) -> tuple[int, int] | None:
        """``(active, max)`` from ``/health``, or None when the server does not report them."""
        try:
            data = self.get("/health").json()
        except (ValueError, ConnectionLostError):
            return None
        sessions = data.get("sessions") if isinstance(data, dict) else None
        if isinstance(sessions, dict) and isinstance(sessions.get("active"), int) and isinstance(sessions.get("max"), int):
            return sessions["active"], sessions["max"]
        return None

    def wait_active_at_most(self, limit: int, *, wait_s: float | None = None) -> bool:
        """Poll ``/health`` until at most ``limit`` sessions are active (servers close sessions
        a moment after the socket goes); True if reached or not reported."""
        deadline = time.monotonic() + (wait_s if wait_s is not None else self.timeout_s)
        while True:
            counts = self.health_sessions()
            if counts is None or counts[0] <= limit:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def _error_text(reply: dict[str, Any]) -> str:
    data = reply.get("data") if isinstance(reply.get("data"), dict) else {}
    return f"{data.get('code', '?')}: {data.get('message', reply.get('data'))}"


def expect_observation(
    reply: dict[str, Any], schemas: dict[str, Any] | None, what: str, *, reset: bool = False
) -> dict[str, Any]:
    """Check an ``observation`` frame (or HTTP body when ``reply`` has no type); return its data.

    A reset's observation is checked against ``/schema``'s ``reset_observation`` when it declares
    one of its own (one equal to ``observation`` is 0.10's default, which holds reset to nothing).
    """
    if reply.get("type") == "error":
        raise CheckFailed(f"{what}: the server answered an error ({_error_text(reply)})")
    if "type" in reply and reply["type"] != "observation":
        raise CheckFailed(f"{what}: expected an 'observation' reply, got {reply['type']!r}")
    data = reply.get("data") if "type" in reply else reply
    if not isinstance(data, dict):
        raise CheckFailed(f"{what}: 'data' is not an object")
    missing = [k for k in ("observation", "reward", "done") if k not in data]
    if missing:
        raise CheckFailed(f"{what}: reply lacks {', '.join(missing)} (keys: {sorted(data)})")
    obs, reward, done = data["observation"], data["reward"], data["done"]
    if not isinstance(obs, dict):
        raise CheckFailed(f"{what}: 'observation' is not an object")
    if reward is not None and not isinstance(reward, (int, float)):
        raise CheckFailed(f"{what}: 'reward' must be a number or null, got {reward!r}")
    if not isinstance(done, bool):
        raise CheckFailed(f"{what}: 'done' must be a boolean, got {done!r}")
    for lifted in ("reward", "done"):
        if lifted in obs:
            raise CheckFailed(f"{what}: {lifted!r} must be lifted out of 'observation'")
    if "metadata" in obs and not isinstance(obs["metadata"], dict):  # 0.10 nests it; 0.3 lifts it
        raise CheckFailed(f"{what}: 'observation.metadata' must be an object, got {obs['metadata']!r}")
    if data.get("metadata") is not None and not isinstance(data["metadata"], dict):
        raise CheckFailed(f"{what}: 'metadata' must be an object or null, got {data['metadata']!r}")
    schema = (schemas or {}).get("observation")
    if reset and (schemas or {}).get("reset_observation"):
        schema = schemas["reset_observation"]
        if schema == schemas.get("observation") and isinstance(schema, dict):
            # 0.10 publishes the step observation's schema for reset unless a reset class is declared,
            # and serves whatever reset returns (an MCP env's plain Observation, no ``tool_name``):
            # the fields a reset sends must fit, but the step's required ones need not be there
            schema = {k: v for k, v in schema.items() if k != "required"}
    if schema:
        errors = schema_errors({**obs, "reward": reward, "done": done}, schema)
        if errors:
            raise CheckFailed(f"{what}: observation does not match /schema: {'; '.join(errors[:3])}")
    return data


def expect_state(reply: dict[str, Any], schemas: dict[str, Any] | None, what: str) -> dict[str, Any]:
    """Check a ``state`` frame; return the state object."""
    if reply.get("type") == "error":
        raise CheckFailed(f"{what}: the server answered an error ({_error_text(reply)})")
    if "type" in reply and reply["type"] != "state":
        raise CheckFailed(f"{what}: expected a 'state' reply, got {reply['type']!r}")
    data = reply.get("data") if "type" in reply else reply
    if not isinstance(data, dict):
        raise CheckFailed(f"{what}: state is not an object")
    for key in ("episode_id", "step_count"):
        if key not in data:
            raise CheckFailed(f"{what}: state lacks {key!r} (keys: {sorted(data)})")
    schema = (schemas or {}).get("state")
    if schema:
        errors = schema_errors(data, schema)
        if errors:
            raise CheckFailed(f"{what}: state does not match /schema: {'; '.join(errors[:3])}")
    return data


def expect_error(reply: dict[str, Any], codes: str | tuple[str, ...], what: str) -> dict[str, Any]:
    """Check an ``error`` frame carrying one of ``codes``; return its data."""
    codes = (codes,) if isinstance(codes, str) else codes
    if reply.get("type") != "error":
        raise CheckFailed(f"{what}: expected an error {'/'.join(codes)}, got a {reply.get('type')!r} reply")
    data = reply.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("message"), str):
        raise CheckFailed(f"{what}: error frame lacks data.message")
    if data.get("code") not in codes:
        raise CheckFailed(f"{what}: expected code {'/'.join(codes)}, got {data.get('code')!r} ({data['message'][:120]})")
    if "Traceback" in data["message"]:
        raise CheckFailed(f"{what}: error message leaks a traceback")
    return data
