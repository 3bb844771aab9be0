"""Generate a big episode store for the studio's run benches (and small ones for tests).

    .venv/bin/python bench/gen_store.py /tmp/big.db [--episodes 100000] [--steps-per-episode 10]

Writes, with bulk inserts in one transaction: one training run of ``train_steps`` x
``rollouts`` episodes (GRPO groups of ``group_size``: trainer reward, advantage, finish reason,
reward components, token counts), the rest as CLI rollouts (``source="model"``, one label per 5,000 episodes,
seeds repeating), ``steps_per_episode`` steps each (index 0 the reset), and one episode with a
model turn of ``long_call_tokens`` captured tokens (ids, the engine's token text, logprobs) plus a
failed last turn. Rows are written directly (``env_run``, ``training_run``, ``episode``, ``step``,
``step_agent``); no environment runs.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sqlite3
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from openenv.recording import EpisodeStore  # noqa: E402

__all__ = ["generate"]

FINISH = ("env_done", "env_done", "env_done", "max_turns", "truncated", "env_error", "model_error", "timeout")


def _episode_row(eid: str, run_id: str, t: float, steps: int, reward: float, **extra: object) -> tuple:
    row = {"id": eid, "run_id": run_id, "env_name": extra.pop("env_name", "repl"), "source": extra.pop("source", "model"),
           "label": extra.pop("label", None), "reset_kwargs": json.dumps({"seed": extra.get("seed")}),
           "seed": extra.pop("seed", None), "started_at": t, "ended_at": t + 1.0, "end_reason": "done",
           "step_count": steps - 1, "total_reward": reward, "done": 1, "notes": None, "parent_episode_id": None,
           "fork_step": None, "training_run_id": None, "train_step": None, "group_id": None, "group_index": None,
           "finish_reason": None, "trainer_reward": None, "reward_components": None, "advantage": None,
           "prompt_tokens": None, "completion_tokens": None}
    row.update(extra)
    return tuple(row.values())


_EP_COLS = ("id, run_id, env_name, source, label, reset_kwargs, seed, started_at, ended_at, end_reason, step_count, "
            "total_reward, done, notes, parent_episode_id, fork_step, training_run_id, train_step, group_id, "
            "group_index, finish_reason, trainer_reward, reward_components, advantage, prompt_tokens, completion_tokens")
_MARKS = ",".join("?" * 26)


def generate(path: str | Path, *, episodes: int = 100_000, steps_per_episode: int = 10, train_steps: int = 100,
             rollouts: int = 512, group_size: int = 8, long_call_tokens: int = 8192, seed: int = 0) -> dict[str, str]:
    """Fill a fresh SQLite store at ``path``; returns the ids worth opening (run, a group, the long episode)."""
    EpisodeStore(path).close()  # the schema
    rng = random.Random(seed)
    now = time.time() - episodes - 10
    con = sqlite3.connect(str(path))
    con.execute("PRAGMA synchronous=OFF")
    train_run = "7" * 32
    cli_runs = [f"{i:032x}" for i in range(1, max(2, episodes // 5000 + 2))]
    con.execute("BEGIN")
    con.execute("INSERT INTO env_run (id, env_name, source, label, created_at) VALUES (?,?,?,?,?)",
                (train_run, "repl", "model", "grpo-bench", now))
    for i, rid in enumerate(cli_runs):
        con.execute("INSERT INTO env_run (id, env_name, source, label, created_at) VALUES (?,?,?,?,?)",
                    (rid, "repl", "model", f"rollout-{i:03d}", now + i))
    con.execute("INSERT INTO training_run (id, name, trainer, env_name, config, status, started_at, ended_at) "
                "VALUES (?,?,?,?,?,?,?,?)", (train_run, "grpo-bench", "trl", "repl",
                json.dumps({"num_generations": group_size}), "finished", now, now + episodes))
    n_train = min(episodes, train_steps * rollouts)
    rows, steps, t = [], [], now
    obs = json.dumps({"stdout": "x" * 40, "exit_code": 0})
    for i in range(episodes):
        eid = f"{i + 1:08x}" + "e" * 24
        t += 1.0
        if i < n_train:
            step, k = divmod(i, rollouts)
            group, gi = divmod(k, group_size)
            skill = step / max(1, train_steps)
            reward = 1.0 if rng.random() < 0.2 + 0.6 * skill else 0.0
            if group % 7 == 0:
                reward = 0.0  # a group with zero spread
            finish = FINISH[rng.randrange(len(FINISH))]
            rows.append(_episode_row(eid, train_run, t, steps_per_episode, reward, label="grpo-bench", seed=group,
                                     training_run_id=train_run, train_step=step, group_id=f"s{step}-g{group}",
                                     group_index=gi, finish_reason=finish, trainer_reward=reward,
                                     reward_components=json.dumps({"correct": reward, "format": 0.0}),
                                     advantage=0.0, prompt_tokens=180 + group % 40,
                                     completion_tokens=rng.randrange(40, 120 + 4 * step)))
        else:
            j = i - n_train
            rows.append(_episode_row(eid, cli_runs[j // 5000], t, steps_per_episode, round(rng.random(), 3),
                                     label=f"rollout-{j // 5000:03d}", seed=j % 50,
                                     prompt_tokens=steps_per_episode * 300, completion_tokens=steps_per_episode * 40))
        for idx in range(steps_per_episode):
            steps.append((eid, idx, None if idx == 0 else '{"code": "print(1)"}', obs, 0.0 if idx else None,
                          int(idx == steps_per_episode - 1), None, 1.0, t + idx * 0.01, None))
        if len(steps) >= 50_000:
            _flush(con, rows, steps)
    _flush(con, rows, steps)
    _advantages(con, train_run)
    long_id = _long_episode(con, cli_runs[0], now, long_call_tokens, rng)
    con.execute("COMMIT")  # no ANALYZE: a store the recorder wrote has no statistics either
    con.close()
    return {"training_run": train_run, "group": "s50-g1", "long_episode": long_id, "first": f"{1:08x}" + "e" * 24}


def _flush(con: sqlite3.Connection, rows: list, steps: list) -> None:
    con.executemany(f"INSERT INTO episode ({_EP_COLS}) VALUES ({_MARKS})", rows)
    con.executemany("INSERT INTO step (episode_id, idx, action, observation, reward, done, metadata, latency_ms, t,"
                    " state) VALUES (?,?,?,?,?,?,?,?,?,?)", steps)
    rows.clear()
    steps.clear()


def _advantages(con: sqlite3.Connection, run: str) -> None:
    """GRPO's advantage: reward minus the group mean, over the group's std (0 when it ties)."""
    groups: dict[str, list[tuple[str, float]]] = {}
    for eid, gid, r in con.execute("SELECT id, group_id, trainer_reward FROM episode WHERE training_run_id = ?", (run,)):
        groups.setdefault(gid, []).append((eid, r))
    updates = []
    for members in groups.values():
        rs = [r for _, r in members]
        mean = sum(rs) / len(rs)
        std = math.sqrt(sum((r - mean) ** 2 for r in rs) / len(rs))
        updates.extend(((r - mean) / std if std else 0.0, eid) for eid, r in members)
    con.executemany("UPDATE episode SET advantage = ? WHERE id = ?", updates)


def _long_episode(con: sqlite3.Connection, run: str, now: float, tokens: int, rng: random.Random) -> str:
    """An episode whose one model call holds ``tokens`` sampled tokens (ids, text, logprobs) and a failed turn."""
    eid = "f" * 32
    con.execute(f"INSERT INTO episode ({_EP_COLS}) VALUES ({_MARKS})",
                _episode_row(eid, run, now, 2, 0.0, label="rollout-000", seed=0, end_reason="invalid_action"))
    con.execute("UPDATE episode SET end_reason = 'invalid_action', done = 0 WHERE id = ?", (eid,))
    obs = json.dumps({"stdout": "ready"})
    con.execute("INSERT INTO step (episode_id, idx, observation, done, t) VALUES (?,?,?,?,?)", (eid, 0, obs, 0, now))
    con.execute("INSERT INTO step (episode_id, idx, action, observation, reward, done, t) VALUES (?,?,?,?,?,?,?)",
                (eid, 1, '{"code": "print(1)"}', '{"stdout": "1"}', 0.0, 0, now + 1))
    words = ["the", " cat", " sat", " on", " mat", "\n", " print", "(", "1", ")"]
    sampled = [rng.randrange(1000, 30000) for _ in range(tokens)]
    turn = {"messages": [{"role": "system", "content": "You write Python."}, {"role": "user", "content": "ready"}],
            "completion": "".join(words[i % len(words)] for i in range(tokens)), "finish_reason": "length",
            "latency_ms": 900.0, "usage": {"prompt_tokens": 12, "completion_tokens": tokens},
            "capture": {"level": "tokens", "node_id": "n0", "prompt_ids": list(range(100, 112)), "sampled_ids": sampled,
                        "logprobs": [round(-rng.random(), 4) for _ in range(tokens)],
                        "sampled_tokens": [words[i % len(words)] for i in range(tokens)]}}
    con.execute("INSERT INTO step_agent (episode_id, idx, actor, data) VALUES (?,?,?,?)",
                (eid, 1, "model", json.dumps(turn)))
    failed = {"messages": [{"role": "user", "content": "1"}], "completion": "I think the answer is", "error":
              "the reply holds no tool call", "latency_ms": 300.0}
    con.execute("INSERT INTO step_agent (episode_id, idx, actor, data) VALUES (?,?,?,?)",
                (eid, 2, "model", json.dumps(failed)))
    return eid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--episodes", type=int, default=100_000)
    ap.add_argument("--steps-per-episode", type=int, default=10)
    args = ap.parse_args()
    if Path(args.path).exists():
        sys.exit(f"{args.path} exists; give a new path")
    start = time.perf_counter()
    ids = generate(args.path, episodes=args.episodes, steps_per_episode=args.steps_per_episode)
    print(json.dumps({**ids, "seconds": round(time.perf_counter() - start, 1)}))


if __name__ == "__main__":
    main()
