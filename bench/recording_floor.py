"""Benchmark: the recorder's write path against a bare ``sqlite3`` floor doing the same inserts.

    .venv/bin/python bench/recording_floor.py [--episodes 400] [--steps 20] [--rounds 7]

A training-shaped workload: E episodes of S echo steps each, every episode tagged with a training
run, step, group and index at its start, then the trainer's reward/components/advantage/finish
reason for all of them in one batch. The recorder: ``start_episode(journaled=True,
training=...)``, ``journal_wire`` per step (the wire texts a recording client journals),
``journal_end``, ``set_outcomes``; done when it returns (it waits for every journaled row to be
committed). The floor: one raw ``sqlite3`` connection on a store with the same schema (WAL,
synchronous=NORMAL) executing the same rows: the episode (training columns included) with its
reset step, one step chunk of the same bytes per episode, its counters and end, then the outcome
updates, committing every 64 episodes; and the same rows made durable one by one (autocommit),
the durability the recorder gives every step when it returns. Paired rounds, order swapped every round; prints the median
of the per-pair throughput ratios (recorder / floor) and asserts nothing. ``bench/recording.py``
runs it too.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402

from openenv.recording import EpisodeStore  # noqa: E402
from openenv.stepjournal.format import pack_step  # noqa: E402

OBS0 = {"echoed_message": "Echo environment ready!", "message_length": 0}


def _wire(i: int) -> tuple[bytes, bytes]:
    request = b'{"type":"step","data":{"message":"message %d"},"request_id":%d}' % (i, i)
    reply = (b'{"type":"observation","data":{"observation":{"echoed_message":"message %d","message_length":%d},'
             b'"reward":0.1,"done":false,"metadata":{}},"request_id":%d}') % (i, 8 + len(str(i)), i)  # fmt: skip
    return request, reply


def recorder(path: Path, episodes: int, steps: int) -> float:
    """Seconds for the recorder's path (store opened beforehand, closed afterwards)."""
    wires = [_wire(i) for i in range(1, steps + 1)]
    with EpisodeStore(path) as store:
        t0 = time.perf_counter()
        run = store.create_run(env_name="echo", journaled=True)
        training = store.open_training_run("bench", trainer="bench")
        ids = []
        for e in range(episodes):
            tags = {"training_run_id": training, "train_step": e // 16, "group_id": str(e // 4 % 4), "group_index": e % 4}
            eid = store.start_episode(run, reset_kwargs={"seed": e}, observation=OBS0, reward=0.0, journaled=True,
                                      training=tags)  # fmt: skip
            key = eid.encode()
            for i, (request, reply) in enumerate(wires, 1):
                store.journal_wire(key, i, time.time(), 0.3, 0.1, False, request, reply)
            store.journal_end(eid, "rollout_end")
            ids.append(eid)
        store.set_outcomes([{"episode_id": eid, "trainer_reward": 0.5, "reward_components": {"f": 0.5},
                             "advantage": 0.1, "finish_reason": "stop"} for eid in ids])  # fmt: skip
        return time.perf_counter() - t0


_EPISODE = ("INSERT INTO episode (id, run_id, env_name, source, label, reset_kwargs, seed, started_at, ended_at, "
            "end_reason, step_count, total_reward, done, training_run_id, train_step, group_id, group_index) "
            "VALUES (?, ?, 'echo', 'programmatic', NULL, ?, ?, ?, NULL, NULL, 0, NULL, 0, ?, ?, ?, ?)")  # fmt: skip
_STEP0 = ("INSERT INTO step (episode_id, idx, action, observation, reward, done, metadata, latency_ms, t, state) "
          "VALUES (?, 0, NULL, ?, 0.0, 0, NULL, NULL, ?, NULL)")  # fmt: skip
_CHUNK = "INSERT INTO step_chunk (episode_id, first_idx, last_idx, data) VALUES (?, ?, ?, ?)"
_COUNTS = "UPDATE episode SET step_count = ?, total_reward = ? WHERE id = ?"
_END = "UPDATE episode SET ended_at = ?, end_reason = 'rollout_end', done = 0 WHERE id = ? AND ended_at IS NULL"
_OUTCOME = ("UPDATE episode SET trainer_reward = ?, reward_components = ?, advantage = ?, finish_reason = ? "
            "WHERE id = ?")  # fmt: skip


_STEP = ("INSERT INTO step (episode_id, idx, action, observation, reward, done, metadata, latency_ms, t, state) "
         "VALUES (?, ?, ?, ?, 0.1, 0, NULL, 0.3, ?, NULL)")  # fmt: skip


def floor_per_step(path: Path, episodes: int, steps: int) -> float:
    """Seconds for bare sqlite3 making each row durable when it is written, as the recorder does
    (autocommit: one commit per row), the same rows as ``floor`` (a step as a row of its texts)."""
    import uuid

    EpisodeStore(path).close()
    wires = [_wire(i) for i in range(1, steps + 1)]
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA synchronous=NORMAL")
    t0 = time.perf_counter()
    run, training = uuid.uuid4().hex, uuid.uuid4().hex
    con.execute("INSERT INTO env_run (id, env_name, source, created_at) VALUES (?, 'echo', 'programmatic', ?)",
                (run, time.time()))  # fmt: skip
    con.execute("INSERT INTO training_run (id, name, trainer, status, started_at) VALUES (?, 'bench', 'bench', "
                "'running', ?)", (training, time.time()))  # fmt: skip
    ids = []
    for e in range(episodes):
        eid = uuid.uuid4().hex
        now = time.time()
        con.execute(_EPISODE, (eid, run, orjson.dumps({"seed": e}).decode(), e, now, training, e // 16,
                               str(e // 4 % 4), e % 4))  # fmt: skip
        con.execute(_STEP0, (eid, orjson.dumps(OBS0).decode(), now))
        for i, (rq, rp) in enumerate(wires, 1):
            con.execute(_STEP, (eid, i, rq.decode(), rp.decode(), time.time()))
        con.execute(_END, (time.time(), eid))
        ids.append(eid)
    con.execute("BEGIN IMMEDIATE")
    con.executemany(_OUTCOME, [(0.5, orjson.dumps({"f": 0.5}).decode(), 0.1, "stop", eid) for eid in ids])
    con.execute("COMMIT")
    seconds = time.perf_counter() - t0
    con.close()
    return seconds


def floor(path: Path, episodes: int, steps: int) -> float:
    """Seconds for bare sqlite3 doing the same inserts on a store of the same schema, batched (64
    episodes per commit: no row is durable before its batch commits)."""
    import uuid

    EpisodeStore(path).close()  # the schema, indexes and WAL mode
    wires = [_wire(i) for i in range(1, steps + 1)]
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA synchronous=NORMAL")
    t0 = time.perf_counter()
    run, training = uuid.uuid4().hex, uuid.uuid4().hex
    con.execute("BEGIN IMMEDIATE")
    con.execute("INSERT INTO env_run (id, env_name, source, created_at) VALUES (?, 'echo', 'programmatic', ?)",
                (run, time.time()))  # fmt: skip
    con.execute("INSERT INTO training_run (id, name, trainer, status, started_at) VALUES (?, 'bench', 'bench', "
                "'running', ?)", (training, time.time()))  # fmt: skip
    con.execute("COMMIT")
    ids = []
    for at in range(0, episodes, 64):
        con.execute("BEGIN IMMEDIATE")
        for e in range(at, min(at + 64, episodes)):
            eid = uuid.uuid4().hex
            now = time.time()
            con.execute(_EPISODE, (eid, run, orjson.dumps({"seed": e}).decode(), e, now, training, e // 16,
                                   str(e // 4 % 4), e % 4))  # fmt: skip
            con.execute(_STEP0, (eid, orjson.dumps(OBS0).decode(), now))
            key = eid.encode()
            data = b"".join(pack_step(key, i, time.time(), 0.3, 0.1, False, rq, rp) for i, (rq, rp) in enumerate(wires, 1))
            con.execute(_CHUNK, (eid, 1, steps, data))
            con.execute(_COUNTS, (steps, 0.1 * steps, eid))
            con.execute(_END, (time.time(), eid))
            ids.append(eid)
        con.execute("COMMIT")
    con.execute("BEGIN IMMEDIATE")
    con.executemany(_OUTCOME, [(0.5, orjson.dumps({"f": 0.5}).decode(), 0.1, "stop", eid) for eid in ids])
    con.execute("COMMIT")
    seconds = time.perf_counter() - t0
    con.close()
    return seconds


def compare(tmp: Path, episodes: int, steps: int, rounds: int) -> dict[str, float]:
    """Paired rounds against each floor; prints and returns the median recorder/floor throughput ratios."""
    floors = {"per-row durable (autocommit, as the recorder's contract)": floor_per_step,
              "batched (64 episodes per commit)": floor}  # fmt: skip
    recorder(tmp / "warm-r.db", 16, steps)
    out = {}
    rows = episodes * (steps + 1)
    for name, fn in floors.items():
        fn(tmp / "warm-f.db", 16, steps)
        rec, flo, ratios = [], [], []
        for n in range(rounds):
            order = ("rec", "floor") if n % 2 == 0 else ("floor", "rec")
            got = {}
            for side in order:
                path = tmp / f"{side}-{len(out)}-{n}.db"
                got[side] = recorder(path, episodes, steps) if side == "rec" else fn(path, episodes, steps)
            rec.append(got["rec"])
            flo.append(got["floor"])
            ratios.append(got["floor"] / got["rec"])
        med = out[name] = statistics.median(ratios)
        print(f"  recorder vs bare sqlite3 {name}, {episodes} episodes x {steps} steps + training tags and "
              f"outcomes: throughput ratio median {med:.2f} (pairs {min(ratios):.2f}-{max(ratios):.2f}) | median "
              f"{rows / statistics.median(rec):.0f} rows/s recorder, {rows / statistics.median(flo):.0f} rows/s floor")  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=400)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        compare(Path(tmp), args.episodes, args.steps, args.rounds)


if __name__ == "__main__":
    main()
