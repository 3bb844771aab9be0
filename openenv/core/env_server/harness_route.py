"""0.10's production-mode ``/harness`` WebSocket (RFC 005): a client talks to the harness directly.

Registered by ``register_routes`` in production mode when the factory builds a
``HarnessEnvironment``. Each connection is one session: connecting resets the environment
(starts the harness, injects the tools) and answers ``{"type": "session_started", "data":
{"session_id", "harness"}}``; each ``{"type": "message", "content": ...}`` frame runs one turn,
streamed as ``HarnessEvent`` frames ending with ``turn_complete``. A malformed frame gets a
recoverable ``{"type": "protocol_error", "data": {"message", "code"}}``; a hung (past
``session_timeout_s``), dead or failing harness gets a terminal ``error`` event and the session
ends (its process group stopped). Session errors are ``{"type": "error", "data": {"message", "code"}}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
from typing import Any

from fastapi import APIRouter, WebSocket
from pydantic import ValidationError
from starlette.websockets import WebSocketDisconnect

from openenv.core.env_server.types import WSErrorCode
from openenv.core.errors import CapacityError, FactoryError

__all__ = ["build_harness_router", "factory_builds_harness_env"]

log = logging.getLogger("openenv.server")


def factory_builds_harness_env(factory: Any) -> bool:
    """Whether ``factory`` (a class or a callable) makes ``HarnessEnvironment``s (builds one to see)."""
    from openenv.core.harness.environment import HarnessEnvironment

    if inspect.isclass(factory):
        return issubclass(factory, HarnessEnvironment)
    try:
        env = factory()
    except Exception:
        return False
    try:
        return isinstance(env, HarnessEnvironment)
    finally:
        with contextlib.suppress(Exception):
            env.close()


def build_harness_router(server: Any) -> APIRouter:
    """The ``/harness`` route over ``server``'s sessions."""
    from openenv.core.harness.adapter import HarnessNotRunningError
    from openenv.core.harness.events import (
        HarnessClientMessage,
        HarnessEvent,
        HarnessEventType,
        HarnessProtocolError,
    )

    router = APIRouter()

    @router.websocket("/harness")
    async def harness_ws(websocket: WebSocket) -> None:
        await websocket.accept()
        session = None

        async def send(payload: dict[str, Any]) -> None:
            await websocket.send_text(json.dumps(payload))

        async def terminal(message: str) -> None:
            event = HarnessEvent(type=HarnessEventType.ERROR, data={"message": message, "recoverable": False})
            await websocket.send_text(event.model_dump_json())

        try:
            session = await server.sessions.create("harness")
            session.busy = True  # a live harness is never reaped as idle
            env = session.env
            await env.reset_async()
            await send({"type": "session_started", "data": {"session_id": session.id, "harness": env.adapter.config.name}})
            while True:
                raw = await websocket.receive_text()
                try:
                    frame = HarnessClientMessage(**json.loads(raw))
                except json.JSONDecodeError as exc:
                    refusal = HarnessProtocolError(data={"message": f"Invalid JSON: {exc}", "code": WSErrorCode.INVALID_JSON})
                    await websocket.send_text(refusal.model_dump_json())
                    continue
                except (ValidationError, TypeError) as exc:
                    refusal = HarnessProtocolError(data={"message": f"Invalid message: {exc}", "code": WSErrorCode.VALIDATION_ERROR})
                    await websocket.send_text(refusal.model_dump_json())
                    continue
                session.touch()
                session.step_count += 1
                budget = env.adapter.config.session_timeout_s

                async def turn(content: str) -> bool:
                    if not await env.adapter.is_alive():
                        raise HarnessNotRunningError("harness process is not running")
                    completed = False
                    async for event in env.adapter.send_message_streaming(content):
                        await websocket.send_text(event.model_dump_json())
                        session.touch()
                        completed = event.type is HarnessEventType.TURN_COMPLETE
                    return completed

                try:
                    completed = await asyncio.wait_for(turn(frame.content), budget)
                except asyncio.TimeoutError:
                    await terminal(f"harness turn exceeded {budget} seconds")
                    break
                except HarnessNotRunningError:
                    await terminal("harness process is not running")
                    break
                except WebSocketDisconnect:
                    raise
                except Exception:
                    # adapter errors may carry subprocess output or credentials: not sent
                    log.exception("harness turn failed")
                    await terminal("harness turn failed")
                    break
                if not completed:
                    await terminal("harness event stream ended without a TURN_COMPLETE event")
                    break
        except WebSocketDisconnect:
            pass
        except CapacityError as exc:
            await send({"type": "error", "data": {"message": str(exc), "code": WSErrorCode.CAPACITY_REACHED.value}})
        except FactoryError as exc:
            await send({"type": "error", "data": {"message": str(exc), "code": WSErrorCode.FACTORY_ERROR.value}})
        except Exception:
            log.exception("harness session failed")
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await send({"type": "error", "data": {"message": "harness session failed", "code": "SESSION_ERROR"}})
        finally:
            if session is not None:
                session.busy = False
                cleanup = asyncio.ensure_future(server.sessions.close(session.id))
                try:
                    await asyncio.shield(cleanup)
                except asyncio.CancelledError:
                    while not cleanup.done():  # never orphan a running harness
                        with contextlib.suppress(asyncio.CancelledError):
                            await asyncio.shield(cleanup)
                    raise
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await websocket.close()

    return router
