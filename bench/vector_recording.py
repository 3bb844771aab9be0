"""Benchmark: what recording costs a ``VectorEnvClient`` (64 sessions, one event loop).

    .venv/bin/python bench/vector_recording.py [--sessions 64] [--seconds 4] [--rounds 5]

Our echo server in its own process; in each round, interleaved (the order rotates every round):
``plain`` (``VectorEnvClient``, unrecorded), ``recorded`` (``store=`` a journaled SQLite store: the
steps stay pipelined and their wire texts are journaled), and ``per-client`` (the same sessions as
N ``record()`` clients gathered per step, each awaiting its own reply: what ``store=`` did before).
Each measures steps/s over ``--seconds`` after one warm-up step, with the client's CPU per step and
the store's committer process CPU per step (``/proc``). Prints medians and the ratios to ``plain``
measured in the same run; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from openenv.core import GenericEnvClient, VectorEnvClient  # noqa: E402
from openenv.recording import EpisodeStore, record  # noqa: E402
from tests.server_utils import free_port, wait_healthy  # noqa: E402

MAX_ROUNDS = 10_000_000
SERVER_PIDS: set[int] = set()  # the env server: a child too, but not the committer


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "openenv.envs.echo.app:app", "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "warning", "--ws-per-message-deflate", "false"],
        cwd=REPO, env=dict(os.environ, OPENENV_WEB="0"),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, timeout_s=30)
    return proc, url


def committer_cpu_s() -> float:
    """CPU seconds of this process's children but the env server (the store's committer), from ``/proc``."""
    total = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in SERVER_PIDS:
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # ppid
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def vector_rate(url: str, sessions: int, seconds: float, store: EpisodeStore | None) -> tuple[float, float, float]:
    """steps/s, client CPU us/step and committer CPU us/step of one vector client (``store``: recorded)."""
    with VectorEnvClient(url, num_envs=sessions, store=store, label="bench") as envs:
        envs.reset(seed=1)
        actions = [{"message": f"env {i}"} for i in range(sessions)]
        envs.step(actions)
        began, cpu, side, steps, rounds = time.monotonic(), time.process_time(), committer_cpu_s(), 0, 0
        while time.monotonic() - began < seconds and rounds < MAX_ROUNDS:
            batch = envs.step(actions)
            if not batch.ok:
                batch.raise_first()
            steps += sessions
            rounds += 1
        took = time.monotonic() - began
        client_us = (time.process_time() - cpu) / steps * 1e6
        side_us = (committer_cpu_s() - side) / steps * 1e6
    return steps / took, client_us, side_us


async def _per_client(url: str, sessions: int, seconds: float, store: EpisodeStore) -> tuple[float, float, float]:
    envs = [record(GenericEnvClient(base_url=url), store=store, label="bench") for _ in range(sessions)]
    await asyncio.gather(*(e._client._connect_entry() for e in envs))
    try:
        await asyncio.gather(*(e._reset_async(seed=1) for e in envs))
        await asyncio.gather(*(e._step_async({"message": f"env {i}"}) for i, e in enumerate(envs)))
        began, cpu, side, steps, rounds = time.monotonic(), time.process_time(), committer_cpu_s(), 0, 0
        while time.monotonic() - began < seconds and rounds < MAX_ROUNDS:
            await asyncio.gather(*(e._step_async({"message": f"env {i}"}) for i, e in enumerate(envs)))
            steps += sessions
            rounds += 1
        took = time.monotonic() - began
        return steps / took, (time.process_time() - cpu) / steps * 1e6, (committer_cpu_s() - side) / steps * 1e6
    finally:
        await asyncio.gather(*(e._close_async() for e in envs), return_exceptions=True)


def per_client_rate(url: str, sessions: int, seconds: float, store: EpisodeStore) -> tuple[float, float, float]:
    try:
        import uvloop

        return uvloop.run(_per_client(url, sessions, seconds, store))
    except ImportError:  # pragma: no cover - uvloop is a dependency off Windows
        return asyncio.run(_per_client(url, sessions, seconds, store))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=4.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians are reported")
    args = parser.parse_args()
    proc, url = start_server()
    SERVER_PIDS.add(proc.pid)
    keys = ("plain", "recorded", "per-client")
    rates: dict[str, list[float]] = {k: [] for k in keys}
    cpu: dict[str, list[float]] = {k: [] for k in keys}
    side: dict[str, list[float]] = {k: [] for k in keys}
    ratios: dict[str, list[float]] = {k: [] for k in keys[1:]}
    try:
        with tempfile.TemporaryDirectory() as tmp, EpisodeStore(Path(tmp) / "bench.db") as store:
            runs = {
                "plain": lambda: vector_rate(url, args.sessions, args.seconds, None),
                "recorded": lambda: vector_rate(url, args.sessions, args.seconds, store),
                "per-client": lambda: per_client_rate(url, args.sessions, args.seconds, store),
            }
            for r in range(max(1, args.rounds)):
                order = keys[r % 3:] + keys[: r % 3]
                got = {}
                for key in order:
                    got[key] = runs[key]()
                    rate, client_us, side_us = got[key]
                    rates[key].append(rate)
                    cpu[key].append(client_us)
                    side[key].append(side_us)
                for key in keys[1:]:
                    ratios[key].append(got[key][0] / got["plain"][0])
            store.flush()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    n = args.sessions
    print(f"medians of {args.rounds} interleaved rounds of {args.seconds:g} s, {n} sessions, "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'':44s} {'steps/s':>9s} {'client CPU/step':>16s} {'committer CPU/step':>19s}")
    labels = {"plain": "VectorEnvClient, unrecorded",
              "recorded": "VectorEnvClient(store=...), pipelined",
              "per-client": f"{n} record() clients gathered per step"}  # fmt: skip
    for key in keys:
        print(f"{labels[key]:44s} {statistics.median(rates[key]):9.0f} {statistics.median(cpu[key]):13.0f} us "
              f"{statistics.median(side[key]):16.0f} us")  # fmt: skip
    for key in keys[1:]:
        med = statistics.median(ratios[key])
        print(f"ratio {key} / plain (median of per-round ratios): {med:5.3f}x  (cost {100 * (1 - med):4.1f}%)")
    print("target: recorded costs <= 5% of plain")


if __name__ == "__main__":
    main()
