"""Live sessions of a running environment on its runtime page: the gauge, the open sessions and
a Close button for each (a slot held by a client that vanished can be freed)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from webui.studio.errors import StudioError
from webui.studio.live_sessions import SessionsView, close_session, read_sessions
from webui.studio.rendering import is_htmx, page
from webui.studio.state import studio_of
from webui.templating import url

router = APIRouter()


async def _view(request: Request, rid: str) -> tuple[object, SessionsView]:
    studio = studio_of(request)
    rt = studio.launcher.get(rid)
    if not rt.live or not rt.base_url:
        return rt, SessionsView(error=f"{rt.name} is not running.")
    return rt, await read_sessions(rt.base_url, stale_s=studio.settings.stale_session_s, headers=rt.headers)


@router.get("/envs/r/{rid}/sessions", name="runtime_sessions")
async def runtime_sessions(request: Request, rid: str) -> Response:
    if not is_htmx(request):
        return RedirectResponse(url(request, "runtime_page", rid=rid), status_code=303)
    rt, view = await _view(request, rid)
    return page(request, "studio/_sessions.html", rt=rt, live=view)


@router.post("/envs/r/{rid}/sessions/{sid}/close", name="runtime_session_close")
async def runtime_session_close(request: Request, rid: str, sid: str) -> Response:
    rt = studio_of(request).launcher.get(rid)
    if not rt.live or not rt.base_url:
        raise StudioError(f"{rt.name} is not running.")
    problem = await close_session(rt.base_url, sid, rt.headers)
    if not is_htmx(request):
        if problem:
            raise StudioError(problem)
        return RedirectResponse(url(request, "runtime_page", rid=rid), status_code=303)
    rt, view = await _view(request, rid)
    return page(request, "studio/_sessions.html", rt=rt, live=view, problem=problem)
