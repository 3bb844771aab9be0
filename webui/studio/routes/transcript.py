"""An episode's transcript (``webui.studio.transcript``): its model turns as chat messages,
failed turns included, paged; a plain ``def`` (runs in the thread pool, off the event loop)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from openenv.recording import EpisodeNotFoundError
from webui.studio.errors import NotFoundError
from webui.studio.rendering import page
from webui.studio.state import studio_of
from webui.studio.transcript import transcript_page

__all__ = ["router"]

router = APIRouter()


@router.get("/episodes/{eid}/transcript", name="episode_transcript")
def episode_transcript(request: Request, eid: str) -> Response:
    store = studio_of(request).store
    raw = request.query_params.get("start", "0")
    start = int(raw) if raw.isdigit() and len(raw) < 12 else 0
    try:
        ep = store.get_episode(store.resolve_id(eid))
    except EpisodeNotFoundError as exc:
        raise NotFoundError(f"There is no episode {eid!r} (it may have been deleted).", what="episode") from exc
    tp = transcript_page(store, ep.id, start=start)
    return page(request, "studio/transcript.html", nav="episodes", ep=ep, tp=tp)
