"""The Ray test cluster itself (tests/ray_cluster.py, tests/ray_reports.py): a death is seen, named,
its logs are kept, and the cluster is started again. On a one-node cluster of its own in the private
network (the session's cluster is left alone); no driver is needed."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._require import require
from tests.netns import PrivateNetwork
from tests.ray_cluster import LocalRayCluster, ray_available
from tests.ray_reports import DEATHS, revive

pytestmark = [pytest.mark.ray]


@pytest.fixture(scope="module")
def spare(ray_network: PrivateNetwork) -> Iterator[LocalRayCluster]:
    require(ray_available(), "Ray (pip install -e '.[ray]')")
    with LocalRayCluster([{"num_cpus": 1}], network=ray_network) as cluster:
        yield cluster


def _until(check, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if got := check():
            return got
        time.sleep(0.2)
    return check()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_gcs_is_named_its_logs_kept_and_the_cluster_restarted(
        spare: LocalRayCluster, tmp_path: Path, sig: signal.Signals) -> None:
    assert spare.health() is None
    (gcs,) = [c for c in spare._core if c.name == "gcs_server"]
    old_address, old_dir, starts = spare.address, spare.temp_dir, spare.starts
    os.kill(gcs.pid, sig)  # SIGKILL: `ray start --block` takes the node down; SIGTERM: it does not notice
    seen = [f"GCS at {old_address} does not answer"]
    if sig == signal.SIGKILL:  # a GCS asked to end may linger, its port closed
        seen.append(f"gcs_server (pid {gcs.pid}) is gone")
    cause = _until(lambda: all(s in (spare.health() or "") for s in seen) and spare.health())
    assert cause, spare.health()
    try:
        death = revive(spare, "the test", artifacts=tmp_path)
    finally:
        DEATHS[:] = [d for d in DEATHS if d.where != "the test"]  # not a death of the session's cluster
    assert death is not None and death.restarted_in_s is not None
    assert all(s in death.cause for s in seen)
    assert (death.kept / "node-0.log").is_file() and (death.kept / "logs" / "gcs_server.out").is_file()
    assert "node-0.log" in death.report  # the report quotes the cluster's own logs
    if sig == signal.SIGTERM:  # `ray start` lets that one pass; the GCS said it was asked to end
        assert "gcs_server.out: (gcs_server) gcs_server_main.cc" in death.cause and "received SIGTERM" in death.cause
    if sig == signal.SIGKILL:
        assert "exited unexpectedly" in death.report  # what `ray start --block` said before ending
        assert "`ray start` saw gcs_server [exit code=-9" in death.cause  # and how the GCS ended
    assert spare.health() is None and spare.starts == starts + 1
    assert spare.address != old_address and not old_dir.exists()
    assert not gcs.alive() and revive(spare, "again", artifacts=tmp_path) is None
