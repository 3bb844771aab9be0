"""The token view of a captured episode and its training document (``webui.studio.token_view``)."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from openenv.recording import EpisodeNotFoundError, ExportFormatError
from webui.studio.errors import NotFoundError, StudioError
from webui.studio.rendering import page_or_fragment
from webui.studio.state import studio_of
from webui.studio.token_view import token_view

__all__ = ["router"]

router = APIRouter()


class _NotTrainable(StudioError):
    code = "NOT_TRAINABLE"
    status = 422


def _episode(request: Request, eid: str):  # noqa: ANN202 - an EpisodeRecord
    try:
        store = studio_of(request).store
        return store.get_episode(store.resolve_id(eid))
    except EpisodeNotFoundError as exc:
        raise NotFoundError(f"There is no episode {eid!r} (it may have been deleted).", what="episode") from exc


@router.get("/episodes/{eid}/tokens", name="episode_tokens")
def episode_tokens(request: Request, eid: str) -> Response:
    ep = _episode(request, eid)
    offsets = {int(k[1:]): int(v) for k, v in request.query_params.items()
               if k[:1] == "o" and k[1:].isdigit() and v.isdigit() and len(k) < 6 and len(v) < 10}
    studio = studio_of(request)
    named = request.query_params.get("tokenizer")  # the view's own field wins over the setting (even empty)
    spec = (named if named is not None else studio.settings.tokenizer or "").strip() or None
    view = token_view(studio.store, ep.id, offsets, tokenizer=spec)
    keep = "&" + urlencode({"tokenizer": named}) if named is not None else ""  # kept by the pager and the poll
    return page_or_fragment(request, "studio/tokens.html", "studio/_tokens.html", nav="episodes", ep=ep, view=view,
                            keep=keep)


@router.get("/episodes/{eid}/training.jsonl", name="episode_training")
def episode_training(request: Request, eid: str) -> Response:
    from openenv.capture.export import training_documents

    ep = _episode(request, eid)
    try:
        (doc,) = training_documents(studio_of(request).store, episode_ids=[ep.id])
    except ExportFormatError as exc:
        raise _NotTrainable(exc.message) from exc
    return Response(json.dumps(doc, separators=(",", ":")) + "\n", media_type="application/x-ndjson",
                    headers={"Content-Disposition": f'attachment; filename="training-{ep.id[:12]}.jsonl"'})
