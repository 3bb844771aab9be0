"""Episodes: the filterable list, an episode's page (timeline, chart, diff), live updates while it
is recorded, re-run with divergence report, export, delete, notes and tags."""

from __future__ import annotations

import asyncio
import errno
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response, StreamingResponse

from openenv.recording import (
    EpisodeNotFoundError,
    MissingExtraError,
    RecordingError,
    export_parquet,
)
from openenv.recording.bulk_export import iter_episode_batches
from openenv.recording.jsonable import dumps
from openenv.recording.records import EpisodeRecord
from webui.obs_view import build_view, resolve_pointer, schema_at
from webui.studio.catalogue import Entry
from webui.studio.episode_views import (
    SORT_LABELS,
    distinct_values,
    filter_stats,
    load_step_panel,
    parse_listing,
    recorded_schema,
    reward_series,
    summarize,
)
from webui.studio.errors import NotFoundError, StudioError
from webui.studio.fork_cleanup import prune_unplayed_forks, same_kind
from webui.studio.launcher import Runtime
from webui.studio.rendering import is_htmx, page, page_or_fragment, render_studio
from webui.studio.state import Studio, studio_of
from webui.templating import url

router = APIRouter()
MAX_SELECTION = 1000
FORMATS = {"jsonl": ("application/x-ndjson", ".jsonl"), "parquet": ("application/vnd.apache.parquet", ".parquet")}


def _episode(studio: Studio, eid: str) -> EpisodeRecord:
    """The episode ``eid`` names (its full id, or a prefix of one as the lists show)."""
    try:
        return studio.store.get_episode(studio.store.resolve_id(eid))
    except EpisodeNotFoundError as exc:
        raise NotFoundError(f"There is no episode {eid!r} (it may have been deleted).", what="episode") from exc
    except RecordingError as exc:  # an ambiguous prefix
        raise StudioError(exc.message) from exc


@router.get("/episodes", name="episodes_page")
def episodes_page(request: Request) -> Response:
    studio = studio_of(request)
    listing = parse_listing(request.query_params)

    def page_of(cursor: str | None) -> Any:
        return studio.store.list_episodes(listing.filters, limit=studio.settings.page_size, cursor=cursor,
                                          sort=listing.sort, descending=listing.descending)

    try:
        page_items = page_of(listing.cursor)
    except RecordingError as exc:
        if exc.code != "BAD_CURSOR":
            raise
        listing.errors["cursor"] = "not a page of this list (the first page is shown)"
        listing.cursor = None
        page_items = page_of(None)
    ctx: dict[str, Any] = {
        "nav": "episodes", "listing": listing, "episodes": page_items.items, "next_cursor": page_items.next_cursor,
        "options": {c: distinct_values(studio.store, c) for c in ("env_name", "source", "label")},
        "sort_labels": SORT_LABELS,
    }
    return page_or_fragment(request, "studio/episodes.html", "studio/_episode_list.html",
                            status=422 if listing.errors else 200, **ctx)


@router.get("/episodes/stats", name="episodes_stats")
def episodes_stats(request: Request) -> Response:
    """How many episodes match the list's filters and their means (loaded after the list)."""
    studio = studio_of(request)
    listing = parse_listing(request.query_params)
    if listing.errors:
        return HTMLResponse('<span id="episode-stats" class="muted">—</span>')
    stats = filter_stats(studio.store, listing.filters)
    return page(request, "studio/_episode_stats.html", stats=stats)


@router.get("/episodes/selection", name="episodes_selection")
async def episodes_selection(request: Request) -> Response:
    """The list's multi-select: compare two episodes, or export the chosen ones."""
    studio = studio_of(request)
    ids = [i for i in request.query_params.getlist("ids") if i.strip()][:MAX_SELECTION]
    action = request.query_params.get("action", "")
    if not ids:
        raise StudioError("Select some episodes first (the boxes in the list's first column).")
    if action == "compare":
        if len(ids) != 2:
            raise StudioError(f"Compare takes exactly two episodes; {len(ids)} are selected.")
        return RedirectResponse(url(request, "episodes_compare") + f"?a={quote(ids[0])}&b={quote(ids[1])}",
                                status_code=303)
    if action == "export":
        found = await run_in_threadpool(_existing, studio, ids)
        return await _export(studio, request.query_params.get("format", "jsonl"), "episodes", episode_ids=found)
    raise StudioError(f"unknown action {action!r}; compare or export")


