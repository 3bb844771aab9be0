"""Drive ``mcp_context_env`` over HTTP ``/mcp`` (one session) and the WebSocket, then in process.
Prints one JSON line per call: the tool's value or its error's presence. Run under either package."""

import json
import sys

import httpx
from websockets.sync.client import connect

url = sys.argv[1]


def rpc(client, method, params, id):
    return client.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": method, "params": params, "id": id}).json()


def value(reply):
    if "error" in reply:
        return {"error": True}
    result = reply["result"]
    return result.get("data", result.get("structured_content"))


with httpx.Client(timeout=30) as client:
    sid = rpc(client, "openenv/session/create", {}, 1)["result"]["session_id"]
    for i, (name, args) in enumerate(
        [("inc_counter", {}), ("inc_counter", {}), ("logged", {"x": 3}), ("has_session", {}), ("plain", {"x": 4})]
    ):
        print(json.dumps({"via": "http", "tool": name, "value": value(rpc(client, "tools/call", {"name": name, "arguments": args, "session_id": sid}, 2 + i))}))
    rpc(client, "openenv/session/close", {"session_id": sid}, 99)

with connect(url.replace("http", "ws", 1) + "/ws", open_timeout=30) as ws:
    for i, name in enumerate(["inc_counter", "inc_counter", "inc_counter"]):
        ws.send(json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": name, "arguments": {}}, "id": i}}))
        print(json.dumps({"via": "ws", "tool": name, "value": value(json.loads(ws.recv(timeout=30))["data"])}))
    ws.send(json.dumps({"type": "close"}))
