"""Benchmark: recording overhead and store read speed.

    .venv/bin/python bench/recording.py [--steps 3000] [--sessions 16] [--session-steps 1000]
                                        [--rounds 9] [--all-modes] [--overhead-only]

1. Echo env steps/s through a plain client vs a recording client (same run, same server
   process), for one session (``--steps``) and for N concurrent sessions of ``--session-steps``
   each: paired rounds, the order swapped every round, and the median of the per-pair ratios (the
   machine may be shared: also run it a few times). A round is one client per session: connect,
   reset, the steps, close; a recording ``close()`` also waits for the last commit (printed apart,
   as it is paid once per client, not per step), with the CPU time per step of the client, the
   server and the store's committer process (``/proc``). ``--all-modes`` adds commit-per-step
   (``journal=False``) and ``commit_every=16``.
2. The recorder's writes (a training-shaped workload: tags at start, outcomes in a batch) against
   bare sqlite3 doing the same inserts, durable row by row and batched (``recording_floor.py``).
3. A store with 100,000 episodes: first listing page (plain and filtered); a 10,000-step episode
   stored as step rows and one journaled from the wire (step chunks): one page of 100 steps and
   the whole episode.
Prints ratios against the reference measured in the same run; it asserts nothing.
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

from openenv.envs.echo import EchoAction, EchoEnv  # noqa: E402
from openenv.recording import EpisodeFilter, EpisodeStore, record  # noqa: E402
from tests.server_utils import free_port, wait_healthy  # noqa: E402


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


CLOSE_MS: list[float] = []  # how long each recording client's close() took


async def session(url: str, steps: int, store: EpisodeStore | None, commit_every: int = 1) -> None:
    client = EchoEnv(base_url=url)
    env = client if store is None else record(client, store=store, label="bench", commit_every=commit_every)
    await env.connect()
    try:
        await env.reset(seed=1)
        for i in range(steps):
            await env.step(EchoAction(message=f"message {i}"))
    finally:
        t0 = time.perf_counter()
        await env.close()
        if store is not None:
            CLOSE_MS.append((time.perf_counter() - t0) * 1000)


SERVER_PID: list[int] = []  # the env server's pid, for its CPU time


def _cpu_s(pid: int | None) -> float:
    """CPU seconds of process ``pid`` so far, all its threads (0 if there is none): nanoseconds
    from ``/proc/PID/schedstat`` where the kernel keeps them, else clock ticks from ``stat``."""
    if pid is None:
        return 0.0
    try:
        return sum(int((Path(f"/proc/{pid}/task") / tid / "schedstat").read_text().split()[0])
                   for tid in os.listdir(f"/proc/{pid}/task")) / 1e9  # fmt: skip
    except (OSError, ValueError, IndexError):
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _committer_pid(store: EpisodeStore | None) -> int | None:
    journal = getattr(store, "_journal", None)
    return journal._host.pid if journal is not None else None


async def rate(
    url: str, steps: int, sessions: int, store: EpisodeStore | None, commit_every: int = 1
) -> tuple[float, float, float, float]:
    """Steps/s (wall), and CPU microseconds per step of the client, the server and the store's
    committer process (0 when it commits in-process or not at all)."""
    committer = _committer_pid(store)
    t0, c0 = time.perf_counter(), time.process_time()
    s0, k0 = _cpu_s(SERVER_PID[0] if SERVER_PID else None), _cpu_s(committer)
    await asyncio.gather(*(session(url, steps, store, commit_every) for _ in range(sessions)))
    n = steps * sessions
    server = _cpu_s(SERVER_PID[0] if SERVER_PID else None) - s0
    return (n / (time.perf_counter() - t0), (time.process_time() - c0) / n * 1e6, server / n * 1e6,
            (_cpu_s(committer) - k0) / n * 1e6)  # fmt: skip


def overhead(
    url: str, store: EpisodeStore, steps: int, sessions: int, rounds: int, mode: str, commit_every: int = 1
) -> float:
    """Paired rounds (plain, recording), the order swapped every round so drift cancels; prints the
    median of the per-pair ratios. Returns it."""
    asyncio.run(rate(url, 100, sessions, None))  # warm up both paths
    asyncio.run(rate(url, 100, sessions, store, commit_every))
    CLOSE_MS.clear()
    plain, rec, ratios = [], [], []
    for n in range(rounds):
        order = (None, store) if n % 2 == 0 else (store, None)
        got = {id(s): asyncio.run(rate(url, steps, sessions, s, commit_every)) for s in order}
        p, r = got[id(None)], got[id(store)]
        plain.append(p)
        rec.append(r)
        ratios.append(r[0] / p[0])
    med = statistics.median(ratios)
    print(f"  {sessions:>2} session(s), {mode}: recording/plain median {med:.3f} (overhead {100 * (1 - med):.1f}%; "
          f"pairs {min(ratios):.2f}-{max(ratios):.2f}) | median steps/s plain "
          f"{statistics.median(x[0] for x in plain):.0f} / recording {statistics.median(x[0] for x in rec):.0f} | "
          f"CPU/step client {statistics.median(x[1] for x in plain):.0f} / "
          f"{statistics.median(x[1] for x in rec):.0f} us, server {statistics.median(x[2] for x in plain):.0f} / "
          f"{statistics.median(x[2] for x in rec):.0f} us, committer process "
          f"{statistics.median(x[3] for x in rec):.1f} us | recording close() median "
          f"{statistics.median(CLOSE_MS):.1f} ms")  # fmt: skip
    return med


def build_big_store(path: Path, episodes: int, long_steps: int) -> tuple[EpisodeStore, str]:
    store = EpisodeStore(path)
    run = store.create_run(env_name="echo", label="bulk")
    now = time.time()
    envs = ("echo", "repl", "chess", "maze")
    rows = [
        {"id": f"{i:032x}", "run_id": run, "env_name": envs[i % 4], "source": "programmatic" if i % 3 else "human",
         "label": f"agent-{i % 10}", "reset_kwargs": "{}", "seed": i, "started_at": now - episodes + i,
         "ended_at": now - episodes + i + 0.5 if i % 5 else None, "end_reason": "done" if i % 5 else None,
         "step_count": i % 50, "total_reward": float(i % 97), "done": bool(i % 5)}
        for i in range(episodes)
    ]  # fmt: skip
    from sqlalchemy import insert

    from openenv.recording.models import Episode

    store.write(lambda c: c.execute(insert(Episode.__table__), rows))
    eid = store.start_episode(run, observation={"echoed_message": ""})
    step_rows = [
        (eid, i, '{"message":"m"}', '{"echoed_message":"%s","message_length":40}' % ("x" * 40), 0.1, False,
         None, 0.3, now, None)
        for i in range(1, long_steps + 1)
    ]  # fmt: skip

    def bulk(conn) -> None:  # noqa: ANN001
        conn.exec_driver_sql("INSERT INTO step VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", step_rows)
        conn.exec_driver_sql("UPDATE episode SET step_count = ? WHERE id = ?", (long_steps, eid))

    store.write(bulk)
    return store, eid


def journal_long_episode(store: EpisodeStore, steps: int) -> str:
    """An episode of ``steps`` echo steps journaled as a recording client does (wire texts)."""
    run = store.create_run(env_name="echo", label="wire")
    eid = store.start_episode(run, observation={"echoed_message": ""})
    for i in range(1, steps + 1):
        request = b'{"type":"step","data":{"message":"message %d"},"request_id":%d}' % (i, i)
        reply = (b'{"type":"observation","data":{"observation":{"echoed_message":"message %d","message_length":%d},'
                 b'"reward":0.1,"done":false,"metadata":{"step":%d}},"request_id":%d}') % (i, 8 + len(str(i)), i, i)
        store.journal_wire(eid.encode(), i, time.time(), 0.3, 0.1, False, request, reply)
    store.flush()
    return eid


def timed(fn, repeat: int = 7) -> float:  # noqa: ANN001
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def reads(tmp: Path) -> None:
    store, eid = build_big_store(tmp / "big.db", 100_000, 10_000)
    ref = timed(lambda: store.get_episode(eid))
    first = timed(lambda: store.list_episodes(limit=50))
    page = store.list_episodes(limit=50)
    second = timed(lambda: store.list_episodes(limit=50, cursor=page.next_cursor))
    filt = timed(
        lambda: store.list_episodes(EpisodeFilter(env="repl", finished=True, min_return=10), limit=50)
    )
    steps_page = timed(lambda: store.load_steps(eid, start=5000, limit=100))
    steps_all = timed(lambda: store.load_steps(eid), repeat=3)
    wire_eid = journal_long_episode(store, 10_000)
    wire_page = timed(lambda: store.load_steps(wire_eid, start=5000, limit=100))
    wire_all = timed(lambda: store.load_steps(wire_eid), repeat=3)
    print(f"  reference: get_episode (primary-key lookup) {ref:.2f} ms")
    print(f"  100k episodes, first page of 50: {first:.2f} ms ({first / ref:.1f}x reference); "
          f"second page {second:.2f} ms; filtered (env+finished+min_return) {filt:.2f} ms")  # fmt: skip
    print(f"  10k-step episode: page of 100 steps {steps_page:.2f} ms; all 10,001 steps {steps_all:.1f} ms")
    print(f"  10k-step episode recorded from the wire (step chunks): page of 100 steps {wire_page:.2f} ms; "
          f"all 10,001 steps {wire_all:.1f} ms")  # fmt: skip
    store.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3000, help="steps of the single session")
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--session-steps", type=int, default=1000, help="steps of each of the N sessions")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--all-modes", action="store_true", help="also commit per step and commit_every=16")
    ap.add_argument("--overhead-only", action="store_true", help="skip the store read timings")
    args = ap.parse_args()
    proc, url = start_server()
    SERVER_PID.append(proc.pid)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"recording overhead (echo env, server in its own process, SQLite WAL store; "
                  f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs):")  # fmt: skip
            modes = [("journal (default)", {}, 1), ("commit per step (journal=False)", {"journal": False}, 1),
                     ("commit_every=16", {}, 16)]  # fmt: skip
            for name, options, every in modes if args.all_modes else modes[:1]:
                with EpisodeStore(Path(tmp) / f"rec-{every}-{len(options)}.db", **options) as store:
                    overhead(url, store, args.steps, 1, args.rounds, name, every)
                    overhead(url, store, args.session_steps, args.sessions, args.rounds, name, every)
            if args.overhead_only:
                return
            print("recorder writes against a bare sqlite3 floor (bench/recording_floor.py):")
            from bench.recording_floor import compare

            compare(Path(tmp), 400, 20, 5)
            print("store reads:")
            reads(Path(tmp))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
