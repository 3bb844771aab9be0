"""The direct ``tools/call`` path (``mcp_direct``) answers exactly as FastMCP's full ``call_tool``.

Every scenario runs the same JSON-RPC requests twice, on a fresh environment each time, with the
direct path allowed and with it switched off, and compares the serialised replies byte for byte
(and, in process, the ``ToolResult`` or exception of ``server.call_tool`` against
``mcp_direct.call_tool``). Each scenario also states which calls must take the direct path, so a
fastmcp change that silently disables it is noticed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_context
from fastmcp.server.middleware import Middleware
from fastmcp.tools.base import ToolResult
from mcp.types import TextContent
from pydantic import BaseModel
from websockets.sync.client import connect

from openenv.core.env_server import mcp_direct
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State
from openenv.core.wire import dumps
from tests.server_utils import running_server

pytestmark = pytest.mark.skipif(not mcp_direct.enabled(), reason="direct path off for this fastmcp")


class Item(BaseModel):
    name: str
    qty: int = 1


def plain_server(**options: Any) -> FastMCP:
    """Tools of every shape: sync/async, str/dict/model/list/None, raising, with a Context."""
    mcp = FastMCP("direct", **options)

    @mcp.tool
    def text(message: str) -> str:
        """Echo."""
        return message

    @mcp.tool
    async def atext(message: str) -> str:
        await asyncio.sleep(0)
        return message.upper()

    @mcp.tool
    def as_dict(n: int) -> dict:
        return {"n": n, "square": n * n}

    @mcp.tool
    def untyped(n: int):  # no return annotation: no output schema
        return {"n": n}

    @mcp.tool
    def untyped_text(n: int):
        return f"n={n}"

    @mcp.tool
    def model(name: str, qty: int = 1) -> Item:
        return Item(name=name, qty=qty)

    @mcp.tool
    async def items(k: int) -> list[Item]:
        return [Item(name=str(i), qty=i) for i in range(k)]

    @mcp.tool
    def nothing() -> None:
        return None

    @mcp.tool
    def number(a: float, b: float = 1.0) -> float:
        return a + b

    @mcp.tool
    def nested(item: Item, tags: list[str] | None = None) -> str:
        return f"{item.name}x{item.qty} {tags}"

    @mcp.tool
    def block() -> TextContent:
        return TextContent(type="text", text="a block")

    @mcp.tool
    def full_result() -> ToolResult:
        return ToolResult(content=[TextContent(type="text", text="raw")], structured_content={"k": 1})

    @mcp.tool
    def fail(reason: str) -> str:
        raise ValueError(f"refused: {reason}")

    @mcp.tool
    async def afail(reason: str) -> str:
        raise RuntimeError(f"async refused: {reason}")

    @mcp.tool
    def tool_error(reason: str) -> str:
        raise ToolError(f"told: {reason}")

    @mcp.tool
    def body_invalid() -> str:
        Item.model_validate({"qty": "many"})
        return "unreachable"

    @mcp.tool
    def with_ctx(message: str, ctx: Context) -> dict:
        return {"message": message, "current": get_context() is ctx, "server": ctx.fastmcp.name,
                "no_request": ctx.request_context is None}

    @mcp.tool
    def ctx_request_id(ctx: Context) -> str:
        return str(ctx.request_id)  # raises outside an MCP request, on both paths

    @mcp.tool
    async def actx(message: str, ctx: Context) -> str:
        await ctx.set_state("k", message, serializable=False)
        await ctx.info("logged")
        return str(await ctx.get_state("k"))

    @mcp.tool
    def reads_context() -> str:
        return get_context().fastmcp.name

    @mcp.tool(timeout=5)
    async def timed(message: str) -> str:
        return message

    @mcp.tool(run_in_thread=False)
    def inline(message: str) -> str:
        return message * 2

    return mcp


def call(name: str, arguments: Any = None, **params: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, **params}
    if arguments is not None:
        body["arguments"] = arguments
    return {"jsonrpc": "2.0", "method": "tools/call", "id": 7, "params": body}


GOOD = [
    call("text", {"message": "hi"}), call("atext", {"message": "hi"}), call("as_dict", {"n": 3}),
    call("untyped", {"n": 2}), call("untyped_text", {"n": 2}), call("model", {"name": "a", "qty": 2}),
    call("items", {"k": 2}), call("nothing"), call("nothing", {}), call("number", {"a": 1}),
    call("number", {"a": 1, "b": 2.5}), call("nested", {"item": {"name": "n"}, "tags": ["x"]}), call("block"),
    call("full_result"), call("with_ctx", {"message": "c"}), call("ctx_request_id"), call("actx", {"message": "s"}), call("reads_context"),
    call("timed", {"message": "t"}), call("inline", {"message": "i"}), call("number", {"a": "2"}),  # lax coercion, as FastMCP does
]
CONTEXT_PARAMETER_TOOLS = {"with_ctx", "ctx_request_id", "actx"}
FAILING = [
    call("fail", {"reason": "x"}), call("afail", {"reason": "y"}), call("tool_error", {"reason": "z"}),
    call("body_invalid"),
]
BAD_ARGUMENTS = [
    call("text"), call("text", {}), call("text", {"message": 3}), call("text", {"message": "a", "extra": 1}),
    call("number", {"a": "nope"}), call("nested", {"item": {"qty": 2}}), call("nested", {"item": "flat"}),
    call("model", {"name": "a", "qty": 1.5}), call("with_ctx", {}), call("text", ["not", "an", "object"]),
]
UNKNOWN = [call("missing"), call("0123456789ab_text"), call("")]


class DirectEnv(MCPEnvironment):
    """An MCP environment around ``BUILD()`` (set by each test)."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    BUILD: Callable[[], FastMCP] = plain_server

    def __init__(self) -> None:
        super().__init__(type(self).BUILD())
        self._state = State(episode_id="e")

    def reset(self, seed=None, episode_id=None, **kwargs):
        return Observation(done=False, reward=0.0)

    def _step_impl(self, action, timeout_s=None, **kwargs):
        return Observation(done=False, reward=0.0)

    @property
    def state(self):
        return self._state


