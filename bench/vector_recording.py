"""Benchmark: what recording costs a ``VectorEnvClient`` (64 sessions, one event loop).

    .venv/bin/python bench/vector_recording.py [--sessions 64] [--batches 600]

Our echo server in its own process and three vector clients on it, open together: ``plain``
(unrecorded), ``recorded`` (``store=`` a journaled SQLite store: the steps stay pipelined and their
wire texts are journaled) and ``per-client`` (recorded too, but each batch stepped as N recording
clients gathered, each awaiting its own reply: what ``store=`` did before). Their step batches are
interleaved one by one (the order rotates every batch), so a shared machine's load weighs on all
three alike; each kind's steps/s is its steps over the time spent in its own batches, with the
client's CPU per step. Prints the ratios to ``plain`` measured in the same run; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.recording import start_server  # noqa: E402  (the echo server the recording bench uses)
from openenv.core import VectorEnvClient  # noqa: E402
from openenv.recording import EpisodeStore  # noqa: E402

SERVER_PIDS: set[int] = set()  # the env server: a child too, but not the committer


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


def _per_client_step(envs: VectorEnvClient, actions: list[dict]) -> None:
    """One batch the way ``store=`` stepped before: every recording client awaited on its own."""

    async def batch() -> None:
        results, errors = await envs._settle([e._step_async(a) for e, a in zip(envs._envs, actions, strict=True)])
        if any(e is not None for e in errors):
            raise next(e for e in errors if e is not None)

    envs._run(batch())


def measure(url: str, sessions: int, batches: int, store: EpisodeStore) -> dict[str, tuple[float, float]]:
    """Per kind: steps/s over the time in its own batches, and the client's CPU us per step."""
    actions = [{"message": f"env {i}"} for i in range(sessions)]
    kinds = ("plain", "recorded", "per-client")
    clients = {"plain": VectorEnvClient(url, num_envs=sessions),
               "recorded": VectorEnvClient(url, num_envs=sessions, store=store, label="bench"),
               "per-client": VectorEnvClient(url, num_envs=sessions, store=store, label="bench")}  # fmt: skip

    def step(kind: str) -> None:
        if kind == "per-client":
            _per_client_step(clients[kind], actions)
        else:
            clients[kind].step(actions).raise_first()

    wall = dict.fromkeys(kinds, 0.0)
    cpu = dict.fromkeys(kinds, 0.0)
    try:
        for envs in clients.values():
            envs.connect()
            envs.reset(seed=1)
        for kind in kinds:  # warm-up
            step(kind)
        for n in range(batches):
            for kind in kinds[n % 3:] + kinds[: n % 3]:
                w, c = time.perf_counter(), time.process_time()
                step(kind)
                wall[kind] += time.perf_counter() - w
                cpu[kind] += time.process_time() - c
    finally:
        for envs in clients.values():
            envs.close()
    steps = batches * sessions
    return {k: (steps / wall[k], cpu[k] / steps * 1e6) for k in kinds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--batches", type=int, default=600, help="step batches per kind, interleaved")
    args = parser.parse_args()
    proc, url = start_server()
    SERVER_PIDS.add(proc.pid)
    try:
        with tempfile.TemporaryDirectory() as tmp, EpisodeStore(Path(tmp) / "bench.db") as store:
            side = committer_cpu_s()
            got = measure(url, args.sessions, args.batches, store)
            store.flush()
            side_us = (committer_cpu_s() - side) / (2 * args.batches * args.sessions) * 1e6
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    n = args.sessions
    print(f"{args.batches} interleaved batches of {n} steps per kind, load {os.getloadavg()[0]:.1f}")
    print(f"{'':44s} {'steps/s':>9s} {'client CPU/step':>16s}")
    labels = {"plain": "VectorEnvClient, unrecorded",
              "recorded": "VectorEnvClient(store=...), pipelined",
              "per-client": f"{n} record() clients gathered per batch"}  # fmt: skip
    for key, (rate, client_us) in got.items():
        print(f"{labels[key]:44s} {rate:9.0f} {client_us:13.0f} us")
    print(f"store committer process: {side_us:.0f} us CPU per recorded step (both recorded kinds)")
    for key in ("recorded", "per-client"):
        ratio = got[key][0] / got["plain"][0]
        print(f"ratio {key} / plain: {ratio:5.3f}x  (cost {100 * (1 - ratio):4.1f}%)")
    print("target: recorded costs <= 5% of plain")


if __name__ == "__main__":
    main()
