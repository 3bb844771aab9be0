"""The floor of MCP ``tools/call``: a bare ASGI app under uvicorn (the server stack ours runs on,
same options as ``tests/peers010/serve_file.py``) answering every request with a fixed reply, no
framework, no JSON parsing and no tool.

``POST`` (any path): a session id, or an ``echo_message`` JSON-RPC result. WebSocket (any path):
each text frame is answered with that result in the ``{"type": "mcp", "data": ...}`` frame the
``/ws`` client reads.

Usage: python bare_mcp_asgi.py PORT
"""

import json
import sys

import uvicorn

SESSION = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"session_id": "bare"}}).encode()
_RESULT = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}],
                                                 "structured_content": {"result": "hi"}, "data": "hi",
                                                 "is_error": False}}
RESULT = json.dumps(_RESULT).encode()
FRAME = json.dumps({"type": "mcp", "data": _RESULT})


async def websocket(receive, send):
    while True:
        message = await receive()
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
        elif message["type"] == "websocket.receive":
            await send({"type": "websocket.send", "text": FRAME})
        else:
            return


async def app(scope, receive, send):
    if scope["type"] == "websocket":
        await websocket(receive, send)
        return
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    reply = SESSION if b"openenv/session/create" in body else RESULT
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(reply)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": reply})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False,
                ws_per_message_deflate=False)
