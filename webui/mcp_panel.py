"""MCP tools and an environment's own web view on the ``/web`` page.

* An MCP environment's tools, each with a form generated from its ``input_schema`` by
  ``webui.forms``; a call goes through ``step`` (``{"type": "call_tool", ...}``), so it is recorded
  in the tab's history like any step, and its result or tool error is shown beside the form.
* ``render_web(observation)`` HTML, shown in a sandboxed frame (``sandbox=""``: no scripts, no
  forms, no same-origin access), and ``web_actions(observation)`` as one-click buttons.

Installed by ``webui.env_page.build_env_page_router`` through :func:`install`; nothing here is
used for an environment that has neither tools nor web hooks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from openenv.core.errors import ActionValidationError, OpenEnvError, SessionNotFoundError
from webui.env_views import form_lists
from webui.forms import Bound, Node, attach_errors, bind, build_form, parse_form
from webui.fragment_errors import error_fragment
from webui.templating import render

__all__ = ["McpPanel", "flat_observation", "install"]

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}  # a tool that lists no input schema
log = logging.getLogger("openenv.webui")


@dataclass
class ToolForm:
    """One tool: its name, description, form tree and the prefix of its fields."""

    index: int
    name: str
    description: str
    node: Node

    @property
    def prefix(self) -> str:
        return f"t{self.index}"

    def bound(self, value: Any = None) -> Bound:
        return bind(self.node, value, prefix=self.prefix) if value is not None else bind(self.node, prefix=self.prefix)


def _overrides(cls: Any, name: str) -> bool:
    from openenv.core.env_server.interfaces import Environment

    impl = getattr(cls, name, None)
    return callable(impl) and impl is not getattr(Environment, name, None)


def flat_observation(payload: dict[str, Any] | None) -> dict[str, Any]:
    """What ``render_web``/``web_actions`` are given: the wire observation plus reward and done."""
    if not payload:
        return {}
    obs = dict(payload.get("observation") or {})
    obs.update(reward=payload.get("reward"), done=payload.get("done", False))
    if payload.get("metadata"):
        obs.setdefault("metadata", payload["metadata"])
    return obs


class McpPanel:
    """Routes of the tools panel and the web view for one ``EnvPage``."""

    def __init__(self, page: Any, *, tools: bool, web_view: bool) -> None:
        self.page = page
        self.server = page.server
        self.has_tools = tools
        self.has_web_view = web_view
        self._forms: list[ToolForm] | None = None
        self._actions: dict[str, list[tuple[str, dict[str, Any]]]] = {}

    # -- the tools ------------------------------------------------------------------------

    async def forms(self) -> list[ToolForm]:
        """The tools' forms (listed once from a throwaway environment, then kept)."""
        if self._forms is None:
            reply = await self.server.mcp.handle({"jsonrpc": "2.0", "method": "tools/list", "id": 1})
            if "error" in reply:
                raise OpenEnvError(reply["error"].get("message", "tools/list failed"), code="MCP_ERROR")
            tools = reply["result"]["tools"]
            self._forms = [
                ToolForm(i, t["name"], t.get("description") or "", build_form(t.get("inputSchema") or NO_ARGUMENTS))
                for i, t in enumerate(tools)
            ]
        return self._forms

    async def tools(self, request: Request, sid: str) -> Response:
        ws = self.page.tabs.get(sid)
        if ws is None:
            return await self.page._gone(request, sid)
        try:
            forms = await self.forms()
        except OpenEnvError as exc:
            return HTMLResponse(render("_mcp_tools.html", request=request, sid=sid, forms=[], problem=exc.message))
        bound = {f.name: f.bound() for f in forms}
        return HTMLResponse(render("_mcp_tools.html", request=request, sid=sid, forms=forms, bound=bound, problem=None))

    async def call(self, request: Request, sid: str, index: int) -> Response:
        ws = self.page.tabs.get(sid)
        if ws is None:
            return await self.page._gone(request, sid)
        forms = await self.forms()
        if not 0 <= index < len(forms):
            return error_fragment(request, 404, "Not found", f"There is no tool number {index}; reload the page.")
        tool = forms[index]
        data = form_lists(await request.form())
        value, errors = parse_form(tool.node, data, prefix=tool.prefix)
        if errors or not isinstance(value, dict):
            return self._tool_reply(request, sid, tool, value, errors or [{"loc": [], "msg": "The arguments must be an object"}])
        action = {"type": "call_tool", "tool_name": tool.name, "arguments": value}
        return await self._step(request, ws, action, tool=tool)

    def _tool_reply(self, request: Request, sid: str, tool: ToolForm, value: Any, errors: list[dict[str, Any]]) -> Response:
        bound = tool.bound(value)
        loose = attach_errors(bound, errors)
        html = render("_mcp_tool_form.html", request=request, sid=sid, tool=tool, b=bound, loose=loose)
        headers = {"HX-Retarget": f"#mcp-tool-{tool.index}", "HX-Reswap": "outerHTML"}
        return HTMLResponse(html, status_code=422, headers=headers)

    # -- the web view ---------------------------------------------------------------------

    def _session(self, ws: Any) -> Any:
        if ws.pool_id is None:
            return None
        try:
            return self.server.sessions.get(ws.pool_id)
        except SessionNotFoundError:
            return None

    async def view(self, request: Request, sid: str) -> Response:
        ws = self.page.tabs.get(sid)
        if ws is None:
            return await self.page._gone(request, sid)
        session = self._session(ws)
        view: dict[str, Any] = {"html": None, "actions": [], "problem": None}
        if session is not None:
            obs = flat_observation(ws.latest.payload if ws.latest else None)
            view = await self.server.dispatcher.web_view(session, {"observation": obs})
        actions = [(a["label"], a["action"]) for a in view["actions"]]
        self._actions[sid] = actions
        return HTMLResponse(
            render("_web_view.html", request=request, sid=sid, html=view["html"], actions=actions, problem=view["problem"])
        )

    async def act(self, request: Request, sid: str, index: int) -> Response:
        ws = self.page.tabs.get(sid)
        if ws is None:
            return await self.page._gone(request, sid)
        actions = self._actions.get(sid) or []
        if not 0 <= index < len(actions):
            return error_fragment(request, 409, "Conflict", "That action is no longer offered; pick one the view shows now.")
        return await self._step(request, ws, actions[index][1])

    # -- one step, recorded -----------------------------------------------------------------

    async def _step(self, request: Request, ws: Any, action: dict[str, Any], *, tool: ToolForm | None = None) -> Response:
        from webui.env_page import _STATUS, _failure

        started = time.perf_counter()
        try:
            pool_id = await self.page._acquire(ws)
            payload = await self.server.step(pool_id, action)
        except ActionValidationError as exc:
            return await self.page._obs_reply(request, ws, 422, _failure("Action refused", exc))
        except SessionNotFoundError:
            ws.pool_id = None
            return await self.page._obs_reply(request, ws, 410, _failure("Session ended", SessionNotFoundError("Press Reset")))
        except OpenEnvError as exc:
            return await self.page._obs_reply(request, ws, _STATUS.get(exc.code, 500), _failure("Call failed", exc))
        ws.record("step", action, payload, (time.perf_counter() - started) * 1000)
        reply = await self.page._obs_reply(request, ws, 200, None)
        if tool is not None and request.headers.get("HX-Request") == "true":
            obs = payload.get("observation") or {}
            result = render("_mcp_result.html", request=request, tool=tool, obs=obs, oob=True)
            hx = {k: v for k, v in reply.headers.items() if k.lower().startswith("hx-")}
            return HTMLResponse(bytes(reply.body).decode() + result, status_code=200, headers=hx)
        return reply


def install(page: Any, add: Callable[..., None]) -> McpPanel | None:
    """Add the panel's routes when the environment has MCP tools or web hooks; returns the panel."""
    from openenv.core.env_server.mcp_routes import is_mcp_env

    cls = page.server.env_cls
    tools = cls is not None and is_mcp_env(cls) and getattr(page.server, "mcp", None) is not None
    web_view = cls is not None and (_overrides(cls, "render_web") or _overrides(cls, "web_actions"))
    if not (tools or web_view):
        return None
    panel = McpPanel(page, tools=tools, web_view=web_view)
    handlers: list[tuple[str, Callable[..., Awaitable[Response]], str, str]] = [
        ("/s/{sid}/mcp/tools", panel.tools, "GET", "web_mcp_tools"),
        ("/s/{sid}/mcp/call/{index}", panel.call, "POST", "web_mcp_call"),
        ("/s/{sid}/view", panel.view, "GET", "web_view"),
        ("/s/{sid}/view/act/{index}", panel.act, "POST", "web_view_act"),
    ]
    for path, handler, method, name in handlers:
        add(path, handler, methods=[method], name=name)
    return panel
