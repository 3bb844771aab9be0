"""VectorEnvClient while servers are down: the dead sessions reconnect concurrently, so one step
waits about one reconnect however many sessions are down (a behaviour test, not a benchmark)."""

from __future__ import annotations

import time

from openenv.core import VectorEnvClient
from openenv.core.errors import ReconnectFailedError
from tests.client.conftest import restartable


def test_sixteen_dead_sessions_cost_one_reconnect_not_sixteen(echo_url):
    with restartable("ours") as server:
        single = VectorEnvClient(server.url, num_envs=1)
        envs = VectorEnvClient([echo_url, server.url], num_envs=32)  # 16 live, 16 on the doomed server
        with single, envs:
            single.reset()
            assert envs.reset().ok
            server.kill()
            time.sleep(0.3)  # the sockets see the server go
            t0 = time.monotonic()
            alone = single.step([{"message": "m"}])
            one_reconnect = time.monotonic() - t0
            assert isinstance(alone.errors[0], ReconnectFailedError)
            t0 = time.monotonic()
            batch = envs.step([{"message": f"{i}"} for i in range(32)])
            elapsed = time.monotonic() - t0
    live, dead = range(0, 32, 2), range(1, 32, 2)
    assert all(batch.errors[i] is None for i in live)
    assert [batch.observations[i]["echoed_message"] for i in live] == [f"{i}" for i in live]
    for i in dead:
        err = batch.errors[i]
        assert isinstance(err, ReconnectFailedError) and err.code == "RECONNECT_FAILED", err
        assert server.url.split("//")[1] in str(err) and batch.results[i] is None
    # serially this was 16 x one reconnect (~24 s); concurrently it is about one
    assert one_reconnect > 0.5  # the backoff really ran (else the bound below says nothing)
    assert elapsed < 3 * one_reconnect, (elapsed, one_reconnect)


def test_batch_deadline_bounds_reconnects_that_hang(echo_url):
    """A session whose reconnect would outlast the batch deadline is cut off with its own error."""
    with restartable("ours") as server:
        opts = {"reconnect_timeout_s": 0.5, "connect_timeout_s": 0.5, "reconnect_attempts": 50}
        with VectorEnvClient([echo_url, server.url], num_envs=8, client_kwargs=opts) as envs:
            envs.reset()
            server.kill()
            time.sleep(0.3)
            t0 = time.monotonic()
            batch = envs.step([{"message": "x"}] * 8)
            elapsed = time.monotonic() - t0
    assert elapsed < 2.5, elapsed  # one deadline (0.5 + 0.5 s) for the batch, with slack
    assert all(batch.errors[i] is None for i in range(0, 8, 2))
    assert all(isinstance(batch.errors[i], ReconnectFailedError) for i in range(1, 8, 2))
