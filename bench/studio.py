"""Benchmark: studio server time on a big store, and what stepping through the studio adds.

    .venv/bin/python bench/studio.py [--episodes 100000] [--long-steps 10000] [--steps 300]

1. A store with 100,000 episodes, one 10,000-step episode written as rows and one of 10,000
   steps recorded through the journal from a real echo env (step chunks, as every studio- or
   script-recorded episode on SQLite); the studio (its own process) serves the episode list's
   first page and those episodes' pages, chart included. Server time is read from the
   ``Server-Timing`` header; the reference is ``/health`` on the same server, same run.
3. Fork replay: ``fork_sync`` of the journal episode at its last step on a fresh echo session
   (replay + compare + record), against stepping the same env directly, same run.
2. An echo env launched by the studio is stepped directly (``GenericEnvClient``, WebSocket) and
   through the studio's Play route (HTTP POST -> recorder -> SQLite -> HTML fragment), in
   interleaved rounds; the per-step difference is what the studio adds.
Prints numbers and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from http.client import HTTPConnection
from pathlib import Path
from urllib.parse import urlencode

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from openenv.core import GenericEnvClient  # noqa: E402
from openenv.core.env_server import create_app  # noqa: E402
from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation  # noqa: E402
from openenv.recording import EpisodeStore, fork_sync, record  # noqa: E402
from openenv.recording.models import Episode  # noqa: E402
from tests.server_utils import free_port, running_server, wait_healthy  # noqa: E402

HX = {"HX-Request": "true"}


def fill_store(path: Path, episodes: int, long_steps: int) -> str:
    """``episodes`` short episodes in 100 runs plus one long one; returns the long one's id."""
    from sqlalchemy import insert

    store = EpisodeStore(path)
    envs = ("echo", "repl", "chess", "maze")
    runs = [store.create_run(env_name=envs[r % 4], label=f"agent-{r % 10}", source="programmatic" if r % 3 else "human")
            for r in range(100)]  # fmt: skip
    now = time.time()
    rows = [
        {"id": f"{i:032x}", "run_id": runs[i % 100], "env_name": envs[i % 100 % 4],
         "source": "programmatic" if i % 100 % 3 else "human", "label": f"agent-{i % 100 % 10}",
         "reset_kwargs": "{}", "seed": i, "started_at": now - episodes + i,
         "ended_at": now - episodes + i + 0.5, "end_reason": "done", "step_count": i % 50,
         "total_reward": float(i % 97), "done": True}
        for i in range(episodes)
    ]  # fmt: skip
    store.write(lambda c: c.execute(insert(Episode.__table__), rows))
    eid = store.start_episode(runs[0], observation={"echoed_message": "", "message_length": 0}, reward=0.0)
    step_rows = [
        (eid, i, f'{{"message":"m{i}"}}', f'{{"echoed_message":"{"x" * (i % 60)}","message_length":{i % 60}}}',
         (i % 60) / 10, i == long_steps, None, 0.3, now, None)
        for i in range(1, long_steps + 1)
    ]  # fmt: skip

    def bulk(conn) -> None:  # noqa: ANN001
        conn.exec_driver_sql("INSERT INTO step VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", step_rows)
        conn.exec_driver_sql("UPDATE episode SET step_count = ?, total_reward = ?, ended_at = ? WHERE id = ?",
                             (long_steps, sum(r[4] for r in step_rows), now, eid))

    store.write(bulk)
    store.close()
    return eid


def record_journal_episode(path: Path, echo_url: str, steps: int) -> str:
    """A ``steps``-step echo episode recorded through the journal (the default on SQLite)."""
    store = EpisodeStore(path)
    with record(GenericEnvClient(base_url=echo_url).sync(), store=store, label="journal") as env:
        env.reset()
        for i in range(steps):
            env.step({"message": "x" * (i % 60)})
        eid = env.episode_id
    store.close()
    return eid


