"""The per-environment ``/web`` page: play an environment by hand from a browser.

Mounted by ``create_app`` (``web=True``)::

    add_routes(app, build_env_page_router(server))   # openenv.core.env_server._routing

Each page load is a tab with its own id (carried in the fragment URLs, not a cookie), and the
tab's first Reset opens its own session from the server's pool (the one ``/ws`` uses, counted
against the same cap and reaped when idle), so two tabs never share an episode and merely
viewing the page holds no capacity.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from openenv.core.errors import (
    ActionValidationError,
    CapacityError,
    OpenEnvError,
    SessionNotFoundError,
)
from webui import assets
from webui.env_views import Editor, Notice, PageViews, field_help, form_lists, read_action, read_reset
from webui.forms import build_form
from webui.fragment_errors import describe, error_fragment
from webui.templating import render, url
from webui.web_sessions import WebSession, WebSessions

log = logging.getLogger("openenv.webui")
OPEN_RETRIES = 4
OPEN_RETRY_DELAY_S = 0.25

_STATUS = {
    "VALIDATION_ERROR": 422, "STEP_BEFORE_RESET": 409, "ENV_BUSY": 409, "TIMEOUT": 504,
    "CAPACITY_REACHED": 503, "SESSION_ERROR": 410, "EXECUTION_ERROR": 500,
}


class EnvPage:
    """Route handlers of the /web page for one ``HTTPEnvServer``."""

    def __init__(self, server: Any) -> None:
        self.server = server
        schemas = server.schemas()
        self.views = PageViews(
            action_node=build_form(schemas.get("action") or {}),
            reset_node=build_form(server.reset_params_schema()),
            obs_help=field_help(schemas.get("observation") or {}),
            obs_schema=schemas.get("observation"), state_schema=schemas.get("state"),
        )
        self.tabs = WebSessions()

    # -- pages --------------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        meta = await self._metadata()
        self._release_gone_sessions()
        ws = self.tabs.add(secrets.token_urlsafe(12))
        return await self._page(request, ws, meta=meta)

    def _release_gone_sessions(self) -> None:
        lister = getattr(self.server, "list_sessions", None)
        if callable(lister):
            self.tabs.release_missing({s.get("session_id") for s in lister()})

    async def _acquire(self, ws: WebSession) -> str:
        """The tab's pool session, opened on first use (a page view alone holds no capacity).

        A reloaded tab's old session may still be closing, so a full pool is retried briefly.
        """
        if ws.pool_id is not None:
            return ws.pool_id
        for attempt in range(OPEN_RETRIES):
            try:
                ws.pool_id = await self.server.open_session(kind="web")
                return ws.pool_id
            except CapacityError:
                if attempt == OPEN_RETRIES - 1:
                    raise
                await asyncio.sleep(OPEN_RETRY_DELAY_S)
        raise AssertionError("unreachable")

    async def static(self, request: Request, path: str) -> Response:
        return assets.static_response(path, request.query_params.get("v"))

    # -- fragments ----------------------------------------------------------------------------

    async def step(self, request: Request, sid: str) -> Response:
        ws = self.tabs.get(sid)
        if ws is None:
            return await self._gone(request, sid)
        form = form_lists(await request.form())
        editor, action = read_action(self.views.action_node, form)
        if action is None:
            return await self._editor_reply(request, ws, editor, 422)
        if ws.pool_id is None:
            notice = Notice("error", "No episode yet", "Press Reset to start one.", code="STEP_BEFORE_RESET")
            return await self._obs_reply(request, ws, 409, notice)
        started = time.perf_counter()
        try:
            payload = await self.server.step(ws.pool_id, action)
        except ActionValidationError as exc:
            return await self._editor_reply(request, ws, self.views.editor_errors(editor, action, exc.errors), 422)
        except SessionNotFoundError:
            ws.pool_id = None
            return await self._obs_reply(request, ws, 410, _ended())
        except OpenEnvError as exc:
            return await self._obs_reply(request, ws, _STATUS.get(exc.code, 500), _failure("Step failed", exc))
        latency = (time.perf_counter() - started) * 1000
        ws.record("step", action, payload, latency)
        return await self._obs_reply(request, ws, 200, None, editor=editor)

    async def reset(self, request: Request, sid: str) -> Response:
        ws = self.tabs.get(sid)
        if ws is None:
            return await self._gone(request, sid)
        form = form_lists(await request.form())
        reset_editor, kwargs = read_reset(self.views.reset_node, form)
        if kwargs is None:
            return await self._reset_reply(request, ws, reset_editor, 422)
        started = time.perf_counter()
        try:
            payload = await self._reset(ws, kwargs)
        except ActionValidationError as exc:
            errors = self.views.reset_errors(reset_editor, kwargs, exc.errors)
            return await self._reset_reply(request, ws, errors, 422)
        except CapacityError as exc:
            notice = Notice("error", "All sessions are busy", _cap_message(exc), code=exc.code)
            return await self._obs_reply(request, ws, 503, notice)
        except OpenEnvError as exc:
            return await self._obs_reply(request, ws, _STATUS.get(exc.code, 500), _failure("Reset failed", exc))
        ws.record("reset", kwargs, payload, (time.perf_counter() - started) * 1000)
        return await self._obs_reply(request, ws, 200, None, reset_editor=reset_editor)

    async def _reset(self, ws: WebSession, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Reset in the tab's session; a session reaped meanwhile is replaced by a new one."""
        for attempt in range(2):
            try:
                return await self.server.reset(await self._acquire(ws), kwargs)
            except SessionNotFoundError:
                ws.pool_id = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def state(self, request: Request, sid: str) -> Response:
        ws = self.tabs.get(sid)
        if ws is None:
            return await self._gone(request, sid)
        ctx = self._ctx(request, ws, state=await self._state_view(request, ws))
        return HTMLResponse(render("_state.html", **ctx))

    async def history_item(self, request: Request, sid: str, index: int) -> Response:
        ws = self.tabs.get(sid)
        if ws is None:
            return await self._gone(request, sid)
        record = ws.find(index)
        if record is None:
            notice = Notice("info", "That entry is no longer kept", "only the latest steps are kept")
            return await self._obs_reply(request, ws, 404, notice)
        return await self._obs_reply(request, ws, 200, None, record=record)

    async def value(self, request: Request, sid: str, index: int) -> Response:
        view = self.views.full_value(self.tabs.get(sid), index, request.query_params.get("path", ""))
        if view is None:
            return HTMLResponse('<p class="muted value">This value is no longer kept.</p>', status_code=404)
        more = self.views.more_url(request, sid, index)
        return HTMLResponse(render("_value_fragment.html", request=request, view=view, more_url=more))

    async def editor(self, request: Request, sid: str) -> Response:
        ws = self.tabs.get(sid)
        if ws is None:
            return await self._gone(request, sid)
        form = form_lists(await request.form())
        editor = self.views.switch_editor(form, request.query_params.get("to", "form"))
        return HTMLResponse(render("_action_editor.html", **self._ctx(request, ws, editor=editor)))

    async def close(self, request: Request, sid: str) -> Response:
        ws = self.tabs.get(sid)
        if ws is not None:
            self.tabs.drop(sid)
            if ws.pool_id is not None:
                try:
                    await self.server.close_session(ws.pool_id)
                except SessionNotFoundError:
                    pass
        return Response(status_code=204)

    # -- rendering helpers --------------------------------------------------------------------

    def _ctx(self, request: Request, ws: WebSession, **extra: Any) -> dict[str, Any]:
        ctx: dict[str, Any] = {"request": request, "sid": ws.id, "ws": ws, "oob": False, "current": None,
                               "summarize": self.views.summarize, "obs_help": self.views.obs_help,
                               "mcp_panel": getattr(self, "mcp_panel", None)}
        ctx.update(extra)
        return ctx

    async def _page(self, request: Request, ws: WebSession, *, meta: dict[str, Any] | None = None,
                    status: int = 200, editor: Editor | None = None, reset_editor: Editor | None = None,
                    notice: Notice | None = None) -> Response:
        obs = self.views.observation(request, ws, None, notice)
        ctx = self._ctx(
            request, ws, meta=meta or await self._metadata(), page_notice=None, obs=obs,
            editor=editor or self.views.fresh_editor(), reset=reset_editor or self.views.fresh_reset(),
            state=await self._state_view(request, ws), current=obs.record.index if obs.record else None,
        )
        return HTMLResponse(render("env_page.html", **ctx), status_code=status)

    async def _obs_reply(self, request: Request, ws: WebSession, status: int, notice: Notice | None, *,
                         record: Any = None, editor: Editor | None = None,
                         reset_editor: Editor | None = None) -> Response:
        if not _is_htmx(request):
            return await self._page(request, ws, status=status, editor=editor, reset_editor=reset_editor,
                                    notice=notice)
        obs = self.views.observation(request, ws, record, notice)
        current = obs.record.index if obs.record else None
        ctx = self._ctx(request, ws, obs=obs, oob=True, current=current)
        body = render("_observation.html", **ctx) + render("_history.html", **ctx)
        headers = {"HX-Trigger": "openenv:changed"} if status == 200 and record is None else {}
        return HTMLResponse(body, status_code=status, headers=headers)

    async def _editor_reply(self, request: Request, ws: WebSession, editor: Editor, status: int) -> Response:
        if not _is_htmx(request):
            return await self._page(request, ws, status=status, editor=editor)
        html = render("_action_editor.html", **self._ctx(request, ws, editor=editor))
        headers = {"HX-Retarget": "#action-editor", "HX-Reswap": "outerHTML"}
        return HTMLResponse(html, status_code=status, headers=headers)

    async def _reset_reply(self, request: Request, ws: WebSession, editor: Editor, status: int) -> Response:
        if not _is_htmx(request):
            return await self._page(request, ws, status=status, reset_editor=editor)
        html = render("_reset_editor.html", **self._ctx(request, ws, reset=editor))
        headers = {"HX-Retarget": "#reset-editor", "HX-Reswap": "outerHTML"}
        return HTMLResponse(html, status_code=status, headers=headers)

    async def _state_view(self, request: Request, ws: WebSession) -> Any:
        if ws.pool_id is None:
            return self.views.state(request, ws, None, None)
        try:
            data = await self.server.state(ws.pool_id)
        except SessionNotFoundError:
            ws.pool_id = None
            return self.views.state(request, ws, None, _ended())
        except OpenEnvError as exc:
            return self.views.state(request, ws, None, _failure("State unavailable", exc))
        return self.views.state(request, ws, data, None)

    async def _gone(self, request: Request, sid: str) -> Response:
        self.tabs.drop(sid)
        notice = _expired(request)
        if not _is_htmx(request):
            return self._error_page(request, 410, notice.title, notice.message)
        html = render("_notice_fragment.html", request=request, n=notice)
        return HTMLResponse(html, status_code=410, headers={"HX-Retarget": "#observation", "HX-Reswap": "innerHTML"})

    def _error_page(self, request: Request, status: int, title: str, message: str) -> Response:
        html = render("error.html", request=request, title=title, message=message,
                      retry=url(request, "web_page"))
        return HTMLResponse(html, status_code=status)

    async def _metadata(self) -> dict[str, Any]:
        try:
            meta = self.server.metadata()
            meta = await meta if inspect.isawaitable(meta) else meta
        except OpenEnvError as exc:
            log.warning("metadata unavailable: %s", exc.message)
            meta = {}
        meta = dict(meta or {})
        if getattr(self.server, "env_name", None):  # the page is titled by the served name (/metadata: the env's)
            meta["name"] = self.server.env_name
        meta.setdefault("name", "Environment")
        for key in ("description", "version", "readme_content"):
            meta.setdefault(key, None)
        return meta


