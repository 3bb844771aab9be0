"""The floor: a bare ``websockets`` server answering each frame with a fixed echo-shaped reply.

Usage: python bare_ws_echo.py PORT
"""

import asyncio
import json
import sys

from websockets.asyncio.server import serve


async def handler(ws):
    async for raw in ws:
        msg = json.loads(raw)
        text = (msg.get("data") or {}).get("message", "")
        await ws.send(json.dumps({"type": "observation", "data": {
            "observation": {"echoed_message": text, "message_length": len(text)},
            "reward": len(text) * 0.1, "done": False}}))


async def main(port):
    async with serve(handler, "127.0.0.1", port, compression=None, max_size=None):
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
