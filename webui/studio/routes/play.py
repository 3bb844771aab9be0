"""Play: step a running env with its generated form; every step goes through the recorder.

The fragments reuse the /web page's templates (``_action_editor``, ``_observation``,
``_history``) and so keep their route names (``web_step``... ``web_value``) for the URLs.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from openenv.core.errors import ActionValidationError, OpenEnvError
from openenv.recording import RecordingError
from webui.env_views import Editor, Notice, PageViews, form_lists, read_action, read_reset
from webui.fragment_errors import code_status
from webui.studio.errors import NotFoundError, StudioError
from webui.studio.play import PlaySession
from webui.studio.play_state import PlayRefusedError
from webui.studio.rendering import is_htmx, page, render_studio
from webui.studio.state import studio_of

router = APIRouter()
DETACH_GRACE_S = 15.0
_MAX_ID = 128


def _views(ps: PlaySession) -> PageViews:
    return PageViews(action_node=ps.action_node, reset_node=ps.reset_node, obs_help=ps.obs_help,
                     obs_schema=ps.obs_schema, state_schema=ps.state_schema)


def _ctx(request: Request, ps: PlaySession, *, full: bool = False, **extra: Any) -> dict[str, Any]:
    """Template context; ``full`` adds the editors a whole page needs (fragments skip them)."""
    views = _views(ps)
    obs = views.observation(request, ps.web, extra.pop("record", None), extra.pop("notice", None))
    ctx: dict[str, Any] = {
        "nav": "envs", "ps": ps, "sid": ps.id, "ws": ps.web, "oob": False, "obs": obs,
        "current": obs.record.index if obs.record else None, "summarize": views.summarize, "obs_help": ps.obs_help,
    }
    ctx.update(extra)
    if full:
        ctx.setdefault("editor", views.fresh_editor())
        ctx.setdefault("reset", views.fresh_reset())
    return ctx


@router.get("/play/{rid}", name="play_page")
async def play_page(request: Request, rid: str) -> Response:
    """A Play page: ``?session=`` re-attaches to that session while it is open (a reload, Back,
    a second tab, a fork). Without an open one, a page whose button opens a session (``POST``;
    a GET changes nothing): it presses itself when the studio or the user asked for the page
    (``Sec-Fetch-Site`` same-origin/none), and offers to continue ``?episode=`` (or the old session's)."""
    studio = studio_of(request)
    rt = _live_runtime(studio, rid)
    sid = request.query_params.get("session", "")
    ps = studio.plays.find(sid, rt.id) if sid else None
    if ps is None or ps.closed is not None:
        site = request.headers.get("sec-fetch-site")
        resp = page(request, "studio/play_start.html", nav="envs", rt=rt, old_session=sid,
                    episode=request.query_params.get("episode", ""), autostart=site in ("same-origin", "none"))
        resp.headers["Cache-Control"] = "no-store"
        return resp
    resume, reason = None, ""
    if request.query_params.get("resume"):
        resume = await asyncio.to_thread(_recorded, studio.store, request.query_params["resume"])
        old_sid = request.query_params.get("from", "")
        old = studio.plays.find(old_sid, rt.id) if old_sid else None
        reason = (f"closed: {old.closed}" if old is not None and old.closed else
                  "it ended: idle too long, or the studio restarted" if old_sid else "this page was opened to continue it")
    resp = page(request, "studio/play.html", rt=rt, state=await _state_view(request, ps), resume=resume,
                resume_reason=reason, **_ctx(request, ps, full=True))
    resp.headers["Cache-Control"] = "no-store"  # Back asks again: the session may have moved on or closed
    return resp


@router.post("/play/{rid}", name="play_open")
async def play_open(request: Request, rid: str) -> Response:
    """Open a Play session on runtime ``rid`` and show it (303 to its page); form fields
    ``session`` (the page's old session) and ``episode`` say which recorded episode to offer."""
    studio = studio_of(request)
    rt = _live_runtime(studio, rid)
    form = await request.form()
    old_sid, episode = str(form.get("session") or ""), str(form.get("episode") or "")
    if len(old_sid) > _MAX_ID or len(episode) > _MAX_ID:
        raise StudioError(f"session and episode are ids of at most {_MAX_ID} characters")
    old = studio.plays.find(old_sid, rt.id) if old_sid else None
    previous = (old.last_episode_id if old is not None else None) or episode
    ps = await studio.plays.open(rt.id, rt.name, rt.base_url or "", provider=rt.provider, headers=rt.headers)
    query = {"session": ps.id, **({"resume": previous} if previous else {}), **({"from": old_sid} if old_sid else {})}
    return RedirectResponse(f"{request.url_for('play_page', rid=rt.id).path}?{urlencode(query)}", status_code=303)


def _live_runtime(studio: Any, rid: str) -> Any:
    rt = studio.launcher.get(rid)
    if not rt.live or not rt.base_url:
        raise NotFoundError(f"{rt.name} is not running ({rt.status}); launch or restart it first.", what="runtime")
    return rt


def _recorded(store: Any, episode_id: str) -> Any:
    """The stored episode ``episode_id`` (``None`` for none or an unknown id)."""
    if not episode_id:
        return None
    try:
        return store.get_episode(episode_id)
    except RecordingError:
        return None


@router.get("/play/s/{sid}/status", name="play_status")
async def play_status(request: Request, sid: str) -> Response:
    """The session's phase and enabled buttons (``#play-status``), for the page's poll."""
    ps = studio_of(request).plays.peek(sid)
    return HTMLResponse(render_studio("studio/_play_status.html", request, ps=ps, oob=False))


async def _state_view(request: Request, ps: PlaySession) -> Any:
    """The State panel's view: the session's state read now (as ``/web`` does)."""
    try:
        data = await studio_of(request).plays.state(ps)
    except OpenEnvError as exc:
        return _views(ps).state(request, ps.web, None, _failure("State unavailable", exc)[1])
    return _views(ps).state(request, ps.web, data, None)


async def _reply(request: Request, ps: PlaySession, status: int, notice: Notice | None = None, *,
                 changed: bool = True, **extra: Any) -> Response:
    rt = studio_of(request).launcher.runtimes.get(ps.runtime_id)
    ctx = _ctx(request, ps, notice=notice, full=not is_htmx(request), **extra)
    if not is_htmx(request):
        return page(request, "studio/play.html", status=status, rt=rt, state=await _state_view(request, ps), **ctx)
    ctx["oob"] = True
    body = (render_studio("_observation.html", request, **ctx) + render_studio("_history.html", request, **ctx)
            + render_studio("studio/_play_episode.html", request, **ctx)
            + render_studio("studio/_play_status.html", request, **ctx))
    headers = {"HX-Trigger": "openenv:changed"} if status == 200 and changed else {}  # the State panel reloads
    return HTMLResponse(body, status_code=status, headers=headers)


@router.get("/play/s/{sid}/state", name="web_state")
async def play_state(request: Request, sid: str) -> Response:
    ps = studio_of(request).plays.get(sid)
    return HTMLResponse(render_studio("_state.html", request, **_ctx(request, ps, state=await _state_view(request, ps))))


async def _editor_reply(request: Request, ps: PlaySession, editor: Editor, status: int, *, reset: bool = False) -> Response:
    if not is_htmx(request):
        return await _reply(request, ps, status, **{"reset" if reset else "editor": editor})
    template, target = ("_reset_editor.html", "#reset-editor") if reset else ("_action_editor.html", "#action-editor")
    ctx = _ctx(request, ps, **({"reset": editor} if reset else {"editor": editor}))
    html = render_studio(template, request, **ctx)
    return HTMLResponse(html, status_code=status, headers={"HX-Retarget": target, "HX-Reswap": "outerHTML"})


def _failure(title: str, exc: OpenEnvError) -> tuple[int, Notice]:
    if isinstance(exc, PlayRefusedError):
        return exc.status, Notice("error", title.replace("failed", "refused"), exc.message, code=exc.code)
    return code_status(exc.code), Notice("error", title, exc.message, code=exc.code)


@router.post("/play/s/{sid}/step", name="web_step")
async def play_step(request: Request, sid: str) -> Response:
    studio = studio_of(request)
    ps = studio.plays.get(sid)
    editor, action = read_action(ps.action_node, form_lists(await request.form()))
    if action is None:
        return await _editor_reply(request, ps, editor, 422)
    try:
        await studio.plays.step(ps, action)
    except ActionValidationError as exc:
        return await _editor_reply(request, ps, _views(ps).editor_errors(editor, action, exc.errors), 422)
    except OpenEnvError as exc:
        status, notice = _failure("Step failed", exc)
        return await _reply(request, ps, status, notice, editor=editor)
    return await _reply(request, ps, 200, editor=editor)


@router.post("/play/s/{sid}/reset", name="web_reset")
async def play_reset(request: Request, sid: str) -> Response:
    studio = studio_of(request)
    ps = studio.plays.get(sid)
    editor, kwargs = read_reset(ps.reset_node, form_lists(await request.form()))
    if kwargs is None:
        return await _editor_reply(request, ps, editor, 422, reset=True)
    try:
        await studio.plays.reset(ps, kwargs)
    except ActionValidationError as exc:
        return await _editor_reply(request, ps, _views(ps).reset_errors(editor, kwargs, exc.errors), 422, reset=True)
    except OpenEnvError as exc:
        status, notice = _failure("Reset failed", exc)
        return await _reply(request, ps, status, notice, reset=editor)
    return await _reply(request, ps, 200, reset=editor)


@router.get("/play/s/{sid}/history/{index}", name="web_history_item")
async def play_history_item(request: Request, sid: str, index: int) -> Response:
    ps = studio_of(request).plays.get(sid)
    record = ps.web.find(index)
    if record is None:
        return await _reply(request, ps, 404, Notice("info", "That entry is no longer kept",
                                               "open the episode page to see every step"))
    return await _reply(request, ps, 200, record=record, changed=False)


@router.get("/play/s/{sid}/value/{index}", name="web_value")
async def play_value(request: Request, sid: str, index: int) -> Response:
    ps = studio_of(request).plays.get(sid)
    views = _views(ps)
    view = views.full_value(ps.web, index, request.query_params.get("path", ""))
    if view is None:
        return HTMLResponse('<p class="muted value">This value is no longer kept.</p>', status_code=404)
    html = render_studio("_value_fragment.html", request, view=view, more_url=views.more_url(request, sid, index))
    return HTMLResponse(html)


@router.post("/play/s/{sid}/editor", name="web_editor")
async def play_editor(request: Request, sid: str) -> Response:
    ps = studio_of(request).plays.get(sid)
    editor = _views(ps).switch_editor(form_lists(await request.form()), request.query_params.get("to", "form"))
    return HTMLResponse(render_studio("_action_editor.html", request, **_ctx(request, ps, editor=editor)))


@router.post("/play/s/{sid}/close", name="web_close")
async def play_close(request: Request, sid: str) -> Response:
    """Close the session; ``?grace=1`` (the page going away) closes it only if no page (a reload,
    Back, another tab) asks for it within ``DETACH_GRACE_S``."""
    plays = studio_of(request).plays
    if request.query_params.get("grace"):
        plays.detach(sid, DETACH_GRACE_S)
    else:
        await plays.close(sid, "closed from its Play page")
    return Response(status_code=204)
