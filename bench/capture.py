"""Benchmark: the capture proxy's overhead per model call, with 64 concurrent rollouts.

    .venv/bin/python bench/capture.py [--rollouts 64] [--calls 8] [--rounds 3] [--generation-ms 100] [--no-peer]

A loopback engine that answers like vLLM (``tests/capture/fake_engine.py``, uvicorn in its own
process; it sleeps ``--generation-ms`` per call, as an engine generating would) is called by
``--rollouts`` concurrent agent loops of ``--calls`` growing calls each, in
the same run:

1. ``direct``: straight to the engine, with the capture parameters already in the body;
2. ``ours``: through our proxy (``openenv capture``'s app, its own process), not recording;
3. ``ours+store``: the same, recording every call into a journaled SQLite store;
4. ``0.10``: through the published 0.10's proxy (its peer venv, its own process), when installed.

Prints per-call latency p50/p99 for each, the overhead above ``direct`` (goal: <= 1 ms p50,
<= 5 ms p99) and the CPU each proxy process spent per call (``/proc/<pid>/stat`` utime + stime
before and after each variant; for ``direct`` the engine's); asserts nothing.
``BENCH_CAPTURE_PROFILE=/tmp/cap.prof`` runs our proxies under cProfile (dumped per process on exit).
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

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.server_utils import free_port, wait_healthy  # noqa: E402

PEER = REPO / ".cache" / "peer-openenv-0.10" / "bin" / "python"
_OURS = ("import os, sys, uvicorn\nfrom openenv.capture import create_capture_app\nfrom openenv.recording import EpisodeStore\n"
         "store = EpisodeStore(sys.argv[3]) if sys.argv[3] != '-' else None\n"
         "prof = os.environ.get('BENCH_CAPTURE_PROFILE')\n"
         "if prof:  # uvicorn re-raises SIGTERM after its shutdown: dump then\n"
         "    import cProfile, signal\n    pr = cProfile.Profile()\n"
         "    signal.signal(signal.SIGTERM, lambda *_: (pr.disable(), pr.dump_stats(f'{prof}.{os.getpid()}'), os._exit(0)))\n"
         "    pr.enable()\n"
         "uvicorn.run(create_capture_app(llm_url=sys.argv[1], store=store), host='127.0.0.1', port=int(sys.argv[2]),"
         " log_level='warning')\n")
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """The process's user + system CPU so far (seconds), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _serve(cmd: list[str], port: int, **kw) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    wait_healthy(f"http://127.0.0.1:{port}", timeout_s=60)
    return proc


async def _loop(http: httpx.AsyncClient, url: str, key: str | None, calls: int, direct: bool, out: list[float],
                model: str) -> None:
    messages = [{"role": "system", "content": "You are fast."}, {"role": "user", "content": "go 0"}]
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with http:
        for i in range(calls):
            body = {"model": model, "messages": messages}
            if direct:
                body.update(logprobs=True, return_token_ids=True, top_logprobs=0, stream=False, max_tokens=8192)
            t0 = time.perf_counter()
            resp = await http.post(f"{url}/v1/chat/completions", json=body, headers=headers)
            out.append((time.perf_counter() - t0) * 1000)
            resp.raise_for_status()
            messages = [*messages, resp.json()["choices"][0]["message"], {"role": "user", "content": f"go {i + 1}"}]


async def _run(url: str, a: argparse.Namespace, *, direct: bool) -> list[float]:
    lat: list[float] = []
    keys: list[str | None] = [None] * a.rollouts
    if not direct:
        async with httpx.AsyncClient(timeout=60, trust_env=False) as http:
            keys = [(await http.post(f"{url}/sessions", json={})).json()["session_id"] for _ in range(a.rollouts)]
    # one client (one connection) per rollout, as separate agents have: one shared httpx pool of 64
    # connections costs the bench itself milliseconds of CPU per call, which shows up as latency
    tls = httpx.create_ssl_context(trust_env=False)  # made once: each takes ~50 ms
    clients = [httpx.AsyncClient(timeout=60, trust_env=False, verify=tls) for _ in keys]
    await asyncio.gather(*(_loop(c, url, k, a.calls, direct, lat, f"wait-{a.generation_ms}")
                           for c, k in zip(clients, keys, strict=True)))
    return lat


def _q(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100)[int(q) - 1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rollouts", type=int, default=64)
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--generation-ms", type=int, default=100, help="The engine's time per call (asleep, not busy).")
    ap.add_argument("--no-peer", action="store_true")
    a = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = []
    try:
        eport = free_port()
        procs.append(_serve([sys.executable, "-m", "uvicorn", "--factory", "tests.capture.fake_engine:make_engine",
                             "--port", str(eport), "--log-level", "warning"], eport, cwd=REPO, env=env))
        engine = f"http://127.0.0.1:{eport}"
        targets = {"direct": (engine, True, procs[0].pid)}  # its CPU column is the engine's
        tmp = tempfile.mkdtemp(prefix="bench-capture-")
        for name, db in (("ours", "-"), ("ours+store", str(Path(tmp) / "cap.db"))):
            port = free_port()
            procs.append(_serve([sys.executable, "-c", _OURS, engine + "/v1", str(port), db], port, cwd=REPO, env=env))
            targets[name] = (f"http://127.0.0.1:{port}", False, procs[-1].pid)
        if PEER.exists() and not a.no_peer:
            port = free_port()
            procs.append(_serve([str(PEER), "-P", str(REPO / "tests" / "capture" / "peer_capture.py"), engine + "/v1",
                                 str(port), "-"], port, cwd="/"))
            targets["0.10"] = (f"http://127.0.0.1:{port}", False, procs[-1].pid)
        results: dict[str, list[float]] = {name: [] for name in targets}
        cpu: dict[str, float] = dict.fromkeys(targets, 0.0)
        for _ in range(a.rounds):  # interleaved, so drift hits every target alike
            for name, (url, direct, pid) in targets.items():
                before = _cpu_s(pid)
                try:
                    results[name] += asyncio.run(_run(url, a, direct=direct))
                except httpx.HTTPError as exc:
                    raise SystemExit(f"{name} at {url} failed: {type(exc).__name__}: {exc}") from exc
                cpu[name] += _cpu_s(pid) - before
        base50, base99 = _q(results["direct"], 50), _q(results["direct"], 99)
        print(f"{a.rollouts} concurrent rollouts x {a.calls} calls x {a.rounds} rounds (per-call latency, ms; CPU per "
              "call: the proxy process's, the engine's for direct, session setup included; load average "
              f"{os.getloadavg()[0]:.2f})")
        for name, lat in results.items():
            p50, p99 = _q(lat, 50), _q(lat, 99)
            extra = "" if name == "direct" else f"   overhead p50 {p50 - base50:+8.2f}  p99 {p99 - base99:+8.2f}"
            print(f"  {name:11} p50 {p50:7.2f}  p99 {p99:7.2f}  cpu/call {cpu[name] * 1000 / len(lat):6.2f}{extra}")
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=20)


if __name__ == "__main__":
    main()