def forking(path: Path, echo_url: str, eid: str, steps: int, rounds: int) -> None:
    store = EpisodeStore(path)
    direct, forked = [], []
    try:
        for _ in range(rounds):
            with GenericEnvClient(base_url=echo_url).sync() as env:
                env.reset()
                t0 = time.perf_counter()
                for i in range(steps):
                    env.step({"message": "x" * (i % 60)})
                direct.append(steps / (time.perf_counter() - t0))
            with GenericEnvClient(base_url=echo_url).sync() as env:
                t0 = time.perf_counter()
                report = fork_sync(store, eid, env, step=steps).report
                store.flush()
                forked.append(steps / (time.perf_counter() - t0))
            assert report.complete and not report.diverged, report.describe()
    finally:
        store.close()
    d, f = max(direct), max(forked)
    print(f"  direct stepping (WebSocket client): {d:,.0f} steps/s (best of {rounds})")
    print(f"  fork at step {steps:,} (load + replay + compare + record): {f:,.0f} steps/s "
          f"({f / d:.2f}x direct)")


def server_ms(resp: httpx.Response) -> float:
    match = re.search(r"app;dur=([\d.]+)", resp.headers.get("server-timing", ""))
    assert match and resp.status_code == 200, (resp.status_code, resp.text[:300])
    return float(match.group(1))


def sample(http: httpx.Client, path: str, n: int, headers: dict[str, str] | None = None) -> tuple[float, float]:
    """Best and median server time of ``n`` GETs (after one warm-up)."""
    http.get(path, headers=headers)
    times = [server_ms(http.get(path, headers=headers)) for _ in range(n)]
    return min(times), statistics.median(times)


def start_studio(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = dict(os.environ, OPENENV_STUDIO_DOCKER="false", OPENENV_STUDIO_PROJECT="bench-studio")
    proc = subprocess.Popen([sys.executable, "-m", "openenv.cli.main", "studio", "--port", str(port),
                             "--data-dir", str(data)], cwd=REPO, env=env)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, timeout_s=60)
    return proc, url


def pages(http: httpx.Client, eid: str, n: int, journal_eid: str) -> None:
    ref = sample(http, "/health", n)
    rows = [
        ("episode list, first page (full page)", "/episodes", None),
        ("episode list, first page (fragment)", "/episodes", HX),
        ("episode list, filtered env+label", "/episodes?env=repl&label=agent-1", HX),
        ("10k-step episode page (full page)", f"/episodes/{eid}", None),
        ("10k-step episode, step 5000 (fragment)", f"/episodes/{eid}/step?step=5000", HX),
        ("10k journal-step episode page (full page)", f"/episodes/{journal_eid}", None),
        ("10k journal-step episode, live chart (fragment)", f"/episodes/{journal_eid}/live", HX),
        ("10k journal-step episode, step 5000 (fragment)", f"/episodes/{journal_eid}/step?step=5000", HX),
    ]
    print(f"  reference /health: best {ref[0]:.2f} ms, median {ref[1]:.2f} ms")
    for label, path, headers in rows:
        best, med = sample(http, path, n, headers)
        print(f"  {label:<42} best {best:7.2f} ms  median {med:7.2f} ms  ({med / max(ref[1], 1e-3):.0f}x reference)")


def launch_echo(http: httpx.Client) -> tuple[str, str]:
    html = http.get("/envs").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    key = re.search(r'data-entry="([^"]+)" data-target="echo"', html).group(1)
    resp = http.post(f"/envs/launch/{key}", data={"provider": "process"}, headers={**HX, "X-CSRF-Token": csrf})
    rid = re.search(r'data-runtime="([^"]+)"', resp.text).group(1)
    for _ in range(600):
        status = re.search(r'data-status="([a-z]+)"', http.get(f"/envs/r/{rid}/status", headers=HX).text).group(1)
        if status != "starting":
            break
        time.sleep(0.1)
    assert status == "running", status
    return rid, csrf