def _is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"


def _failure(title: str, exc: OpenEnvError) -> Notice:
    return Notice("error", title, exc.message, code=exc.code)


def _ended() -> Notice:
    return Notice("error", "This tab's session has ended",
                  "It was idle too long or was closed. Press Reset to start a new one.", code="SESSION_ERROR")


def _expired(request: Request) -> Notice:
    return Notice("error", "This page is out of date",
                  "The server no longer knows this tab (it restarted, or the tab was closed).",
                  code="SESSION_ERROR", reload=url(request, "web_page"))


def _cap_message(exc: OpenEnvError) -> str:
    details = getattr(exc, "details", {}) or {}
    active, cap = details.get("active_sessions"), details.get("max_sessions")
    suffix = f" ({active} of {cap} in use)" if active is not None and cap is not None else ""
    return f"The environment has no free session{suffix}. Close another tab or try again later."


def _guarded(handler: Callable[..., Awaitable[Response]]) -> Callable[..., Awaitable[Response]]:
    """Answer any failure as a readable message (``webui.fragment_errors``): a bad request keeps its
    4xx, an unexpected failure is logged with its traceback (never shown) and answered 500."""

    @functools.wraps(handler)
    async def run(request: Request, **params: Any) -> Response:
        try:
            return await handler(request, **params)
        except Exception as exc:
            status, title, message, code = describe(exc)
            if status >= 500:
                log.exception("/web handler %s failed", handler.__name__)
                title, message, code = "Something went wrong on the server", "The error was logged.", "INTERNAL_ERROR"
            if _is_htmx(request):
                return error_fragment(request, status, title, message, code=code)
            html = render("error.html", request=request, title=title, message=message, retry=url(request, "web_page"))
            return HTMLResponse(html, status_code=status)

    return run


