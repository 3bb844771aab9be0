"""16 echo envs: time until all are healthy, then aggregate steps/s through them, by provider.

    .venv/bin/python bench/ray_start.py [--envs 16] [--steps 100] [--no-docker]

Starts a two-node Ray cluster on 127.0.0.1 (two ``ray start`` processes, 8 logical CPUs each),
then, in the same run: the Ray provider (``start_many``, 0.5 CPU per env, SPREAD), the process
provider (N starts in parallel threads, or ``--parallel K`` at a time) and the Docker provider (same, from the echo image).
Steps/s: one WebSocket session per env, all driven concurrently from this process; ratios are
against the process provider. Everything runs on this machine's cores, so the figures show the
provider's overhead, not a cluster's scale.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openenv.core.containers.runtime import (  # noqa: E402
    ContainerProvider,
    LocalDockerProvider,
    LocalProcessProvider,
    ProviderError,
    RayProvider,
)
from openenv.envs.echo.client import EchoEnv  # noqa: E402
from openenv.envs.echo.models import EchoAction  # noqa: E402
from tests.ray_cluster import LocalRayCluster  # noqa: E402


def _start_parallel(make: Callable[[], ContainerProvider], target: str, n: int,
                    parallel: int) -> list[ContainerProvider]:
    def one(_: int) -> ContainerProvider:
        provider = make()
        url = provider.start_container(target)
        provider.wait_for_ready(url, 120)
        return provider

    with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
        started = [pool.submit(one, i) for i in range(n)]
    failed = [f.exception() for f in started if f.exception() is not None]
    if failed:
        for f in started:
            if f.exception() is None:
                f.result().stop_quietly()
        raise failed[0]
    return [f.result() for f in started]


async def _drive(urls: list[str], steps: int) -> float:
    async def one(url: str) -> int:
        async with EchoEnv(base_url=url) as env:
            await env.reset()
            for i in range(steps):
                await env.step(EchoAction(message=f"m{i}"))
        return steps

    start = time.perf_counter()
    done = sum(await asyncio.gather(*(one(u) for u in urls)))
    return done / (time.perf_counter() - start)


def _measure(name: str, start: Callable[[], list[ContainerProvider]], steps: int) -> tuple[str, float, float] | None:
    began = time.perf_counter()
    try:
        providers = start()
    except ProviderError as exc:
        print(f"  {name:18s} FAILED after {time.perf_counter() - began:.2f} s: {exc.message}", flush=True)
        return None
    healthy_s = time.perf_counter() - began
    try:
        rate = asyncio.run(_drive([p.base_url for p in providers], steps))
    finally:
        for p in providers:
            p.stop_quietly()
    print(f"  {name:18s} all healthy in {healthy_s:6.2f} s   {rate:8.0f} steps/s", flush=True)
    return name, healthy_s, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=100, help="steps per env")
    parser.add_argument("--no-docker", action="store_true")
    parser.add_argument("--image", default="openenv-echo:test")
    parser.add_argument("--parallel", type=int, default=None,
                        help="process/Docker starts at a time (default: all; Ray always starts all at once)")
    args = parser.parse_args()
    n = args.envs
    parallel = args.parallel or n

    cluster = LocalRayCluster([{"num_cpus": 8, "resources": {"head": 1}},
                               {"num_cpus": 8, "resources": {"worker": 1}}])
    cluster.start()
    rows = []
    try:
        project = f"bench-{uuid.uuid4().hex[:8]}"
        ray_provider = RayProvider(project=project, address=cluster.address)
        ray_provider.start_many("echo", 1, cpus=0.5)[0].stop_container()  # warm: the driver's connection
        data_dir = tempfile.mkdtemp(prefix="openenv-bench-")
        print(f"{n} echo envs ({parallel} process/Docker starts at a time); {args.steps} steps each "
              "through one session per env")
        rows.append(_measure("process provider", lambda: _start_parallel(
            lambda: LocalProcessProvider(project=project, data_dir=data_dir), "echo", n, parallel), args.steps))
        placed: dict[str, int] = {}

        def ray_start() -> list[ContainerProvider]:
            envs = ray_provider.start_many("echo", n, spread=True, timeout_s=180, cpus=0.5)
            for p in envs:
                placed[p.node_id] = placed.get(p.node_id, 0) + 1
            return envs

        rows.append(_measure("ray provider", ray_start, args.steps))
        print(f"  ray placement: {sorted(placed.values())} envs per node")
        if not args.no_docker:
            rows.append(_measure("docker provider", lambda: _start_parallel(
                lambda: LocalDockerProvider(project=project), args.image, n, parallel), args.steps))
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        cluster.stop()
    ref = rows[0]
    print("ratios to the process provider (healthy time, steps/s):")
    for name, healthy_s, rate in filter(None, rows):
        print(f"  {name:18s} x{healthy_s / ref[1]:.2f}   x{rate / ref[2]:.2f}")


if __name__ == "__main__":
    main()
