"""One MCP client script, run under either interpreter (ours or the published 0.10's).

``python mcp_client_script.py <base_url> <raw|client>`` prints one JSON document:
``raw`` drives POST /mcp, /ws and the WebSocket /mcp with plain JSON (httpx + websockets); ``client`` uses the
interpreter's own ``openenv.core.mcp_client.MCPToolClient``.
"""

import asyncio
import json
import sys

import httpx
import websockets

CALLS = [
    ("echo_message", {"message": "hello"}),
    ("add", {"a": 2, "b": 3.5}),
    ("add", {"a": 2}),
    ("convert", {"value": 100, "unit": "celsius"}),
    ("convert", {"value": 212, "unit": "fahrenheit", "precision": 1}),
    ("distance", {"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": 4}}),
    ("distance", {"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": 4}, "mode": "manhattan"}),
    ("call_count", {}),
]


def rpc(url, method, params=None, rid=1):
    body = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": rid}
    return httpx.post(url + "/mcp", json=body, timeout=30).json()


def tools_summary(tools):
    return [{"name": t["name"], "description": t.get("description"), "inputSchema": t.get("inputSchema")} for t in tools]


async def ws_steps(url, session_id=None):
    ws_url = url.replace("http", "ws", 1) + "/ws" + (f"?session_id={session_id}" if session_id else "")
    out = []
    async with websockets.connect(ws_url) as ws:
        frames = [{"type": "reset", "data": {}}, {"type": "step", "data": {"type": "list_tools"}}]
        frames += [{"type": "step", "data": {"type": "call_tool", "tool_name": n, "arguments": a}} for n, a in CALLS]
        frames += [{"type": "step", "data": {"type": "call_tool", "tool_name": "fail", "arguments": {"reason": "x"}}}]
        frames += [{"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1}}, "id": 5}}]
        frames += [{"type": "state"}]
        for frame in frames:
            await ws.send(json.dumps(frame))
            reply = json.loads(await ws.recv())
            data = reply["data"]
            if reply["type"] == "observation":
                obs = dict(data["observation"])
                obs.pop("metadata", None)
                if "tools" in obs:
                    obs["tools"] = [t["name"] for t in obs["tools"]]
                if obs.get("error"):
                    obs["error"] = obs["error"]["error_type"]
                data = {"observation": obs, "reward": data.get("reward"), "done": data.get("done")}
            elif reply["type"] == "state":
                data = {"step_count": data.get("step_count")}
            out.append({"type": reply["type"], "data": data})
    return out


async def ws_mcp(url):
    """The WebSocket /mcp: JSON-RPC frames on the connection's own environment."""
    out = []
    async with websockets.connect(url.replace("http", "ws", 1) + "/mcp") as ws:
        frames = [json.dumps({"jsonrpc": "2.0", "method": "tools/list", "id": 1})]
        frames += [json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": n, "arguments": a}, "id": i})
                   for i, (n, a) in enumerate(CALLS, start=2)]
        frames += ["{", json.dumps({"jsonrpc": "2.0", "method": "nope", "id": 99})]
        for frame in frames:
            await ws.send(frame)
            reply = json.loads(await ws.recv())
            if "result" in reply and "tools" in reply["result"]:
                reply["result"] = sorted(t["name"] for t in reply["result"]["tools"])
            if "error" in reply:
                reply = {"id": reply.get("id"), "error": reply["error"]["code"]}
            out.append(reply)
    return out


def raw(url):
    listed = rpc(url, "tools/list")["result"]["tools"]
    calls = [rpc(url, "tools/call", {"name": n, "arguments": a})["result"] for n, a in CALLS]
    sid = rpc(url, "openenv/session/create")["result"]["session_id"]
    in_session = [rpc(url, "tools/call", {"name": "echo_message", "arguments": {"message": "m"}, "session_id": sid})["result"]["data"] for _ in range(3)]
    in_session.append(rpc(url, "tools/call", {"name": "call_count", "session_id": sid})["result"]["data"])
    steps = asyncio.run(ws_steps(url))
    attached = asyncio.run(ws_steps(url, sid))
    closed = rpc(url, "openenv/session/close", {"session_id": sid})["result"]
    closed = {"closed": closed.get("closed"), "same_id": closed.get("session_id") == sid}
    errors = {
        "parse": httpx.post(url + "/mcp", content=b"{", headers={"content-type": "application/json"}).json()["error"]["code"],
        "method": rpc(url, "nope")["error"]["code"],
        "no_name": rpc(url, "tools/call", {"arguments": {}})["error"]["code"],
        "unknown_session": rpc(url, "tools/list", {"session_id": "nope"})["error"]["message"],
        "close_unknown": rpc(url, "openenv/session/close", {"session_id": "nope"})["error"]["message"],
        "tool_failed": "error" in rpc(url, "tools/call", {"name": "fail", "arguments": {"reason": "r"}}),
        "unknown_tool": "error" in rpc(url, "tools/call", {"name": "nope", "arguments": {}}),
        "bad_args": "error" in rpc(url, "tools/call", {"name": "add", "arguments": {"a": "x"}}),
    }
    return {"tools": tools_summary(listed), "calls": calls, "in_session": in_session, "steps": steps,
            "attached": attached, "closed": closed, "errors": errors, "ws_mcp": asyncio.run(ws_mcp(url))}


async def client(url):
    from openenv.core.mcp_client import MCPToolClient

    async with MCPToolClient(base_url=url) as env:
        names = [t.name for t in await env.list_tools()]
        values = [await env.call_tool(n, **a) for n, a in CALLS]
        reset = await env.reset()
        after = await env.call_tool("call_count")
        failures = []
        for n, a in [("fail", {"reason": "r"}), ("nope", {}), ("add", {"a": "x"})]:
            try:
                await env.call_tool(n, **a)
                failures.append(None)
            except RuntimeError:
                failures.append("RuntimeError")
        return {"names": names, "values": values, "reset_metadata": reset.observation.metadata, "after": after, "failures": failures}


if __name__ == "__main__":
    base, how = sys.argv[1], sys.argv[2]
    print(json.dumps(raw(base) if how == "raw" else asyncio.run(client(base)), sort_keys=True))