def build_env_page_router(server: Any) -> APIRouter:
    """The ``/web`` routes for ``server`` (an ``HTTPEnvServer``)."""
    page = EnvPage(server)
    router = APIRouter(prefix="/web", include_in_schema=False)

    def add(path: str, handler: Callable[..., Awaitable[Response]], **options: Any) -> None:
        router.add_api_route(path, _guarded(handler), **options)

    add("", page.index, methods=["GET"], name="web_page")
    add("/", page.index, methods=["GET"], name="web_page_slash")
    add("/static/{path:path}", page.static, methods=["GET", "HEAD"], name=assets.STATIC_ROUTE)
    add("/s/{sid}/step", page.step, methods=["POST"], name="web_step")
    add("/s/{sid}/reset", page.reset, methods=["POST"], name="web_reset")
    add("/s/{sid}/state", page.state, methods=["GET"], name="web_state")
    add("/s/{sid}/history/{index}", page.history_item, methods=["GET"], name="web_history_item")
    add("/s/{sid}/value/{index}", page.value, methods=["GET"], name="web_value")
    add("/s/{sid}/editor", page.editor, methods=["POST"], name="web_editor")
    add("/s/{sid}/close", page.close, methods=["POST"], name="web_close")
    from webui.mcp_panel import install as install_mcp_panel

    page.mcp_panel = install_mcp_panel(page, add)
    return router
