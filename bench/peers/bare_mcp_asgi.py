"""The floor of ``POST /mcp``: a bare ASGI app under uvicorn answering every request with a fixed
JSON-RPC reply (a session id, or an ``echo_message`` result), no framework and no tool.

Usage: python bare_mcp_asgi.py PORT
"""

import json
import sys

import uvicorn

SESSION = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"session_id": "bare"}}).encode()
RESULT = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}],
                                                          "structured_content": {"result": "hi"}, "data": "hi",
                                                          "is_error": False}}).encode()


async def app(scope, receive, send):
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
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
