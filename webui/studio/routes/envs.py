"""Environments: the catalogue, launching (self-polling status), running envs, logs, stop/restart,
attach by URL."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from openenv.core.containers.runtime import ProviderError
from webui.studio.errors import StudioError
from webui.studio.launch_options import PROVIDER_FIELDS, LaunchForm, read_launch_form
from webui.studio.live_sessions import SessionsView, read_sessions
from webui.studio.rendering import is_htmx, page, page_or_fragment
from webui.studio.state import Studio, studio_of
from webui.templating import url

router = APIRouter()
CHANGED = {"HX-Trigger": "studio:envs-changed"}


async def _form(request: Request) -> dict[str, str]:
    return {k: v for k, v in (await request.form()).items() if isinstance(v, str)}


async def _envs_context(request: Request, studio: Studio, **extra: Any) -> dict[str, Any]:
    docker = await asyncio.to_thread(studio.catalogue.docker)
    ctx: dict[str, Any] = {
        "nav": "envs", "docker": docker, "providers": studio.providers(docker),
        "entries": studio.catalogue.entries(docker), "runtimes": studio.launcher.listed(),
        "health": await studio.launcher.health_all(), "launch": None, "entry": None,
        "catalogue_error": None, "catalogue_value": "", "attach_error": None, "attach_value": "",
        "fields": PROVIDER_FIELDS, "notice": None,
    }
    ctx.update(extra)
    return ctx


@router.get("/", name="home", include_in_schema=False)
async def home(request: Request) -> Response:
    return RedirectResponse(url(request, "envs_page"), status_code=303)


@router.get("/envs", name="envs_page")
async def envs_page(request: Request) -> Response:
    studio = studio_of(request)
    return page(request, "studio/envs.html", **await _envs_context(request, studio))


@router.get("/envs/running", name="envs_running")
async def envs_running(request: Request) -> Response:
    studio = studio_of(request)
    return page_or_fragment(request, "studio/envs.html", "studio/_running.html",
                            **await _envs_context(request, studio))


@router.get("/envs/launch/{key}", name="launch_form")
async def launch_form(request: Request, key: str) -> Response:
    studio = studio_of(request)
    docker = await asyncio.to_thread(studio.catalogue.docker)
    entry = studio.catalogue.launchable(key, docker)
    wanted = request.query_params.get("provider", "")
    form = LaunchForm(provider=wanted if wanted in entry.providers else entry.providers[0],
                      values={k: v for k, v in request.query_params.items() if k != "provider"})
    if is_htmx(request):
        return page(request, "studio/_launch_form.html", entry=entry, launch=form, fields=PROVIDER_FIELDS,
                    providers=studio.providers(docker))
    return page(request, "studio/envs.html", **await _envs_context(request, studio, entry=entry, launch=form))


@router.post("/envs/launch/{key}", name="launch")
async def launch(request: Request, key: str) -> Response:
    studio = studio_of(request)
    docker = await asyncio.to_thread(studio.catalogue.docker)
    entry = studio.catalogue.launchable(key, docker)
    form = await _form(request)
    allowed = tuple(p for p in entry.providers if p in studio.providers(docker))
    result = read_launch_form(form.get("provider", ""), form, allowed)
    if not result.ok:
        ctx = {"entry": entry, "launch": result, "fields": PROVIDER_FIELDS, "providers": allowed}
        if is_htmx(request):
            return page(request, "studio/_launch_form.html", status=422, **ctx)
        return page(request, "studio/envs.html", status=422, **await _envs_context(request, studio, **ctx))
    rt = studio.launcher.launch(entry.target, result.provider, result.options, name=entry.name)
    if not is_htmx(request):
        return RedirectResponse(url(request, "runtime_page", rid=rt.id), status_code=303)
    return page(request, "studio/_launch_status.html", rt=rt, headers=CHANGED)


@router.get("/envs/r/{rid}/status", name="launch_status")
async def launch_status(request: Request, rid: str) -> Response:
    rt = studio_of(request).launcher.get(rid)
    if not is_htmx(request):
        return page(request, "studio/runtime.html", **await _runtime_context(request, rid))
    headers = CHANGED if rt.status != "starting" else None
    return page(request, "studio/_launch_status.html", rt=rt, headers=headers)


async def _runtime_context(request: Request, rid: str) -> dict[str, Any]:
    studio = studio_of(request)
    rt = studio.launcher.get(rid)
    health = await studio.launcher.health_all()
    logs = await asyncio.to_thread(studio.launcher.logs, rid, studio.settings.log_lines)
    stale_s = studio.settings.stale_session_s
    live = await read_sessions(rt.base_url, stale_s=stale_s, headers=rt.headers) if rt.live and rt.base_url else SessionsView()
    return {"nav": "envs", "rt": rt, "h": health.get(rid), "logs": logs, "follow": False, "live": live}


@router.get("/envs/r/{rid}", name="runtime_page")
async def runtime_page(request: Request, rid: str) -> Response:
    return page(request, "studio/runtime.html", **await _runtime_context(request, rid))


@router.get("/envs/r/{rid}/logs", name="runtime_logs")
async def runtime_logs(request: Request, rid: str) -> Response:
    ctx = await _runtime_context(request, rid)
    ctx["follow"] = request.query_params.get("follow") == "1"
    return page_or_fragment(request, "studio/runtime.html", "studio/_logs.html", **ctx)


@router.post("/envs/r/{rid}/stop", name="runtime_stop")
async def runtime_stop(request: Request, rid: str) -> Response:
    studio = studio_of(request)
    await studio.plays.close_for_runtime(rid)
    try:
        rt = await asyncio.to_thread(studio.launcher.stop, rid)
    except ProviderError as exc:
        raise StudioError(f"could not stop it: {exc.message}") from exc
    notice = f"Stopped {rt.name}." if rt.provider != "url" else f"Forgot {rt.name}."
    return _after_change(request, notice)


@router.post("/envs/r/{rid}/restart", name="runtime_restart")
async def runtime_restart(request: Request, rid: str) -> Response:
    studio = studio_of(request)
    await studio.plays.close_for_runtime(rid)
    try:
        rt = await asyncio.to_thread(studio.launcher.restart, rid)
    except ProviderError as exc:
        raise StudioError(f"could not restart it: {exc.message}") from exc
    if not is_htmx(request):
        return RedirectResponse(url(request, "runtime_page", rid=rt.id), status_code=303)
    if request.headers.get("HX-Target") == "runtime-summary":  # the runtime page's Restart
        return page(request, "studio/_runtime_summary.html", headers=CHANGED, **await _runtime_context(request, rt.id))
    return page(request, "studio/_launch_status.html", rt=rt, headers=CHANGED)


@router.get("/envs/r/{rid}/summary", name="runtime_summary")
async def runtime_summary(request: Request, rid: str) -> Response:
    """The runtime page's badge, facts and actions (polled while it starts); once it has started,
    the log panel is told to reload (``studio:logs``) so it shows the new process's output."""
    ctx = await _runtime_context(request, rid)
    headers = {"HX-Trigger": "studio:logs"} if ctx["rt"].status != "starting" else None
    return page_or_fragment(request, "studio/runtime.html", "studio/_runtime_summary.html", headers=headers, **ctx)


