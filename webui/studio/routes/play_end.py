"""Play's End: end the episode being played (recorded as ended) and keep the session for a Reset."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from webui.studio.rendering import render_studio
from webui.studio.state import studio_of

__all__ = ["router"]

router = APIRouter()


@router.post("/play/s/{sid}/end", name="play_end")
async def play_end(request: Request, sid: str) -> Response:
    plays = studio_of(request).plays
    ps = plays.get(sid)
    await plays.end(ps)
    html = render_studio("studio/_play_status.html", request, ps=ps, oob=False)
    return HTMLResponse(html, headers={"HX-Trigger": "openenv:changed"})