@router.post("/episodes/delete", name="episodes_delete")
async def episodes_delete(request: Request) -> Response:
    """Delete the selected episodes (the page asks first); forks of them keep their own steps."""
    studio = studio_of(request)
    form = await request.form()
    ids = [str(i) for i in form.getlist("ids") if str(i).strip()][:MAX_SELECTION]
    if not ids:
        raise StudioError("Select some episodes first (the boxes in the list's first column).")
    gone = await run_in_threadpool(studio.store.delete_episodes, ids)
    target = url(request, "episodes_page") + f"?deleted={gone}"
    if is_htmx(request):
        return Response(status_code=200, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)


def _existing(studio: Studio, ids: list[str]) -> list[str]:
    out = []
    for raw in ids:
        try:
            out.append(studio.store.resolve_id(raw))
        except RecordingError as exc:
            raise NotFoundError(f"There is no episode {raw!r} (it may have been deleted).", what="episode") from exc
    return out


@router.get("/episodes/export", name="episodes_export")
async def episodes_export(request: Request) -> Response:
    studio = studio_of(request)
    listing = parse_listing(request.query_params)
    if listing.errors:
        raise StudioError("Fix the filters first: " + "; ".join(f"{k}: {v}" for k, v in listing.errors.items()))
    return await _export(studio, request.query_params.get("format", "jsonl"), "episodes", filters=listing.filters)


async def _export(studio: Studio, fmt: str, stem: str, **selection: Any) -> Response:
    """JSONL streams from the first byte (batches read in a worker thread); Parquet is written
    to a file first (its footer comes last) in a worker thread, then sent."""
    if fmt not in FORMATS:
        raise StudioError(f"unknown export format {fmt!r}; choose jsonl or parquet")
    media, suffix = FORMATS[fmt]
    if fmt == "jsonl":
        return StreamingResponse(_jsonl_chunks(studio.store, selection), media_type=media,
                                 headers={"Content-Disposition": f'attachment; filename="{stem}{suffix}"'})
    exports = studio.settings.data_dir / "exports"
    for folder in (exports, Path(tempfile.gettempdir())):  # a full data disk: spool where there is room
        try:
            path = await _spool(studio, folder, stem, suffix, selection)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            continue
        return FileResponse(path, media_type=media, filename=stem + suffix,
                            background=BackgroundTask(path.unlink, missing_ok=True))
    raise StudioError("No room on disk to prepare the export: free some space, or run "
                      "`openenv episodes export -` to stream it.")


