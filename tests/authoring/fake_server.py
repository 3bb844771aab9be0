"""A hand-written server speaking the wire protocol for a tiny counter, with switches that
break one behaviour each — so every wire check is shown to catch a server, not just an env."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect

ACTION_SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "default": 1}},
    "additionalProperties": False,
}
OBS_SCHEMA = {
    "type": "object",
    "properties": {"value": {"type": "integer"}, "reward": {"type": ["number", "null"]}, "done": {"type": "boolean"}},
    "required": ["value"],
    "additionalProperties": False,
}
STATE_SCHEMA = {"type": "object", "properties": {"step_count": {"type": "integer"}}}
BREAKS = {
    "health",  # /health answers without status "healthy"
    "schema",  # /schema lacks the observation schema
    "unlifted",  # reward/done stay inside "observation", not beside it
    "bad_value",  # observation value is a string, not the integer /schema promises
    "random_reset",  # reset ignores the seed
    "random_step",  # steps add noise that the seed does not fix
    "frozen_state",  # step_count never moves
    "step_before_reset",  # a step before reset is refused (STEP_BEFORE_RESET) instead of stepping the fresh env
    "uncoded_errors",  # error frames carry no code
    "http_shape",  # HTTP /step answers {"result": ...}
    "after_done",  # a step after done hangs up without a reply
    "never_refuse",  # reports max 2 sessions but accepts any number
    "ignore_close",  # keeps the socket open after a "close" message
}


def fake_server(*breaks: str, max_sessions: int = 2, done_at: int = 2) -> FastAPI:
    """The counter server with ``breaks`` (names from ``BREAKS``) switched on."""
    unknown = set(breaks) - BREAKS
    assert not unknown, unknown
    broken = set(breaks)
    app = FastAPI()
    live: set[int] = set()
    http_sessions: dict[str, dict[str, Any]] = {}

    def observation(value: Any, reward: float | None, done: bool) -> dict[str, Any]:
        if "unlifted" in broken:
            return {"observation": {"value": value, "reward": reward, "done": done}}
        return {"observation": {"value": value}, "reward": reward, "done": done}

    def error(code: str, message: str, **extra: Any) -> dict[str, Any]:
        data = {"message": message, **extra} if "uncoded_errors" in broken else {"message": message, "code": code, **extra}
        return {"type": "error", "data": data}

    def reset(episode: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        seed = data.get("seed")
        start = random.randrange(1 << 40) if "random_reset" in broken or seed is None else seed * 7  # two alike: one in 10^12
        episode.update(value=start, steps=0, reset=True, episode_id=data.get("episode_id") or uuid.uuid4().hex)
        return observation(str(start) if "bad_value" in broken else start, None, False)

    def step(episode: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
        episode.setdefault("value", 0)
        episode.setdefault("steps", 0)
        if "frozen_state" not in broken:
            episode["steps"] += 1
        episode["value"] += int(action.get("n", 1)) + (random.randrange(1 << 40) if "random_step" in broken else 0)
        return observation(episode["value"], 1.0, episode["steps"] >= done_at)

    def state(episode: dict[str, Any]) -> dict[str, Any]:
        return {"episode_id": episode.get("episode_id"), "step_count": episode.get("steps", 0)}

    @app.get("/health")
    def health() -> dict[str, Any]:
        if "health" in broken:
            return {"ok": True}
        return {"status": "healthy", "sessions": {"active": len(live), "max": max_sessions}}

    @app.get("/schema")
    def schema() -> dict[str, Any]:
        if "schema" in broken:
            return {"action": ACTION_SCHEMA, "state": STATE_SCHEMA}
        return {"action": ACTION_SCHEMA, "observation": OBS_SCHEMA, "state": STATE_SCHEMA}

    @app.get("/metadata")
    def metadata() -> dict[str, Any]:
        return {"name": "fake-counter", "description": "hand-written protocol peer"}

    def frame_reply(episode: dict[str, Any], frame: Any) -> dict[str, Any] | None:
        if not isinstance(frame, dict):
            return error("INVALID_JSON", "a message must be an object")
        kind, data = frame.get("type"), frame.get("data")
        if kind == "reset":
            if not isinstance(data, dict) or (data.get("seed") is not None and data["seed"] < 0):
                return error("VALIDATION_ERROR", "bad reset", errors=[{"loc": ["seed"], "msg": "bad"}])
            return {"type": "observation", "data": reset(episode, data)}
        if kind == "step":
            if not episode.get("reset") and "step_before_reset" in broken:
                return error("STEP_BEFORE_RESET", "reset first")
            if not isinstance(data, dict) or set(data) - {"n", "metadata"}:
                return error("VALIDATION_ERROR", "bad action", errors=[{"loc": ["action"], "msg": "bad"}])
            if episode.get("steps", 0) >= done_at and "after_done" in broken:
                return None
            return {"type": "observation", "data": step(episode, data)}
        if kind == "state":
            return {"type": "state", "data": state(episode)}
        return error("UNKNOWN_TYPE", f"unknown type {kind!r}")

    @app.websocket("/ws")
    async def ws(sock: WebSocket) -> None:
        await sock.accept(headers=[(b"x-openenv-features", b"request-id")])  # held to our rules
        if len(live) >= max_sessions and "never_refuse" not in broken:
            await sock.receive_text()
            await sock.send_json(error("CAPACITY_REACHED", "full", active_sessions=len(live), max_sessions=max_sessions))
            await sock.close()
            return
        me = id(sock)
        live.add(me)
        episode: dict[str, Any] = {}
        try:
            while True:
                text = await sock.receive_text()
                try:
                    frame = json.loads(text)
                except ValueError:
                    await sock.send_json(error("INVALID_JSON", "not JSON"))
                    continue
                if isinstance(frame, dict) and frame.get("type") == "close":
                    if "ignore_close" in broken:
                        continue
                    await sock.close()
                    return
                reply = frame_reply(episode, frame)
                if reply is None:
                    await sock.close()
                    return
                await sock.send_json(reply)
        except WebSocketDisconnect:
            return
        finally:
            live.discard(me)

    async def body(request: Request) -> Any:
        raw = await request.body()
        return json.loads(raw) if raw.strip() else {}

    @app.post("/reset")
    async def http_reset(request: Request) -> JSONResponse:
        try:
            data = await body(request)
        except ValueError:
            return JSONResponse({"code": "INVALID_JSON", "message": "bad", "detail": "bad"}, status_code=400)
        episode: dict[str, Any] = {}
        headers = {}
        if request.headers.get("x-openenv-session") == "new":
            sid = uuid.uuid4().hex
            http_sessions[sid] = episode
            headers["X-OpenEnv-Session"] = sid
        return JSONResponse(reset(episode, data), headers=headers)

    @app.post("/step")
    async def http_step(request: Request) -> JSONResponse:
        data = await body(request)
        if "action" not in data:
            return JSONResponse({"code": "VALIDATION_ERROR", "message": "no action", "detail": [{"loc": ["action"]}]},
                                status_code=422)
        episode = http_sessions.get(request.headers.get("x-openenv-session", ""), {})
        reply = step(episode, data["action"])
        return JSONResponse({"result": reply} if "http_shape" in broken else reply)

    @app.get("/state")
    def http_state(request: Request) -> JSONResponse:
        episode = http_sessions.get(request.headers.get("x-openenv-session", ""))
        if episode is None:
            return JSONResponse({"code": "SESSION_ERROR", "message": "no such session", "detail": "gone"}, status_code=404)
        return JSONResponse(state(episode))

    @app.delete("/sessions/{sid}")
    def close_session(sid: str) -> dict[str, str]:
        http_sessions.pop(sid, None)
        return {"closed": sid}

    return app
