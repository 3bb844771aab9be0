"""Warm workers: a reset takes a confined, never-used worker; the pool stays bounded."""

from __future__ import annotations

import time

import pytest

from openenv.envs.repl.config import Limits
from openenv.envs.repl.loop import call_sync
from openenv.envs.repl.pool import POOL
from tests.envs.repl.conftest import pid_gone, run, test_limits


def _pid(env) -> int:
    return int(run(env, "import os\nos.getpid()").result.stdout)


def _settle(limits: Limits, within_s: float = 30.0) -> list[int]:
    """Wait for the pool to be full again; returns the pids of its idle workers."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if POOL.limits == limits and len(POOL.idle) == limits.warm_workers and not POOL.filling:
            return [w.worker.proc.pid for w in POOL.idle]
        time.sleep(0.05)
    raise AssertionError(f"the pool did not refill: {len(POOL.idle)} idle, {len(POOL.filling)} starting")


def test_resets_take_warm_workers_never_used_ones(make_env) -> None:
    limits = test_limits(warm_workers=2)
    env = make_env(limits=limits)
    seen = {_pid(env)}
    run(env, "secret = 1\nopen('left.txt', 'w').write('x')")
    for _ in range(4):
        warm = set(_settle(limits))
        env.reset()
        assert env._sandbox.from_pool
        assert env._sandbox.worker_pid in warm and env._sandbox.worker_pid not in seen
        seen.add(env._sandbox.worker_pid)
        assert run(env, "import os\n(os.listdir('.'), 'secret' in dir())").result.stdout == "([], False)\n"
        assert len(POOL.idle) + len(POOL.filling) <= limits.warm_workers


def test_a_worker_is_never_handed_to_two_sessions(make_env) -> None:
    limits = test_limits(warm_workers=2)
    _ = make_env(limits=limits)
    _settle(limits)
    envs = [make_env(limits=limits) for _ in range(3)]
    pids = [e._sandbox.worker_pid for e in envs]
    assert len(set(pids)) == 3
    assert all(pid not in [w.worker.proc.pid for w in POOL.idle] for pid in pids)


def test_an_idle_server_holds_no_more_than_the_pool(make_env) -> None:
    limits = test_limits(warm_workers=3)
    envs = [make_env(limits=limits) for _ in range(4)]
    for env in envs:
        env.close()
    assert len(_settle(limits)) == 3  # the four sessions' workers are gone; only the pool is left


def test_other_limits_retire_the_pool_and_zero_disables_it(make_env) -> None:
    first = test_limits(warm_workers=2)
    make_env(limits=first)
    old = _settle(first)
    none = test_limits(warm_workers=0)
    env = make_env(limits=none)
    assert not env._sandbox.from_pool and not POOL.idle
    assert all(pid_gone(p) for p in old)
    env.reset()
    assert not env._sandbox.from_pool and not POOL.idle and not POOL.filling


def test_a_pooled_worker_that_died_is_replaced(make_env) -> None:
    import os
    import signal

    limits = test_limits(warm_workers=1)
    env = make_env(limits=limits)
    (pid,) = _settle(limits)
    os.killpg(pid, signal.SIGKILL)
    assert pid_gone(pid)
    env.reset()
    assert env._sandbox.worker_pid != pid and run(env, "'ok'").result.success


def test_pool_size_is_a_setting() -> None:
    assert Limits.from_env({}).warm_workers == 2
    assert Limits.from_env({"OPENENV_REPL_WARM_WORKERS": "5"}).warm_workers == 5
    with pytest.raises(ValueError, match="warm_workers"):
        Limits.from_env({"OPENENV_REPL_WARM_WORKERS": "-1"})


def test_pool_is_flushed_on_demand(make_env) -> None:
    limits = test_limits(warm_workers=1)
    make_env(limits=limits)
    (pid,) = _settle(limits)

    async def flush() -> None:
        POOL.flush()

    call_sync(flush())
    assert pid_gone(pid) and not POOL.idle
