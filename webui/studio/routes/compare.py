"""``/episodes/compare?a=ID&b=ID``: two episodes side by side, aligned by step, the first
divergence marked; with only ``a``, a chooser of episodes to compare it with. Ids may be prefixes.
``/episodes/compare/tokens?a=ID&b=ID``: their captured model calls token by token."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from openenv.recording import EpisodeNotFoundError, RecordingError
from openenv.recording.records import EpisodeRecord
from webui.obs_view import build_view
from webui.studio.compare import candidates, compare_episodes
from webui.studio.episode_views import summarize
from webui.studio.errors import NotFoundError, StudioError
from webui.studio.rendering import page
from webui.studio.state import Studio, studio_of
from webui.studio.token_compare import compare_tokens
from webui.templating import url

router = APIRouter()


def _resolve(studio: Studio, raw: str, which: str) -> EpisodeRecord:
    raw = raw.strip()
    if not raw:
        raise StudioError(f"Choose episode {which} to compare (an id or its first digits).")
    if len(raw) > 64:
        raise StudioError(f"Episode {which}: an id is at most 64 characters.")
    try:
        return studio.store.get_episode(studio.store.resolve_id(raw))
    except EpisodeNotFoundError as exc:
        raise NotFoundError(f"Episode {which}: {exc.message} (it may have been deleted).", what="episode") from exc
    except RecordingError as exc:
        raise StudioError(f"Episode {which}: {exc.message}") from exc


def _views(request: Request, eid: str, index: int, step: Any) -> dict[str, Any]:
    """The step's action and observation as value views, with "show all" going to that episode."""
    if step is None:
        return {}
    base = url(request, "episode_value", eid=eid, index=index)
    obs = step.observation if isinstance(step.observation, dict) else {"value": step.observation}
    return {
        "action": build_view(step.action, "/action") if step.action is not None else None,
        "observation": build_view(obs, "/observation"),
        "more": lambda path: f"{base}?path={quote(path, safe='')}",
    }


@router.get("/episodes/compare", name="episodes_compare")
def episodes_compare(request: Request) -> Response:
    studio = studio_of(request)
    q = request.query_params
    a = _resolve(studio, q.get("a", ""), "A")
    if not q.get("b", "").strip():
        return page(request, "studio/episode_compare.html", nav="episodes", a=a, b=None, cmp=None,
                    choices=candidates(studio.store, a))
    b = _resolve(studio, q.get("b", ""), "B")
    cmp = compare_episodes(studio.store, a, b)
    tokens = compare_tokens(studio.store, a.id, b.id)
    views = {r.index: (_views(request, a.id, r.index, r.a), _views(request, b.id, r.index, r.b)) for r in cmp.rows}
    return page(request, "studio/episode_compare.html", nav="episodes", a=a, b=b, cmp=cmp, views=views,
                summarize=summarize, choices=[], has_tokens=any(p.a and p.b for p in tokens.pairs))


@router.get("/episodes/compare/tokens", name="episodes_compare_tokens")
def episodes_compare_tokens(request: Request) -> Response:
    studio = studio_of(request)
    a = _resolve(studio, request.query_params.get("a", ""), "A")
    b = _resolve(studio, request.query_params.get("b", ""), "B")
    return page(request, "studio/token_compare.html", nav="episodes", a=a, b=b,
                cmp=compare_tokens(studio.store, a.id, b.id))
