"""Benchmark: REPL cell latency and compute overhead, each beside plain in-process ``exec``.

    .venv/bin/python bench/repl_cells.py [--trivial 500] [--paused 60] [--pause-ms 150] [--compute 15] [--starts 20] [--unprivileged | --both]

Serves ``openenv.envs.repl.app:app`` in a uvicorn subprocess (with ``--unprivileged``, as an
ordinary uid under the system interpreter, so workers run in bubblewrap's namespaces; needs
root to drop to that uid; ``--both`` serves both ways and alternates between them) and
measures, in one run:
1. round trip of a trivial cell (``x = 1``) over WebSocket (p50/p90/p99), beside plain ``exec``:
   back to back, and after a pause (``--pause-ms``, default 150: a model thinking between cells);
2. a compute cell (``sum(i*i for i in range(10**6))``): round trip and the worker's own
   execution time, beside plain ``exec`` of the same code in this process (best of N each);
3. worker start: ``reset`` of a fresh session (connect + reset), and the server-side spawn time;
4. the floor of this topology, interleaved with 1: a bare ``websockets`` server handing each frame
   to a child process over a pipe and back, driven by a bare client (``bench/peers/bare_ws_pipe.py``).
Prints numbers and ratios; asserts nothing. Targets: trivial p50 <= 1.0 ms back to back and
<= 1.3 ms after a pause; compute <= 1.3x exec.
Resets with and without warm workers: ``bench/repl_reset.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from websockets.asyncio.client import connect  # noqa: E402

from openenv.envs.repl.client import REPLEnv  # noqa: E402
from tests.server_utils import free_port, wait_healthy  # noqa: E402

TRIVIAL = "x = 1"
FLOOR = "floor"
FLOOR_FRAME = json.dumps({"type": "step", "data": {"code": TRIVIAL}})
COMPUTE = "sum(i*i for i in range(10**6))"


@contextlib.contextmanager
def serving(extra_env: dict[str, str] | None = None, *, unprivileged: bool = False,
            uid_offset: int = 0) -> Iterator[str]:
    """The REPL app in a uvicorn subprocess (as root, or as an ordinary uid); yields its URL."""
    settings = {"OPENENV_WEB": "0", "OPENENV_REPL_CELL_TIMEOUT_S": "60", **(extra_env or {})}
    if unprivileged:
        from tests.envs.repl import unprivileged as unpriv

        if not unpriv.can_run_unprivileged():
            raise SystemExit("--unprivileged needs root (to drop to a test uid), setpriv and /usr/bin/python3")
        with unpriv.unprivileged_server(settings, uid=unpriv.server_uid(10 + uid_offset)) as served:
            yield served.url
        return
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "openenv.envs.repl.app:app", "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "warning", "--ws-per-message-deflate", "false"],
        cwd=REPO, env=dict(os.environ, **settings),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, timeout_s=30)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def isolation_of(url: str) -> str:
    import httpx

    return str(httpx.get(f"{url}/health", timeout=10).json().get("isolation", "?"))


def plain_exec(code: str, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        ns: dict = {}
        began = time.perf_counter()
        exec(compile(code, "<bench>", "exec"), ns)
        times.append(time.perf_counter() - began)
    return times


class SameInterpreter:
    """A plain process of the workers' interpreter that runs ``exec(code)`` on request and reports the time."""

    def __init__(self, code: str) -> None:
        from openenv.envs.repl.config import Limits

        script = (
            f"import sys, time\ncode = compile({code!r}, '<bench>', 'exec')\n"
            "for _ in sys.stdin:\n    ns = {}\n    t = time.perf_counter()\n    exec(code, ns)\n"
            "    print(time.perf_counter() - t, flush=True)"
        )
        self.proc = subprocess.Popen([Limits.from_env().interpreter(), "-I", "-S", "-c", script],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@contextlib.contextmanager
def floor_server() -> Iterator[str]:
    """``bench/peers/bare_ws_pipe.py`` in a subprocess; yields its ws:// URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(REPO / "bench/peers/bare_ws_pipe.py"), str(port)],
                            stderr=subprocess.DEVNULL)  # the port probe below is not a WebSocket
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.02)
        yield f"ws://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def floor_cell(ws) -> float:
    began = time.perf_counter()
    await ws.send(FLOOR_FRAME)
    await ws.recv()
    return time.perf_counter() - began


async def cells(urls: dict[str, str], trivial: int, compute: int, paused: int, pause_s: float,
                floor_url: str) -> dict[str, dict[str, list[float]]]:
    """Trivial and compute cells on each server, alternating in blocks so the same load hits each."""
    keys = ("rtt", "paused", "ref_trivial", "compute_rtt", "compute_worker", "compute_plain", "compute_same")
    out = {name: {k: [] for k in keys} for name in [*urls, FLOOR]}
    same = SameInterpreter(COMPUTE)
    try:
        async with contextlib.AsyncExitStack() as stack:
            envs = {name: await stack.enter_async_context(REPLEnv(base_url=url)) for name, url in urls.items()}
            floor = await stack.enter_async_context(connect(floor_url, compression=None, max_size=None))
            for _ in range(20):
                await floor_cell(floor)
            for env in envs.values():
                await env.reset(max_iterations=10**9)
                for _ in range(20):  # warm up
                    await env.execute(TRIVIAL)
            for _ in range(max(1, trivial // 50)):
                for name, env in envs.items():
                    for _ in range(min(50, trivial)):
                        began = time.perf_counter()
                        await env.execute(TRIVIAL)
                        out[name]["rtt"].append(time.perf_counter() - began)
                        out[name]["ref_trivial"] += plain_exec(TRIVIAL, 1)
                for _ in range(min(50, trivial)):
                    out[FLOOR]["rtt"].append(await floor_cell(floor))
            for _ in range(max(1, paused // 10)):
                for name, env in envs.items():
                    for _ in range(min(10, paused)):
                        await asyncio.sleep(pause_s)
                        began = time.perf_counter()
                        await env.execute(TRIVIAL)
                        out[name]["paused"].append(time.perf_counter() - began)
                for _ in range(min(10, paused)):
                    await asyncio.sleep(pause_s)
                    out[FLOOR]["paused"].append(await floor_cell(floor))
            for _ in range(compute):  # interleaved rounds: the same load hits all of them
                for name, env in envs.items():
                    began = time.perf_counter()
                    result = await env.execute(COMPUTE)
                    out[name]["compute_rtt"].append(time.perf_counter() - began)
                    out[name]["compute_worker"].append(result.observation.result.execution_time)
                    out[name]["compute_plain"] += plain_exec(COMPUTE, 1)
                    out[name]["compute_same"].append(same.run())
    finally:
        same.close()
    return out


async def starts(url: str, count: int) -> list[float]:
    times = []
    for _ in range(count):
        began = time.perf_counter()
        async with REPLEnv(base_url=url) as env:
            await env.reset()
            times.append(time.perf_counter() - began)
    return times


def report(label: str, m: dict[str, list[float]], compute: int, pause_ms: float) -> None:
    ms = 1000.0
    rtt = m["rtt"]
    print(f"[{label}] trivial cell {TRIVIAL!r} over WebSocket ({len(rtt)} cells)")
    print(f"  p50 {statistics.median(rtt) * ms:.3f} ms  p90 {pct(rtt, 0.9) * ms:.3f} ms  "
          f"p99 {pct(rtt, 0.99) * ms:.3f} ms   (target p50 <= 1.0 ms)")
    print(f"  plain exec p50 {statistics.median(m['ref_trivial']) * 1e6:.1f} us")
    if m["paused"]:
        paused = m["paused"]
        print(f"[{label}] the same cell after a {pause_ms:.0f} ms pause ({len(paused)} cells)")
        print(f"  p50 {statistics.median(paused) * ms:.3f} ms  p90 {pct(paused, 0.9) * ms:.3f} ms  "
              f"p99 {pct(paused, 0.99) * ms:.3f} ms   (target p50 <= 1.3 ms)")
    plain, same = min(m["compute_plain"]), min(m["compute_same"])
    worker, trip = min(m["compute_worker"]), min(m["compute_rtt"])
    print(f"[{label}] compute cell {COMPUTE!r} (best of {compute} interleaved rounds)")
    print(f"  plain exec here {plain * ms:.1f} ms; plain exec under the workers' interpreter {same * ms:.1f} ms")
    print(f"  worker exec {worker * ms:.1f} ms ({worker / same:.2f}x same interpreter, {worker / plain:.2f}x here)")
    print(f"  round trip  {trip * ms:.1f} ms ({trip / same:.2f}x same interpreter, {trip / plain:.2f}x here; "
          "target <= 1.3x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trivial", type=int, default=500)
    parser.add_argument("--compute", type=int, default=15)
    parser.add_argument("--paused", type=int, default=60, help="cells run after a pause")
    parser.add_argument("--pause-ms", type=float, default=150.0)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--unprivileged", action="store_true", help="serve as an ordinary uid (namespaces)")
    parser.add_argument("--both", action="store_true", help="a root server and an unprivileged one, interleaved")
    args = parser.parse_args()
    modes = [False, True] if args.both else [args.unprivileged]
    with contextlib.ExitStack() as stack:
        urls = {}
        for i, unprivileged in enumerate(modes):
            url = stack.enter_context(serving(unprivileged=unprivileged, uid_offset=i))
            urls[isolation_of(url)] = url
        floor_url = stack.enter_context(floor_server())
        m = asyncio.run(cells(urls, args.trivial, args.compute, args.paused, args.pause_ms / 1000, floor_url))
        start = {name: asyncio.run(starts(url, args.starts)) for name, url in urls.items()}
    ms = 1000.0
    for name in urls:
        report(name, m[name], args.compute, args.pause_ms)
    floor = m[FLOOR]
    print(f"[floor] the same topology with no work (bare websockets server, a child over a pipe, bare client): "
          f"p50 {statistics.median(floor['rtt']) * ms:.3f} ms back to back, "
          f"{statistics.median(floor['paused']) * ms:.3f} ms after the pause")
    for name in urls:
        print(f"  {name} / floor: back to back {statistics.median(m[name]['rtt']) / statistics.median(floor['rtt']):.2f}x, "
              f"after the pause {statistics.median(m[name]['paused']) / statistics.median(floor['paused']):.2f}x "
              "(published 0.10 ships no REPL env to compare)")
    if len(urls) == 2:
        a, b = list(urls)
        ratio = statistics.median(m[b]["rtt"]) / statistics.median(m[a]["rtt"])
        print(f"trivial cell p50, {b} / {a}: {ratio:.2f}x")
    for name, times in start.items():
        print(f"[{name}] new session: connect + reset ({args.starts} sessions, warm workers on)")
        print(f"  p50 {statistics.median(times) * ms:.1f} ms  p90 {pct(times, 0.9) * ms:.1f} ms")
    print(f"(this process: {sys.executable}, Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
