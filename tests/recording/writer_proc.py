"""A recording process used by the concurrency and crash tests (run as a script).

    python writer_proc.py DB EPISODES STEPS [--hang-after N | --journal]
    python writer_proc.py DB --client URL --hang-after N [--wait-go]

Records EPISODES episodes of STEPS steps each (committed one by one, or with --journal through the
step journal as ``record()`` does); with --hang-after it prints "ready" after N steps
of the first episode and sleeps (bounded) so the parent can kill it mid-episode. With --client
it plays the echo server at URL through ``record()``, like a training script; with --wait-go it
prints "reset" after the reset and reads a line from stdin before stepping.
"""

from __future__ import annotations

import sys
import time

from openenv.recording import EpisodeStore, RecordingError


def play_client(db: str, url: str, hang_after: int, wait_go: bool = False) -> int:
    from openenv.envs.echo import EchoAction, EchoEnv
    from openenv.recording import record

    store = EpisodeStore(db)
    env = record(EchoEnv(base_url=url).sync(), store=store, label="training-script")
    env.reset(seed=4)
    if wait_go:
        print("reset", env.episode_id, flush=True)
        sys.stdin.readline()
    for i in range(hang_after):
        env.step(EchoAction(message=f"step {i}"))
    print("ready", env.episode_id, flush=True)
    time.sleep(120)
    return 3


def main(argv: list[str]) -> int:
    if argv[1] == "--client":
        return play_client(argv[0], argv[2], int(argv[4]), "--wait-go" in argv)
    db, episodes, steps = argv[0], int(argv[1]), int(argv[2])
    hang_after = int(argv[4]) if len(argv) > 4 and argv[3] == "--hang-after" else None
    journal = "--journal" in argv
    try:
        store = EpisodeStore(db)
        run = store.create_run(env_name="echo", label=f"writer-{time.monotonic_ns()}")
        for e in range(episodes):
            eid = store.start_episode(run, reset_kwargs={"seed": e}, observation={"echoed_message": ""})
            for i in range(1, steps + 1):
                step = {"action": {"message": str(i)}, "observation": {"echoed_message": str(i)}}
                if journal:
                    store.journal_steps([store.step_row(eid, i, **step, reward=1.0, done=i == steps)])
                else:
                    store.append_step(eid, i, **step, reward=1.0, done=i == steps)
                if hang_after is not None and i == hang_after:
                    print("ready", eid, flush=True)
                    time.sleep(120)
                    return 3
        store.close()
    except RecordingError as exc:
        print(f"{exc.code}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