_DIRECT_TOOL = mcp_direct.direct_tool


def _track(monkeypatch) -> list[tuple[str, bool]]:
    taken: list[tuple[str, bool]] = []

    def spy(server: Any, name: str) -> Any:
        tool = _DIRECT_TOOL(server, name)
        taken.append((name, tool is not None))
        return tool

    monkeypatch.setattr(mcp_direct, "direct_tool", spy)
    return taken


def _replies(monkeypatch, build, steps: list[Any], *, direct: bool) -> tuple[list[bytes], list[tuple[str, bool]]]:
    """Serialised JSON-RPC replies of ``steps`` (requests, or callables given the env) on one session."""
    monkeypatch.setattr(DirectEnv, "BUILD", staticmethod(build))
    monkeypatch.setattr(mcp_direct, "_ENABLED", direct)
    taken = _track(monkeypatch)

    async def go() -> list[bytes]:
        app = create_app(DirectEnv, CallToolAction, CallToolObservation, env_name="direct", web=False)
        server = app.state.env_server
        created = await server.mcp.handle({"jsonrpc": "2.0", "method": "openenv/session/create", "id": 0})
        sid = created["result"]["session_id"]
        env = server.sessions.get(sid).env
        out = []
        try:
            for step in steps:
                if callable(step):
                    step(env)
                    continue
                request = json.loads(json.dumps(step))
                if isinstance(request["params"], dict):
                    request["params"]["session_id"] = sid
                out.append(dumps(await server.mcp.handle(request)))
        finally:
            await server.sessions.close_all()
        return out

    return asyncio.run(go()), taken


def _same_both_ways(monkeypatch, build, steps) -> list[tuple[str, bool]]:
    direct, taken = _replies(monkeypatch, build, steps, direct=True)
    full, untaken = _replies(monkeypatch, build, steps, direct=False)
    assert not any(took for _, took in untaken)
    for d, f in zip(direct, full, strict=True):
        assert d == f
    return taken


