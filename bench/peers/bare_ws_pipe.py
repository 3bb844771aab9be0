"""The REPL topology's floor: a bare ``websockets`` server that hands each frame to a child process
over a pipe and answers with the child's reply (client -> server -> worker -> server -> client),
with none of the work: no validation, no sandbox, no cell. Each connection gets its own child.

Usage: python bare_ws_pipe.py PORT
"""

import asyncio
import json
import subprocess
import sys

from websockets.asyncio.server import serve

CHILD = (
    "import os\n"
    "r = os.fdopen(0, 'rb', buffering=1 << 16)\n"
    "while True:\n"
    "    line = r.readline()\n"
    "    if not line:\n"
    "        break\n"
    "    os.write(1, line)\n"
)


async def handler(ws):
    child = await asyncio.create_subprocess_exec(sys.executable, "-I", "-S", "-c", CHILD,
                                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        async for raw in ws:
            json.loads(raw)
            child.stdin.write(b'{"op": "exec"}\n')
            await child.stdin.drain()
            await child.stdout.readline()
            await ws.send(json.dumps({"type": "observation", "data": {"observation": {"result": {"stdout": ""}},
                                                                       "reward": 0.0, "done": False}}))
    finally:
        child.kill()
        await child.wait()


async def main(port):
    async with serve(handler, "127.0.0.1", port, compression=None, max_size=None):
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
