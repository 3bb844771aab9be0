"""MCP benchmark: ours vs the published openenv 0.10 serving the same FastMCP tool env, each as a
ratio to the floor measured in the same run.

Each server runs the module ``tests/peers010/mcp_tools_env.py`` in its own process; this process
drives ``tools/call echo_message`` round trips over ``POST /mcp`` (one keep-alive HTTP client,
a session id) and over the WebSocket (``{"type": "mcp"}`` frames on ``/ws``). The floor is the
same client against a bare ASGI app under the same uvicorn with a fixed reply on both transports
(``bench/peers/bare_mcp_asgi.py``): what no server can beat with this client here. "full" is ours
with the direct ``tools/call`` path switched off (FastMCP's own ``call_tool``), so the effect of
``mcp_direct`` is read within one run. Also: stateless calls, start-to-healthy and idle memory of
the MCP env on each side, and a plain (non-MCP) echo env's start and memory on ours.
See bench/README.md for where the time goes.

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


FULL_PATH = (
    "import runpy, sys\n"
    "from openenv.core.env_server import mcp_direct\n"
    "mcp_direct._ENABLED = False\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def serve_full_path() -> tuple[subprocess.Popen, str, float]:
    """Ours with the direct ``tools/call`` path switched off (FastMCP's full ``call_tool``)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    began = time.perf_counter()
    cmd = [sys.executable, "-c", FULL_PATH, str(SERVE), str(MODULE), "app", str(port)]
    proc = subprocess.Popen(cmd, cwd=str(ROOT), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    return proc, url, _healthy(proc, url, began)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _measure(row: dict[str, list[float]], url: str, seconds: float, *, stateless: bool) -> None:
    row.setdefault("http_calls_s", []).append(http_calls(url, seconds))
    row.setdefault("ws_calls_s", []).append(asyncio.run(ws_calls(url, seconds)))
    if stateless:
        row.setdefault("http_stateless_s", []).append(http_calls(url, seconds, session=False))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    peer = str(PEER_VENV / "bin" / "python")
    if not Path(peer).exists():
        sys.exit(f"the published 0.10 peer venv is missing: {PEER_VENV} (scripts/peer-openenv-010)")
    load_before = _load()
    results: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.runs):
        proc, url = serve_bare_floor()
        try:
            _measure(results.setdefault("floor", {}), url, args.seconds, stateless=False)
        finally:
            stop(proc)
        for side, python in (("ours", sys.executable), ("published", peer)):
            proc, url, started = serve_module(python, ours=side == "ours")
            try:
                time.sleep(0.3)
                row = results.setdefault(side, {})
                row.setdefault("start_s", []).append(started)
                row.setdefault("idle_mib", []).append(rss_mib(proc.pid))
                _measure(row, url, args.seconds, stateless=True)
            finally:
                stop(proc)
        proc, url, _ = serve_full_path()
        try:
            _measure(results.setdefault("full_path", {}), url, args.seconds, stateless=False)
        finally:
            stop(proc)
        proc, url, started = serve_plain_echo()
        try:
            time.sleep(0.3)
            results.setdefault("plain_echo_ours", {}).setdefault("start_s", []).append(started)
            results["plain_echo_ours"].setdefault("idle_mib", []).append(rss_mib(proc.pid))
        finally:
            stop(proc)
    report(results, args, load_before)


def _ratio(results: dict, a: str, b: str, key: str) -> float:
    """Median over runs of ``a/b``, each run's pair measured minutes apart at most."""
    return statistics.median(x / y for x, y in zip(results[a][key], results[b][key], strict=True))


def report(results: dict, args: argparse.Namespace, load_before: str) -> None:
    med = {side: {k: statistics.median(v) for k, v in row.items()} for side, row in results.items()}
    print(f"MCP tools/call, same FastMCP tool (echo_message), median of {args.runs} run(s) x {args.seconds:g} s;"
          f" load avg before {load_before}, after {_load()}")
    print(f"{'calls/s':24}{'floor':>8}{'ours':>8}{'full':>8}{'0.10':>8}{'ours/floor':>12}{'0.10/floor':>12}"
          f"{'ours/0.10':>11}{'full/floor':>12}")
    for key, label in (("http_calls_s", "POST /mcp (session)"), ("ws_calls_s", "WS /ws mcp frames")):
        f, o, g, p = (med[s][key] for s in ("floor", "ours", "full_path", "published"))
        print(f"{label:24}{f:8.0f}{o:8.0f}{g:8.0f}{p:8.0f}"
              f"{_ratio(results, 'ours', 'floor', key):11.2f}x{_ratio(results, 'published', 'floor', key):11.2f}x"
              f"{_ratio(results, 'ours', 'published', key):10.2f}x{_ratio(results, 'full_path', 'floor', key):11.2f}x")
        print(f"{'':24}per call above the floor: ours {1e3 / o - 1e3 / f:.2f} ms, full path {1e3 / g - 1e3 / f:.2f} ms,"
              f" 0.10 {1e3 / p - 1e3 / f:.2f} ms")
    print("(full: ours with the direct tools/call path off, FastMCP's own call_tool; 0.10: the published package)")
    print(f"{'':26}{'ours':>12}{'published':>12}{'ratio':>10}")
    for key, label, better in [
        ("http_stateless_s", "POST /mcp, stateless /s", "higher"),
        ("start_s", "MCP env start->healthy s", "lower"),
        ("idle_mib", "MCP env idle RSS MiB", "lower"),
    ]:
        ours, theirs = med["ours"][key], med["published"][key]
        ratio = ours / theirs if better == "higher" else theirs / ours
        print(f"{label:26}{ours:12.2f}{theirs:12.2f}{ratio:9.2f}x")
    plain = med["plain_echo_ours"]
    print(f"plain echo env (ours, mcp extra installed): start->healthy {plain['start_s']:.2f} s, idle {plain['idle_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