def test_results_errors_and_bad_arguments_are_the_full_paths(monkeypatch):
    ran: list[str] = []
    run_tool = mcp_direct.run_tool

    async def spy(server: Any, tool: Any, name: str, arguments: dict[str, Any]) -> Any:
        ran.append(name)
        return await run_tool(server, tool, name, arguments)

    monkeypatch.setattr(mcp_direct, "run_tool", spy)
    taken = _same_both_ways(monkeypatch, plain_server, GOOD + FAILING + BAD_ARGUMENTS + UNKNOWN)
    direct = {name for name, took in taken if took}
    found = {r["params"]["name"] for r in GOOD + FAILING + BAD_ARGUMENTS
             if r["params"].get("arguments", {}) != ["not", "an", "object"]}
    assert direct == found
    # A tool with a ``Context`` parameter is found like any other, then runs in the session's
    # in-memory client session (its state persists per session, as on 0.10): it never runs on the
    # direct path, on purpose.
    assert set(ran) == found - CONTEXT_PARAMETER_TOOLS
    assert not any(took for name, took in taken if name in {"missing", "0123456789ab_text", ""})


def test_masked_error_details(monkeypatch):
    taken = _same_both_ways(monkeypatch, lambda: plain_server(mask_error_details=True), FAILING + [GOOD[0]])
    assert all(took for _, took in taken)


def test_a_call_tool_middleware_takes_the_full_path_and_runs(monkeypatch):
    seen: list[str] = []

    class Shout(Middleware):
        async def on_call_tool(self, context, call_next):
            seen.append(context.message.name)
            result = await call_next(context)
            result.content[0].text = result.content[0].text + "!"
            return result

    def build() -> FastMCP:
        server = plain_server()
        server.add_middleware(Shout())
        return server

    taken = _same_both_ways(monkeypatch, build, [call("text", {"message": "hi"}), call("fail", {"reason": "r"})])
    assert not any(took for _, took in taken)
    assert seen == ["text", "fail"] * 2


@pytest.mark.parametrize("hook", ["on_message", "on_request"])
def test_a_message_or_request_middleware_takes_the_full_path(monkeypatch, hook):
    seen: list[str] = []

    async def watch(self, context, call_next):
        seen.append(context.method)
        return await call_next(context)

    def build() -> FastMCP:
        server = plain_server()
        server.add_middleware(type("Watch", (Middleware,), {hook: watch})())
        return server

    taken = _same_both_ways(monkeypatch, build, [call("text", {"message": "hi"})])
    assert not any(took for _, took in taken) and seen.count("tools/call") == 2


def test_a_list_only_middleware_keeps_the_direct_path(monkeypatch):
    class Listing(Middleware):
        async def on_list_tools(self, context, call_next):
            return await call_next(context)

    def build() -> FastMCP:
        server = plain_server()
        server.add_middleware(Listing())
        return server

    taken = _same_both_ways(monkeypatch, build, [call("text", {"message": "hi"}), call("fail", {"reason": "r"})])
    assert all(took for _, took in taken)


def test_tools_added_removed_and_disabled_after_start(monkeypatch):
    def add(env: Any) -> None:
        @env.mcp_server.tool
        def late(x: int) -> int:
            return x * 10

    def remove(env: Any) -> None:
        env.mcp_server.local_provider.remove_tool("text")

    def disable(env: Any) -> None:
        env.mcp_server.disable(names={"atext"})

    def enable(env: Any) -> None:
        env.mcp_server.enable(names={"atext"})

    steps = [
        call("late", {"x": 1}), add, call("late", {"x": 2}), call("text", {"message": "a"}), remove,
        call("text", {"message": "b"}), call("atext", {"message": "c"}), disable, call("atext", {"message": "d"}),
        call("late", {"x": 3}), enable, call("atext", {"message": "e"}),
    ]
    taken = _same_both_ways(monkeypatch, plain_server, steps)
    assert taken == [("late", False), ("late", True), ("text", True), ("text", False), ("atext", True),
                     ("atext", False), ("late", False), ("atext", False)]


def test_hidden_versioned_authorised_and_mounted_tools_take_the_full_path(monkeypatch):
    def build() -> FastMCP:
        server = plain_server()

        @server.tool(meta={"fastmcp": {"app": "ui"}, "ui": {"visibility": ["app"]}})
        def app_only() -> str:
            return "app"

        @server.tool(version="1")
        def versioned() -> str:
            return "v1"

        @server.tool(name="versioned", version="2")
        def versioned_two() -> str:
            return "v2"

        @server.tool(auth=lambda ctx: False)
        def guarded() -> str:
            return "secret"

        child = FastMCP("child")

        @child.tool
        def mounted(x: int) -> int:
            return x

        server.mount(child, namespace="kid")
        return server

    steps = [call("app_only"), call("versioned"), call("guarded"), call("kid_mounted", {"x": 1}), call("text", {"message": "m"})]
    taken = _same_both_ways(monkeypatch, build, steps)
    assert not any(took for _, took in taken)  # the mount makes the whole server take the full path


