"""Benchmark: the studio's run views, deep lists, filters, sorts, token pages and exports on a
generated store of 100,000 episodes / 1,000,000 steps (a GRPO run of 100 steps x 512 rollouts
among them), and ``/health`` while they run.

    .venv/bin/python bench/studio_runs.py [--store /tmp/big.db] [--episodes 100000] [--rounds 5]

The store is written by ``bench/gen_store.py`` (bulk inserts, one transaction) unless ``--store``
names one it wrote. The studio runs in its own process; server time is its ``Server-Timing``
header (time to the first response byte). ``/health`` is the reference in the same run, timed by
the client both idle and while two other processes keep requesting the heaviest pages and an
export. Prints numbers and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.gen_store import generate  # noqa: E402
from bench.studio import sample, start_studio  # noqa: E402

RUN = "7" * 32
LONG = "f" * 32


def _deep_cursor(http: httpx.Client, path: str, pages: int) -> str:
    """The address of page ``pages`` of a listing (following its Next links)."""
    import re

    url = path
    for _ in range(pages):
        m = re.search(r'id="next-page" href="([^"]+)"', http.get(url).text)
        if not m:
            break
        url = m.group(1).replace("&amp;", "&")
    return url


def pages(http: httpx.Client, rounds: int) -> list[tuple[str, float, float]]:
    rows = [
        ("/health (reference)", "/health"),
        ("runs list", "/runs"),
        ("run trend (one row of the runs list)", f"/runs/trend?run={RUN}"),
        ("run dashboard (100 steps x 512)", f"/runs/dashboard?run={RUN}"),
        ("run dashboard, labelled eval run (5,000 episodes)", "/runs/dashboard?run=label:rollout-000"),
        ("a step's groups", f"/runs/step?run={RUN}&step=50"),
        ("a group's rollouts", f"/runs/group?run={RUN}&group=s50-g1&step=50"),
        ("episode list, first page", "/episodes"),
        ("episode list, page 200 (deep)", None),
        ("list filtered: finished", "/episodes?finished=yes"),
        ("list filtered: in progress", "/episodes?finished=no"),
        ("list filtered: min length 10 (matches none)", "/episodes?min_length=10"),
        ("list filtered: min return 0.99", "/episodes?min_return=0.99"),
        ("list filtered: seed 7", "/episodes?seed=7"),
        ("list filtered: run + step + group", f"/episodes?run={RUN}&step=50&group=s50-g1"),
        ("list sorted: return", "/episodes?sort=return"),
        ("list sorted: length, ascending", "/episodes?sort=length&dir=asc"),
        ("list sorted: run's trainer reward", f"/episodes?run={RUN}&sort=reward"),
        ("list sorted: run's advantage, page 50", None),
        ("count and means, whole store", "/episodes/stats"),
        ("count and means, the run", f"/episodes/stats?run={RUN}"),
        ("transcript (8k-token call + failed turn)", f"/episodes/{LONG}/transcript"),
        ("token view, first page of an 8k-token call", f"/episodes/{LONG}/tokens"),
        ("token view, page 5 of it", f"/episodes/{LONG}/tokens?o0=4096"),
    ]
    deep = _deep_cursor(http, "/episodes", 200)
    deep_adv = _deep_cursor(http, f"/episodes?run={RUN}&sort=advantage", 50)
    out = []
    for label, path in rows:
        path = path or (deep if "page 200" in label else deep_adv)
        best, median = sample(http, path, rounds)
        out.append((label, best, median))
    return out


def export_rate(url: str, limit: int = 20_000) -> tuple[float, float]:
    """Seconds to the first byte and episodes per second of a streamed JSONL export of everything."""
    with httpx.Client(base_url=url, timeout=600, trust_env=False) as http:
        start = time.perf_counter()
        first, n = None, 0
        with http.stream("GET", "/episodes/export?format=jsonl") as resp:
            for chunk in resp.iter_bytes():
                if first is None:
                    first = time.perf_counter() - start
                n += chunk.count(b"\n")
                if n >= limit:
                    break
        return first or 0.0, n / (time.perf_counter() - start)


def _load(url: str, stop: Any) -> None:
    """Request the dashboard, the whole-store stats and an export (its first chunks) until ``stop``."""
    with httpx.Client(base_url=url, timeout=600, trust_env=False) as other:
        while not stop.is_set():
            other.get(f"/runs/dashboard?run={RUN}")
            other.get("/episodes/stats")
            with other.stream("GET", "/episodes/export?format=jsonl") as resp:
                for i, _ in enumerate(resp.iter_bytes()):
                    if stop.is_set() or i > 20:
                        break


def health_under_load(url: str, seconds: float) -> tuple[float, float, float, float]:
    """Client-side /health latency (median, p95) idle, then while two load processes request the
    dashboard, the whole-store stats and an export over and over (processes, not threads: the
    prober must not wait for this process's GIL behind the load's response parsing)."""
    def rtts(http: httpx.Client, until: float) -> list[float]:
        out = []
        while time.perf_counter() < until and len(out) < 5000:
            t = time.perf_counter()
            http.get("/health")
            out.append((time.perf_counter() - t) * 1000)
            time.sleep(0.01)
        return out

    def p95(xs: list[float]) -> float:
        return sorted(xs)[int(len(xs) * 0.95)]

    ctx = multiprocessing.get_context("spawn")
    with httpx.Client(base_url=url, timeout=60, trust_env=False) as http:
        idle = rtts(http, time.perf_counter() + seconds / 2)
        stop = ctx.Event()
        workers = [ctx.Process(target=_load, args=(url, stop)) for _ in range(2)]
        for w in workers:
            w.start()
        time.sleep(1.5)  # the workers' imports
        busy = rtts(http, time.perf_counter() + seconds)
        stop.set()
        for w in workers:
            w.join(120)
            if w.is_alive():
                w.terminate()
    return statistics.median(idle), p95(idle), statistics.median(busy), p95(busy)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=None, help="a store bench/gen_store.py wrote (else one is made)")
    ap.add_argument("--episodes", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-studio-runs-"))
    try:
        if args.store:
            shutil.copy(args.store, data / "episodes.db")
        else:
            t = time.perf_counter()
            generate(data / "episodes.db", episodes=args.episodes)
            print(f"generated {args.episodes:,} episodes / {args.episodes * 10:,} steps in {time.perf_counter() - t:.1f} s")
        proc, url = start_studio(data)
        try:
            with httpx.Client(base_url=url, timeout=120, trust_env=False) as http:
                rows = pages(http, args.rounds)
            ref = rows[0][2]
            print(f"\n{'server time (ms)':58s} {'best':>8s} {'median':>8s} {'x /health':>10s}")
            for label, best, median in rows:
                print(f"{label:58s} {best:8.2f} {median:8.2f} {median / ref:10.0f}")
            first, rate = export_rate(url)
            print(f"\nexport JSONL: first byte after {first * 1000:.0f} ms, {rate:,.0f} episodes/s (first 20,000)")
            mi, pi, mb, pb = health_under_load(url, 8.0)
            print(f"/health round trip (client): idle median {mi:.2f} ms p95 {pi:.2f} ms; "
                  f"under load median {mb:.2f} ms p95 {pb:.2f} ms ({mb / mi:.1f}x)")
        finally:
            proc.terminate()
            proc.wait(30)
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