def _after_change(request: Request, notice: str) -> Response:
    target = url(request, "envs_page")
    if is_htmx(request):
        if request.headers.get("HX-Target") == "running":
            return Response(status_code=200, headers={**CHANGED, "HX-Reswap": "none"})
        return Response(status_code=200, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)


@router.post("/envs/catalogue", name="catalogue_add")
async def catalogue_add(request: Request) -> Response:
    studio = studio_of(request)
    target = (await _form(request)).get("target", "")
    docker = await asyncio.to_thread(studio.catalogue.docker)
    try:
        studio.catalogue.add(target)
    except StudioError as exc:
        ctx = {"entries": studio.catalogue.entries(docker), "catalogue_error": exc.message,
               "catalogue_value": target, "docker": docker}
        if is_htmx(request):
            return page(request, "studio/_catalogue.html", status=422, **ctx)
        return page(request, "studio/envs.html", status=422, **await _envs_context(request, studio, **ctx))
    if not is_htmx(request):
        return RedirectResponse(url(request, "envs_page"), status_code=303)
    return page(request, "studio/_catalogue.html", entries=studio.catalogue.entries(docker),
                catalogue_error=None, catalogue_value="", docker=docker)


@router.post("/envs/catalogue/{key}/remove", name="catalogue_remove")
async def catalogue_remove(request: Request, key: str) -> Response:
    studio = studio_of(request)
    studio.catalogue.remove(key)
    docker = await asyncio.to_thread(studio.catalogue.docker)
    if not is_htmx(request):
        return RedirectResponse(url(request, "envs_page"), status_code=303)
    return page(request, "studio/_catalogue.html", entries=studio.catalogue.entries(docker),
                catalogue_error=None, catalogue_value="", docker=docker)


@router.post("/envs/attach", name="attach")
async def attach(request: Request) -> Response:
    studio = studio_of(request)
    value = (await _form(request)).get("url", "")
    try:
        await studio.launcher.attach_url(value)
    except StudioError as exc:
        if is_htmx(request):
            return page(request, "studio/_attach_form.html", status=422, attach_error=exc.message,
                        attach_value=value)
        ctx = await _envs_context(request, studio, attach_error=exc.message, attach_value=value)
        return page(request, "studio/envs.html", status=422, **ctx)
    if not is_htmx(request):
        return RedirectResponse(url(request, "envs_page"), status_code=303)
    return page(request, "studio/_attach_form.html", attach_error=None, attach_value="", headers=CHANGED)
