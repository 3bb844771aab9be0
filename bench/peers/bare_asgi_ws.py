"""The uvicorn floor: a raw ASGI app on uvicorn (the same server stack as ours, nothing above
it) answering each WebSocket text frame with a fixed echo-shaped reply, and ``/health``.

Usage: python -m uvicorn --app-dir bench/peers bare_asgi_ws:app --port PORT --ws-per-message-deflate false
"""

import json

REPLY = json.dumps({"type": "observation", "data": {
    "observation": {"echoed_message": "hello world", "message_length": 11}, "reward": 1.1, "done": False}})


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] == "http":
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"status":"healthy"}'})
        return
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] != "websocket.receive":
            return
        await send({"type": "websocket.send", "text": REPLY})
