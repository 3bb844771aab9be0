"""Vector client while a server is down: one ``step`` over N sessions on a killed server.

Reference (measured in the same run): the same N sessions each stepped on its own, one after
another (what one serial pass of reconnects costs: N x one reconnect), vs one ``VectorEnvClient``
step, whose dead sessions reconnect concurrently under one deadline. Prints both and the ratio.
The server is our echo app in its own process on 127.0.0.1.
Usage: .venv/bin/python bench/vector_reconnect.py [--sessions 16]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from openenv.core import VectorEnvClient  # noqa: E402
from tests.client.conftest import RestartableServer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    n = parser.parse_args().sessions
    server = RestartableServer("ours")
    server.start()
    try:
        singles = [VectorEnvClient(server.url, num_envs=1) for _ in range(n)]
        batch = VectorEnvClient(server.url, num_envs=n)
        for c in (*singles, batch):
            c.connect()
            c.reset()
        server.kill()
        time.sleep(0.3)
        t0 = time.monotonic()
        for c in singles:
            c.step([{"message": "m"}])
        serial = time.monotonic() - t0
        t0 = time.monotonic()
        result = batch.step([{"message": "m"}] * n)
        concurrent = time.monotonic() - t0
        failed = sum(e is not None for e in result.errors)
        for c in (*singles, batch):
            c.close()
    finally:
        server.kill()
    print(f"{n} sessions on a dead server: serial {serial:.2f} s, one vector step {concurrent:.2f} s "
          f"({failed}/{n} per-session errors), ratio {serial / concurrent:.1f}x")


if __name__ == "__main__":
    main()
