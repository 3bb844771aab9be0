"""Run a model: saved endpoints, rollouts with live progress and results, two runs compared per
seed, and a model taking over a Play session for n steps ("Take back" ends it)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from openenv.rollout import RolloutSettings
from webui.studio.errors import NotFoundError, StudioError
from webui.studio.model_runs import EndpointConfig, ModelRunError, compare_by_seed, endpoint_field_errors
from webui.studio.rendering import is_htmx, page, render_studio
from webui.studio.state import studio_of
from webui.templating import url

router = APIRouter()


def _runs(request: Request) -> Any:
    return request.app.state.model_runs


def _endpoints(request: Request) -> Any:
    return request.app.state.model_endpoints


def _num(form: Any, name: str, kind: type, default: Any, errors: dict[str, str]) -> Any:
    raw = (form.get(name) or "").strip()
    if raw == "":
        return default
    try:
        return kind(raw)
    except ValueError:
        errors[name] = f"{name.replace('_', ' ')} must be {'a whole number' if kind is int else 'a number'}"
        return default
    except OverflowError:
        errors[name] = f"{name.replace('_', ' ')} is out of range"
        return default


def _models_page(request: Request, status: int = 200, **extra: Any) -> Response:
    studio = studio_of(request)
    ctx: dict[str, Any] = {
        "nav": "models", "runtimes": studio.launcher.live(), "endpoints": _endpoints(request).list(),
        "runs": _runs(request).listed(), "errors": {}, "values": {}, "typed_keys": set(_endpoints(request).keys),
        "endpoint_errors": {}, "endpoint_values": {},
    }
    ctx.update(extra)
    return page(request, "studio/models.html", status=status, **ctx)


@router.get("/models", name="models_page")
async def models_page(request: Request) -> Response:
    name = request.query_params.get("edit", "")
    if not name:
        return _models_page(request)
    e = _endpoints(request).get(name)  # 404 for an unknown one
    values = {"name": e.name, "base_url": e.base_url, "model": e.model, "api_key_env": e.api_key_env or "",
              "temperature": "" if e.temperature is None else str(e.temperature),
              "max_tokens": "" if e.max_tokens is None else str(e.max_tokens), "timeout_s": str(e.timeout_s),
              "original_name": e.name}
    return _models_page(request, endpoint_values=values)


@router.post("/models/endpoints/delete", name="models_endpoint_delete")
async def delete_endpoint(request: Request) -> Response:
    name = str((await request.form()).get("name") or "")
    _endpoints(request).delete(name)
    if is_htmx(request):
        return Response(status_code=200, headers={"HX-Redirect": url(request, "models_page")})
    return RedirectResponse(url(request, "models_page"), status_code=303)


@router.post("/models/endpoints", name="models_endpoint_save")
async def save_endpoint(request: Request) -> Response:
    form = await request.form()
    errors: dict[str, str] = {}
    config = EndpointConfig(
        name=(form.get("name") or "").strip(), base_url=(form.get("base_url") or "").strip(),
        model=(form.get("model") or "").strip(), api_key_env=(form.get("api_key_env") or "").strip() or None,
        temperature=_num(form, "temperature", float, None, errors),
        max_tokens=_num(form, "max_tokens", int, None, errors),
        timeout_s=_num(form, "timeout_s", float, 120.0, errors),
    )
    if not errors:
        errors.update(endpoint_field_errors(config))
    original = (form.get("original_name") or "").strip() or None
    if not errors:
        try:
            _endpoints(request).save(config, (form.get("api_key") or "").strip() or None, replaces=original)
        except (ModelRunError, NotFoundError) as exc:
            errors["endpoint"] = exc.message
    if errors:
        values = {k: v for k, v in form.items() if k != "api_key"}
        return _models_page(request, 422, endpoint_errors=errors, endpoint_values=values)
    return RedirectResponse(url(request, "models_page") + f"?endpoint={config.name}", status_code=303)


@router.post("/models/runs", name="models_run_start")
async def start_run(request: Request) -> Response:
    form = await request.form()
    errors: dict[str, str] = {}
    studio = studio_of(request)
    rid, name = form.get("runtime") or "", form.get("endpoint") or ""
    settings = RolloutSettings(
        episodes=_num(form, "episodes", int, 4, errors), concurrency=_num(form, "concurrency", int, 2, errors),
        max_steps=_num(form, "max_steps", int, 20, errors), seed=_num(form, "seed", int, 0, errors),
        samples_per_seed=_num(form, "samples_per_seed", int, 1, errors),
        label=(form.get("label") or "").strip() or None,
    )
    values = dict(form.items())
    if not errors:
        try:
            rt = studio.launcher.get(rid)
            if not rt.live or not rt.base_url:
                raise ModelRunError(f"{rt.name} is not running; launch it first.")
            endpoint = _endpoints(request).endpoint(name)
            run = await _runs(request).start(env_name=rt.name, env_url=rt.base_url, endpoint_name=name,
                                             endpoint=endpoint, settings=settings, env_headers=rt.headers)  # fmt: skip
        except (ModelRunError, NotFoundError) as exc:
            errors["run"] = exc.message
    if errors:
        return _models_page(request, 422, errors=errors, values=values)
    return RedirectResponse(url(request, "models_run_page", run_id=run.id), status_code=303)


def _run_ctx(request: Request, run_id: str) -> dict[str, Any]:
    run = _runs(request).get(run_id)
    return {"nav": "models", "run": run, "episodes": run.episodes(), "summary": run.current_summary()}


@router.get("/models/runs/{run_id}", name="models_run_page")
async def run_page(request: Request, run_id: str) -> Response:
    return page(request, "studio/models_run.html", **_run_ctx(request, run_id))


@router.get("/models/runs/{run_id}/progress", name="models_run_progress")
async def run_progress(request: Request, run_id: str) -> Response:
    template = "studio/_models_progress.html" if is_htmx(request) else "studio/models_run.html"
    return page(request, template, **_run_ctx(request, run_id))


@router.post("/models/runs/{run_id}/cancel", name="models_run_cancel")
async def cancel_run(request: Request, run_id: str) -> Response:
    await _runs(request).cancel(run_id)
    if is_htmx(request):
        return page(request, "studio/_models_progress.html", **_run_ctx(request, run_id))
    return RedirectResponse(url(request, "models_run_page", run_id=run_id), status_code=303)


@router.get("/models/compare", name="models_compare")
async def compare(request: Request) -> Response:
    runs = _runs(request)
    a_id, b_id = request.query_params.get("a", ""), request.query_params.get("b", "")
    a, b = runs.get(a_id), runs.get(b_id)
    return page(request, "studio/models_compare.html", nav="models", a=a, b=b, rows=compare_by_seed(a, b),
                sa=a.current_summary(), sb=b.current_summary())


# -- takeover in Play ----------------------------------------------------------------------------
def _takeover_ctx(request: Request, sid: str, **extra: Any) -> dict[str, Any]:
    return {"sid": sid, "takeover": request.app.state.takeovers.get(sid), "endpoints": _endpoints(request).list(),
            "errors": {}, "play_oob": "", **extra}  # fmt: skip


def _takeover_reply(request: Request, sid: str, status: int = 200, **extra: Any) -> Response:
    """The takeover panel and Play's status (out of band, so the buttons follow the model); once
    the model has taken steps the page has not shown (``?seen=``, the poll's count), the one
    observation panel, history and episode line in place too, and the State panel reloads."""
    ps = studio_of(request).plays.get(sid)
    if not is_htmx(request):
        return RedirectResponse(url(request, "play_page", rid=ps.runtime_id), status_code=303)
    from webui.studio.routes.play import _ctx as play_ctx

    ctx = _takeover_ctx(request, sid, **extra)
    t = ctx["takeover"]
    seen = request.query_params.get("seen", "")
    fresh = t is not None and t.taken > 0 and seen != str(t.taken)
    pctx = {**play_ctx(request, ps), "oob": True, "obs_oob": True}
    parts = ["studio/_play_status.html"]
    if fresh:
        parts += ["_observation.html", "_history.html", "studio/_play_episode.html"]
    ctx["play_oob"] = Markup("".join(render_studio(p, request, **pctx) for p in parts))
    headers = {"HX-Trigger": "openenv:changed"} if fresh else {}
    return HTMLResponse(render_studio("studio/_takeover.html", request, **ctx), status_code=status, headers=headers)


@router.post("/play/s/{sid}/model", name="play_model_start")
async def takeover_start(request: Request, sid: str) -> Response:
    ps = studio_of(request).plays.get(sid)
    form = await request.form()
    errors: dict[str, str] = {}
    steps = _num(form, "steps", int, 5, errors)
    name = form.get("endpoint") or ""
    if not errors:
        try:
            endpoint = _endpoints(request).endpoint(name)
            await request.app.state.takeovers.start(ps, name, endpoint, steps)
        except StudioError as exc:  # a bad endpoint or step count, or the session's phase refuses it
            errors["takeover"] = exc.message
    return _takeover_reply(request, sid, 422 if errors else 200, errors=errors)


@router.post("/play/s/{sid}/takeback", name="play_model_takeback")
async def takeover_back(request: Request, sid: str) -> Response:
    studio_of(request).plays.get(sid)
    await request.app.state.takeovers.take_back(sid)
    return _takeover_reply(request, sid)


@router.get("/play/s/{sid}/model", name="play_model_status")
async def takeover_status(request: Request, sid: str) -> Response:
    studio_of(request).plays.get(sid)
    return _takeover_reply(request, sid)
