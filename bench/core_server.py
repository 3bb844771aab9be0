"""Core server benchmark: ours vs the published openenv-core vs a bare websockets floor.

Runs each server as its own process on 127.0.0.1 and drives it from this process, printing
steps/s, p50/p99 latency, start-to-healthy time and memory, then ratios against the published
server measured in the same run.

Usage: .venv/bin/python bench/core_server.py [--seconds 3] [--sessions 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parents[1]
PEER_PY = ROOT / ".cache" / "peer-openenv-core" / "bin" / "python"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start(kind: str) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    if kind == "ours":
        cmd = [sys.executable, "-m", "openenv.cli.main", "serve", "echo", "--port", str(port), "--max-sessions", "256"]
        cwd = str(ROOT)
    elif kind == "published":
        cmd = [str(PEER_PY), "-P", str(ROOT / "tests/interop/peers/published_echo_server.py"), str(port), "256"]
        cwd = "/"
    else:
        cmd = [sys.executable, str(ROOT / "bench/peers/bare_ws_echo.py"), str(port)]
        cwd = "/"
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if kind == "bare":
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            if httpx.get(url + "/health", timeout=0.5).status_code == 200:
                break
        except (httpx.HTTPError, OSError):
            time.sleep(0.01)
    else:
        proc.kill()
        raise RuntimeError(f"{kind} server did not start")
    return proc, url, time.perf_counter() - began


async def ws_session(url: str, stop_at: float, latencies: list[float], ready: asyncio.Event | None = None) -> int:
    steps = 0
    async with connect(url.replace("http://", "ws://") + "/ws", compression=None, max_size=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {}}))
        await ws.recv()
        msg = json.dumps({"type": "step", "data": {"message": "hello world"}})
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            await ws.send(msg)
            await ws.recv()
            latencies.append(time.perf_counter() - t0)
            steps += 1
    return steps


async def ws_load(url: str, sessions: int, seconds: float) -> dict:
    latencies: list[float] = []
    stop_at = time.perf_counter() + seconds
    began = time.perf_counter()
    counts = await asyncio.gather(*(ws_session(url, stop_at, latencies) for _ in range(sessions)))
    elapsed = time.perf_counter() - began
    latencies.sort()
    return {
        "steps_per_s": sum(counts) / elapsed,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)],
    }


def http_load(url: str, seconds: float, session: bool) -> dict:
    latencies = []
    with httpx.Client(base_url=url, timeout=10) as client:
        headers = {}
        if session:
            headers["X-OpenEnv-Session"] = client.post("/reset", json={}, headers={"X-OpenEnv-Session": "new"}).headers[
                "X-OpenEnv-Session"
            ]
        stop_at = time.perf_counter() + seconds
        body = {"action": {"message": "hello world"}}
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            reply = client.post("/step", json=body, headers=headers)
            latencies.append(time.perf_counter() - t0)
            assert reply.status_code == 200, reply.text
    latencies.sort()
    return {"steps_per_s": len(latencies) / seconds, "p50_ms": 1000 * statistics.median(latencies)}


async def session_memory(url: str, pid: int, n: int) -> float:
    before = rss_mib(pid)
    sockets = [await connect(url.replace("http://", "ws://") + "/ws", compression=None) for _ in range(n)]
    for ws in sockets:
        await ws.send(json.dumps({"type": "reset", "data": {}}))
        await ws.recv()
    await asyncio.sleep(0.3)
    after = rss_mib(pid)
    for ws in sockets:
        await ws.close()
    return (after - before) * 1024 / n


def measure(kind: str, seconds: float, sessions: int) -> dict:
    proc, url, start_s = start(kind)
    try:
        time.sleep(0.5)
        result: dict = {"start_to_healthy_s": start_s, "idle_rss_mib": rss_mib(proc.pid)}
        asyncio.run(ws_load(url, 1, 0.5))  # warm-up
        result["ws_1"] = asyncio.run(ws_load(url, 1, seconds))
        result[f"ws_{sessions}"] = asyncio.run(ws_load(url, sessions, seconds))
        if kind == "ours":
            result["http"] = http_load(url, seconds, session=True)
        elif kind == "published":
            result["http"] = http_load(url, seconds, session=False)
        if kind != "bare":
            result["kib_per_session"] = asyncio.run(session_memory(url, proc.pid, 32))
        return result
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--only", choices=["ours", "published", "bare"], default=None)
    args = parser.parse_args()
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:
        pass
    if not PEER_PY.exists():
        subprocess.run([str(ROOT / "scripts/peer-openenv-core")], check=True)
    os.environ.setdefault("OPENENV_WEB", "1")
    if args.only:
        print(json.dumps(measure(args.only, args.seconds, args.sessions), indent=2))
        return
    results = {kind: measure(kind, args.seconds, args.sessions) for kind in ("ours", "published", "bare")}
    n = f"ws_{args.sessions}"
    print(json.dumps(results, indent=2))
    ours, pub, bare = results["ours"], results["published"], results["bare"]
    rows = [
        ("WS 1 session steps/s", ours["ws_1"]["steps_per_s"], pub["ws_1"]["steps_per_s"], bare["ws_1"]["steps_per_s"]),
        ("WS 1 session p50 ms", ours["ws_1"]["p50_ms"], pub["ws_1"]["p50_ms"], bare["ws_1"]["p50_ms"]),
        (f"WS {args.sessions} sessions steps/s", ours[n]["steps_per_s"], pub[n]["steps_per_s"], bare[n]["steps_per_s"]),
        (f"WS {args.sessions} sessions p99 ms", ours[n]["p99_ms"], pub[n]["p99_ms"], bare[n]["p99_ms"]),
        ("HTTP step/s (ours: session; published: stateless)", ours["http"]["steps_per_s"], pub["http"]["steps_per_s"], None),
        ("start to healthy s", ours["start_to_healthy_s"], pub["start_to_healthy_s"], None),
        ("idle RSS MiB", ours["idle_rss_mib"], pub["idle_rss_mib"], bare["idle_rss_mib"]),
        ("KiB per open session", ours["kib_per_session"], pub["kib_per_session"], None),
    ]
    print(f"\n{'metric':52} {'ours':>10} {'published':>10} {'bare':>10} {'ours/published':>15}")
    for name, o, p, b in rows:
        bare_s = f"{b:10.2f}" if b is not None else f"{'-':>10}"
        print(f"{name:52} {o:10.2f} {p:10.2f} {bare_s} {o / p:15.2f}")


if __name__ == "__main__":
    main()
