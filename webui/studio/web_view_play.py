"""An environment's own view on the studio's Play page: its ``render_web`` HTML in a sandboxed
frame and its ``web_actions`` as one-click buttons, drawn by the runtime's environment for the
play session (the ``web_view`` WebSocket frame, ``EnvClient.web_view``). A button's action is
a step through the recorder, stored like any other before it is shown.

The same template as ``/web`` (``_web_view.html``), so the same route names.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from openenv.core.errors import ActionValidationError, OpenEnvError
from webui.fragment_errors import error_fragment
from webui.studio.rendering import render_studio
from webui.studio.state import studio_of

__all__ = ["router"]

router = APIRouter()
_ACTIONS: dict[str, list[tuple[str, dict[str, Any]]]] = {}  # play session id -> the buttons shown
_MAX_KEPT = 256


@router.get("/play/s/{sid}/view", name="web_view")
async def play_view(request: Request, sid: str) -> Response:
    studio = studio_of(request)
    ps = studio.plays.get(sid)
    try:
        view = await studio.plays.web_view(ps)
    except OpenEnvError as exc:
        view = {"html": None, "actions": [], "problem": exc.message}
    actions = [(a["label"], a["action"]) for a in view.get("actions") or []]
    if len(_ACTIONS) >= _MAX_KEPT and sid not in _ACTIONS:
        _ACTIONS.pop(next(iter(_ACTIONS)))
    _ACTIONS[sid] = actions
    if view.get("html") is None and not actions and not view.get("problem"):
        return HTMLResponse("")  # no view (yet): the panel stays empty
    html = render_studio("_web_view.html", request, sid=sid, html=view.get("html"), actions=actions,
                         problem=view.get("problem"))
    return HTMLResponse(f'<div class="panel">{html}</div>')


@router.post("/play/s/{sid}/view/act/{index}", name="web_view_act")
async def play_view_act(request: Request, sid: str, index: int) -> Response:
    from webui.studio.routes.play import _failure, _reply

    studio = studio_of(request)
    ps = studio.plays.get(sid)
    actions = _ACTIONS.get(sid) or []
    if not 0 <= index < len(actions):
        return error_fragment(request, 409, "Conflict", "That action is no longer offered; pick one the view shows now.")
    try:
        await studio.plays.step(ps, actions[index][1])
    except (ActionValidationError, OpenEnvError) as exc:
        status, notice = _failure("Action failed", exc)
        return await _reply(request, ps, status, notice)
    return await _reply(request, ps, 200)
