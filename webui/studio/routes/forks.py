"""Fork at step k: "Fork here" on an episode page replays the recorded actions up to the shown
step on a fresh session of a running env of the same kind (``openenv.recording.fork``), then Play
continues from there as a new episode linked to its parent; a divergence stops the replay and is
shown, with "Continue anyway" (replay the rest) or "Discard".

Fork at a model call: the same form with ``model_endpoint`` (and ``model_steps``) forks at the step
before the call and hands the new session to that endpoint's model (a takeover), which makes the
call anew and plays on; a person can take back at any time."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from openenv.core.errors import OpenEnvError
from openenv.recording import RecordingError
from webui.studio.episode_views import summarize
from webui.studio.errors import NotFoundError, StudioError
from webui.studio.fork_cleanup import discard_fork, prune_unplayed_forks, same_kind
from webui.studio.model_runs import ModelRunError
from webui.studio.play import PlaySession
from webui.studio.rendering import is_htmx, page
from webui.studio.state import studio_of
from webui.templating import url

router = APIRouter()


def _to_play(request: Request, ps: PlaySession) -> Response:
    target = url(request, "play_page", rid=ps.runtime_id) + f"?session={ps.id}"
    if is_htmx(request):
        return Response(status_code=200, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)


def _step(raw: Any) -> int:
    text = str(raw or "").strip()
    if not text.isdigit():
        raise StudioError("The fork step must be a whole number.")
    return int(text)


def _model_choice(request: Request, form: Any) -> tuple[str, Any, int] | None:
    """``(endpoint name, endpoint, steps)`` when the fork hands over to a model, checked before any
    session is opened; ``None`` for a fork a person plays on."""
    name = str(form.get("model_endpoint") or "").strip()
    if not name:
        return None
    raw = str(form.get("model_steps") or "5").strip()
    if not raw.isdigit() or not 1 <= int(raw) <= 1000:
        raise StudioError("The model can play 1 to 1000 steps: give a whole number.")
    try:
        endpoint = request.app.state.model_endpoints.endpoint(name)
    except (ModelRunError, NotFoundError) as exc:
        raise StudioError(exc.message) from exc
    return name, endpoint, int(raw)


async def _model_continues(request: Request, ps: PlaySession, name: str, endpoint: Any, steps: int) -> None:
    """Start the takeover on the fork; a refusal discards the fork and says why."""
    try:
        await request.app.state.takeovers.start(ps, name, endpoint, steps)
    except ModelRunError as exc:
        await _drop(studio_of(request), ps)
        raise StudioError(f"The model could not start on the fork (discarded): {exc.message}") from exc


@router.post("/episodes/{eid}/fork", name="episode_fork")
async def episode_fork(request: Request, eid: str) -> Response:
    studio = studio_of(request)
    try:
        ep = await asyncio.to_thread(studio.store.get_episode, eid)
    except RecordingError as exc:
        raise NotFoundError(f"There is no episode {eid!r} (it may have been deleted).", what="episode") from exc
    form = await request.form()
    step = _step(form.get("step"))
    model = _model_choice(request, form)
    rt = studio.launcher.get(str(form.get("runtime") or ""))
    if not rt.live or not rt.base_url:
        raise StudioError(f"{rt.name} is not running.")
    if not same_kind(rt.name, ep.env_name):
        raise StudioError(f"{rt.name} is not a {ep.env_name} environment: fork on one of the same kind.")
    await asyncio.to_thread(prune_unplayed_forks, studio.store, ep.id)
    ps = await studio.plays.open(rt.id, rt.name, rt.base_url, provider=rt.provider, headers=rt.headers)
    try:
        forked = await studio.plays.fork(ps, ep.id, step)
    except RecordingError as exc:
        await _drop(studio, ps)
        raise StudioError(exc.message) from exc
    except OpenEnvError as exc:
        await _drop(studio, ps)
        raise StudioError(f"The fork on {rt.name} failed: {exc.message}") from exc
    if forked.report.complete:
        if model is not None:
            await _model_continues(request, ps, *model)
        return _to_play(request, ps)
    return page(request, "studio/_fork.html", ep=ep, ps=ps, report=forked.report, summarize=summarize)


@router.post("/play/s/{sid}/fork/proceed", name="fork_proceed")
async def fork_proceed(request: Request, sid: str) -> Response:
    studio = studio_of(request)
    ps = studio.plays.get(sid)
    try:
        await studio.plays.proceed(ps)
    except OpenEnvError as exc:
        raise StudioError(f"Replaying the rest failed: {exc.message}") from exc
    return _to_play(request, ps)


async def _drop(studio: Any, ps: PlaySession) -> bool:
    """Close a fork's session and delete its episode if it took no step of its own."""
    fork = ps.fork
    await studio.plays.close(ps.id)
    return await asyncio.to_thread(discard_fork, studio.store, fork.report.episode_id if fork is not None else None)


@router.post("/play/s/{sid}/fork/discard", name="fork_discard")
async def fork_discard(request: Request, sid: str) -> Response:
    studio = studio_of(request)
    deleted = await _drop(studio, studio.plays.get(sid))
    if not is_htmx(request):
        return RedirectResponse(url(request, "episodes_page"), status_code=303)
    what = "its replayed steps were deleted" if deleted else "the steps it played stay recorded"
    return HTMLResponse(f'<p class="muted" id="fork-discarded">Fork discarded ({what}).</p>')