def stepping(http: httpx.Client, steps: int, rounds: int) -> None:
    rid, csrf = launch_echo(http)
    play = http.get(f"/play/{rid}").text
    sid = re.search(r'data-session="([^"]+)"', play).group(1)
    base_url = re.search(r'at <span class="mono">([^<]+)</span>', play).group(1)
    headers = {**HX, "X-CSRF-Token": csrf}
    http.post(f"/play/s/{sid}/reset", data={"mode": "form"}, headers=headers)
    direct_ms, studio_ms, studio_server, floor_ms = [], [], [], []
    host, port = http.base_url.host, http.base_url.port
    conn = HTTPConnection(host, port)  # a lean keep-alive client, so the client's own cost stays small
    with GenericEnvClient(base_url=base_url).sync() as env:
        env.reset()
        for _ in range(rounds):
            t0 = time.perf_counter()
            for i in range(steps):
                env.step({"message": f"message {i}"})
            direct_ms.append((time.perf_counter() - t0) * 1000 / steps)
            t0 = time.perf_counter()
            server = []
            for i in range(steps):
                conn.request("POST", f"/play/s/{sid}/step", body=urlencode({"a.message": f"message {i}"}),
                             headers={**headers, "Content-Type": "application/x-www-form-urlencoded"})
                resp = conn.getresponse()
                body = resp.read()
                assert resp.status == 200 and b"observation" in body, resp.status
                server.append(float(re.search(r"app;dur=([\d.]+)", resp.getheader("server-timing")).group(1)))
            studio_ms.append((time.perf_counter() - t0) * 1000 / steps)
            studio_server.append(statistics.median(server))
            t0 = time.perf_counter()
            for _ in range(steps):
                conn.request("GET", "/health")
                conn.getresponse().read()
            floor_ms.append((time.perf_counter() - t0) * 1000 / steps)
    conn.close()
    d, s, srv, floor = min(direct_ms), min(studio_ms), min(studio_server), min(floor_ms)
    print(f"  direct (WebSocket client):           {d:.2f} ms/step (best of {rounds} rounds of {steps})")
    print(f"  through the studio (HTTP + record):  {s:.2f} ms/step wall, {srv:.2f} ms server time (median)")
    print(f"  HTTP round trip to the studio (GET /health, same connection): {floor:.2f} ms")
    print(f"  added per step: {s - d:.2f} ms wall; studio/direct = {s / d:.2f}x; "
          f"server time {srv:.2f} ms includes the env step it waits for ({srv - d:.2f} ms beyond it)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=100_000)
    ap.add_argument("--long-steps", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=15)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        t0 = time.perf_counter()
        eid = fill_store(data / "episodes.db", args.episodes, args.long_steps)
        echo = running_server(create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo"))
        echo_url = echo.__enter__()
        journal_eid = record_journal_episode(data / "episodes.db", echo_url, args.long_steps)
        print(f"store: {args.episodes:,} episodes + one of {args.long_steps:,} steps as rows + one of "
              f"{args.long_steps:,} journal-recorded steps (built in {time.perf_counter() - t0:.1f}s)")  # fmt: skip
        proc, url = start_studio(data)
        try:
            with httpx.Client(base_url=url, timeout=60.0, trust_env=False) as http:
                print("server time (Server-Timing header):")
                pages(http, eid, args.samples, journal_eid)
                print("stepping an echo env launched by the studio:")
                stepping(http, args.steps, args.rounds)
            print("fork replay on an echo env:")
            forking(data / "episodes.db", echo_url, journal_eid, args.long_steps, args.rounds)
        finally:
            echo.__exit__(None, None, None)
            proc.terminate()
            proc.wait(timeout=30)
            from openenv.core.containers.runtime import LocalProcessProvider

            LocalProcessProvider.cleanup(project="bench-studio", data_dir=data / "runtimes")


if __name__ == "__main__":
    main()
