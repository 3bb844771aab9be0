"""With the PUBLISHED client, open sessions until the server refuses one; print the error.

Usage: python -P published_capacity_check.py BASE_URL N
"""

import asyncio
import json
import sys

from openenv.core.generic_client import GenericEnvClient


async def main(url, n):
    clients, error = [], None
    for _ in range(n + 1):
        client = GenericEnvClient(base_url=url)
        try:
            await client.connect()
            await client.reset()
            clients.append(client)
        except Exception as exc:  # report whatever the published client raised
            error = f"{type(exc).__name__}: {exc}"
            break
    for client in clients:
        await client.close()
    print(json.dumps({"opened": len(clients), "error": error}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
