"""MCP benchmark: ours vs the published openenv 0.10 serving the same FastMCP tool env.

Each server runs the module ``tests/peers010/mcp_tools_env.py`` in its own process; this process
drives ``tools/call echo_message`` round trips over ``POST /mcp`` (one keep-alive HTTP client,
a session id) and over the WebSocket (``{"type": "mcp"}`` frames on ``/ws``), then prints calls/s
and the ratio ours/published. Also: start-to-healthy of the MCP env on each side, and a plain
(non-MCP) echo env's start time and idle memory on ours with the ``mcp`` extra installed, and
the floor: the same client against a bare ASGI app with a fixed reply (``bench/peers/bare_mcp_asgi.py``),
what no server can beat with this client here.

Usage: .venv/bin/python bench/mcp.py [--seconds 3] [--runs 3]
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
PEER_VENV = Path(os.environ.get("OPENENV_PEER010_VENV", ROOT / ".cache" / "peer-openenv-0.10"))
MODULE = ROOT / "tests" / "peers010" / "mcp_tools_env.py"
SERVE = ROOT / "tests" / "peers010" / "serve_file.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def serve_module(python: str, *, ours: bool) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if ours:
        env["PYTHONPATH"] = str(ROOT)
    began = time.perf_counter()
    cmd = [python, *([] if ours else ["-P"]), str(SERVE), str(MODULE), "app", str(port)]
    proc = subprocess.Popen(cmd, cwd=str(ROOT) if ours else "/", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    return proc, url, _healthy(proc, url, began)


def serve_bare_floor() -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "peers" / "bare_mcp_asgi.py"), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    _healthy(proc, url, time.perf_counter())
    return proc, url


def serve_plain_echo() -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    began = time.perf_counter()
    cmd = [sys.executable, "-m", "openenv.cli.main", "serve", "echo", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    return proc, url, _healthy(proc, url, began)


def _healthy(proc: subprocess.Popen, url: str, began: float) -> float:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/health", timeout=0.5).status_code == 200:
                return time.perf_counter() - began
        except httpx.HTTPError:
            pass
        time.sleep(0.01)
    raise RuntimeError(f"{url} not healthy in 90 s")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def http_calls(url: str, seconds: float, *, session: bool = True) -> float:
    """POST /mcp tools/call round trips per second: in one session, or stateless (no session_id)."""
    with httpx.Client(timeout=30) as client:
        sid = client.post(url + "/mcp", json={"jsonrpc": "2.0", "method": "openenv/session/create", "id": 0}).json()
        sid = sid["result"]["session_id"]
        params: dict = {"name": "echo_message", "arguments": {"message": "hi"}}
        if session:
            params["session_id"] = sid
        body = {"jsonrpc": "2.0", "method": "tools/call", "id": 1, "params": params}
        for _ in range(20):
            client.post(url + "/mcp", json=body)
        n, end = 0, time.perf_counter() + seconds
        began = time.perf_counter()
        while time.perf_counter() < end and n < 1_000_000:
            reply = client.post(url + "/mcp", json=body).json()
            assert reply["result"]["data"] == "hi", reply
            n += 1
        rate = n / (time.perf_counter() - began)
        client.post(url + "/mcp", json={"jsonrpc": "2.0", "method": "openenv/session/close", "params": {"session_id": sid}, "id": 2})
        return rate


async def ws_calls(url: str, seconds: float) -> float:
    frame = json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call", "id": 1,
                                                "params": {"name": "echo_message", "arguments": {"message": "hi"}}}})
    async with connect(url.replace("http", "ws", 1) + "/ws", compression=None) as ws:
        for _ in range(20):
            await ws.send(frame)
            await ws.recv()
        n, end = 0, time.perf_counter() + seconds
        began = time.perf_counter()
        while time.perf_counter() < end and n < 1_000_000:
            await ws.send(frame)
            reply = json.loads(await ws.recv())
            assert reply["data"]["result"]["data"] == "hi", reply
            n += 1
        return n / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    peer = str(PEER_VENV / "bin" / "python")
    if not Path(peer).exists():
        sys.exit(f"the published 0.10 peer venv is missing: {PEER_VENV} (scripts/peer-openenv-010)")
    results: dict[str, dict[str, list[float]]] = {"ours": {}, "published": {}}
    for _ in range(args.runs):
        for side, python in (("ours", sys.executable), ("published", peer)):
            proc, url, started = serve_module(python, ours=side == "ours")
            try:
                time.sleep(0.3)
                idle = rss_mib(proc.pid)
                row = results[side]
                row.setdefault("start_s", []).append(started)
                row.setdefault("idle_mib", []).append(idle)
                row.setdefault("http_calls_s", []).append(http_calls(url, args.seconds))
                row.setdefault("ws_calls_s", []).append(asyncio.run(ws_calls(url, args.seconds)))
                row.setdefault("http_stateless_s", []).append(http_calls(url, args.seconds, session=False))
            finally:
                stop(proc)
        proc, url = serve_bare_floor()
        try:
            results.setdefault("floor", {}).setdefault("http_calls_s", []).append(http_calls(url, args.seconds))
        finally:
            stop(proc)
        proc, url, started = serve_plain_echo()
        try:
            time.sleep(0.3)
            results.setdefault("plain_echo_ours", {}).setdefault("start_s", []).append(started)
            results["plain_echo_ours"].setdefault("idle_mib", []).append(rss_mib(proc.pid))
        finally:
            stop(proc)
    med = {side: {k: statistics.median(v) for k, v in row.items()} for side, row in results.items()}
    print(f"MCP tools/call, same FastMCP tool (echo_message), median of {args.runs} run(s) x {args.seconds:g} s")
    print(f"{'':26}{'ours':>12}{'published':>12}{'ratio':>10}")
    for key, label, better in [
        ("http_calls_s", "POST /mcp, session calls/s", "higher"),
        ("http_stateless_s", "POST /mcp, stateless /s", "higher"),
        ("ws_calls_s", "WS mcp frames calls/s", "higher"),
        ("start_s", "MCP env start->healthy s", "lower"),
        ("idle_mib", "MCP env idle RSS MiB", "lower"),
    ]:
        ours, theirs = med["ours"][key], med["published"][key]
        ratio = ours / theirs if better == "higher" else theirs / ours
        print(f"{label:26}{ours:12.2f}{theirs:12.2f}{ratio:9.2f}x")
    floor = med["floor"]["http_calls_s"]
    print(f"floor: bare ASGI app, same client, POST /mcp {floor:.0f}/s (ours {med['ours']['http_calls_s'] / floor:.0%}"
          f" of it, published {med['published']['http_calls_s'] / floor:.0%}); per call above the floor:"
          f" ours {1e3 / med['ours']['http_calls_s'] - 1e3 / floor:.2f} ms,"
          f" published {1e3 / med['published']['http_calls_s'] - 1e3 / floor:.2f} ms")
    plain = med["plain_echo_ours"]
    print(f"plain echo env (ours, mcp extra installed): start->healthy {plain['start_s']:.2f} s, idle {plain['idle_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
