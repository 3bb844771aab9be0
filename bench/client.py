"""Client benchmark: the training-script pattern on the echo env, ratios measured in one run.

1. 64 threads, each its own sync client (``with GenericEnvClient(base_url=url) as env``):
   ours (client + server) vs the published openenv 0.10 (its client + its server, its venv).
2. ``VectorEnvClient`` with 64 sessions in one process, on one event loop, against our server,
   vs our own 64-thread figure from (1).

Each server is its own process on 127.0.0.1; each client side runs in its own process.
Usage: .venv/bin/python bench/client.py [--seconds 4] [--sessions 64] [--rounds 3]
(needs the 0.10 peer venv: OPENENV_PEER010_VENV or .cache/peer-openenv-0.10).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
PEER_VENV = Path(os.environ.get("OPENENV_PEER010_VENV", ROOT / ".cache" / "peer-openenv-0.10"))
PEER_PY = PEER_VENV / "bin" / "python"
THREADS = ROOT / "bench" / "peers" / "threads_client.py"
ECHO010 = ROOT / "tests" / "client" / "echo010.py"
SERVE_FILE = ROOT / "tests" / "peers010" / "serve_file.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(ours: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if ours:
        env["PYTHONPATH"] = str(ROOT)
    return env


def start_server(kind: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    if kind == "ours":
        cmd = [sys.executable, "-m", "openenv.cli.main", "serve", "echo", "--port", str(port), "--max-sessions", "256"]
        cwd = str(ROOT)
    else:
        cmd = [str(PEER_PY), "-P", str(SERVE_FILE), str(ECHO010), "app", str(port)]
        cwd = "/"
    proc = subprocess.Popen(cmd, cwd=cwd, env=_env(kind == "ours"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{kind} server did not become healthy")


def server_cpu_s(proc: subprocess.Popen) -> float:
    """CPU seconds the server process has used (user + system)."""
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_rate(python: str, url: str, sessions: int, seconds: float, ours: bool) -> tuple[float, float]:
    cmd = [python, *([] if ours else ["-P"]), str(THREADS), url, str(sessions), str(seconds)]
    done = subprocess.run(cmd, cwd=str(ROOT) if ours else "/", env=_env(ours), capture_output=True, text=True,
                          timeout=seconds + 300)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"threads client failed: {done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return out["steps"] / out["seconds"], out["cpu_s"] / out["steps"] * 1e6


def vector_rate(urls: list[str], sessions: int, seconds: float) -> tuple[float, float]:
    from openenv.core import VectorEnvClient

    with VectorEnvClient(urls, num_envs=sessions) as envs:
        envs.reset()
        actions = [{"message": f"env {i}"} for i in range(sessions)]
        envs.step(actions)
        began, cpu, steps, rounds = time.monotonic(), time.process_time(), 0, 0
        while time.monotonic() - began < seconds and rounds < 10_000_000:
            batch = envs.step(actions)
            if not batch.ok:
                batch.raise_first()
            steps += sessions
            rounds += 1
        return steps / (time.monotonic() - began), (time.process_time() - cpu) / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="per measurement")
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported")
    parser.add_argument("--vector-servers", type=int, default=0,
                        help="also measure the vector client over N of our servers (sessions round-robin)")
    args = parser.parse_args()
    if not PEER_PY.exists():
        raise SystemExit(f"no 0.10 peer at {PEER_VENV} (scripts/peer-openenv-010)")
    ours_proc, ours_url = start_server("ours")
    peer_proc, peer_url = start_server("published")
    extra = [start_server("ours") for _ in range(max(0, args.vector_servers - 1))]
    all_urls = [ours_url] + [u for _, u in extra]
    keys = ("ours", "published", "vector") + (("vector_n",) if args.vector_servers > 1 else ())
    rates: dict[str, list[float]] = {k: [] for k in keys}
    cpu: dict[str, list[float]] = {k: [] for k in keys}
    srv: dict[str, list[float]] = {k: [] for k in keys}

    def measure(key: str, proc: subprocess.Popen, run: Any) -> None:
        before = server_cpu_s(proc)
        rate, client_us = run()
        rates[key].append(rate)
        cpu[key].append(client_us)
        srv[key].append((server_cpu_s(proc) - before) / (rate * args.seconds) * 1e6)

    try:
        for _ in range(max(1, args.rounds)):  # interleaved, so a busy machine weighs on all three alike
            measure("ours", ours_proc, lambda: threads_rate(sys.executable, ours_url, args.sessions, args.seconds, True))
            measure("published", peer_proc,
                    lambda: threads_rate(str(PEER_PY), peer_url, args.sessions, args.seconds, False))  # fmt: skip
            measure("vector", ours_proc, lambda: vector_rate([ours_url], args.sessions, args.seconds))
            if extra:
                measure("vector_n", ours_proc, lambda: vector_rate(all_urls, args.sessions, args.seconds))
    finally:
        for proc in (ours_proc, peer_proc, *(p for p, _ in extra)):
            proc.terminate()
            proc.wait(timeout=10)
    med = {k: statistics.median(v) for k, v in rates.items()}
    n = args.sessions
    print(f"medians of {len(rates['ours'])} interleaved rounds of {args.seconds:g} s, load {os.getloadavg()[0]:.1f}")
    print(f"{'':52s} {'steps/s':>9s} {'client CPU/step':>16s} {'server CPU/step':>16s}")
    for key, label in (("ours", f"{n} threads x sync client, ours (client+server)"),
                       ("published", f"{n} threads x sync client, published 0.10"),
                       ("vector", f"VectorEnvClient, {n} sessions, one loop, ours"),
                       ("vector_n", f"VectorEnvClient, {n} sessions over {args.vector_servers} servers")):  # fmt: skip
        if key not in med:
            continue
        print(f"{label:52s} {med[key]:9.0f} {statistics.median(cpu[key]):13.0f} us {statistics.median(srv[key]):13.0f} us")
    print(f"ratio ours / published 0.10 (threads):  {med['ours'] / med['published']:5.2f}x  (target >= 1.8x)")
    print(f"ratio vector / our threads:             {med['vector'] / med['ours']:5.2f}x  (target >= 2.5x)")
    if "vector_n" in med:
        print(f"ratio vector over {args.vector_servers} servers / our threads: {med['vector_n'] / med['ours']:5.2f}x "
              "(server CPU/step is of the first server only)")
    print(f"client CPU per step, our threads / vector: {statistics.median(cpu['ours']) / statistics.median(cpu['vector']):5.2f}x")


if __name__ == "__main__":
    main()