async def _spool(studio: Studio, folder: Path, stem: str, suffix: str, selection: dict[str, Any]) -> Path:
    """The Parquet export written to a temporary file in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=stem + "-", suffix=suffix, dir=folder)
    os.close(fd)
    path = Path(name)
    try:
        await asyncio.to_thread(export_parquet, studio.store, path, **selection)
    except MissingExtraError as exc:
        path.unlink(missing_ok=True)
        raise StudioError(exc.message) from exc
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _jsonl_chunks(store: Any, selection: dict[str, Any]) -> Iterator[bytes]:
    """One chunk per batch of episodes (Starlette runs each ``next`` in its thread pool)."""
    for batch in iter_episode_batches(store, **selection):
        yield "".join(dumps(obj) + "\n" for obj in batch).encode()


def _episode_context(request: Request, studio: Studio, ep: EpisodeRecord, index: int, *,
                     full: bool = True) -> dict[str, Any]:
    """Context of the episode page; a step fragment (``full=False``) skips the reward series."""
    panel = load_step_panel(studio.store, ep.id, index, ep.step_count, studio.settings.timeline_window,
                            recorded_schema(ep))
    runtimes = [r for r in studio.launcher.live() if r.base_url and same_kind(r.name, ep.env_name)]
    runtimes.sort(key=lambda r: r.name != ep.env_name)
    if full:
        prune_unplayed_forks(studio.store, ep.id)
    return {"nav": "episodes", "ep": ep, "panel": panel, "rewards": reward_series(studio.store, ep.id) if full else [],
            "runtimes": runtimes, "fork_runtimes": runtimes, "launchable": _launchable(studio, ep.env_name) is not None,
            "summarize": summarize, "more_url": _more_url(request, ep.id, panel.step.index if panel else 0),
            "job": None, "saved": False, "forks": studio.store.list_forks(ep.id) if full else [],
            "model_endpoints": request.app.state.model_endpoints.list(),
            "parent_gone": full and ep.parent_episode_id is not None and _gone(studio, ep.parent_episode_id)}


def _gone(studio: Studio, eid: str) -> bool:
    try:
        studio.store.get_episode(eid)
    except EpisodeNotFoundError:
        return True
    return False


def _launchable(studio: Studio, env_name: str) -> Entry | None:
    """The catalogue entry the process provider can start for episodes of ``env_name``."""
    return next((e for e in studio.catalogue.entries() if e.name == env_name and "process" in e.providers), None)


def _until_running(studio: Studio, rt: Runtime) -> Callable[[], Awaitable[str]]:
    """Wait (off the loop's way) until ``rt`` serves; its URL, or ``StudioError`` with why not."""

    async def wait() -> str:
        deadline = time.monotonic() + studio.settings.launch_timeout_s + 5
        while rt.status == "starting" and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if rt.status != "running" or not rt.base_url:
            raise StudioError(f"{rt.name} did not start: {rt.error or rt.status}")
        return rt.base_url

    return wait


def _more_url(request: Request, eid: str, index: int) -> Any:
    base = url(request, "episode_value", eid=eid, index=index)
    return lambda path: f"{base}?path={quote(path, safe='')}"


def _index(request: Request, default: int) -> int:
    raw = request.query_params.get("step", "")
    return int(raw) if raw.lstrip("-").isdigit() else default


@router.get("/episodes/{eid}", name="episode_page")
def episode_page(request: Request, eid: str) -> Response:
    studio = studio_of(request)
    ep = _episode(studio, eid)
    return page(request, "studio/episode.html", **_episode_context(request, studio, ep, _index(request, 0)))


@router.get("/episodes/{eid}/step", name="episode_step")
def episode_step(request: Request, eid: str) -> Response:
    studio = studio_of(request)
    ep = _episode(studio, eid)
    ctx = _episode_context(request, studio, ep, _index(request, 0), full=not is_htmx(request))
    return page_or_fragment(request, "studio/episode.html", "studio/_step.html", **ctx)


@router.get("/episodes/{eid}/value/{index}", name="episode_value")
def episode_value(request: Request, eid: str, index: int) -> Response:
    studio = studio_of(request)
    ep = _episode(studio, eid)
    steps = studio.store.load_steps(eid, start=index, limit=1)
    path = request.query_params.get("path", "")
    try:
        if not steps or steps[0].index != index:
            raise KeyError(index)
        step = steps[0]
        source = {"action": step.action, "metadata": step.metadata, "state": step.state,
                  "observation": step.observation if isinstance(step.observation, dict) else {"value": step.observation}}
        view = build_view(resolve_pointer(source, path), path, full=True,
                          schema=schema_at(recorded_schema(ep), path) if isinstance(step.observation, dict) else None)
    except KeyError:
        return HTMLResponse('<p class="muted value">There is no such value.</p>', status_code=404)
    html = render_studio("_value_fragment.html", request, view=view, more_url=_more_url(request, eid, index))
    return HTMLResponse(html)


@router.get("/episodes/{eid}/live", name="episode_live")
def episode_live(request: Request, eid: str) -> Response:
    studio = studio_of(request)
    ep = _episode(studio, eid)
    ctx = {"nav": "episodes", "ep": ep, "rewards": reward_series(studio.store, ep.id), "oob": True}
    if not is_htmx(request):
        return RedirectResponse(url(request, "episode_page", eid=eid), status_code=303)
    return page(request, "studio/_live.html", **ctx)


@router.get("/episodes/{eid}/export", name="episode_export")
async def episode_export(request: Request, eid: str) -> Response:
    studio = studio_of(request)
    ep = await run_in_threadpool(_episode, studio, eid)
    return await _export(studio, request.query_params.get("format", "jsonl"), f"episode-{ep.id[:12]}",
                         episode_ids=[ep.id])


@router.post("/episodes/{eid}/rerun", name="episode_rerun")
async def episode_rerun(request: Request, eid: str) -> Response:
    studio = studio_of(request)
    ep = await run_in_threadpool(_episode, studio, eid)
    rid = str((await request.form()).get("runtime") or "")
    if rid == "launch":  # start an env of the episode's kind first (process provider)
        entry = _launchable(studio, ep.env_name)
        if entry is None:
            raise StudioError(f"There is no {ep.env_name} in the catalogue to launch.")
        rt = await asyncio.to_thread(studio.launcher.launch, entry.target, "process", {}, name=entry.name)
        job = await studio.reruns.start(ep.id, rt.name, "", ready=_until_running(studio, rt))
    else:
        rt = studio.launcher.get(rid)
        if not rt.live or not rt.base_url:
            raise StudioError(f"{rt.name} is not running.")
        if not same_kind(rt.name, ep.env_name):
            raise StudioError(f"{rt.name} is not a {ep.env_name} environment: re-run on one of the same kind.")
        job = await studio.reruns.start(ep.id, rt.name, rt.base_url, headers=rt.headers)
    if not is_htmx(request):
        full = await run_in_threadpool(_episode_context, request, studio, ep, 0)
        full["job"] = job
        return page(request, "studio/episode.html", **full)
    return page(request, "studio/_rerun.html", ep=ep, job=job, summarize=summarize)


@router.get("/episodes/{eid}/rerun/{job_id}", name="episode_rerun_status")
def episode_rerun_status(request: Request, eid: str, job_id: str) -> Response:
    studio = studio_of(request)
    ep = _episode(studio, eid)
    job = studio.reruns.get(job_id)
    if job is None or job.episode_id != ep.id:
        raise NotFoundError("That re-run is no longer kept; start it again.", what="rerun")
    if not is_htmx(request):
        full = _episode_context(request, studio, ep, 0)
        full["job"] = job
        return page(request, "studio/episode.html", **full)
    return page(request, "studio/_rerun.html", ep=ep, job=job, summarize=summarize)


@router.post("/episodes/{eid}/delete", name="episode_delete")
async def episode_delete(request: Request, eid: str) -> Response:
    studio = studio_of(request)
    ep = await run_in_threadpool(_episode, studio, eid)
    await asyncio.to_thread(studio.store.delete_episodes, [ep.id])
    target = url(request, "episodes_page")
    if is_htmx(request):
        return Response(status_code=200, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)


@router.post("/episodes/{eid}/notes", name="episode_notes")
async def episode_notes(request: Request, eid: str) -> Response:
    studio = studio_of(request)
    ep = await run_in_threadpool(_episode, studio, eid)
    form = await request.form()
    notes = str(form.get("notes") or "").strip() or None
    tags = [t.strip() for t in str(form.get("tags") or "").split(",") if t.strip()]
    too_long = [t for t in tags if len(t) > 100]
    if too_long:
        raise StudioError(f"a tag is at most 100 characters: {too_long[0][:20]}…")
    ep = await run_in_threadpool(_save_notes, studio, ep.id, notes, tags)
    if not is_htmx(request):
        return RedirectResponse(url(request, "episode_page", eid=eid), status_code=303)
    return page(request, "studio/_notes.html", ep=ep, saved=True)


def _save_notes(studio: Studio, eid: str, notes: str | None, tags: list[str]) -> EpisodeRecord:
    studio.store.set_notes(eid, notes)
    studio.store.set_tags(eid, tags)
    return studio.store.get_episode(eid)
