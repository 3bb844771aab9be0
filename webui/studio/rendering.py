"""Rendering helpers: one context for every studio template, page-or-fragment, error pages."""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from webui.fragment_errors import error_fragment, is_fragment_request
from webui.studio.charts import reward_chart
from webui.templating import environment, url

__all__ = ["error_page", "is_htmx", "page", "page_or_fragment", "render_studio"]


is_htmx = is_fragment_request  # an htmx request (it wants a fragment) that is not a boosted page load


def _ago(ts: float | None) -> str:
    if ts is None:
        return "—"
    delta = max(0.0, time.time() - ts)
    return _duration(delta) + " ago"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def _when(ts: float | None) -> str:
    """A local time with its zone (``2026-12-05 21:49:56 UTC``, else the UTC offset)."""
    if ts is None:
        return "—"
    local = time.localtime(ts)
    return time.strftime("%Y-%m-%d %H:%M:%S ", local) + (local.tm_zone or time.strftime("%z", local))


def _route_formats(app: Any) -> dict[str, tuple[str, frozenset[str]]]:
    """``name -> (path format, parameter names)`` of the app's routes, built once per app."""
    table = getattr(app.state, "route_formats", None)
    if table is None:
        table = {}
        _collect(app.routes, "", table)
        app.state.route_formats = table
    return table


def _collect(routes: Any, prefix: str, table: dict[str, tuple[str, frozenset[str]]]) -> None:
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI keeps included routers whole
        if included is not None:
            context = getattr(route, "include_context", None)
            _collect(included.routes, prefix + (getattr(context, "prefix", "") or ""), table)
            continue
        name, fmt = getattr(route, "name", None), getattr(route, "path_format", None)
        if name and fmt and name not in table:
            table[name] = (prefix + fmt, frozenset(getattr(route, "param_convertors", {})))


def fast_url(request: Request, name: str, /, **params: Any) -> str:
    """``templating.url`` with the route's path format looked up once (route lookup dominates
    small fragments); anything unusual falls back to ``url_path_for``."""
    found = _route_formats(request.app).get(name)
    if found is None or found[1] != frozenset(params):
        return url(request, name, **params)
    path = found[0].format(**{k: str(v) for k, v in params.items()})
    return request.scope.get("root_path", "").rstrip("/") + path


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    """The shared environment, overlaid with the studio's filters (the shared one is untouched)."""
    env = environment().overlay()
    env.filters, env.globals = dict(env.filters), dict(env.globals)
    env.filters.update(ago=_ago, duration=_duration, when=_when)
    env.globals.update(reward_chart=reward_chart, url=fast_url)
    return env


def render_studio(template: str, request: Request, **ctx: Any) -> str:
    base = {"request": request, "csrf": request.app.state.csrf_secret, "nav": ctx.pop("nav", "")}
    return _env().get_template(template).render(**base, **ctx)


def page(request: Request, template: str, *, status: int = 200, headers: dict[str, str] | None = None,
         **ctx: Any) -> HTMLResponse:
    return HTMLResponse(render_studio(template, request, **ctx), status_code=status, headers=headers)


def page_or_fragment(request: Request, page_template: str, fragment: str, *, status: int = 200,
                     headers: dict[str, str] | None = None, **ctx: Any) -> HTMLResponse:
    """The fragment for an htmx request, else the whole page (which includes the fragment)."""
    return page(request, fragment if is_htmx(request) else page_template, status=status, headers=headers, **ctx)


def error_page(request: Request, status: int, title: str, message: str, *, code: str | None = None) -> Response:
    """``studio/{status}.html`` if it exists, else the error page; for htmx the error fragment
    that goes into the asking part's error slot (``webui.fragment_errors``)."""
    if is_htmx(request):
        return error_fragment(request, status, title, message, code=code)
    env = _env()
    template = env.select_template([f"studio/{status}.html", "studio/error.html", "error.html"])
    retry = url(request, "envs_page")
    html = template.render(request=request, csrf=request.app.state.csrf_secret, nav="", title=title,
                           message=message, retry=retry, code=code)
    return HTMLResponse(html, status_code=status)