def test_the_same_result_or_exception_in_process():
    async def outcome(pending: Any) -> Any:
        try:
            result = await pending
        except Exception as exc:  # compared below: type, message, cause
            cause = exc.__cause__
            return ("raised", type(exc).__name__, str(exc), type(cause).__name__ if cause else None, str(cause))
        return ("ok", [b.model_dump(mode="json") for b in result.content], result.structured_content, result.meta)

    async def go() -> None:
        server = plain_server()
        for request in GOOD + FAILING + BAD_ARGUMENTS + UNKNOWN:
            name, arguments = request["params"]["name"], request["params"].get("arguments") or {}
            if not isinstance(arguments, dict):
                continue
            full = await outcome(server.call_tool(name, arguments))
            direct = await outcome(mcp_direct.call_tool(server, name, arguments))
            assert direct == full, name

    asyncio.run(go())


def test_over_http_and_websocket_byte_for_byte(monkeypatch):
    requests = [GOOD[0], GOOD[2], GOOD[5], GOOD[14], FAILING[0], BAD_ARGUMENTS[2], UNKNOWN[0]]

    def run(direct: bool) -> tuple[list[bytes], list[str]]:
        monkeypatch.setattr(mcp_direct, "_ENABLED", direct)
        monkeypatch.setattr(DirectEnv, "BUILD", staticmethod(plain_server))
        app = create_app(DirectEnv, CallToolAction, CallToolObservation, env_name="direct", web=False)
        with running_server(app) as url, httpx.Client(base_url=url, trust_env=False) as http:
            posted = [http.post("/mcp", json=r).content for r in requests]
            with connect(url.replace("http", "ws", 1) + "/ws") as ws:
                framed = []
                for r in requests:
                    ws.send(json.dumps({"type": "mcp", "data": r}))
                    framed.append(ws.recv(timeout=10))
        return posted, framed

    assert run(True) == run(False)


def test_hooks_and_wrappers_patched_in_later_take_the_full_path(monkeypatch):
    seen: list[str] = []

    async def watch(context, call_next):
        seen.append("hook")
        return await call_next(context)

    def patch_middleware(env: Any) -> None:
        env.mcp_server.middleware[0].on_call_tool = watch  # on the instance, not the class

    def wrap_call_tool(env: Any) -> None:
        server = env.mcp_server
        original = server.call_tool

        async def traced(*args: Any, **kwargs: Any) -> Any:
            seen.append("wrapper")
            return await original(*args, **kwargs)

        server.call_tool = traced

    steps = [call("text", {"message": "a"}), patch_middleware, call("text", {"message": "b"})]
    taken = _same_both_ways(monkeypatch, plain_server, steps)
    assert taken == [("text", True), ("text", False)] and seen == ["hook", "hook"]
    seen.clear()
    taken = _same_both_ways(monkeypatch, plain_server, [wrap_call_tool, call("text", {"message": "c"})])
    assert taken == [("text", False)] and seen == ["wrapper"] * 4  # the full path calls call_tool twice


def test_step_observations_are_the_full_paths(monkeypatch):
    monkeypatch.setattr(DirectEnv, "BUILD", staticmethod(plain_server))
    requests = [r for r in GOOD + FAILING + BAD_ARGUMENTS + UNKNOWN if isinstance(r["params"].get("arguments", {}), dict)]

    def observations(direct: bool) -> list[bytes]:
        monkeypatch.setattr(mcp_direct, "_ENABLED", direct)
        env = DirectEnv()
        actions = [CallToolAction(tool_name=r["params"]["name"], arguments=r["params"].get("arguments") or {}) for r in requests]
        return [dumps(env.step(action)) for action in actions]

    direct, full = observations(True), observations(False)
    assert direct == full and any(b'"data":"hi"' in obs for obs in direct)
