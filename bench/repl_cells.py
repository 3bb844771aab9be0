"""Benchmark: REPL cell latency and compute overhead, each beside plain in-process ``exec``.

    .venv/bin/python bench/repl_cells.py [--trivial 500] [--compute 15] [--starts 20]

Serves ``openenv.envs.repl.app:app`` in a uvicorn subprocess and measures, in one run:
1. round trip of a trivial cell (``x = 1``) over WebSocket (p50/p90/p99), beside plain ``exec``;
2. a compute cell (``sum(i*i for i in range(10**6))``): round trip and the worker's own
   execution time, beside plain ``exec`` of the same code in this process (best of N each);
3. worker start: ``reset`` of a fresh session (connect + reset), and the server-side spawn time.
Prints numbers and ratios; asserts nothing. Targets: trivial p50 < 3 ms; compute <= 1.3x exec.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from openenv.envs.repl.client import REPLEnv  # noqa: E402
from tests.server_utils import free_port, wait_healthy  # noqa: E402

TRIVIAL = "x = 1"
COMPUTE = "sum(i*i for i in range(10**6))"


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "openenv.envs.repl.app:app", "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "warning", "--ws-per-message-deflate", "false"],
        cwd=REPO, env=dict(os.environ, OPENENV_WEB="0", OPENENV_REPL_CELL_TIMEOUT_S="60"),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, timeout_s=30)
    return proc, url


def plain_exec(code: str, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        ns: dict = {}
        began = time.perf_counter()
        exec(compile(code, "<bench>", "exec"), ns)
        times.append(time.perf_counter() - began)
    return times


def worker_interpreter_exec(code: str, repeats: int) -> float:
    """Best plain ``exec`` time of ``code`` under the interpreter the workers use."""
    from openenv.envs.repl.config import Limits

    script = (
        f"import time\ncode = compile({code!r}, '<bench>', 'exec')\nbest = 1e9\n"
        f"for _ in range({repeats}):\n    ns = {{}}\n    t = time.perf_counter()\n    exec(code, ns)\n"
        "    best = min(best, time.perf_counter() - t)\nprint(best)"
    )
    out = subprocess.run([Limits.from_env().interpreter(), "-I", "-S", "-c", script], capture_output=True,
                         text=True, check=True, timeout=300)
    return float(out.stdout)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def cells(url: str, trivial: int, compute: int) -> tuple[list[float], list[float], list[float]]:
    async with REPLEnv(base_url=url) as env:
        await env.reset(max_iterations=10**9)
        for _ in range(20):  # warm up
            await env.execute(TRIVIAL)
        rtt = []
        for _ in range(trivial):
            began = time.perf_counter()
            await env.execute(TRIVIAL)
            rtt.append(time.perf_counter() - began)
        compute_rtt, compute_worker = [], []
        for _ in range(compute):
            began = time.perf_counter()
            result = await env.execute(COMPUTE)
            compute_rtt.append(time.perf_counter() - began)
            compute_worker.append(result.observation.result.execution_time)
        return rtt, compute_rtt, compute_worker


async def starts(url: str, count: int) -> list[float]:
    times = []
    for _ in range(count):
        began = time.perf_counter()
        async with REPLEnv(base_url=url) as env:
            await env.reset()
            times.append(time.perf_counter() - began)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trivial", type=int, default=500)
    parser.add_argument("--compute", type=int, default=15)
    parser.add_argument("--starts", type=int, default=20)
    args = parser.parse_args()
    proc, url = start_server()
    try:
        rtt, compute_rtt, compute_worker = asyncio.run(cells(url, args.trivial, args.compute))
        start = asyncio.run(starts(url, args.starts))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    ref_trivial = plain_exec(TRIVIAL, args.trivial)
    ref_compute = plain_exec(COMPUTE, args.compute)
    ref_same = worker_interpreter_exec(COMPUTE, args.compute)
    ms = 1000.0
    print(f"trivial cell {TRIVIAL!r} over WebSocket ({args.trivial} cells)")
    print(f"  p50 {statistics.median(rtt) * ms:.3f} ms  p90 {pct(rtt, 0.9) * ms:.3f} ms  "
          f"p99 {pct(rtt, 0.99) * ms:.3f} ms   (target p50 < 3 ms)")
    print(f"  plain exec p50 {statistics.median(ref_trivial) * 1e6:.1f} us")
    best_ref, best_rtt, best_worker = min(ref_compute), min(compute_rtt), min(compute_worker)
    print(f"compute cell {COMPUTE!r} (best of {args.compute})")
    print(f"  plain exec {best_ref * ms:.1f} ms   worker exec {best_worker * ms:.1f} ms "
          f"({best_worker / best_ref:.2f}x)   round trip {best_rtt * ms:.1f} ms ({best_rtt / best_ref:.2f}x; "
          f"target <= 1.3x)")
    print(f"  same interpreter as the workers: plain exec {ref_same * ms:.1f} ms -> worker exec "
          f"{best_worker / ref_same:.2f}x, round trip {best_rtt / ref_same:.2f}x")
    print(f"  medians: plain {statistics.median(ref_compute) * ms:.1f} ms, round trip "
          f"{statistics.median(compute_rtt) * ms:.1f} ms")
    print(f"worker start: connect + reset of a fresh session ({args.starts} sessions)")
    print(f"  p50 {statistics.median(start) * ms:.1f} ms  p90 {pct(start, 0.9) * ms:.1f} ms")
    print(f"  (this process: {sys.executable}, Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
