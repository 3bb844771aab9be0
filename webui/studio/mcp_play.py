"""MCP tools on the studio's Play page: listed from the runtime's ``POST /mcp``, one generated
form each, every call sent as a ``call_tool`` step through the recorder (so it is stored like any
step before it is shown), its result or tool error shown beside the form.

The tools of a play session are read once (``tools/list``); a runtime that is not an MCP
environment answers the JSON-RPC error and the page shows no tools panel.
"""

from __future__ import annotations

import httpx
from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from openenv.core.errors import ActionValidationError, OpenEnvError
from webui.env_views import form_lists
from webui.forms import attach_errors, build_form, parse_form
from webui.mcp_panel import NO_ARGUMENTS, ToolForm
from webui.studio.errors import NotFoundError
from webui.studio.play import PlaySession
from webui.studio.rendering import is_htmx, render_studio
from webui.studio.state import studio_of

__all__ = ["router", "tool_forms"]

router = APIRouter()
_TOOLS: dict[str, list[ToolForm]] = {}  # play session id -> its tools' forms
_MAX_KEPT = 256


async def tool_forms(ps: PlaySession) -> list[ToolForm]:
    """The runtime's tools as forms (``[]`` for a non-MCP environment)."""
    if ps.id in _TOOLS:
        return _TOOLS[ps.id]
    body = {"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}
    try:
        async with httpx.AsyncClient(timeout=10.0, trust_env=False, headers=ps.headers) as http:
            reply = (await http.post(ps.base_url.rstrip("/") + "/mcp", json=body)).json()
    except (httpx.HTTPError, ValueError):
        reply = {}
    tools = (reply.get("result") or {}).get("tools") if isinstance(reply, dict) else None
    forms = [
        ToolForm(i, t["name"], t.get("description") or "", build_form(t.get("inputSchema") or NO_ARGUMENTS))
        for i, t in enumerate(tools or [])
        if isinstance(t, dict) and t.get("name")
    ]
    if len(_TOOLS) >= _MAX_KEPT:
        _TOOLS.pop(next(iter(_TOOLS)))
    _TOOLS[ps.id] = forms
    return forms


def missing_required(tool: ToolForm, value: object) -> list[dict[str, object]]:
    """Errors for the tool's required arguments left out (the call is not sent, nor recorded)."""
    if not isinstance(value, dict):
        return []
    return [{"loc": [child.key], "msg": "Field required", "type": "missing"}
            for child in tool.node.children or [] if child.required and child.key is not None and child.key not in value]


@router.get("/play/s/{sid}/mcp/tools", name="web_mcp_tools")
async def play_tools(request: Request, sid: str) -> Response:
    ps = studio_of(request).plays.get(sid)
    forms = await tool_forms(ps)
    if not forms:
        return HTMLResponse("")
    bound = {f.name: f.bound() for f in forms}
    html = render_studio("_mcp_tools.html", request, sid=sid, forms=forms, bound=bound, problem=None)
    return HTMLResponse(f'<div id="mcp-panel" class="panel">{html}</div>')


@router.post("/play/s/{sid}/mcp/call/{index}", name="web_mcp_call")
async def play_call(request: Request, sid: str, index: int) -> Response:
    from webui.studio.routes.play import _failure, _reply

    studio = studio_of(request)
    ps = studio.plays.get(sid)
    forms = await tool_forms(ps)
    if not 0 <= index < len(forms):
        raise NotFoundError(f"This environment has no tool number {index}; reload the page.", what="tool")
    tool = forms[index]
    value, errors = parse_form(tool.node, form_lists(await request.form()), prefix=tool.prefix)
    errors = errors or missing_required(tool, value)
    if errors or not isinstance(value, dict):
        bound = tool.bound(value)
        loose = attach_errors(bound, errors or [{"loc": [], "msg": "The arguments must be an object"}])
        html = render_studio("_mcp_tool_form.html", request, sid=sid, tool=tool, b=bound, loose=loose)
        return HTMLResponse(html, status_code=422, headers={"HX-Retarget": f"#mcp-tool-{tool.index}", "HX-Reswap": "outerHTML"})
    action = {"type": "call_tool", "tool_name": tool.name, "arguments": value}
    try:
        payload = await studio.plays.step(ps, action)
    except (ActionValidationError, OpenEnvError) as exc:
        status, notice = _failure("Tool call failed", exc)
        return await _reply(request, ps, status, notice)
    reply = await _reply(request, ps, 200)
    if not is_htmx(request):
        return reply
    obs = payload.get("observation")
    obs = obs.model_dump(mode="json") if hasattr(obs, "model_dump") else (obs or {})
    result = render_studio("_mcp_result.html", request, tool=tool, obs=obs, oob=True)
    hx = {k: v for k, v in reply.headers.items() if k.lower().startswith("hx-")}  # the State panel and view reload
    return HTMLResponse(bytes(reply.body).decode() + result, status_code=200, headers=hx)
