"""Start-to-first-step time: bare uvicorn vs the local process provider vs local Docker.

    .venv/bin/python bench/providers_start.py [--runs 5] [--no-docker]

Each row is the median of N runs of: start the echo env, poll /health, open a session,
reset, step once. The bare row starts ``python -m uvicorn`` on the same app with the same
polling, so the ratios compare like with like on this machine, in this run.
Targets: process provider within 20% of bare; Docker under 3 s once the image exists.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import httpx

from openenv.core.containers.runtime import LocalDockerProvider, LocalProcessProvider
from openenv.core.containers.runtime.ports import free_port
from openenv.envs.echo.client import EchoEnv
from openenv.envs.echo.models import EchoAction

APP = "openenv.envs.echo.app:app"


def _poll_health(url: str, timeout_s: float = 60.0) -> None:
    """The same schedule as ``ContainerProvider.wait_for_ready``."""
    deadline = time.monotonic() + timeout_s
    delay = 0.01
    with httpx.Client(timeout=2.0, trust_env=False) as http:
        while time.monotonic() < deadline:
            try:
                if http.get(url + "/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(delay)
            delay = min(delay * 1.5, 0.05)
    raise TimeoutError(url)


def _first_step(url: str) -> None:
    with EchoEnv(base_url=url).sync() as env:
        env.reset()
        env.step(EchoAction(message="bench"))


def bare_uvicorn() -> float:
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", APP, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        _poll_health(url)
        _first_step(url)
        return time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def with_provider(make: Callable[[], object], image: str) -> float:
    provider = make()
    start = time.perf_counter()
    try:
        url = provider.start_container(image)
        provider.wait_for_ready(url, 60)
        _first_step(url)
        return time.perf_counter() - start
    finally:
        provider.stop_container()


def _interleaved(cases: list[tuple[str, Callable[[], float]]], runs: int) -> list[tuple[str, float, float]]:
    """Median and min per case; runs alternate between cases so load drift hits all alike."""
    for _, fn in cases:
        fn()  # warm the page cache; not counted
    times: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(runs):
        for name, fn in cases:
            times[name].append(fn())
    return [(name, statistics.median(t), min(t)) for name, t in times.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-docker", action="store_true")
    parser.add_argument("--image", default="openenv-echo:latest")
    parser.add_argument("--base-image", default="openenv-base:bookworm")
    args = parser.parse_args()

    data_dir = tempfile.mkdtemp(prefix="openenv-bench-")
    process = lambda: LocalProcessProvider(project="bench", data_dir=data_dir)  # noqa: E731
    cases: list[tuple[str, Callable[[], float]]] = [
        ("bare uvicorn (same app)", bare_uvicorn),
        ("process provider, module:app", lambda: with_provider(process, APP)),
        ("process provider, `echo` name", lambda: with_provider(process, "echo")),
    ]
    if not args.no_docker:
        from openenv.core.containers.images import build_env_image

        image = build_env_image("echo", tag=args.image, base_image=args.base_image, offline=True)
        docker = lambda: LocalDockerProvider(project="bench")  # noqa: E731
        cases.append(("docker provider", lambda: with_provider(docker, image)))
    rows = _interleaved(cases, args.runs)

    bare = rows[0][1]
    print(f"start -> first step, median of {args.runs} (min), ratio to bare uvicorn")
    for name, median, low in rows:
        print(f"  {name:32s} {median:6.3f} s  ({low:.3f})  x{median / bare:.2f}")
    overhead = rows[1][1] / bare - 1
    print(f"process provider overhead: {overhead:+.1%} (target < +20%)")
    if not args.no_docker:
        print(f"docker start -> first step: {rows[-1][1]:.2f} s (target < 3 s)")


if __name__ == "__main__":
    main()
