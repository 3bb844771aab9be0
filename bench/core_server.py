"""Core server benchmark: ours vs the published openenv 0.10 and openenv-core 0.3, and two floors.

Each server runs as its own process on 127.0.0.1, driven from this process: steps/s and p50/p99
over WebSocket (1 session, and N sessions at once), the server's CPU time per step at N sessions
(from /proc: steadier than throughput on a shared machine), HTTP steps, start-to-healthy time,
memory. The WebSocket runs are interleaved across servers in rounds (medians reported), so load
drift hits each alike. Floors, answering the same frames with a fixed reply:
- ``bare``: a bare ``websockets`` server (``bench/peers/bare_ws_echo.py``);
- ``asgi-floor``: a raw ASGI app on uvicorn, our own server stack with nothing above it
  (``bench/peers/bare_asgi_ws.py``): what is left above it is FastAPI/Starlette and our code.

Usage: .venv/bin/python bench/core_server.py [--seconds 3] [--sessions 64] [--rounds 3]
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
PEER010_PY = Path(os.environ.get("OPENENV_PEER010_VENV", ROOT / ".cache" / "peer-openenv-0.10")) / "bin" / "python"
PUBLISHED_ECHO = ROOT / "tests/interop/peers/published_echo_server.py"
KINDS = ("ours", "published-0.10", "published-0.3", "bare", "asgi-floor")


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
    cwd = "/"
    if kind == "ours":
        cmd = [sys.executable, "-m", "openenv.cli.main", "serve", "echo", "--port", str(port), "--max-sessions", "256"]
        cwd = str(ROOT)
    elif kind == "published-0.10":
        cmd = [str(PEER010_PY), "-P", str(PUBLISHED_ECHO), str(port), "256"]
    elif kind == "published-0.3":
        cmd = [str(PEER_PY), "-P", str(PUBLISHED_ECHO), str(port), "256"]
    elif kind == "asgi-floor":
        cmd = [sys.executable, "-m", "uvicorn", "--app-dir", str(ROOT / "bench/peers"), "bare_asgi_ws:app",
               "--port", str(port), "--log-level", "warning", "--ws-per-message-deflate", "false"]
    else:
        cmd = [sys.executable, str(ROOT / "bench/peers/bare_ws_echo.py"), str(port)]
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


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ws_run(proc: subprocess.Popen, url: str, sessions: int, seconds: float) -> dict:
    """One WebSocket load run, with the server's CPU microseconds per step."""
    before = cpu_s(proc.pid)
    result = asyncio.run(ws_load(url, sessions, seconds))
    result["server_cpu_us_per_step"] = 1e6 * (cpu_s(proc.pid) - before) / max(1.0, result["steps_per_s"] * seconds)
    return result


def median_run(runs: list[dict]) -> dict:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def measure_all(kinds: tuple[str, ...], seconds: float, sessions: int, rounds: int) -> dict[str, dict]:
    """Start every server (one at a time, timed), then interleave the WebSocket runs in rounds."""
    servers: dict[str, tuple[subprocess.Popen, str]] = {}
    results: dict[str, dict] = {}
    try:
        for kind in kinds:
            proc, url, start_s = start(kind)
            servers[kind] = (proc, url)
            time.sleep(0.5)
            results[kind] = {"start_to_healthy_s": start_s, "idle_rss_mib": rss_mib(proc.pid)}
        runs: dict[str, dict[str, list[dict]]] = {kind: {"ws_1": [], "ws_n": []} for kind in kinds}
        for _proc, url in servers.values():
            asyncio.run(ws_load(url, sessions, 0.5))  # warm-up
        for _ in range(rounds):
            for kind, (proc, url) in servers.items():
                runs[kind]["ws_1"].append(ws_run(proc, url, 1, seconds))
                runs[kind]["ws_n"].append(ws_run(proc, url, sessions, seconds))
        for kind, (proc, url) in servers.items():
            results[kind]["ws_1"] = median_run(runs[kind]["ws_1"])
            results[kind]["ws_n"] = median_run(runs[kind]["ws_n"])
            if kind == "ours":
                results[kind]["http"] = http_load(url, seconds, session=True)
            elif kind.startswith("published"):
                results[kind]["http"] = http_load(url, seconds, session=False)
            if kind in ("ours", "published-0.10", "published-0.3"):
                results[kind]["kib_per_session"] = asyncio.run(session_memory(url, proc.pid, 32))
        return results
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=KINDS, default=None)
    args = parser.parse_args()
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:
        pass
    if not PEER_PY.exists():
        subprocess.run([str(ROOT / "scripts/peer-openenv-core")], check=True)
    if not PEER010_PY.exists():
        subprocess.run([str(ROOT / "scripts/peer-openenv-010")], check=True)
    os.environ.setdefault("OPENENV_WEB", "1")
    kinds = (args.only,) if args.only else KINDS
    results = measure_all(kinds, args.seconds, args.sessions, args.rounds)
    print(json.dumps(results, indent=2))
    if args.only:
        return
    n = args.sessions
    rows = [
        ("WS 1 session steps/s", [r["ws_1"]["steps_per_s"] for r in results.values()]),
        ("WS 1 session p50 ms", [r["ws_1"]["p50_ms"] for r in results.values()]),
        (f"WS {n} sessions steps/s", [r["ws_n"]["steps_per_s"] for r in results.values()]),
        (f"WS {n} sessions p99 ms", [r["ws_n"]["p99_ms"] for r in results.values()]),
        (f"WS {n} sessions server CPU us/step", [r["ws_n"]["server_cpu_us_per_step"] for r in results.values()]),
        ("HTTP step/s (ours: session; published: stateless)", [r.get("http", {}).get("steps_per_s") for r in results.values()]),
        ("start to healthy s", [r["start_to_healthy_s"] for r in results.values()]),
        ("idle RSS MiB", [r["idle_rss_mib"] for r in results.values()]),
        ("KiB per open session", [r.get("kib_per_session") for r in results.values()]),
    ]
    names = ["0.10", "0.3", "bare", "asgi-floor"]
    print(f"\n{'metric':46} {'ours':>9} " + " ".join(f"{k:>10}" for k in names) + f" {'ours/0.10':>10} {'ours/bare':>10}")
    for name, values in rows:
        cells = " ".join(f"{v:10.2f}" if v is not None else f"{'-':>10}" for v in values[1:])
        ours, v010, bare = values[0], values[1], values[3]
        r010 = f"{ours / v010:10.2f}" if v010 else f"{'-':>10}"
        rbare = f"{ours / bare:10.2f}" if bare else f"{'-':>10}"
        print(f"{name:46} {ours:9.2f} {cells} {r010} {rbare}")
    floor = results["asgi-floor"]["ws_n"]["server_cpu_us_per_step"]
    print(f"\nAbove the uvicorn floor at {n} sessions, per step: ours "
          f"{results['ours']['ws_n']['server_cpu_us_per_step'] - floor:.1f} us of server CPU, published 0.10 "
          f"{results['published-0.10']['ws_n']['server_cpu_us_per_step'] - floor:.1f} us. Load: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
