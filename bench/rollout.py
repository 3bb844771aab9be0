"""Benchmark: the rollout loop's own speed (the model dominates in real use; the loop must not).

    .venv/bin/python bench/rollout.py [--episodes 64] [--max-steps 50] [--concurrency 16] [--rounds 3]

Against the echo env (uvicorn in its own process) and an instant loopback model server
(``tests/rollout/fake_openai.py --instant``: a bare ASGI app, in its own process), measured in the
same run:

1. ``rollout``: ``Rollout.run`` at ``--concurrency`` (prompt building, one chat request per step over
   httpx, parsing, the env step, recording the step and its turn into a journaled SQLite store);
2. ``env only``: the same number of recorded env steps with a fixed action (no model, no policy);
3. ``model only``: the same number of chat requests at the same concurrency (no env, no store).

Prints env steps/s and the ratios of 1 to 2 and 3 (target: rollout >= 1,000 env steps/s at 16);
asserts nothing.
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

from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from openenv.recording import EpisodeStore, record  # noqa: E402
from openenv.rollout import ChatClient, ModelEndpoint, Rollout, RolloutSettings  # noqa: E402
from tests.server_utils import free_port, wait_healthy  # noqa: E402


def _serve(cmd: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([*cmd, "--port", str(port)], cwd=REPO, env=dict(os.environ, OPENENV_WEB="0"))
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, timeout_s=30)
    return proc, url


async def _rollout(env_url: str, model_url: str, store: EpisodeStore, a: argparse.Namespace) -> float:
    settings = RolloutSettings(episodes=a.episodes, concurrency=a.concurrency, max_steps=a.max_steps, label="bench")
    run = Rollout(env_url, ModelEndpoint(model_url, model="instant"), store, settings)
    await run.prepare()
    t0 = time.perf_counter()
    summary = await run.run()
    wall = time.perf_counter() - t0
    assert summary["steps"]["total"] == a.episodes * a.max_steps, summary
    return summary["steps"]["total"] / wall


async def _env_only(env_url: str, store: EpisodeStore, a: argparse.Namespace) -> float:
    per_worker = a.episodes // a.concurrency

    async def worker() -> None:
        env = record(GenericEnvClient(base_url=env_url), store=store, source="model", label="bench-env")
        await env.connect()
        try:
            for _ in range(per_worker):
                await env.reset(seed=1)
                for _ in range(a.max_steps):
                    await env.step({"message": "hi"})
        finally:
            await env.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(a.concurrency)))
    return per_worker * a.concurrency * a.max_steps / (time.perf_counter() - t0)


async def _model_only(model_url: str, a: argparse.Namespace) -> float:
    n = (a.episodes // a.concurrency) * a.max_steps
    messages = [{"role": "system", "content": "x" * 400}, {"role": "user", "content": "obs"}]
    async with ChatClient(ModelEndpoint(model_url, model="instant"), max_connections=2 * a.concurrency) as chat:
        async def worker() -> None:
            for _ in range(n):
                await chat.complete(messages)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(a.concurrency)))
        return n * a.concurrency / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--max-steps", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    a = parser.parse_args()
    env_proc, env_url = _serve([sys.executable, "-m", "uvicorn", "openenv.envs.echo.app:app", "--host", "127.0.0.1",
                                "--log-level", "warning", "--ws-per-message-deflate", "false"])  # fmt: skip
    model_proc, model_url = _serve([sys.executable, "-m", "tests.rollout.fake_openai", "--instant"])
    rows: dict[str, list[float]] = {"rollout": [], "env only": [], "model only": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = EpisodeStore(Path(tmp) / "bench.db")
            try:
                asyncio.run(_rollout(env_url, model_url + "/v1", store, argparse.Namespace(**{**vars(a), "episodes": a.concurrency, "max_steps": 5})))  # noqa: E501 - warm-up
                for _ in range(a.rounds):
                    rows["rollout"].append(asyncio.run(_rollout(env_url, model_url + "/v1", store, a)))
                    rows["env only"].append(asyncio.run(_env_only(env_url, store, a)))
                    rows["model only"].append(asyncio.run(_model_only(model_url + "/v1", a)))
            finally:
                store.close()
    finally:
        for proc in (env_proc, model_proc):
            proc.terminate()
            proc.wait(timeout=10)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"{a.episodes} episodes x {a.max_steps} steps, concurrency {a.concurrency}, {a.rounds} rounds (median)")
    for k, v in rows.items():
        print(f"  {k:<11} {med[k]:>8,.0f} steps/s   rounds: {', '.join(f'{x:,.0f}' for x in v)}")
    print(f"  rollout / env only   {med['rollout'] / med['env only']:.2f}")
    print(f"  rollout / model only {med['rollout'] / med['model only']:.2f}")
    print(f"  target: rollout >= 1,000 env steps/s -> {'met' if med['rollout'] >= 1000 else 'NOT met'}")


if __name__ == "__main__":
    main()
