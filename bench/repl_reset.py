"""Benchmark: REPL reset latency with warm workers beside a server that starts a worker per reset.

    .venv/bin/python bench/repl_reset.py [--episodes 100] [--cells 3] [--gap-ms 40] [--warm-workers 2,4] [--unprivileged]

Serves the REPL app with ``OPENENV_REPL_WARM_WORKERS=2`` (the default; ``--warm-workers 2,4``
for several sizes) and with ``0``, in one run, and drives one session on each in interleaved
rounds (so the same machine load hits all): ``reset`` (timed, client round trip over WebSocket), ``--cells`` trivial cells, then a pause of
``--gap-ms`` standing for the agent's own work between episodes. A last phase resets the pooled
server back to back with no pause at all, where the pool drains (resets outrun worker starts).
``--unprivileged`` serves as an ordinary uid (workers in bubblewrap's namespaces; needs root
to drop to that uid). Prints p50/p90/p99 and ratios; asserts nothing. Target with the pool:
p50 <= 5 ms, p99 <= 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from repl_cells import isolation_of, pct, serving  # noqa: E402

from openenv.envs.repl.client import REPLEnv  # noqa: E402


async def rounds(urls: dict[str, str], episodes: int, cells: int, gap_s: float) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in urls}
    async with contextlib.AsyncExitStack() as stack:
        envs = {name: await stack.enter_async_context(REPLEnv(base_url=url)) for name, url in urls.items()}
        for env in envs.values():  # first reset of each: the session's first worker; not measured
            await env.reset()
        await asyncio.sleep(1.0)
        for _ in range(episodes):
            for name, env in envs.items():
                began = time.perf_counter()
                await env.reset()
                times[name].append(time.perf_counter() - began)
                for _ in range(cells):
                    await env.execute("x = 1")
                await asyncio.sleep(gap_s)
    return times


async def back_to_back(url: str, count: int) -> list[float]:
    times = []
    async with REPLEnv(base_url=url) as env:
        await env.reset()
        await asyncio.sleep(1.0)
        for _ in range(count):
            began = time.perf_counter()
            await env.reset()
            times.append(time.perf_counter() - began)
    return times


def line(label: str, values: list[float]) -> str:
    ms = 1000.0
    return (f"  {label:<26} p50 {statistics.median(values) * ms:6.2f} ms  p90 {pct(values, 0.9) * ms:6.2f} ms  "
            f"p99 {pct(values, 0.99) * ms:6.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--cells", type=int, default=3)
    parser.add_argument("--gap-ms", type=float, default=40.0)
    parser.add_argument("--back-to-back", type=int, default=30)
    parser.add_argument("--warm-workers", default="2", help="pool size(s) of the pooled server(s), e.g. 2,4")
    parser.add_argument("--unprivileged", action="store_true", help="serve as an ordinary uid (namespaces)")
    args = parser.parse_args()
    sizes = [int(v) for v in args.warm_workers.split(",")]
    with contextlib.ExitStack() as stack:
        urls = {f"warm workers ({n}):": stack.enter_context(
            serving({"OPENENV_REPL_WARM_WORKERS": str(n)}, unprivileged=args.unprivileged, uid_offset=i))
            for i, n in enumerate(sizes)}
        cold = stack.enter_context(serving({"OPENENV_REPL_WARM_WORKERS": "0"}, unprivileged=args.unprivileged,
                                           uid_offset=len(sizes)))
        urls["no pool (start per reset):"] = cold
        isolation = isolation_of(cold)
        times = asyncio.run(rounds(urls, args.episodes, args.cells, args.gap_ms / 1000))
        first = next(iter(urls))
        burst = asyncio.run(back_to_back(urls[first], args.back_to_back))
    none = times["no pool (start per reset):"]
    print(f"isolation: {isolation}; {args.episodes} episodes of reset + {args.cells} cells + {args.gap_ms:g} ms pause")
    for label, values in times.items():
        target = "   (target p50 <= 5 ms, p99 <= 20 ms)" if values is not none else ""
        print(line(label, values) + target)
    for label, values in times.items():
        if values is not none:
            print(f"  {label} p50 / no pool p50: {statistics.median(values) / statistics.median(none):.2f}x")
    print(f"back to back, no pause ({args.back_to_back} resets; the pool drains):")
    print(line(first, burst))


if __name__ == "__main__":
    main()
