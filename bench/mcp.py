"""MCP benchmark: ours vs the published openenv 0.10 serving the same FastMCP tool env, each as a
ratio to the floor measured in the same run.

Each server runs the module ``tests/peers010/mcp_tools_env.py`` (``--tool async``:
``bench/peers/mcp_async_echo_env.py``, the same tool as an ``async def``) in its own process; this process
drives ``tools/call echo_message`` round trips over ``POST /mcp`` (one keep-alive HTTP client,
a session id) and over the WebSocket (``{"type": "mcp"}`` frames on ``/ws``). The floor is the
same client against a bare ASGI app under the same uvicorn with a fixed reply on both transports
(``bench/peers/bare_mcp_asgi.py``): what no server can beat with this client here. "full" is ours
with the direct ``tools/call`` path switched off (FastMCP's own ``call_tool``), so the effect of
``mcp_direct`` is read within one run. Also: stateless calls, start-to-healthy and idle memory of
the MCP env on each side, and a plain (non-MCP) echo env's start and memory on ours. All four
servers run at once, all idle but one: each round gives every side one slice of calls in a
rotated order, and ratios are medians of per-round ratios, so each compares figures taken under
the same load.
See bench/README.md for where the time goes.

Usage: .venv/bin/python bench/mcp.py [--rounds 10] [--slice 0.5] [--tool sync|async]
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
MODULES = {"sync": ROOT / "tests" / "peers010" / "mcp_tools_env.py", "async": ROOT / "bench" / "peers" / "mcp_async_echo_env.py"}
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


def serve_module(python: str, module: Path, *, ours: bool) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if ours:
        env["PYTHONPATH"] = str(ROOT)
    began = time.perf_counter()
    cmd = [python, *([] if ours else ["-P"]), str(SERVE), str(module), "app", str(port)]
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


SIDES = ("floor", "ours", "full", "published")
CALL = {"name": "echo_message", "arguments": {"message": "hi"}}


class HttpSide:
    """One keep-alive client on one server: ``POST /mcp`` tools/call, in a session or stateless."""

    def __init__(self, url: str, *, session: bool = True) -> None:
        self.client = httpx.Client(base_url=url, timeout=30)
        created = self.client.post("/mcp", json={"jsonrpc": "2.0", "method": "openenv/session/create", "id": 0}).json()
        self.sid = created["result"]["session_id"]
        params = {**CALL, "session_id": self.sid} if session else CALL
        self.body = {"jsonrpc": "2.0", "method": "tools/call", "id": 1, "params": params}
        self.calls(0.05)

    def calls(self, seconds: float) -> float:
        """Round trips per second over ``seconds``."""
        n, began = 0, time.perf_counter()
        end = began + seconds
        while time.perf_counter() < end:
            reply = self.client.post("/mcp", json=self.body).json()
            assert reply["result"]["data"] == "hi", reply
            n += 1
        return n / (time.perf_counter() - began)

    def close(self) -> None:
        close = {"jsonrpc": "2.0", "method": "openenv/session/close", "params": {"session_id": self.sid}, "id": 2}
        self.client.post("/mcp", json=close)
        self.client.close()


class WsSide:
    """One ``/ws`` connection on one server: ``{"type": "mcp"}`` tools/call frames."""

    FRAME = json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call", "id": 1, "params": CALL}})

    async def open(self, url: str) -> WsSide:
        self.ws = await connect(url.replace("http", "ws", 1) + "/ws", compression=None)
        await self.calls(0.05)
        return self

    async def calls(self, seconds: float) -> float:
        """Round trips per second over ``seconds``."""
        n, began = 0, time.perf_counter()
        end = began + seconds
        while time.perf_counter() < end:
            await self.ws.send(self.FRAME)
            reply = json.loads(await self.ws.recv())
            assert reply["data"]["result"]["data"] == "hi", reply
            n += 1
        return n / (time.perf_counter() - began)


def _rotated(names: list[str], r: int) -> list[str]:
    return names[r % len(names):] + names[: r % len(names)]


def interleaved(sides: dict, rounds: int, slice_s: float) -> dict[str, list[float]]:
    """Rates per round: each round gives every side one slice, in a rotated order, so all sides
    see the same machine load (the machine is shared)."""
    rates: dict[str, list[float]] = {name: [] for name in sides}
    for r in range(rounds):
        for name in _rotated(list(sides), r):
            rates[name].append(sides[name].calls(slice_s))
    return rates


async def ws_interleaved(urls: dict[str, str], rounds: int, slice_s: float) -> dict[str, list[float]]:
    """As :func:`interleaved`, over one ``/ws`` connection per server."""
    sides = {name: await WsSide().open(url) for name, url in urls.items()}
    rates: dict[str, list[float]] = {name: [] for name in sides}
    for r in range(rounds):
        for name in _rotated(list(sides), r):
            rates[name].append(await sides[name].calls(slice_s))
    for side in sides.values():
        await side.ws.close()
    return rates


FULL_PATH = (
    "import runpy, sys\n"
    "from openenv.core.env_server import mcp_direct\n"
    "mcp_direct._ENABLED = False\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def serve_full_path(module: Path) -> tuple[subprocess.Popen, str, float]:
    """Ours with the direct ``tools/call`` path switched off (FastMCP's full ``call_tool``)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    began = time.perf_counter()
    cmd = [sys.executable, "-c", FULL_PATH, str(SERVE), str(module), "app", str(port)]
    proc = subprocess.Popen(cmd, cwd=str(ROOT), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    return proc, url, _healthy(proc, url, began)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--slice", type=float, default=0.5, help="seconds per side per round")
    parser.add_argument("--tool", choices=sorted(MODULES), default="sync", help="echo_message as a sync or async tool")
    args = parser.parse_args()
    peer = str(PEER_VENV / "bin" / "python")
    if not Path(peer).exists():
        sys.exit(f"the published 0.10 peer venv is missing: {PEER_VENV} (scripts/peer-openenv-010)")
    load_before = _load()
    procs: list[subprocess.Popen] = []
    urls: dict[str, str] = {}
    extra: dict[str, dict[str, float]] = {}
    try:
        proc, urls["floor"] = serve_bare_floor()
        procs.append(proc)
        for side, python in (("ours", sys.executable), ("published", peer)):
            proc, urls[side], started = serve_module(python, MODULES[args.tool], ours=side == "ours")
            procs.append(proc)
            time.sleep(0.3)
            extra[side] = {"start_s": started, "idle_mib": rss_mib(proc.pid)}
        proc, urls["full"], _ = serve_full_path(MODULES[args.tool])
        procs.append(proc)
        urls = {name: urls[name] for name in SIDES}
        http_sides = {name: HttpSide(url) for name, url in urls.items()}
        http = interleaved(http_sides, args.rounds, args.slice)
        for side in http_sides.values():
            side.close()
        ws = asyncio.run(ws_interleaved(urls, args.rounds, args.slice))
        stateless_sides = {name: HttpSide(urls[name], session=False) for name in ("ours", "published")}
        stateless = interleaved(stateless_sides, max(2, args.rounds // 2), args.slice)
        for side in stateless_sides.values():
            side.close()
    finally:
        for proc in procs:
            stop(proc)
    proc, url, started = serve_plain_echo()
    try:
        time.sleep(0.3)
        extra["plain_echo"] = {"start_s": started, "idle_mib": rss_mib(proc.pid)}
    finally:
        stop(proc)
    report(http, ws, stateless, extra, args, load_before)


def _ratio(rates: dict[str, list[float]], a: str, b: str) -> float:
    """Median over rounds of ``a/b`` (each round measures both under the same load)."""
    return statistics.median(x / y for x, y in zip(rates[a], rates[b], strict=True))


def report(http: dict, ws: dict, stateless: dict, extra: dict, args: argparse.Namespace, load_before: str) -> None:
    print(f"MCP tools/call, same FastMCP tool ({args.tool} echo_message), {args.rounds} interleaved rounds x {args.slice:g} s"
          f" per side; load avg before {load_before}, after {_load()}")
    print(f"{'median calls/s':24}{'floor':>8}{'ours':>8}{'full':>8}{'0.10':>8}{'ours/floor':>12}{'0.10/floor':>12}"
          f"{'ours/0.10':>11}{'full/floor':>12}")
    for rates, label in ((http, "POST /mcp (session)"), (ws, "WS /ws mcp frames")):
        f, o, g, p = (statistics.median(rates[s]) for s in SIDES)
        print(f"{label:24}{f:8.0f}{o:8.0f}{g:8.0f}{p:8.0f}{_ratio(rates, 'ours', 'floor'):11.2f}x"
              f"{_ratio(rates, 'published', 'floor'):11.2f}x{_ratio(rates, 'ours', 'published'):10.2f}x"
              f"{_ratio(rates, 'full', 'floor'):11.2f}x")
        print(f"{'':24}per call above the floor: ours {1e3 / o - 1e3 / f:.2f} ms, full {1e3 / g - 1e3 / f:.2f} ms,"
              f" 0.10 {1e3 / p - 1e3 / f:.2f} ms")
    print("(full: ours with the direct tools/call path off, FastMCP's own call_tool; 0.10: the published package)")
    o, p = statistics.median(stateless["ours"]), statistics.median(stateless["published"])
    print(f"{'':26}{'ours':>12}{'published':>12}{'ratio':>10}")
    print(f"{'POST /mcp, stateless /s':26}{o:12.2f}{p:12.2f}{_ratio(stateless, 'ours', 'published'):9.2f}x")
    for key, label in (("start_s", "MCP env start->healthy s"), ("idle_mib", "MCP env idle RSS MiB")):
        ours, theirs = extra["ours"][key], extra["published"][key]
        print(f"{label:26}{ours:12.2f}{theirs:12.2f}{theirs / ours:9.2f}x")
    plain = extra["plain_echo"]
    print(f"plain echo env (ours, mcp extra installed): start->healthy {plain['start_s']:.2f} s, idle {plain['idle_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
